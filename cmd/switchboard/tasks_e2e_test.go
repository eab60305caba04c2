package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

// subagentRouter routes the agent's and its sub-agents' model requests to
// the scripts "parent" and "child".
func subagentRouter(m *fakemodel.Server) *fakemodel.Router {
	r := fakemodel.NewRouter(func(req fakemodel.Request) string {
		for _, msg := range req.Messages {
			if msg.Role == "system" && strings.HasPrefix(msg.Text(), "You are a sub-agent of") {
				return "child"
			}
			if msg.Role == "user" && strings.Contains(msg.Text(), "You are now a forked sub-agent") {
				return "child"
			}
		}
		return "parent"
	})
	m.SetResponder(r.Respond)
	return r
}

func agentStep(id, typ, prompt string, extra map[string]any) fakemodel.Step {
	args := map[string]any{"description": "a helper job", "prompt": prompt, "subagent_type": typ}
	for k, v := range extra {
		args[k] = v
	}
	b, _ := json.Marshal(args)
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Agent", Arguments: string(b)}}}
}

func (e *env) tasksOf(t *testing.T) []agentcore.Task {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conv, err := db.LatestConversation(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := db.ConversationTasks(ctx, conv.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// run -p --wait-tasks works each <task-notification> as the parent's next
// turn before exiting, and prints it (text, json and stream-json).
func TestRunWaitTasksPrintsTheReport(t *testing.T) {
	for _, format := range []string{"text", "json", "stream-json"} {
		t.Run(format, func(t *testing.T) {
			e := newEnv(t)
			r := subagentRouter(e.model)
			r.Add("parent",
				agentStep("a1", "explore", "Find the answer.", nil),
				fakemodel.Step{Text: "Started a helper."},
				fakemodel.Step{Text: "The helper found 42."})
			r.Add("child", fakemodel.Step{Text: "The answer is 42."})
			res := e.run("", "run", "-p", "find the answer with a helper", "--wait-tasks", "--output-format", format)
			if res.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			switch format {
			case "text":
				if !strings.Contains(res.stdout, "Started a helper.") || !strings.Contains(res.stdout, "The helper found 42.") {
					t.Fatalf("stdout = %q", res.stdout)
				}
			case "json":
				lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
				if len(lines) != 2 {
					t.Fatalf("want two result objects, got:\n%s", res.stdout)
				}
				if m := resultLine(t, res.stdout); m["result"] != "The helper found 42." {
					t.Fatalf("last result = %v", m)
				}
			case "stream-json":
				var types []string
				results := 0
				for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
					var m map[string]any
					if err := json.Unmarshal([]byte(l), &m); err != nil {
						t.Fatalf("not JSON: %q", l)
					}
					typ, _ := m["type"].(string)
					types = append(types, typ)
					if typ == "result" {
						results++
					}
					if strings.HasPrefix(typ, "task_") && (m["taskId"] == nil || m["task"] == nil) {
						t.Errorf("%s without taskId/task: %s", typ, l)
					}
				}
				joined := strings.Join(types, ",")
				for _, want := range []string{"task_started", "task_progress", "task_notification"} {
					if !strings.Contains(joined, want) {
						t.Errorf("no %s event in %s", want, joined)
					}
				}
				if results != 2 {
					t.Errorf("%d results, want 2 (the prompt's turn and the notification's): %s", results, joined)
				}
				if m := resultLine(t, res.stdout); m["result"] != "The helper found 42." {
					t.Fatalf("last result = %v", m)
				}
			}
			note := r.Requests("parent")[2].LastMessage().Text()
			if !strings.Contains(note, "<task-notification>") || !strings.Contains(note, "The answer is 42.") {
				t.Errorf("the parent's last request: %q", note)
			}
		})
	}
}

// Without --wait-tasks, run -p cancels its unfinished background tasks at
// exit and names them in the result.
func TestRunCancelsUnfinishedTasks(t *testing.T) {
	e := newEnv(t)
	hold := make(chan struct{})
	defer close(hold)
	r := subagentRouter(e.model)
	r.Add("parent", agentStep("a1", "explore", "Take your time.", nil), fakemodel.Step{Text: "Started a slow helper."})
	r.Add("child", fakemodel.Step{Text: "never", Block: hold})
	res := e.run("", "run", "-p", "start a slow helper", "--output-format", "json")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	m := resultLine(t, res.stdout)
	ids, _ := m["cancelledTasks"].([]any)
	if len(ids) != 1 || !strings.HasPrefix(ids[0].(string), "t-") {
		t.Fatalf("result = %v", m)
	}
	ts := e.tasksOf(t)
	if len(ts) != 1 || ts[0].ID != ids[0] || ts[0].Status != agentcore.TaskCancelled {
		t.Fatalf("tasks after exit = %+v", ts)
	}
}

// In stream-json a sub-agent's ask is an approval_request carrying its
// taskId, decided by its approvalId on the parent's stdin; every task
// event's fields (and those of its task object) are documented in the
// README's stream-json table.
func TestStreamJSONSubagentAskAndReadme(t *testing.T) {
	e := newEnv(t)
	r := subagentRouter(e.model)
	r.Add("parent",
		agentStep("a1", "general-purpose", "Create child-file.", nil),
		fakemodel.Step{Text: "A helper makes it."},
		fakemodel.Step{Text: "The helper made it."})
	r.Add("child", bashStep("c1", "touch child-file"), fakemodel.Step{Text: "child-file exists now."})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "run", "--input-format", "stream-json", "--output-format", "stream-json", "--wait-tasks")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(stdout)
	var events []map[string]any
	next := func(pred func(map[string]any) bool, what string) map[string]any {
		t.Helper()
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("waiting for %s: %v\n%s", what, err, stderr.String())
			}
			events = append(events, m)
			if pred(m) {
				return m
			}
		}
	}
	is := func(typ string) func(map[string]any) bool {
		return func(m map[string]any) bool { return m["type"] == typ }
	}
	next(is("init"), "init")
	stdin.Write([]byte(`{"type":"user","content":"make child-file with a helper"}` + "\n"))
	ask := next(is("approval_request"), "the sub-agent's ask")
	taskID, _ := ask["taskId"].(string)
	if !strings.HasPrefix(taskID, "t-") {
		t.Fatalf("the sub-agent's approval_request has no taskId: %v", ask)
	}
	id := ask["approval"].(map[string]any)["id"].(string)
	stdin.Write([]byte(`{"type":"approval","approvalId":"` + id + `","decision":"allow"}` + "\n"))
	next(func(m map[string]any) bool { return m["type"] == "result" && m["result"] == "The helper made it." }, "the notification turn's result")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "child-file")); err != nil {
		t.Fatal("the approved sub-agent call did not run")
	}

	documented, _ := readmeStreamJSON(t)
	common := map[string]bool{"type": true, "runId": true, "seqId": true, "agentId": true, "conversationId": true}
	seen := map[string]bool{}
	for _, ev := range events {
		typ := ev["type"].(string)
		if typ == "init" || typ == "result" {
			continue
		}
		seen[typ] = true
		doc, ok := documented[typ]
		if !ok {
			t.Errorf("event type %q is emitted but has no row in the README's stream-json table", typ)
			continue
		}
		for k, v := range ev {
			if !common[k] && !doc[k] {
				t.Errorf("%s carries %q, which the README does not document for it", typ, k)
			}
			if obj, ok := v.(map[string]any); ok && (k == "approval" || k == "task") {
				for nk := range obj {
					if !doc[nk] {
						t.Errorf("%s.%s carries %q, which the README does not document", typ, k, nk)
					}
				}
			}
		}
	}
	for _, typ := range []string{"task_started", "task_progress", "task_notification", "approval_request", "approval_decision"} {
		if !seen[typ] {
			t.Errorf("the session emitted no %s event; the check did not cover it", typ)
		}
	}
}

// The README's example sub-agent type file is one the loader accepts.
func TestReadmeSubagentExampleParses(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	i := strings.Index(readme, "### Sub-agents")
	if i < 0 {
		t.Fatal("README has no Sub-agents section")
	}
	start := strings.Index(readme[i:], "```markdown\n")
	if start < 0 {
		t.Fatal("the Sub-agents section has no example file")
	}
	body := readme[i+start+len("```markdown\n"):]
	body = body[:strings.Index(body, "```")]
	st, err := agentcore.ParseSubagentType("example", body)
	if err != nil {
		t.Fatalf("the README's example does not parse: %v", err)
	}
	if st.Name != "tester" || len(st.Tools) != 4 || st.Model != "qwen3:8b" || st.Mode != "standard" || st.Fork || st.Prompt == "" {
		t.Fatalf("the README's example parsed as %+v", st)
	}
}

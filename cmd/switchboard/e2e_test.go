package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func bashStep(id, command string) fakemodel.Step {
	args, _ := json.Marshal(map[string]string{"command": command})
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Bash", Arguments: string(args)}}}
}

func TestRunUnrestrictedRunsBash(t *testing.T) {
	e := newEnv(t, bashStep("call_1", "echo hi"), fakemodel.Step{Text: "The command printed hi."})
	r := e.run("", "run", "-p", "say hi", "--permission-mode", "unrestricted", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	res := resultLine(t, r.stdout)
	if res["subtype"] != "success" || !strings.Contains(res["result"].(string), "printed hi") {
		t.Fatalf("result = %v", res)
	}
	for _, k := range []string{"stopReason", "numSteps", "usage", "agentId", "conversationId", "durationMs"} {
		if _, ok := res[k]; !ok {
			t.Errorf("result lacks %q: %v", k, res)
		}
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	tm := toolMessages(reqs[1])
	if len(tm) != 1 || tm[0].ToolCallID != "call_1" || strings.TrimSpace(contentText(tm[0])) != "hi" {
		t.Fatalf("second request's tool message = %+v (%q)", tm, contentText(tm[0]))
	}
	msgs := e.transcript()
	if len(msgs) != 4 {
		t.Fatalf("transcript has %d messages, want 4 (user, assistant, tool, assistant)", len(msgs))
	}
	want := []agentcore.Role{agentcore.RoleUser, agentcore.RoleAssistant, agentcore.RoleTool, agentcore.RoleAssistant}
	for i, m := range msgs {
		if m.Role != want[i] {
			t.Errorf("message %d role %s, want %s", i, m.Role, want[i])
		}
	}
	validTranscript(t, msgs)
}

func TestRunStandardDeniesBashWithNobodyToAsk(t *testing.T) {
	e := newEnv(t, bashStep("call_1", "touch ran-it"), fakemodel.Step{Text: "I could not run it."})
	r := e.run("", "run", "-p", "make a file", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "ran-it")); err == nil {
		t.Fatal("the denied command ran")
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	tm := toolMessages(reqs[1])
	if len(tm) != 1 {
		t.Fatalf("tool messages = %+v", tm)
	}
	text := contentText(tm[0])
	if !strings.Contains(text, "Permission denied") || !strings.Contains(text, "nobody can approve") {
		t.Fatalf("the model was not told why: %q", text)
	}
	validTranscript(t, e.transcript())
}

func TestStreamJSONEvents(t *testing.T) {
	e := newEnv(t, bashStep("call_1", "echo hi"), fakemodel.Step{Text: "done", Reasoning: "thinking"})
	r := e.run("", "run", "-p", "go", "--permission-mode", "unrestricted", "--output-format", "stream-json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var types []string
	seq := map[string]float64{}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line is not JSON: %q", l)
		}
		types = append(types, m["type"].(string))
		if run, ok := m["runId"].(string); ok && run != "" {
			s := m["seqId"].(float64)
			if s <= seq[run] {
				t.Errorf("seqId %v does not increase within run %s", s, run)
			}
			seq[run] = s
		}
		if m["type"] == "tool_result" && (m["toolCallId"] != "call_1" || m["uuid"] == "") {
			t.Errorf("tool_result lacks identity: %v", m)
		}
	}
	if types[0] != "init" || types[len(types)-1] != "result" {
		t.Fatalf("types = %v", types)
	}
	joined := strings.Join(types, ",")
	for _, want := range []string{"tool_call", "tool_result", "reasoning_delta", "assistant_delta", "assistant_message"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %s event in %v", want, types)
		}
	}
}

func TestStreamJSONInputApproval(t *testing.T) {
	e := newEnv(t, bashStep("call_1", "touch approved && echo approved-run"), fakemodel.Step{Text: "finished"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "run", "--input-format", "stream-json", "--output-format", "stream-json")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(stdout)
	next := func(typ string) map[string]any {
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("waiting for %s: %v\nstderr: %s", typ, err, stderr.String())
			}
			if m["type"] == typ {
				return m
			}
		}
	}
	stdin.Write([]byte("this is not json\n"))
	if m := next("error"); !strings.Contains(m["message"].(string), "bad input line") {
		t.Fatalf("error = %v", m)
	}
	stdin.Write([]byte(`{"type":"user","content":"run it"}` + "\n"))
	ask := next("approval_request")
	ap := ask["approval"].(map[string]any)
	if res := next("result"); res["subtype"] != "requires_approval" {
		t.Fatalf("result = %v", res)
	}
	stdin.Write([]byte(`{"type":"approval","approvalId":"` + ap["id"].(string) + `","decision":"allow"}` + "\n"))
	tr := next("tool_result")
	if !strings.Contains(tr["text"].(string), "approved-run") {
		t.Fatalf("tool_result = %v", tr)
	}
	if res := next("result"); res["subtype"] != "success" || res["result"] != "finished" {
		t.Fatalf("result = %v", res)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	validTranscript(t, e.transcript())
}

func TestCrashMidToolSettlesOutcomeUnknown(t *testing.T) {
	e := newEnv(t, bashStep("call_1", "touch started; sleep 1000 & sleep 1000"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "run", "-p", "long job", "--permission-mode", "unrestricted")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(e.workspace, "started")
	eventually(t, 30*time.Second, "the tool to start", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	groups := recordedGroups(t, e.home)
	if len(groups) != 1 {
		t.Fatalf("recorded process groups = %v, want 1", groups)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// The restarted process adopts the dead run's queued message (it yields
	// its one turn, settling the call), then runs its own prompt.
	e.model.Push(fakemodel.Step{Text: "I was interrupted."}, fakemodel.Step{Text: "The job's outcome is unknown."})
	r := e.run("", "run", "-p", "what happened?", "--continue", "--permission-mode", "unrestricted", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("restart exit %d: %s", r.code, r.stderr)
	}
	// The leftover group was killed at start.
	for _, pgid := range groups {
		eventually(t, 10*time.Second, "the leftover group to die", func() bool {
			return syscall.Kill(-pgid, 0) == syscall.ESRCH
		})
	}
	reqs := e.model.Requests()
	last := reqs[len(reqs)-1]
	tm := toolMessages(last)
	if len(tm) != 1 || !strings.Contains(contentText(tm[0]), "Outcome unknown") {
		t.Fatalf("dangling call not settled as unknown: %+v", tm)
	}
	msgs := e.transcript()
	validTranscript(t, msgs)
	if msgs[len(msgs)-1].Text() != "The job's outcome is unknown." {
		t.Fatalf("last message = %+v", msgs[len(msgs)-1])
	}
}

// recordedGroups reads the sandbox registry's records of running groups.
func recordedGroups(t *testing.T, home string) []int {
	t.Helper()
	dir := filepath.Join(home, "run", "groups")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read registry: %v", err)
	}
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var rec struct {
			PGID int `json:"pgid"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.PGID > 0 {
			out = append(out, rec.PGID)
		}
	}
	return out
}

func TestTwoProcessesOneConversation(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, fakemodel.Step{Text: "first"})
	// Create the conversation.
	if r := e.run("", "run", "-p", "hello", "--output-format", "json"); r.code != 0 {
		t.Fatalf("setup: %s", r.stderr)
	}
	e.model.Push(fakemodel.Step{Text: "slow answer", Block: release}, fakemodel.Step{Text: "second answer"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := e.command(ctx, "run", "-p", "one", "--continue", "--output-format", "json")
	var out1 strings.Builder
	first.Stdout = &out1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	if err := e.model.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	second := e.command(ctx, "run", "-p", "two", "--continue", "--output-format", "json")
	var out2 strings.Builder
	var err2 syncBuffer
	second.Stdout, second.Stderr = &out2, &err2
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the second process to report it waits", func() bool {
		return strings.Contains(err2.String(), "busy")
	})
	if n := len(e.model.Requests()); n != 2 {
		t.Fatalf("the second process called the model while the first held the lease (%d requests)", n)
	}
	close(release)
	if err := first.Wait(); err != nil {
		t.Fatalf("first: %v", err)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second: %v\n%s", err, err2.String())
	}
	if resultLine(t, out1.String())["result"] != "slow answer" || resultLine(t, out2.String())["result"] != "second answer" {
		t.Fatalf("results: %s / %s", out1.String(), out2.String())
	}
	msgs := e.transcript()
	validTranscript(t, msgs)
	if len(msgs) != 6 {
		t.Fatalf("transcript has %d messages, want 6", len(msgs))
	}
}

func TestBadInputs(t *testing.T) {
	t.Run("unreachable endpoint", func(t *testing.T) {
		e := newEnv(t)
		e.extra = append(e.extra, "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
		r := e.run("", "run", "-p", "hi")
		if r.code == 0 || !strings.Contains(r.stderr, "OPENAI_BASE_URL") {
			t.Fatalf("exit %d, stderr %q: want advice naming OPENAI_BASE_URL", r.code, r.stderr)
		}
		if strings.Count(r.stderr, "\n") > 3 {
			t.Errorf("stderr is a wall of text:\n%s", r.stderr)
		}
	})
	t.Run("no model configured", func(t *testing.T) {
		e := newEnv(t)
		e.extra = append(e.extra, "SWITCHBOARD_MODEL=")
		r := e.run("", "run", "-p", "hi")
		if r.code == 0 || !strings.Contains(r.stderr, "SWITCHBOARD_MODEL") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("server error", func(t *testing.T) {
		e := newEnv(t, fakemodel.Step{Status: 500}, fakemodel.Step{Status: 500}, fakemodel.Step{Status: 500}, fakemodel.Step{Status: 500}, fakemodel.Step{Status: 500})
		r := e.run("", "run", "-p", "hi", "--output-format", "json")
		res := resultLine(t, r.stdout)
		if r.code != 1 || res["subtype"] != "error" || res["error"] == "" {
			t.Fatalf("exit %d, result %v", r.code, res)
		}
		validTranscript(t, e.transcript())
	})
	t.Run("malformed SSE", func(t *testing.T) {
		e := newEnv(t, fakemodel.Step{Malformed: true})
		r := e.run("", "run", "-p", "hi", "--output-format", "json")
		res := resultLine(t, r.stdout)
		if res["subtype"] != "error" {
			t.Fatalf("result %v", res)
		}
		validTranscript(t, e.transcript())
	})
	t.Run("tool arguments not JSON and unknown tool", func(t *testing.T) {
		e := newEnv(t,
			fakemodel.Step{ToolCalls: []fakemodel.ToolCall{
				{ID: "c1", Name: "Bash", Arguments: `{"command": "echo hi"`},
				{ID: "c2", Name: "Teleport", Arguments: `{}`},
			}},
			fakemodel.Step{Text: "ok"})
		r := e.run("", "run", "-p", "hi", "--permission-mode", "unrestricted", "--output-format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		tm := toolMessages(e.model.Requests()[1])
		if len(tm) != 2 || !strings.Contains(contentText(tm[0]), "Invalid arguments") || !strings.Contains(contentText(tm[1]), "Tool not found: Teleport. Available:") {
			t.Fatalf("tool results: %q / %q", contentText(tm[0]), contentText(tm[1]))
		}
		validTranscript(t, e.transcript())
	})
}

func TestOmittedIndexToolCallsArriveIntact(t *testing.T) {
	e := newEnv(t,
		fakemodel.Step{OmitIndex: true, ToolCalls: []fakemodel.ToolCall{
			{ID: "a1", Name: "Bash", Arguments: `{"command":"echo one"}`},
			{ID: "a2", Name: "Bash", Arguments: `{"command":"echo two"}`},
		}},
		fakemodel.Step{Text: "both ran"})
	r := e.run("", "run", "-p", "two calls", "--permission-mode", "unrestricted", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	tm := toolMessages(e.model.Requests()[1])
	if len(tm) != 2 || strings.TrimSpace(contentText(tm[0])) != "one" || strings.TrimSpace(contentText(tm[1])) != "two" {
		t.Fatalf("tool results: %+v", tm)
	}
}

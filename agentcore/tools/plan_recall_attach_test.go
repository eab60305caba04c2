package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
)

func TestTodoWrite(t *testing.T) {
	env := testEnv(t)
	tests := []struct {
		name  string
		args  string
		want  string
		isErr bool
		todos []agentcore.Todo
	}{
		{"valid", `{"todos":[{"content":"read code","status":"completed","priority":"high"},{"content":" write test ","status":"in_progress"},{"content":"ship","status":"pending","priority":"low"}]}`,
			"Plan updated: 3 items (1 completed, 1 in progress, 1 pending).", false, nil},
		{"two in progress warns", `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`,
			"Plan updated: 2 items (0 completed, 2 in progress, 0 pending). Note: keep only one item in_progress at a time.", false,
			[]agentcore.Todo{{Content: "a", Status: "in_progress"}, {Content: "b", Status: "in_progress"}}},
		{"cleared", `{"todos":[]}`, "Plan cleared.", false, []agentcore.Todo{}},
		{"bad status", `{"todos":[{"content":"a","status":"done"}]}`,
			`The plan was not updated: item 1: status "done" is not pending, in_progress or completed.`, true, nil},
		{"empty content and bad priority", `{"todos":[{"content":"a","status":"pending"},{"content":" ","status":"pending","priority":"urgent"}]}`,
			`The plan was not updated: item 2: content is empty; item 2: priority "urgent" is not high, medium or low.`, true, nil},
		{"todos not a list", `{"todos":"a, b"}`, "Invalid arguments: json: cannot unmarshal", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, TodoWrite(), env, tt.args)
			if res.IsError != tt.isErr || !strings.HasPrefix(res.Content, tt.want) {
				t.Fatalf("got %v %q, want %v %q", res.IsError, res.Content, tt.isErr, tt.want)
			}
			if tt.isErr && res.Todos != nil {
				t.Errorf("an invalid plan was returned: %+v", res.Todos)
			}
			if tt.todos != nil {
				if diff := cmp.Diff(tt.todos, res.Todos); diff != "" {
					t.Errorf("todos (-want +got):\n%s", diff)
				}
			}
		})
	}
	res := run(t, TodoWrite(), env, tests[0].args)
	want := []agentcore.Todo{
		{Content: "read code", Status: "completed", Priority: "high"},
		{Content: "write test", Status: "in_progress"},
		{Content: "ship", Status: "pending", Priority: "low"},
	}
	if diff := cmp.Diff(want, res.Todos); diff != "" {
		t.Errorf("todos (-want +got):\n%s", diff)
	}
}

// fakeRecall is an in-memory transcript search.
type fakeRecall struct {
	hits  []agentcore.SearchHit
	err   error
	calls []string
}

func (f *fakeRecall) Search(_ context.Context, conv, query string, limit int) ([]agentcore.SearchHit, error) {
	f.calls = append(f.calls, conv+"|"+query+"|"+strconv.Itoa(limit))
	if f.err != nil {
		return nil, f.err
	}
	return f.hits[:min(limit, len(f.hits))], nil
}

func TestRecall(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	rec := &fakeRecall{hits: []agentcore.SearchHit{
		{MessageID: "m1", Seq: 3, Role: agentcore.RoleUser, Created: at, Snippet: "the  deploy\nkey is in vault"},
		{MessageID: "m2", Seq: 9, Role: agentcore.RoleAssistant, Created: at.Add(time.Minute), Snippet: "I will deploy"},
	}}
	env := testEnv(t)
	env.Recall = rec
	res := run(t, Recall(), env, `{"query":"deploy"}`)
	want := "2 matches:\n[seq 3 · user · 2026-03-04 05:06] the deploy key is in vault (id: m1)\n[seq 9 · assistant · 2026-03-04 05:07] I will deploy (id: m2)"
	if res.IsError || res.Content != want {
		t.Fatalf("got %v\n%s\nwant\n%s", res.IsError, res.Content, want)
	}
	run(t, Recall(), env, `{"query":"deploy","limit":500}`)
	run(t, Recall(), env, `{"query":"deploy","limit":"3"}`)
	if diff := cmp.Diff([]string{"conv-1|deploy|10", "conv-1|deploy|50", "conv-1|deploy|3"}, rec.calls); diff != "" {
		t.Errorf("searches (-want +got):\n%s", diff)
	}

	env.Recall = &fakeRecall{}
	if res := run(t, Recall(), env, `{"query":"nothing here"}`); res.IsError || !strings.Contains(res.Content, `No messages match "nothing here". Try other`) {
		t.Errorf("no hits: %+v", res)
	}
	env.Recall = &fakeRecall{err: errors.New("fts5: syntax error near \"\"")}
	if res := run(t, Recall(), env, `{"query":"\""}`); !res.IsError || !strings.HasPrefix(res.Content, "Search failed: fts5") {
		t.Errorf("search error: %+v", res)
	}
	env.Recall = nil
	if res := run(t, Recall(), env, `{"query":"x"}`); !res.IsError || !strings.Contains(res.Content, "not available") {
		t.Errorf("no recaller: %+v", res)
	}
}

func TestAttach(t *testing.T) {
	env := testEnv(t)
	ws := env.Workspace
	outside := t.TempDir()
	writeFiles(t, ws, map[string]string{"report.pdf": "%PDF-1.4", "dir/x": ""})
	writeFiles(t, outside, map[string]string{"secret.txt": "s"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(ws, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(AttachMaxBytes + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()
	tests := []struct {
		name   string
		args   string
		want   string
		isErr  bool
		attach []string
	}{
		{"workspace file", `{"file_path":"report.pdf","caption":"Q3 report"}`,
			"report.pdf (8 bytes) will be attached to the reply. Caption: Q3 report", false, []string{filepath.Join(ws, "report.pdf")}},
		{"absolute path inside", `{"file_path":"` + filepath.Join(ws, "report.pdf") + `"}`,
			"report.pdf (8 bytes) will be attached to the reply.", false, []string{filepath.Join(ws, "report.pdf")}},
		{"outside refused", `{"file_path":"` + filepath.Join(outside, "secret.txt") + `"}`,
			filepath.Join(outside, "secret.txt") + " is outside the workspace", true, nil},
		{"dot-dot refused", `{"file_path":"../` + filepath.Base(outside) + `/secret.txt"}`, filepath.Join(outside, "secret.txt") + " is outside the workspace", true, nil},
		{"symlink out refused", `{"file_path":"link.txt"}`, "link.txt is outside the workspace", true, nil},
		{"directory refused", `{"file_path":"dir"}`, "dir is not a regular file", true, nil},
		{"too big", `{"file_path":"big.bin"}`, "big.bin is 20.0 MiB; attachments are limited to 20.0 MiB", true, nil},
		{"missing", `{"file_path":"nope.png"}`, "File not found: nope.png. Check the path with Glob.", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, Attach(), env, tt.args)
			if res.IsError != tt.isErr || !strings.HasPrefix(res.Content, tt.want) {
				t.Fatalf("got %v %q, want %v %q", res.IsError, res.Content, tt.isErr, tt.want)
			}
			if diff := cmp.Diff(tt.attach, res.Attachments); diff != "" {
				t.Errorf("attachments (-want +got):\n%s", diff)
			}
		})
	}
}

package agentcore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
)

func TestParseSubagentType(t *testing.T) {
	tests := []struct {
		name, text string
		want       agentcore.SubagentType
		wantErr    string
	}{
		{name: "full", text: "---\nname: reviewer\ndescription: reads a diff and  reviews it\ntools: [Read, Grep, \"Glob\"]\nmodel: qwen3:8b\npermission_mode: strict\nfork: true\n---\nReview carefully.\n\nBe brief.\n",
			want: agentcore.SubagentType{Name: "reviewer", Description: "reads a diff and reviews it", Tools: []string{"Read", "Grep", "Glob"}, Model: "qwen3:8b", Mode: permission.ModeStrict, Fork: true, Prompt: "Review carefully.\n\nBe brief."}},
		{name: "name from the file", text: "---\ndescription: d\ntools: Read, Bash\n---\n",
			want: agentcore.SubagentType{Name: "fallback", Description: "d", Tools: []string{"Read", "Bash"}}},
		{name: "comments and quotes", text: "\ufeff---\n# a comment\ndescription: 'quoted'\npermissionMode: acceptEdits\n---\nbody",
			want: agentcore.SubagentType{Name: "fallback", Description: "quoted", Mode: permission.ModeAcceptEdits, Prompt: "body"}},
		{name: "trailing comments", text: "---\nname: tester   # default: the file name\ndescription: \"runs # tests\"\nfork: false # no\n---\n",
			want: agentcore.SubagentType{Name: "tester", Description: "runs # tests"}},
		{name: "no front matter", text: "just text", wantErr: "must start with front matter"},
		{name: "unclosed", text: "---\ndescription: d\n", wantErr: "no closing"},
		{name: "unknown key", text: "---\ndescription: d\nskills: x\n---\n", wantErr: `unknown key "skills"`},
		{name: "bad mode", text: "---\ndescription: d\npermission_mode: yolo\n---\n", wantErr: "unknown permission mode"},
		{name: "bad fork", text: "---\ndescription: d\nfork: maybe\n---\n", wantErr: "fork"},
		{name: "bad name", text: "---\nname: Bad Name\ndescription: d\n---\n", wantErr: "lowercase"},
		{name: "no description", text: "---\nname: x\n---\n", wantErr: "description is required"},
		{name: "bad tool", text: "---\ndescription: d\ntools: Read, Bash(rm:*)\n---\n", wantErr: "not a tool name"},
		{name: "not key value", text: "---\ndescription d\n---\n", wantErr: "not \"key: value\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := agentcore.ParseSubagentType("fallback", tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// FuzzParseSubagentType: type files come from workspaces (outside input):
// the parser never panics, and what it accepts is a usable type.
func FuzzParseSubagentType(f *testing.F) {
	f.Add("---\nname: a\ndescription: d\ntools: Read\nfork: true\n---\nbody")
	f.Add("---\n---\n")
	f.Add("---\ndescription: x\ntools: [,,]\n---")
	f.Add("\ufeff---\r\ndescription: d\r\n---\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		st, err := agentcore.ParseSubagentType("f", text)
		if err != nil {
			return
		}
		if st.Name == "" || len(st.Name) > 40 || st.Description == "" || !utf8.ValidString(st.Name) {
			t.Fatalf("accepted a bad type: %+v", st)
		}
		if st.Mode != "" {
			if _, err := permission.ParseMode(string(st.Mode)); err != nil {
				t.Fatalf("accepted mode %q", st.Mode)
			}
		}
		for _, n := range st.Tools {
			if n == "" || strings.ContainsAny(n, " ,()[]:*") {
				t.Fatalf("accepted tool name %q", n)
			}
		}
	})
}

func TestLoadSubagentTypesAndMerge(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(home, "explore.md", "---\ndescription: home's explore\n---\n")
	write(home, "broken.md", "no front matter")
	write(ws, "explore.md", "---\ndescription: the workspace's explore\ntools: Read\n---\n")
	write(ws, "tester.md", "---\ndescription: runs tests\n---\nRun go test.")
	write(ws, "notes.txt", "ignored")
	types, problems := agentcore.LoadSubagentTypes(home, filepath.Join(ws, "missing"), ws)
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "broken.md") {
		t.Fatalf("problems = %v", problems)
	}
	merged := agentcore.MergeSubagents(types...)
	var names []string
	for _, st := range merged {
		names = append(names, st.Name)
	}
	if diff := cmp.Diff([]string{"general-purpose", "explore", "tester"}, names); diff != "" {
		t.Fatalf("merged names (-want +got)\n%s", diff)
	}
	ex, _ := agentcore.FindSubagent(merged, "explore")
	if ex.Description != "the workspace's explore" || ex.Source != filepath.Join(ws, "explore.md") {
		t.Errorf("the workspace's file does not win: %+v", ex)
	}
}

func TestCapMode(t *testing.T) {
	const (
		strict = permission.ModeStrict
		std    = permission.ModeStandard
		edits  = permission.ModeAcceptEdits
		all    = permission.ModeUnrestricted
	)
	tests := []struct{ parent, want, got permission.Mode }{
		{std, "", std},
		{std, all, std}, // a type cannot grant itself unrestricted
		{edits, all, edits},
		{all, all, all},
		{all, strict, strict},
		{strict, edits, strict},
		{"", edits, std},
		{std, "bogus", strict},
		{"bogus", std, "bogus"}, // an unknown parent mode is strict: nothing is looser
	}
	for _, tc := range tests {
		if got := agentcore.CapMode(tc.parent, tc.want); got != tc.got {
			t.Errorf("CapMode(%q, %q) = %q, want %q", tc.parent, tc.want, got, tc.got)
		}
	}
}

func TestTaskNotificationText(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("line of the report\n", 1000)
	n := agentcore.TaskNotification(agentcore.Task{ID: "t-1", Type: "explore", Description: "look", Status: agentcore.TaskDone,
		Started: start, Ended: start.Add(12 * time.Second), Report: long, ReportFile: "/x/task-t-1.md"})
	for _, want := range []string{"<task-notification>\ntask-id: t-1\n", "type: explore", "status: done", "duration: 12s", "report-file: /x/task-t-1.md", "characters cut", "Read /x/task-t-1.md", "</task-notification>"} {
		if !strings.Contains(n, want) {
			t.Errorf("notification lacks %q", want)
		}
	}
	if len(n) > 9000 {
		t.Errorf("the notification is %d characters: the report was not clamped", len(n))
	}
}

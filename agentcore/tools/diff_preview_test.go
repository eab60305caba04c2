package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// Edit and Write show the change they would make in approval messages.
func TestDiffPreview(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &agentcore.ToolEnv{Workspace: ws}
	for _, tc := range []struct {
		tool agentcore.Tool
		args map[string]string
		want string
	}{
		{Edit(), map[string]string{"file_path": "a.txt", "old_string": "world", "new_string": "there"}, "+hello there"},
		{Write(), map[string]string{"file_path": "new.txt", "content": "fresh\n"}, "+fresh"},
	} {
		dp, ok := tc.tool.(agentcore.DiffPreviewer)
		if !ok {
			t.Fatalf("%s does not preview diffs", tc.tool.Spec().Name)
		}
		args, _ := json.Marshal(tc.args)
		diff, err := dp.PreviewDiff(args, env)
		if err != nil || !strings.Contains(diff, tc.want) {
			t.Fatalf("%s diff = %q, %v; want it to contain %q", tc.tool.Spec().Name, diff, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello world\n" {
		t.Fatal("previewing wrote the file")
	}
}

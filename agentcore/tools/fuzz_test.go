package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// fuzzSeeds are argument texts of every shape the model sends.
var fuzzSeeds = []string{
	``, `{}`, `null`, `[]`, `"x"`, `{"file_path":"a.txt"}`,
	`{"file_path":"a.txt","offset":2,"limit":1}`, `{"file_path":"a.txt","offset":"2","limit":1e3}`,
	`{"file_path":"a.txt","offset":-5}`, `{"file_path":"a.txt","limit":99999999999999999999}`,
	`{"file_path":"a.txt","old_string":"b","new_string":"c"}`,
	`{"file_path":"a.txt","old_string":"b","new_string":"c","replace_all":"yes"}`,
	`{"file_path":"a.txt","old_string":"\n","new_string":"\r\n","replace_all":true}`,
	`{"file_path":"dir","old_string":"","new_string":""}`, `{"file_path":{"x":1}}`,
	`{"FILE_PATH":"a.txt","Old_String":"a","new_string":"z"}`, "{\"file_path\":\"a\u0000.txt\"}",
}

// fuzzEnv is a workspace with a few files; inputs whose path would leave
// it are skipped so the fuzzer never touches anything else.
func fuzzEnv(f *testing.F) string {
	ws := f.TempDir()
	for name, content := range fuzzFiles {
		if _, _, err := writeAtomic(filepath.Join(ws, name), []byte(content)); err != nil {
			f.Fatal(err)
		}
	}
	return ws
}

var fuzzFiles = map[string]string{"a.txt": "a\nb\nb\nc\r\n", "bin": "\x00\x01", "dir/x": "x"}

func testEnvAt(ws string) *agentcore.ToolEnv {
	return &agentcore.ToolEnv{ConversationID: "c", Workspace: ws}
}

// inside reports whether the call's file_path (decoded exactly as the tool
// decodes it) stays in ws.
func inside(ws string, raw []byte) bool {
	var a struct {
		FilePath string `json:"file_path"`
	}
	if _, ok := decodeArgs(raw, &a); !ok || a.FilePath == "" {
		return true // the tool rejects it before touching a file
	}
	return within(ws, resolvePath(ws, a.FilePath)) && !strings.HasPrefix(strings.TrimSpace(a.FilePath), "~")
}

func FuzzEditArgs(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	ws := fuzzEnv(f)
	env := testEnvAt(ws)
	tl := Edit()
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !inside(ws, raw) {
			t.Skip("path outside the workspace")
		}
		// Each input starts from the same file.
		if _, _, err := writeAtomic(filepath.Join(ws, "a.txt"), []byte(fuzzFiles["a.txt"])); err != nil {
			t.Fatal(err)
		}
		res := tl.Run(context.Background(), json.RawMessage(raw), env)
		if res.Content == "" || strings.Contains(res.Content, "Internal error") {
			t.Fatalf("result for %q: %q", raw, res.Content)
		}
		_ = tl.Resource(json.RawMessage(raw), env)
		_, _ = EditDiff(ws, json.RawMessage(raw))
	})
}

func FuzzReadArgs(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	ws := fuzzEnv(f)
	env := testEnvAt(ws)
	tl := Read()
	f.Fuzz(func(t *testing.T, raw []byte) {
		res := tl.Run(context.Background(), json.RawMessage(raw), env)
		if res.Content == "" {
			t.Fatalf("empty result for %q", raw)
		}
		if strings.Contains(res.Content, "Internal error") {
			t.Fatalf("panic inside Read for %q: %s", raw, res.Content)
		}
	})
}

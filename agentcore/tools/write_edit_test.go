package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	env := testEnv(t)
	ws := env.Workspace
	writeFiles(t, ws, map[string]string{"old.txt": "12345", "dir/x": ""})
	if err := os.Chmod(filepath.Join(ws, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     string
		want     string
		isErr    bool
		file     string // checked when set
		content  string
		wantMode os.FileMode
	}{
		{"create with parents", `{"file_path":"a/b/new.txt","content":"hello"}`, "Created a/b/new.txt (5 bytes).", false, "a/b/new.txt", "hello", 0o644},
		{"overwrite keeps mode", `{"file_path":"old.txt","content":"abc"}`, "Overwrote old.txt (3 bytes, was 5).", false, "old.txt", "abc", 0o600},
		{"empty content", `{"file_path":"empty.txt","content":""}`, "Created empty.txt (0 bytes).", false, "empty.txt", "", 0o644},
		{"directory", `{"file_path":"dir","content":"x"}`, "Cannot write dir: it is a directory; give a file path", true, "", "", 0},
		{"missing content", `{"file_path":"c.txt"}`, "Invalid arguments: content is required. Send a JSON object matching the tool's schema.", true, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, Write(), env, tt.args)
			if res.IsError != tt.isErr || !strings.HasPrefix(res.Content, tt.want) {
				t.Fatalf("got %v %q, want %v %q", res.IsError, res.Content, tt.isErr, tt.want)
			}
			if tt.file == "" {
				return
			}
			p := filepath.Join(ws, tt.file)
			if got := readFile(t, p); got != tt.content {
				t.Errorf("file = %q, want %q", got, tt.content)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tt.wantMode {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.wantMode)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(ws, "c.txt")); err == nil {
		t.Error("a call without content created the file")
	}
	assertNoTemp(t, ws)
}

// assertNoTemp fails when a temporary file of writeAtomic was left behind.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// A write replaces the file by rename: a reader holding the old file keeps
// the old content whole, and the path names a new inode.
func TestWriteIsAtomicReplace(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Workspace, "f.txt")
	writeFiles(t, env.Workspace, map[string]string{"f.txt": "old content"})
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if res := run(t, Write(), env, `{"file_path":"f.txt","content":"new"}`); res.IsError {
		t.Fatal(res.Content)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("file was rewritten in place, not replaced by rename")
	}
	buf := make([]byte, 64)
	n, _ := held.Read(buf)
	if string(buf[:n]) != "old content" {
		t.Errorf("open reader sees %q, want the old content whole", buf[:n])
	}
}

func TestWriteThroughSymlink(t *testing.T) {
	env := testEnv(t)
	writeFiles(t, env.Workspace, map[string]string{"real.txt": "x"})
	link := filepath.Join(env.Workspace, "link.txt")
	if err := os.Symlink("real.txt", link); err != nil {
		t.Fatal(err)
	}
	if res := run(t, Write(), env, `{"file_path":"link.txt","content":"via link"}`); res.IsError {
		t.Fatal(res.Content)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link was replaced: %v %v", fi, err)
	}
	if got := readFile(t, filepath.Join(env.Workspace, "real.txt")); got != "via link" {
		t.Errorf("target = %q", got)
	}
}

func TestEdit(t *testing.T) {
	const base = "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n"
	tests := []struct {
		name    string
		file    string // initial content of f.go ("" = no file)
		args    string
		want    string // prefix of the result
		isErr   bool
		content string // content after the call
	}{
		{"unique", base, `{"file_path":"f.go","old_string":"func A() int {\n\treturn 1","new_string":"func A() int {\n\treturn 2"}`,
			"Edited f.go: replaced 1 occurrence.\n--- a/f.go\n+++ b/f.go\n@@ -2,5 +2,5 @@\n \n func A() int {\n-\treturn 1\n+\treturn 2\n }\n ", false,
			strings.Replace(base, "return 1", "return 2", 1)},
		{"not unique", base, `{"file_path":"f.go","old_string":"return 1","new_string":"return 3"}`,
			"old_string occurs 2 times in f.go; it must occur exactly once. Include more surrounding lines to make it unique, or set replace_all to true to change all 2.", true, base},
		{"replace all", base, `{"file_path":"f.go","old_string":"return 1","new_string":"return 3","replace_all":true}`,
			"Edited f.go: replaced 2 occurrences.", false, strings.ReplaceAll(base, "return 1", "return 3")},
		{"replace all as string", base, `{"file_path":"f.go","old_string":"return 1","new_string":"return 3","replace_all":"true"}`,
			"Edited f.go: replaced 2 occurrences.", false, strings.ReplaceAll(base, "return 1", "return 3")},
		{"not found", base, `{"file_path":"f.go","old_string":"return 9","new_string":"return 3"}`,
			"old_string was not found in f.go. Read the file", true, base},
		{"same strings", base, `{"file_path":"f.go","old_string":"return 1","new_string":"return 1"}`,
			"old_string and new_string are the same", true, base},
		{"empty old_string", base, `{"file_path":"f.go","old_string":"","new_string":"x"}`,
			"old_string is empty. To create a file or replace all of it, use Write.", true, base},
		{"missing new_string", base, `{"file_path":"f.go","old_string":"a"}`,
			"Invalid arguments: new_string is required", true, base},
		{"missing file", "", `{"file_path":"nope.go","old_string":"a","new_string":"b"}`,
			"File not found: nope.go. Check the path with Glob, or use Write to create it.", true, ""},
		{"crlf file", "a\r\nb\r\nc\r\n", `{"file_path":"f.go","old_string":"a\nb","new_string":"x\ny"}`,
			"Edited f.go: replaced 1 occurrence.", false, "x\r\ny\r\nc\r\n"},
		{"delete text", "keep\ndrop\nkeep\n", `{"file_path":"f.go","old_string":"drop\n","new_string":""}`,
			"Edited f.go: replaced 1 occurrence.\n--- a/f.go\n+++ b/f.go\n@@ -1,3 +1,2 @@\n keep\n-drop\n keep", false, "keep\nkeep\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			p := filepath.Join(env.Workspace, "f.go")
			if tt.file != "" {
				writeFiles(t, env.Workspace, map[string]string{"f.go": tt.file})
				if err := os.Chmod(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			res := run(t, Edit(), env, tt.args)
			if res.IsError != tt.isErr || !strings.HasPrefix(res.Content, tt.want) {
				t.Fatalf("got %v\n%s\nwant %v\n%s", res.IsError, res.Content, tt.isErr, tt.want)
			}
			if tt.file == "" {
				return
			}
			if got := readFile(t, p); got != tt.content {
				t.Errorf("file = %q, want %q", got, tt.content)
			}
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("mode after edit = %v (%v), want 0755", fi.Mode().Perm(), err)
			}
			assertNoTemp(t, env.Workspace)
		})
	}
}

func TestEditDiffAndWriteDiffDoNotWrite(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"f.txt": "one\ntwo\nthree\n"})
	got, err := EditDiff(ws, json.RawMessage(`{"file_path":"f.txt","old_string":"two","new_string":"2"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"
	if got != want {
		t.Errorf("EditDiff =\n%s\nwant\n%s", got, want)
	}
	if _, err := EditDiff(ws, json.RawMessage(`{"file_path":"f.txt","old_string":"zzz","new_string":"2"}`)); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("EditDiff of a failing edit: %v", err)
	}
	got, err = WriteDiff(ws, json.RawMessage(`{"file_path":"f.txt","content":"one\nthree\nfour\n"}`))
	if err != nil {
		t.Fatal(err)
	}
	want = "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n three\n+four"
	if got != want {
		t.Errorf("WriteDiff =\n%s\nwant\n%s", got, want)
	}
	got, err = WriteDiff(ws, json.RawMessage(`{"file_path":"new/n.txt","content":"a\nb\n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "--- a/new/n.txt\n+++ b/new/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b"; got != want {
		t.Errorf("WriteDiff of a new file =\n%s\nwant\n%s", got, want)
	}
	if readFile(t, filepath.Join(ws, "f.txt")) != "one\ntwo\nthree\n" {
		t.Error("a diff changed the file")
	}
	if _, err := os.Stat(filepath.Join(ws, "new")); err == nil {
		t.Error("WriteDiff created a directory")
	}
}

func TestUnifiedDiffHunks(t *testing.T) {
	var a, b []string
	for i := 1; i <= 20; i++ {
		a = append(a, string(rune('a'+i-1)))
	}
	b = append(b, a...)
	b[1] = "B"
	b[17] = "R"
	got := unifiedDiff("x", strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")
	want := "--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n@@ -16,5 +16,5 @@\n p\n q\n-r\n+R\n s\n t"
	if got != want {
		t.Errorf("unifiedDiff =\n%s\nwant\n%s", got, want)
	}
	if unifiedDiff("x", "same", "same") != "" {
		t.Error("diff of equal texts is not empty")
	}
}

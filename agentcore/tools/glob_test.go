package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGlob(t *testing.T) {
	env := testEnv(t)
	ws := env.Workspace
	writeFiles(t, ws, map[string]string{
		"old.go": "", "mid.go": "", "sub/new.go": "", "sub/x.ts": "", "sub/y.tsx": "",
		"node_modules/m/m.go": "", ".git/hooks/h.go": "", ".github/w.yml": "",
	})
	// Modification times set explicitly: newest first is the contract.
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"old.go", "mid.go", "sub/new.go", "sub/x.ts", "sub/y.tsx"} {
		mt := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(filepath.Join(ws, name), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		args  string
		want  string
		isErr bool
	}{
		{"newest first", `{"pattern":"**/*.go"}`, "sub/new.go\nmid.go\nold.go", false},
		{"top level only", `{"pattern":"*.go"}`, "mid.go\nold.go", false},
		{"alternatives", `{"pattern":"**/*.{ts,tsx}"}`, "sub/y.tsx\nsub/x.ts", false},
		{"under path", `{"pattern":"*","path":"sub"}`, "sub/y.tsx\nsub/x.ts\nsub/new.go", false},
		{"dot slash", `{"pattern":"./sub/*.go"}`, "sub/new.go", false},
		{"absolute pattern", `{"pattern":"` + filepath.ToSlash(ws) + `/sub/*.go"}`, "sub/new.go", false},
		{"node_modules when named", `{"pattern":"node_modules/**/*.go"}`, "node_modules/m/m.go", false},
		{"hidden dirs other than .git are searched", `{"pattern":"**/*.yml"}`, ".github/w.yml", false},
		{"no match", `{"pattern":"**/*.rs"}`, `No files match "**/*.rs" in .`, false},
		{"bad pattern", `{"pattern":"[a"}`, `Invalid glob pattern "[a"`, true},
		{"missing dir", `{"pattern":"*","path":"nope"}`, "Directory not found: nope. Check the path.", true},
		{"path is a file", `{"pattern":"*","path":"old.go"}`, "old.go is a file, not a directory", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, Glob(), env, tt.args)
			if res.IsError != tt.isErr || !strings.HasPrefix(res.Content, tt.want) {
				t.Fatalf("got %v\n%s\nwant %v\n%s", res.IsError, res.Content, tt.isErr, tt.want)
			}
			if !tt.isErr && !strings.HasPrefix(tt.want, "No files") && res.Content != tt.want {
				t.Fatalf("got\n%s\nwant exactly\n%s", res.Content, tt.want)
			}
		})
	}
}

func TestGlobCap(t *testing.T) {
	env := testEnv(t)
	files := map[string]string{}
	for i := 0; i < GlobMaxResults+10; i++ {
		files[fmt.Sprintf("f%03d.txt", i)] = ""
	}
	writeFiles(t, env.Workspace, files)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < GlobMaxResults+10; i++ {
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(env.Workspace, fmt.Sprintf("f%03d.txt", i)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	res := run(t, Glob(), env, `{"pattern":"*.txt"}`)
	lines := strings.Split(res.Content, "\n")
	if len(lines) != GlobMaxResults+1 || lines[0] != "f209.txt" || lines[GlobMaxResults-1] != "f010.txt" ||
		lines[GlobMaxResults] != "(showing the 200 newest of 210 files; use a narrower pattern or path)" {
		t.Fatalf("got %d lines: first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

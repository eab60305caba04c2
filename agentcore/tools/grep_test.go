package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// rgPath returns ripgrep's path, skipping the test when it is missing
// unless CI=true (then the test fails: CI must exercise both searches).
func rgPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("rg")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("rg is required in CI: %v", err)
		}
		t.Skip("rg not installed")
	}
	return p
}

func grepTree(t *testing.T) *agentcore.ToolEnv {
	t.Helper()
	env := testEnv(t)
	files := map[string]string{
		"a.go":              "package a\nfunc Hello() {}\n// TODO: fix\n",
		"b.txt":             "hello world\nHELLO\n",
		"sub/c.go":          "package sub\n// TODO one\n// TODO two\n",
		"sub/deep/d.md":     "todo lower\n",
		"sub/deep/e.go":     "package deep // no match here\n",
		".hidden/h.go":      "TODO hidden\n",
		".env":              "TODO=secret\n",
		"node_modules/m.js": "TODO module\n",
		"bin.dat":           "TODO\x00\x01\x02",
		"empty.txt":         "",
		"crlf.txt":          "TODO crlf\r\nnext\r\n",
		"-dash.txt":         "TODO dash\n",
	}
	for i := 0; i < 3; i++ {
		files[fmt.Sprintf("many/f%03d.txt", i)] = "needle\n"
	}
	writeFiles(t, env.Workspace, files)
	return env
}

var grepCases = []struct {
	name  string
	args  string
	want  string
	isErr bool
}{
	{"files default", `{"pattern":"TODO"}`, "-dash.txt\na.go\ncrlf.txt\nsub/c.go", false},
	{"content", `{"pattern":"TODO","output_mode":"content"}`,
		"-dash.txt:1:TODO dash\na.go:3:// TODO: fix\ncrlf.txt:1:TODO crlf\nsub/c.go:2:// TODO one\nsub/c.go:3:// TODO two", false},
	{"count", `{"pattern":"TODO","output_mode":"count"}`,
		"-dash.txt:1\na.go:1\ncrlf.txt:1\nsub/c.go:2\n(5 matching lines in 4 files)", false},
	{"case-insensitive flag", `{"pattern":"(?i)todo","glob":"*.md"}`, "sub/deep/d.md", false},
	{"glob by name", `{"pattern":"package","glob":"*.go"}`, "a.go\nsub/c.go\nsub/deep/e.go", false},
	{"glob with directories", `{"pattern":"package","glob":"sub/**/*.go"}`, "sub/c.go\nsub/deep/e.go", false},
	{"negated glob", `{"pattern":"(?i)todo","glob":"!*.go"}`, "-dash.txt\ncrlf.txt\nsub/deep/d.md", false},
	{"path is a directory", `{"pattern":"TODO","path":"sub","output_mode":"content"}`, "sub/c.go:2:// TODO one\nsub/c.go:3:// TODO two", false},
	{"path is a file", `{"pattern":"Hello","path":"a.go","output_mode":"content"}`, "a.go:2:func Hello() {}", false},
	{"path with glob is relative to path", `{"pattern":"package","path":"sub","glob":"deep/*.go"}`, "sub/deep/e.go", false},
	{"hidden directory searched when named", `{"pattern":"TODO","path":".hidden"}`, ".hidden/h.go", false},
	{"anchors", `{"pattern":"^hello$","output_mode":"content"}`, `No matches for "^hello$"`, false},
	{"anchored line", `{"pattern":"^HELLO$","output_mode":"content"}`, "b.txt:2:HELLO", false},
	{"no match", `{"pattern":"zzzz"}`, `No matches for "zzzz" in .`, false},
	{"invalid pattern", `{"pattern":"(unclosed"}`, "Grep failed: invalid pattern", true},
	{"bad mode", `{"pattern":"x","output_mode":"lines"}`, "Invalid arguments: output_mode must be one of", true},
	{"missing path", `{"pattern":"x","path":"nowhere"}`, "Path not found: nowhere. Check it with Glob.", true},
}

// The same table runs against both searches: rg and the Go fallback
// must give the same results.
func TestGrepParity(t *testing.T) {
	searchers := map[string]func(t *testing.T) searcher{
		"go": func(*testing.T) searcher { return searchGo },
		"rg": func(t *testing.T) searcher { return rgSearcher(rgPath(t)) },
	}
	for _, impl := range []string{"go", "rg"} {
		t.Run(impl, func(t *testing.T) {
			search := searchers[impl](t)
			env := grepTree(t)
			for _, tt := range grepCases {
				t.Run(tt.name, func(t *testing.T) {
					res := runGrep(context.Background(), json.RawMessage(tt.args), env, search)
					if res.IsError != tt.isErr || !strings.HasPrefix(res.Content, tt.want) {
						t.Fatalf("got %v\n%s\nwant %v\n%s", res.IsError, res.Content, tt.isErr, tt.want)
					}
					if !tt.isErr && !strings.HasPrefix(tt.want, "No matches") && res.Content != tt.want {
						t.Fatalf("got\n%s\nwant exactly\n%s", res.Content, tt.want)
					}
				})
			}
		})
	}
}

func TestGrepTruncationParity(t *testing.T) {
	env := testEnv(t)
	files := map[string]string{}
	for i := 0; i < GrepMaxFiles+30; i++ {
		files[fmt.Sprintf("d/f%04d.txt", i)] = "match\nmatch\nmatch\n"
	}
	writeFiles(t, env.Workspace, files)
	results := map[string][]string{}
	for name, search := range map[string]func() searcher{
		"go": func() searcher { return searchGo },
		"rg": func() searcher { return rgSearcher(rgPath(t)) },
	} {
		if name == "rg" {
			if _, err := exec.LookPath("rg"); err != nil && os.Getenv("CI") != "true" {
				continue
			}
		}
		s := search()
		for _, mode := range []string{modeFiles, modeContent, modeCount} {
			res := runGrep(context.Background(), json.RawMessage(`{"pattern":"match","output_mode":"`+mode+`"}`), env, s)
			if res.IsError {
				t.Fatalf("%s %s: %s", name, mode, res.Content)
			}
			lines := strings.Split(res.Content, "\n")
			wantN := GrepMaxFiles
			if mode == modeContent {
				wantN = GrepMaxLines
			}
			if len(lines) != wantN+1 || !strings.HasPrefix(lines[wantN], "(results cut at") {
				t.Errorf("%s %s: %d lines, last %q", name, mode, len(lines), lines[len(lines)-1])
			}
			results[name] = append(results[name], res.Content)
		}
	}
	if rg, ok := results["rg"]; ok {
		for i := range rg {
			if rg[i] != results["go"][i] {
				t.Errorf("rg and Go differ in mode %d", i)
			}
		}
	}
}

func TestGrepUsesRgWhenInstalled(t *testing.T) {
	rgPath(t)
	env := grepTree(t)
	res := run(t, Grep(), env, `{"pattern":"TODO"}`)
	if res.IsError || res.Content != grepCases[0].want {
		t.Fatalf("Grep() = %+v", res)
	}
}

func TestGrepCancelled(t *testing.T) {
	env := grepTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	search := map[string]searcher{"go": searchGo}
	if rg, err := exec.LookPath("rg"); err == nil {
		search["rg"] = rgSearcher(rg)
	}
	for name, s := range search {
		res := runGrep(ctx, json.RawMessage(`{"pattern":"TODO"}`), env, s)
		if !res.IsError || res.Content != "Grep cancelled." {
			t.Errorf("%s: %+v", name, res)
		}
	}
}

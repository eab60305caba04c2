package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	env := testEnv(t)
	ws := env.Workspace
	long := strings.Repeat("x", 2500)
	var many strings.Builder
	for i := 1; i <= 2100; i++ {
		fmt.Fprintf(&many, "%d\n", i)
	}
	var wide strings.Builder
	for i := 1; i <= 1000; i++ {
		wide.WriteString(strings.Repeat("w", 99) + "\n")
	}
	writeFiles(t, ws, map[string]string{
		"abc.txt":     "a\nb\nc\n",
		"noeol.txt":   "a\nb",
		"crlf.txt":    "a\r\nb\r\n",
		"empty.txt":   "",
		"long.txt":    long + "\nshort\n",
		"many.txt":    many.String(),
		"wide.txt":    wide.String(),
		"bin.dat":     "PK\x03\x04\x00\x00binary",
		"late.bin":    "text\n" + strings.Repeat("y", 10000) + "\nmore\x00",
		"sub/in.txt":  "inner\n",
		"image.png":   "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"dir/keep.md": "",
	})
	tests := []struct {
		name    string
		args    string
		want    string // exact content, or a substring when contains is set
		contain bool
		isErr   bool
	}{
		{"whole file", `{"file_path":"abc.txt"}`, "     1\ta\n     2\tb\n     3\tc", false, false},
		{"absolute path", `{"file_path":"` + filepath.Join(ws, "abc.txt") + `"}`, "     1\ta\n     2\tb\n     3\tc", false, false},
		{"unclean path", `{"file_path":"sub/../abc.txt"}`, "     1\ta", true, false},
		{"no final newline", `{"file_path":"noeol.txt"}`, "     1\ta\n     2\tb", false, false},
		{"crlf", `{"file_path":"crlf.txt"}`, "     1\ta\n     2\tb", false, false},
		{"offset and limit", `{"file_path":"abc.txt","offset":2,"limit":1}`, "     2\tb\n(showing lines 2-2 of 3; continue with offset=3)", false, false},
		{"offset as string", `{"file_path":"abc.txt","offset":"3"}`, "     3\tc", false, false},
		{"offset zero means 1", `{"file_path":"abc.txt","offset":0,"limit":1}`, "     1\ta\n(showing lines 1-1 of 3; continue with offset=2)", false, false},
		{"offset past end", `{"file_path":"abc.txt","offset":10}`, "abc.txt has 3 lines; offset 10 is past the end.", false, true},
		{"negative offset", `{"file_path":"abc.txt","offset":-1}`, "offset must be", true, true},
		{"negative limit", `{"file_path":"abc.txt","limit":-5}`, "limit must be positive", true, true},
		{"empty", `{"file_path":"empty.txt"}`, "(empty.txt is empty)", false, false},
		{"long line cut", `{"file_path":"long.txt"}`, "     1\t" + strings.Repeat("x", 2000) + " … [line cut]\n     2\tshort", false, false},
		{"default limit 2000", `{"file_path":"many.txt"}`, "  2000\t2000\n(showing lines 1-2000 of 2100; continue with offset=2001)", true, false},
		{"tail of a long file", `{"file_path":"many.txt","offset":2099}`, "  2099\t2099\n  2100\t2100", false, false},
		{"output budget", `{"file_path":"wide.txt"}`, "(output limit reached) (showing lines 1-", true, false},
		{"binary", `{"file_path":"bin.dat"}`, "bin.dat is a binary file", true, true},
		{"binary after the head", `{"file_path":"late.bin"}`, "late.bin is a binary file", true, true},
		{"image hints Attach", `{"file_path":"image.png"}`, "Attach", true, true},
		{"directory", `{"file_path":"dir"}`, "dir is a directory, not a file. Use Glob", true, true},
		{"missing", `{"file_path":"nope.txt"}`, "File not found: nope.txt. Check the path with Glob.", false, true},
		{"missing path", `{"file_path":""}`, "file_path is required", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, Read(), env, tt.args)
			if res.IsError != tt.isErr {
				t.Fatalf("IsError = %v, want %v; content:\n%s", res.IsError, tt.isErr, res.Content)
			}
			if tt.contain {
				if !strings.Contains(res.Content, tt.want) {
					t.Fatalf("content does not contain %q:\n%s", tt.want, clip(res.Content, 3000))
				}
			} else if res.Content != tt.want {
				t.Fatalf("content =\n%q\nwant\n%q", clip(res.Content, 3000), tt.want)
			}
			if len(res.Content) > MaxOutputChars+200 {
				t.Errorf("result has %d characters, above the clamp", len(res.Content))
			}
		})
	}
}

func TestReadSizeGuard(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Workspace, "big.log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("z", 1023) + "\n"
	for i := 0; i < 11*1024; i++ { // 11 MiB of text
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	res := run(t, Read(), env, `{"file_path":"big.log"}`)
	if !res.IsError || !strings.Contains(res.Content, "Pass offset and limit") {
		t.Fatalf("whole big file: %+v", res)
	}
	res = run(t, Read(), env, `{"file_path":"big.log","offset":5,"limit":2}`)
	if res.IsError || !strings.HasPrefix(res.Content, "     5\tzzz") || !strings.Contains(res.Content, "     6\t") ||
		!strings.HasSuffix(res.Content, "(showing lines 5-6; more may follow: continue with offset=7)") {
		t.Fatalf("part of big file: %v %q", res.IsError, clip(res.Content, 300))
	}
}

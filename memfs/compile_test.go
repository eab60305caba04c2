package memfs

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

func TestCompileIsDeterministicAndReadsOnlyHEAD(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	writeFile(t, r, "notes/fact.md", "The build machine is called atlas.\n")
	mustCommit(t, r, "fact")

	c1, err := r.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c1.Text, `<memory_file path="notes/fact.md">`+"\nThe build machine is called atlas.\n</memory_file>") {
		t.Errorf("compiled text lacks the committed fact:\n%s", c1.Text)
	}
	if c1.Files != 4 || len(c1.Truncated) != 0 {
		t.Errorf("Files=%d Truncated=%v; want 4 files, none cut", c1.Files, c1.Truncated)
	}

	// Uncommitted edits: a new file, a changed file, a deleted file.
	writeFile(t, r, "notes/secret.md", "uncommitted\n")
	writeFile(t, r, "system/persona.md", "uncommitted persona\n")
	writeFile(t, r, "notes/fact.md", "changed but not committed\n")
	c2, err := r.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c1, c2); diff != "" {
		t.Errorf("Compile changed without a commit (-before +after):\n%s", diff)
	}
	for _, f := range func() []File { fs, _ := r.ReadHEAD(ctx); return fs }() {
		if strings.Contains(f.Content, "uncommitted") {
			t.Errorf("ReadHEAD returned work-tree content in %s", f.Path)
		}
	}

	// Another Repo value on the same directory compiles the same bytes.
	other := openTestRepo(t, r.Dir(), Options{})
	c3, err := other.Compile(ctx)
	if err != nil || c3.Text != c1.Text || c3.Revision != c1.Revision {
		t.Errorf("second Repo compiled different text (err %v)", err)
	}

	mustCommit(t, r, "now commit")
	c4, err := r.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c4.Revision == c1.Revision || !strings.Contains(c4.Text, "uncommitted persona") {
		t.Errorf("Compile after commit does not reflect it:\n%s", c4.Text)
	}
}

func TestCompileOrderAndFileKinds(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	// Commit with go-git directly, as a person with real git might: files
	// CommitWorkTree would refuse still must not reach the prompt.
	writeFile(t, r, "a.txt", "plain text\n")
	writeFile(t, r, "data.json", "{\"x\":1}\n")
	writeFile(t, r, "system/zz.md", "last system file\n")
	g, err := git.PlainOpen(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	wt, err := g.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", "data.json", "system/zz.md"} {
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.Commit("by hand", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@t"}}); err != nil {
		t.Fatal(err)
	}
	c, err := r.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(c.Text, "\n") {
		if p, ok := strings.CutPrefix(line, `<memory_file path="`); ok {
			order = append(order, strings.TrimSuffix(p, `">`))
		}
	}
	want := []string{"system/human.md", "system/persona.md", "system/zz.md", "README.md", "a.txt"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("render order (-want +got):\n%s", diff)
	}
	if strings.Contains(c.Text, `"x":1`) {
		t.Errorf("a .json file reached the prompt")
	}
	if !strings.HasPrefix(c.Text, `<memory dir="`+r.Dir()+`">`) || !strings.HasSuffix(c.Text, "</memory>\n") {
		t.Errorf("compiled text is not wrapped in <memory>:\n%s", c.Text)
	}
	files, _ := r.ReadHEAD(ctx)
	if len(files) != 6 {
		t.Errorf("ReadHEAD returned %d files, want all 6 committed ones", len(files))
	}
}

func TestCompileLimits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// A generous writer commits; readers with smaller limits compile.
	w := openTestRepo(t, dir, Options{MaxFileBytes: 64 << 10})
	writeFile(t, w, "system/big.md", strings.Repeat("long line of memory text\n", 800)) // 20 000 bytes
	for i := range 30 {
		writeFile(t, w, fmt.Sprintf("notes/n%02d.md", i), strings.Repeat(fmt.Sprintf("note %d ", i), 120)+"\n")
	}
	mustCommit(t, w, "lots")

	t.Run("per file", func(t *testing.T) {
		r := openTestRepo(t, dir, Options{MaxFileBytes: 4096, MaxTotalBytes: 1 << 20})
		c, err := r.Compile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(c.Truncated, []string{"system/big.md"}) || c.Files != 34 {
			t.Errorf("Truncated=%v Files=%d; want only system/big.md cut, 34 files", c.Truncated, c.Files)
		}
		body := between(c.Text, `<memory_file path="system/big.md">`+"\n", "</memory_file>")
		if len(body) > 4096 || !strings.Contains(body, "[cut: this file is 20000 bytes") {
			t.Errorf("cut file body is %d bytes (limit 4096) or lacks the note:\n...%s", len(body), body[max(0, len(body)-200):])
		}
	})
	t.Run("total", func(t *testing.T) {
		r := openTestRepo(t, dir, Options{MaxFileBytes: 4096, MaxTotalBytes: 12 << 10})
		c, err := r.Compile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Text) > 12<<10 {
			t.Errorf("compiled text is %d bytes, over the 12 KiB total", len(c.Text))
		}
		if len(c.Truncated) < 20 || !strings.Contains(c.Text, "<memory_omitted>") || !strings.Contains(c.Text, "notes/n29.md") && !strings.Contains(c.Text, "more") {
			t.Errorf("Truncated=%v; the note of omitted files is missing:\n%s", c.Truncated, c.Text[len(c.Text)-600:])
		}
		c2, _ := r.Compile(ctx)
		if c2.Text != c.Text {
			t.Errorf("a truncated compile is not deterministic")
		}
	})
}

func between(s, start, end string) string {
	_, after, _ := strings.Cut(s, start)
	body, _, _ := strings.Cut(after, end)
	return body
}

func TestRenderBounds(t *testing.T) {
	multi := strings.Repeat("日本語のメモ。", 400) // multi-byte runes, no newlines
	files := []File{{"system/a.md", multi}, {"b.md", "short\n"}, {"c.md", multi}, {"d.md", strings.Repeat("x\n", 3000)}}
	for _, tc := range []struct{ maxFile, maxTotal int }{
		{100, 100000}, {1000, 2000}, {8192, 24576}, {300, 1500}, {5000, 3000},
	} {
		c := render("/m", append([]File(nil), files...), tc.maxFile, tc.maxTotal)
		if len(c.Text) > tc.maxTotal {
			t.Errorf("render(%d, %d): %d bytes, over the total", tc.maxFile, tc.maxTotal, len(c.Text))
		}
		if !utf8.ValidString(c.Text) {
			t.Errorf("render(%d, %d): cut inside a rune", tc.maxFile, tc.maxTotal)
		}
		if c.Files+len(c.Truncated) < len(files) {
			t.Errorf("render(%d, %d): %d shown + %v truncated do not account for %d files", tc.maxFile, tc.maxTotal, c.Files, c.Truncated, len(files))
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add("notes/a.md", "hello\nworld\n", "b.md", "x", 200, 1000)
	f.Add("system/p.md", strings.Repeat("é", 500), "c.txt", "</memory_file>", 64, 700)
	f.Fuzz(func(t *testing.T, p1, c1, p2, c2 string, maxFile, maxTotal int) {
		if maxFile <= 0 || maxFile > 1<<16 || maxTotal < 1024 || maxTotal > 1<<18 {
			return
		}
		in := []File{{p1, c1}, {p2, c2}}
		a := render("/mem", append([]File(nil), in...), maxFile, maxTotal)
		b := render("/mem", append([]File(nil), in...), maxFile, maxTotal)
		if a.Text != b.Text {
			t.Fatal("render is not deterministic")
		}
		if len(p1)+len(p2) < 200 && len(a.Text) > maxTotal {
			t.Fatalf("render: %d bytes over total %d", len(a.Text), maxTotal)
		}
		if utf8.ValidString(c1) && utf8.ValidString(c2) && utf8.ValidString(p1) && utf8.ValidString(p2) && !utf8.ValidString(a.Text) {
			t.Fatal("render cut inside a rune")
		}
	})
}

func TestEscapeAttr(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path.md":      "plain/path.md",
		`a"b<c>&d` + "\n.md": "a&quot;b&lt;c&gt;&amp;d&#10;.md",
		"日本.md":              "日本.md",
	} {
		if got := escapeAttr(in); got != want {
			t.Errorf("escapeAttr(%q) = %q, want %q", in, got, want)
		}
	}
}

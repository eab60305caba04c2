package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClamp(t *testing.T) {
	long := strings.Repeat("a", 50) + strings.Repeat("b", 50)
	lines := strings.Repeat("line of text\n", 40)
	tests := []struct {
		name      string
		in        string
		max       int
		wantTrunc bool
		check     func(t *testing.T, out string)
	}{
		{"fits", "hello", 5, false, func(t *testing.T, out string) { eq(t, out, "hello") }},
		{"no limit", long, 0, false, func(t *testing.T, out string) { eq(t, out, long) }},
		{"head and tail", long, 60, true, func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "aaaa") || !strings.HasSuffix(out, "bbbb") {
				t.Errorf("head or tail lost: %q", out)
			}
			mustContain(t, out, "characters cut")
		}},
		{"counts runes, not bytes", strings.Repeat("ü", 100), 100, false, nil},
		{"never splits runes", strings.Repeat("日本語", 100), 50, true, nil},
		{"tiny max keeps the head only", long, 5, true, func(t *testing.T, out string) { eq(t, out, "aaaaa") }},
		{"cuts at line boundaries", lines, 200, true, func(t *testing.T, out string) {
			head, _, _ := strings.Cut(out, "\n[…")
			if !strings.HasSuffix(head, "text\n") {
				t.Errorf("head ends mid-line: %q", head)
			}
			_, tail, _ := strings.Cut(out, "cut …]\n")
			if !strings.HasPrefix(tail, "line of") {
				t.Errorf("tail starts mid-line: %q", tail)
			}
		}},
		{"invalid UTF-8 repaired", "ok\xffok", 10, false, func(t *testing.T, out string) { eq(t, out, "ok\uFFFDok") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, trunc := Clamp(tt.in, tt.max)
			if trunc != tt.wantTrunc {
				t.Errorf("truncated = %v, want %v (%q)", trunc, tt.wantTrunc, out)
			}
			checkClamp(t, tt.in, tt.max, out, trunc)
			if tt.check != nil {
				tt.check(t, out)
			}
		})
	}
}

func eq(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// checkClamp checks Clamp's promises for any input.
func checkClamp(t *testing.T, in string, max int, out string, trunc bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 out of Clamp(%q, %d): %q", in, max, out)
	}
	valid := strings.ToValidUTF8(in, "\uFFFD")
	if max > 0 && utf8.RuneCountInString(out) > max {
		t.Fatalf("Clamp(_, %d) returned %d runes", max, utf8.RuneCountInString(out))
	}
	if !trunc {
		if out != valid {
			t.Fatalf("not truncated but changed: %q -> %q", in, out)
		}
		return
	}
	if max > 0 && utf8.RuneCountInString(valid) <= max {
		t.Fatalf("truncated although %q fits in %d", in, max)
	}
	head, tail, found := strings.Cut(out, "\n[… ")
	if !found {
		if !strings.HasPrefix(valid, out) {
			t.Fatalf("head-only result is not a prefix: %q", out)
		}
		return
	}
	if i := strings.LastIndex(out, " characters cut …]\n"); i >= 0 {
		tail = out[i+len(" characters cut …]\n"):]
	}
	if !strings.HasPrefix(valid, head) || !strings.HasSuffix(valid, tail) {
		t.Fatalf("head %q / tail %q not taken from the input", head, tail)
	}
}

func FuzzClamp(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("line\n", 100), 60)
	f.Add(strings.Repeat("日本語", 30), 40)
	f.Add("\xff\xfe abc \xc3", 2)
	f.Add(strings.Repeat("x", 1000), 31)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 5000 // keep the runtime bounded
		out, trunc := Clamp(s, max)
		checkClamp(t, s, max, out, trunc)
	})
}

func TestWriteOverflow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "overflow")
	red := NewRedactor("canary-overflow-secret")
	path, err := WriteOverflow(dir, "call_1/../x.txt", "full output canary-overflow-secret end", red)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir {
		t.Fatalf("written outside the overflow dir: %s", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, string(data), "full output [REDACTED] end")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	// Rewriting the same name replaces the file and leaves no temp files.
	if _, err := WriteOverflow(dir, "call_1/../x.txt", "second", nil); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("%d files in the overflow dir, want 1", len(ents))
	}
	for _, bad := range []string{"", ".", "..", "///", strings.Repeat("x", 300)} {
		if _, err := WriteOverflow(dir, bad, "x", nil); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

package permission

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rule
		err  string
	}{
		{in: "Bash", want: Rule{Tool: "Bash"}},
		{in: "Bash(go test:*)", want: Rule{Tool: "Bash", Pattern: "go test:*"}},
		{in: "  Bash( ls )  ", want: Rule{Tool: "Bash", Pattern: "ls"}},
		{in: "Bash(npm run *)", want: Rule{Tool: "Bash", Pattern: "npm run *"}},
		{in: "Bash(*)", want: Rule{Tool: "Bash", Pattern: "*"}},
		{in: "Edit(src/**)", want: Rule{Tool: "Edit", Pattern: "src/**"}},
		{in: "Edit(src/(group)/page.tsx)", want: Rule{Tool: "Edit", Pattern: "src/(group)/page.tsx"}},
		{in: "Read", want: Rule{Tool: "Read"}},
		{in: "Read(~/.config/**)", want: Rule{Tool: "Read", Pattern: "~/.config/**"}},
		{in: "WebFetch(*)", want: Rule{Tool: "WebFetch", Pattern: "*"}},
		{in: "mcp__github__create_issue", want: Rule{Tool: "mcp__github__create_issue"}},
		{in: "", err: "empty rule"},
		{in: "   ", err: "empty rule"},
		{in: "Bash(", err: `missing closing ")"`},
		{in: "Bash(ls", err: `missing closing ")"`},
		{in: "Bash()", err: "empty pattern"},
		{in: "(ls)", err: "missing tool name"},
		{in: "Ba sh", err: "tool name"},
		{in: "Bash)", err: `")" without "("`},
		{in: "Bash(ls) x", err: `missing closing ")"`},
		{in: "Bash(go*:*)", err: "wildcard"},
		{in: "Bash(g?t status)", err: "wildcard"},
		{in: "Edit([)", err: "not a valid glob"},
		{in: "Read(src/{a,b)", err: "not a valid glob"},
	} {
		got, err := ParseRule(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRule(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), "Bash(go test:*)") {
				t.Errorf("ParseRule(%q) error %q does not show the expected form", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRule(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
			continue
		}
		again, err := ParseRule(got.String())
		if err != nil || again != got {
			t.Errorf("ParseRule(%q).String() = %q does not parse back: %#v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"", ModeStandard, true},
		{"standard", ModeStandard, true},
		{"acceptEdits", ModeAcceptEdits, true},
		{" unrestricted ", ModeUnrestricted, true},
		{"strict", ModeStrict, true},
		{"yolo", "", false},
		{"Strict", "", false},
	} {
		got, err := ParseMode(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "acceptEdits") {
			t.Errorf("ParseMode(%q) error %q does not list the modes", tc.in, err)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"Bash(go test:*)", "Edit(src/**)", "Read", "WebFetch(*)", "Bash(", "Edit([)", "x(y(z))", "Bash(a b c)", "Read(\\*)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if r.Tool == "" {
			t.Fatalf("ParseRule(%q) accepted an empty tool", s)
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %#v; String %q parses to %#v, %v", s, r, r.String(), again, err)
		}
	})
}

package sandbox

import (
	"strings"
	"sync"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"none registered", nil, "abc secret123", "abc secret123"},
		{"plain", []string{"secret123"}, "key=secret123; again secret123", "key=[REDACTED]; again [REDACTED]"},
		{"short values ignored", []string{"", "abc", "12345"}, "abc 12345", "abc 12345"},
		{"longest first: contained secret", []string{"secret", "secret123"}, "x secret123 y secret z", "x [REDACTED] y [REDACTED] z"},
		{"overlapping secrets merge", []string{"abcdef123", "def123xyz"}, "--abcdef123xyz--", "--[REDACTED]--"},
		{"adjacent secrets merge", []string{"aaaaaa1", "bbbbbb2"}, "aaaaaa1bbbbbb2", "[REDACTED]"},
		{"self-overlapping occurrences", []string{"aaaaaa"}, "xaaaaaaaay", "x[REDACTED]y"},
		{"trimmed newline", []string{"tok-123456\n"}, "got tok-123456.", "got [REDACTED]."},
		{"multibyte", []string{"pässwörd"}, "ü pässwörd ü", "ü [REDACTED] ü"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRedactor(tt.secrets...)
			if got := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := string(r.RedactBytes([]byte(tt.in))); got != tt.want {
				t.Errorf("RedactBytes(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactNil(t *testing.T) {
	var r *Redactor
	if got := r.Redact("secret123"); got != "secret123" {
		t.Fatalf("nil Redactor changed the text: %q", got)
	}
	b := []byte("secret123")
	if got := r.RedactBytes(b); &got[0] != &b[0] {
		t.Fatal("nil Redactor copied the bytes")
	}
	if r.Contains("x") || r.Len() != 0 {
		t.Fatal("nil Redactor knows secrets")
	}
}

func TestRedactConcurrent(t *testing.T) {
	r := NewRedactor()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s := strings.Repeat("z", 6) + string(rune('a'+i))
			r.Add(s)
			if got := r.Redact("<" + s + ">"); got != "<[REDACTED]>" {
				t.Errorf("got %q", got)
			}
		})
	}
	wg.Wait()
	if r.Len() != 8 {
		t.Fatalf("Len = %d, want 8", r.Len())
	}
}

// FuzzRedact checks that no registered secret survives redaction, whatever
// the text and however the secrets overlap.
func FuzzRedact(f *testing.F) {
	f.Add("abcdef123", "def123xyz", "--abcdef123xyz--abcdef")
	f.Add("aaaaaa", "aaaaaaa", "aaaaaaaaaaaaaaa")
	f.Add("секрет-ключ", "ключ-секрет", "секрет-ключ-секрет")
	f.Fuzz(func(t *testing.T, s1, s2, text string) {
		r := NewRedactor(s1, s2)
		out := r.Redact(text)
		// A secret may be spelled by a marker and the text beside it
		// ("D]abc" after "[REDACTED]"); that is no leak, so look at the
		// text with the markers taken out.
		bare := strings.ReplaceAll(out, Redacted, "\x00")
		for _, s := range []string{s1, s2} {
			s = strings.TrimSpace(s)
			if len(s) >= MinSecretLen && !strings.Contains(s, "\x00") && strings.Contains(bare, s) {
				t.Fatalf("secret %q survives in %q", s, out)
			}
		}
		if r.Len() == 0 && out != text {
			t.Fatalf("nothing registered but text changed: %q -> %q", text, out)
		}
	})
}

package sandbox

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Redacted is what a [Redactor] puts where a secret was.
const Redacted = "[REDACTED]"

// MinSecretLen is the shortest value a [Redactor] accepts as a secret.
// Shorter values ("1", "true", "admin") would redact ordinary words and
// numbers all over the output while protecting nothing.
const MinSecretLen = 6

// Redactor replaces known secret values with [Redacted] everywhere.
// It is safe for concurrent use; Add may run while other goroutines Redact.
// Overlapping or nested occurrences of several secrets are replaced as one
// span, so no fragment of any secret is left beside the marker.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string // unique, longest first
}

// NewRedactor returns a Redactor for the given secrets. Empty values and
// values shorter than [MinSecretLen] bytes are ignored.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers more secret values. A value with surrounding white space
// (a token read from a file with its newline) is registered both as given
// and trimmed. Empty and short values are ignored. Add must not be called on
// a nil Redactor.
func (r *Redactor) Add(secrets ...string) {
	var add []string
	for _, s := range secrets {
		for _, v := range []string{s, strings.TrimSpace(s)} {
			if len(v) >= MinSecretLen {
				add = append(add, v)
			}
		}
	}
	if len(add) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range add {
		if !slices.Contains(r.secrets, v) {
			r.secrets = append(r.secrets, v)
		}
	}
	slices.SortStableFunc(r.secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
}

// Len reports how many secret values are registered. A nil Redactor has none.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.secrets)
}

// maxLen is the length in bytes of the longest registered secret.
func (r *Redactor) maxLen() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.secrets) == 0 {
		return 0
	}
	return len(r.secrets[0])
}

// Contains reports whether s contains any registered secret.
func (r *Redactor) Contains(s string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

// Redact returns s with every occurrence of a registered secret replaced by
// [Redacted]. Longer secrets win over shorter ones they contain, and
// overlapping occurrences merge into one marker. A nil Redactor returns s
// unchanged.
func (r *Redactor) Redact(s string) string {
	spans := r.spans(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		b.WriteString(Redacted)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// RedactBytes is [Redactor.Redact] for byte slices. It returns b itself when
// nothing matched, and a new slice otherwise.
func (r *Redactor) RedactBytes(b []byte) []byte {
	if r.Len() == 0 {
		return b
	}
	// Converting costs one copy; the matching itself is the same as Redact.
	s := string(b)
	out := r.Redact(s)
	if len(out) == len(s) && out == s {
		return b
	}
	return []byte(out)
}

type span struct{ start, end int }

// spans returns the merged, sorted byte ranges of s covered by secrets.
func (r *Redactor) spans(s string) []span {
	if r == nil || s == "" {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var all []span
	for _, sec := range r.secrets {
		if len(sec) > len(s) {
			continue
		}
		// Find every occurrence, overlapping ones too ("aaaaaa" twice in
		// "aaaaaaa"), merging runs as they come so the list stays short.
		for from := 0; from <= len(s)-len(sec); {
			i := strings.Index(s[from:], sec)
			if i < 0 {
				break
			}
			start := from + i
			end := start + len(sec)
			if n := len(all); n > 0 && all[n-1].end >= start && all[n-1].start <= start {
				all[n-1].end = max(all[n-1].end, end)
			} else {
				all = append(all, span{start, end})
			}
			from = start + 1
		}
	}
	if len(all) < 2 {
		return all
	}
	slices.SortFunc(all, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := all[:1]
	for _, sp := range all[1:] {
		last := &merged[len(merged)-1]
		if sp.start <= last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

package gateway

import (
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// TestButtonTokensSortByAge: a button token starts with its creation time,
// so the buttons table grows at its end, and keeps 16 random bytes after
// it: two tokens of one millisecond differ, and every token fits a
// platform's callback data.
func TestButtonTokensSortByAge(t *testing.T) {
	t0 := time.UnixMilli(1_796_000_000_000)
	a, b, same := newToken(t0), newToken(t0.Add(time.Millisecond)), newToken(t0)
	if len(a) != 12+22 || len(a) > channels.MaxTokenLen {
		t.Fatalf("token %q: %d characters, want 12 of time and 22 of randomness (at most %d)", a, len(a), channels.MaxTokenLen)
	}
	if a >= b {
		t.Errorf("%s was made before %s but sorts after it", a, b)
	}
	if a == same || a[12:] == same[12:] {
		t.Errorf("two tokens of the same millisecond share their random part: %s, %s", a, same)
	}
}

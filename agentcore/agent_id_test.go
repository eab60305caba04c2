package agentcore

import (
	"strings"
	"testing"
	"time"
)

// Conversation ids sort by creation time (tables keyed by them grow at
// their end) and keep 8 random bytes (as hard to guess as before).
func TestConversationIDsSortByAge(t *testing.T) {
	t0 := time.UnixMilli(1_796_000_000_000)
	a, b := conversationID(t0), conversationID(t0.Add(time.Millisecond))
	same := conversationID(t0)
	if !strings.HasPrefix(a, "conv-") || len(a) != len("conv-")+12+16 {
		t.Fatalf("id %q: want conv-, 12 hex digits of time, 16 of randomness", a)
	}
	if a >= b {
		t.Errorf("%s was created before %s but sorts after it", a, b)
	}
	if a == same {
		t.Errorf("two ids of the same millisecond are equal: %s", a)
	}
}

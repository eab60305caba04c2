package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

// FuzzActionToken: whatever a button press carries, the gateway answers
// with a clear text and changes nothing; it never errors or panics.
func FuzzActionToken(f *testing.F) {
	for _, seed := range []string{"", "x", "tok-approve", strings.Repeat("A", 64), strings.Repeat("é", 40), "' OR 1=1 --", "\x00\xff", "ap-123:approve"} {
		f.Add(seed)
	}
	h := newHarness(f, harnessOpts{})
	f.Fuzz(func(t *testing.T, token string) {
		if len(token) > channels.MaxTokenLen {
			t.Skip("platforms cap button payloads at 64 bytes; adapters refuse longer ones")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		reply, err := h.chat.Press(ctx, channels.Action{EventID: "f", Location: dm, User: channels.User{ID: "alice"}, Token: token})
		if err != nil {
			t.Fatalf("press with token %q: %v", token, err)
		}
		if reply.Text == "" || !utf8.ValidString(reply.Text) {
			t.Fatalf("press with token %q got reply %+v", token, reply)
		}
		if len(h.model.Requests()) != 0 {
			t.Fatal("a press with an unknown token reached the model")
		}
	})
}

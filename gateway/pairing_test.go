package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// codeIn returns the pairing code in a record, or "".
func codeIn(r channelstest.Record) string {
	i := strings.Index(r.Text(), "code is ")
	if i < 0 {
		return ""
	}
	return strings.Trim(strings.Fields(r.Text()[i+len("code is "):])[0], "*")
}

// waitCodes waits until loc has n code messages and returns their codes.
func waitCodes(t *testing.T, h *harness, loc channels.Location, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inLoc := func(r channelstest.Record) bool { return r.Location == loc && codeIn(r) != "" }
	recs, err := h.chat.WaitFor(ctx, channelstest.Count(n, inLoc))
	if err != nil {
		t.Fatalf("waiting for %d codes in %s: %v\n%s", n, loc.ChatID, err, channelstest.Summary(h.chat.Records()))
	}
	var codes []string
	for _, r := range channelstest.Filter(recs, inLoc) {
		codes = append(codes, codeIn(r))
	}
	return codes
}

// TestStrangersCannotBlockPairing: more strangers than the channel keeps
// pending codes for all get a code; the newest can be approved by the
// owner; the oldest's code was evicted and no longer approves; a stranger
// who writes again within the hour gets no second message.
func TestStrangersCannotBlockPairing(t *testing.T) {
	h := newHarness(t, harnessOpts{}, fakemodel.Step{Text: "welcome, stranger ten"})
	const strangers = 11 // one more than the channel keeps
	dmOf := func(i int) channels.Location {
		return channels.Location{Channel: "chat", Account: "bot", ChatID: fmt.Sprint("dm-stranger-", i)}
	}
	codes := make([]string, strangers)
	for i := range strangers {
		h.send(inbound(fmt.Sprint("s", i), fmt.Sprint("stranger-", i), "let me in", dmOf(i)))
		codes[i] = waitCodes(t, h, dmOf(i), 1)[0]
		h.clock.Advance(time.Second) // distinct creation times: eviction takes the oldest
	}
	// Writing again within the hour: no new message, whatever is sent.
	for k := range 3 {
		h.send(inbound(fmt.Sprint("again", k), "stranger-10", "hello??", dmOf(10)))
		h.send(inbound(fmt.Sprint("again-evicted", k), "stranger-0", "hello??", dmOf(0)))
	}

	adminDM := channels.Location{Channel: "chat", Account: "bot", ChatID: "dm-admin"}
	h.send(inbound("a1", "admin", "/pair approve "+codes[0], adminDM))
	waitText(t, h.chat, "No pending pairing code "+codes[0])
	h.send(inbound("a2", "admin", "/pair approve "+codes[strangers-1], adminDM))
	waitText(t, h.chat, "Paired stranger-10")

	// Paired, stranger 10 is answered; their DM holds the one code message
	// before the answer (a DM's messages arrive in order).
	h.send(inbound("s10-hi", "stranger-10", "hi", dmOf(10)))
	waitText(t, h.chat, "welcome, stranger ten")
	if got := channelstest.Filter(h.chat.Records(), func(r channelstest.Record) bool {
		return r.Location == dmOf(10) && codeIn(r) != ""
	}); len(got) != 1 {
		t.Errorf("stranger 10 got %d code messages, want 1:\n%s", len(got), channelstest.Summary(got))
	}

	// After the hour the evicted stranger gets a new code as the second
	// message of their DM, and it approves: the repeats within the hour
	// sent nothing (else the second message would hold a code made then,
	// expired by now).
	h.clock.Advance(time.Hour + time.Minute)
	h.send(inbound("later", "stranger-0", "still there?", dmOf(0)))
	again := waitCodes(t, h, dmOf(0), 2)
	h.send(inbound("a3", "admin", "/pair approve "+again[1], adminDM))
	waitText(t, h.chat, "Paired stranger-0")
}

package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/store"
)

// scanCounter counts the outbox's scans of the store.
type scanCounter struct {
	gateway.Store
	scans atomic.Int64
	rows  atomic.Int64 // items the scans read
}

func (s *scanCounter) DueOutboundAfter(ctx context.Context, channels []string, t time.Time, after int64, limit int) ([]gateway.Outbound, error) {
	s.scans.Add(1)
	items, err := s.Store.DueOutboundAfter(ctx, channels, t, after, limit)
	s.rows.Add(int64(len(items)))
	return items, err
}

// Replies produced faster than the platform takes them (here it takes
// none until released) fill the outbox's in-memory queues; the rest wait
// in the store. Every one is delivered, each chat getting its two, and
// while the queues are full the outbox does not scan the store for every
// reply offered or chat delivered (each scan would read 500 items only to
// leave them there), nor, once they have room, read again what the queues
// hold.
func TestRepliesBeyondTheQueuesAreDeliveredOnce(t *testing.T) {
	fake := channelstest.New("chat", channels.Capabilities{MaxMessageLen: 4000, Dialect: channels.Plain})
	gated := &slowChat{Adapter: fake, release: make(chan struct{})}
	sc := &scanCounter{}
	h := newHarnessWith(t, harnessOpts{store: func(db *store.DB) gateway.Store { sc.Store = db; return sc }}, gated)
	h.chat = fake
	if err := fake.WaitStarted(h.ctx()); err != nil {
		t.Fatal(err)
	}
	// 5,000 replies in 2,500 chats: more than the 4,096 items the queues
	// hold and the 64 sends in flight.
	const chats, per = 2500, 2
	loc := func(c int) channels.Location {
		return channels.Location{Channel: "chat", Account: "bot", ChatID: fmt.Sprintf("dm-%d", c)}
	}
	ask := func(i int) {
		h.send(inbound(fmt.Sprintf("e%d", i), "alice", "/help", loc(i%chats)))
	}
	const full = 4096 + 64 + 100
	for i := range full {
		ask(i)
	}
	before := sc.scans.Load()
	for i := full; i < chats*per; i++ {
		ask(i)
	}
	if n := sc.scans.Load() - before; n > 3 {
		t.Errorf("%d scans while %d replies were offered to full queues, want at most 3 (the ticks')", n, chats*per-full)
	}
	read := sc.rows.Load()
	close(gated.release)
	eventually(t, "every reply delivered", func() bool { return len(fake.Sent()) >= chats*per })
	// The scans read on from where the last one stopped: the items the
	// queues hold are not read again by every scan (before the cursor,
	// 135 scans read 49,000 items here, each the oldest 500 unsent).
	if n := sc.rows.Load() - read; n > 2*chats*per {
		t.Errorf("scans read %d items while the %d replies were delivered, want at most %d", n, chats*per, 2*chats*per)
	}
	got := map[string]int{}
	for _, r := range fake.Sent() {
		got[r.Location.ChatID]++
	}
	for c := range chats {
		if n := got[loc(c).ChatID]; n != per {
			t.Fatalf("chat %s got %d replies, want %d", loc(c).ChatID, n, per)
		}
	}
	if n := len(fake.Sent()); n != chats*per {
		t.Errorf("%d sends, want %d", n, chats*per)
	}
}

// Items only a scan finds (stored by another process, or by the CLI), more
// than one scan reads, are all delivered at the pace of full scans, not of
// the quiet scan's 50 a second.
func TestBacklogInTheStoreIsDeliveredWhole(t *testing.T) {
	fake := channelstest.New("chat", channels.Capabilities{MaxMessageLen: 4000, Dialect: channels.Plain})
	h := newHarnessWith(t, harnessOpts{}, fake)
	if err := fake.WaitStarted(h.ctx()); err != nil {
		t.Fatal(err)
	}
	const chats, per = 1500, 2
	var items []gateway.Outbound
	now := time.Now().UTC()
	for i := range per {
		for c := range chats {
			body, err := channels.EncodeMessage(channels.TextMessage(fmt.Sprintf("c%d m%d", c, i)))
			if err != nil {
				t.Fatal(err)
			}
			loc := channels.Location{Channel: "chat", Account: "bot", ChatID: fmt.Sprintf("c%d", c)}
			items = append(items, gateway.Outbound{Kind: gateway.OutboundSend, Location: loc.String(), Body: body, Created: now, NextAt: now})
		}
	}
	if _, err := h.db.EnqueueOutbound(h.ctx(), items...); err != nil {
		t.Fatal(err)
	}
	// At 50 a second the 3,000 would take a minute, past the deadline.
	eventually(t, "every item delivered", func() bool { return len(fake.Sent()) >= chats*per })
	got := map[string][]string{}
	for _, r := range fake.Sent() {
		got[r.Location.ChatID] = append(got[r.Location.ChatID], r.Message.Markdown())
	}
	for c := range chats {
		want := fmt.Sprint([]string{fmt.Sprintf("c%d m0", c), fmt.Sprintf("c%d m1", c)})
		if g := fmt.Sprint(got[fmt.Sprintf("c%d", c)]); g != want {
			t.Fatalf("chat c%d got %s, want %s (each once, in order)", c, g, want)
		}
	}
}

// A send that failed waits for its retry time while other chats' replies
// move the scans' cursor past it: it is still retried at its time, once,
// and its chat's next reply waits for it (it went first before).
func TestRetryBelowTheCursorIsDelivered(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	failHelpReply(t, h, 1500*time.Millisecond)
	// Many replies elsewhere, delivered while the first waits: every scan
	// reads past it.
	const others = 300
	for i := range others {
		h.send(inbound(fmt.Sprintf("o%d", i), "alice", "/help", channels.Location{Channel: "chat", Account: "bot", ChatID: fmt.Sprintf("dm-%d", i)}))
	}
	h.send(inbound("second", "alice", "/whoami", dm))
	eventually(t, "every reply delivered", func() bool {
		n := 0
		for _, r := range h.chat.Sent() {
			if r.Location.ChatID == dm.ChatID {
				n++
			}
		}
		return n >= 2 && len(h.chat.Sent()) >= others+2
	})
	var mine []string
	for _, r := range h.chat.Sent() {
		if r.Location.ChatID == dm.ChatID {
			mine = append(mine, r.Message.Markdown())
		}
	}
	help, unknown := 0, 0
	for _, m := range mine {
		if strings.HasPrefix(m, "Unknown command /whoami") {
			unknown++
		} else if strings.HasPrefix(m, "**Commands**") {
			help++
		}
	}
	if len(mine) != 2 || help != 1 || unknown != 1 || !strings.HasPrefix(mine[0], "**Commands**") {
		t.Fatalf("dm got %q; want the retried /help reply, then the /whoami reply, each once", mine)
	}
}

// A reply that waits out a rate limit when the process stops still holds
// its chat in the next process: the chat's next reply goes after it.
func TestRetryWaitingAcrossARestartHoldsItsChat(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	failHelpReply(t, h, 3*time.Second)
	h.restart()
	h.send(inbound("second", "alice", "/whoami", dm))
	other := channels.Location{Channel: "chat", Account: "bot", ChatID: "dm-other"}
	h.send(inbound("third", "alice", "/help", other))
	eventually(t, "every reply delivered", func() bool {
		n := 0
		for _, r := range h.chat.Sent() {
			if r.Location.ChatID == dm.ChatID {
				n++
			}
		}
		return n >= 2
	})
	var mine []string
	for _, r := range h.chat.Sent() {
		if r.Location.ChatID == dm.ChatID {
			mine = append(mine, r.Message.Markdown())
		}
	}
	if len(mine) != 2 || !strings.HasPrefix(mine[0], "**Commands**") || !strings.HasPrefix(mine[1], "Unknown command /whoami") {
		t.Fatalf("dm got %q; want the retried /help reply, then the /whoami reply, each once", mine)
	}
	// The other chat was not held by it: its reply went out before the
	// retried one.
	eventually(t, "the other chat's reply", func() bool {
		for _, r := range h.chat.Sent() {
			if r.Location.ChatID == other.ChatID {
				return true
			}
		}
		return false
	})
	for _, r := range h.chat.Sent() {
		if r.Location.ChatID == dm.ChatID {
			t.Fatal("the retried reply went out before the other chat's: the hold was not the chat's alone")
		}
		if r.Location.ChatID == other.ChatID {
			break
		}
	}
}

// failHelpReply sends /help to dm and waits until its reply's first send
// failed with a rate limit of retryAfter (every reply an outbox send).
func failHelpReply(t *testing.T, h *harness, retryAfter time.Duration) {
	t.Helper()
	h.chat.SetCapabilities(channels.Capabilities{MaxMessageLen: 4000, Buttons: true, Dialect: channels.Plain})
	h.chat.FailSends(1, &channels.RateLimitError{RetryAfter: retryAfter})
	h.send(inbound("first", "alice", "/help", dm))
	eventually(t, "the first reply failed", func() bool {
		for _, r := range h.chat.Records() {
			if r.Op == channelstest.OpSend && r.Err != nil {
				return true
			}
		}
		return false
	})
}

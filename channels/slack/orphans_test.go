package slack

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

func orphanDraft(chat, thread, ts string) draft {
	return draft{in: channels.Inbound{MessageID: ts, Location: channels.Location{ChatID: chat, ThreadID: thread}}}
}

func TestOrphansTakeRepliesAfterTheMessageThatTookTheThread(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	o := newOrphans(func() time.Time { return now })
	o.hold(orphanDraft("C1", "100.000001", "100.000300"))
	o.hold(orphanDraft("C1", "100.000001", "100.000200"))
	o.hold(orphanDraft("C1", "100.000001", "100.000200")) // delivered again
	o.hold(orphanDraft("C1", "100.000001", "100.000050")) // before the mention
	o.hold(orphanDraft("C1", "999.000001", "999.000002")) // another thread
	got := o.take("C1", "100.000001", "100.000100")
	var ts []string
	for _, d := range got {
		ts = append(ts, d.in.MessageID)
	}
	if fmt.Sprint(ts) != "[100.000200 100.000300]" {
		t.Errorf("took %v; want the two replies after the mention, oldest first, once each", ts)
	}
	if again := o.take("C1", "100.000001", "100.000100"); len(again) != 0 {
		t.Errorf("a second take returned %d replies", len(again))
	}
	if heldThreads(o) != 1 {
		t.Errorf("%d threads held, want the other one", heldThreads(o))
	}
}

func TestOrphansBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	o := newOrphans(func() time.Time { return now })
	for i := range maxOrphanThreads + 50 {
		o.hold(orphanDraft("C1", fmt.Sprintf("%d.000001", 100+i), fmt.Sprintf("%d.000002", 100+i)))
	}
	if heldThreads(o) != maxOrphanThreads {
		t.Errorf("%d threads held, want the bound %d", heldThreads(o), maxOrphanThreads)
	}
	for i := range maxOrphansPer + 5 { // after the one held above: 100.000002
		o.hold(orphanDraft("C1", "100.000001", fmt.Sprintf("100.%06d", 10+i)))
	}
	got := o.take("C1", "100.000001", "0.000000")
	if len(got) != maxOrphansPer || got[0].in.MessageID != "100.000015" {
		t.Errorf("held %d replies starting at %s; want the newest %d", len(got), got[0].in.MessageID, maxOrphansPer)
	}
	now = now.Add(orphanTTL)
	if old := o.take("C1", "101.000001", "0.000000"); len(old) != 0 {
		t.Errorf("a reply held longer than the TTL was handed over: %+v", old)
	}
	// 498 threads are left, all expired; at the bound, a new thread makes
	// room by dropping what expired.
	for _, c := range []string{"C2", "C3", "C4"} {
		o.hold(orphanDraft(c, "1.000001", "1.000002"))
	}
	if heldThreads(o) != 3 {
		t.Errorf("%d threads held after the TTL, want only the three new ones", heldThreads(o))
	}
}

func heldThreads(o *orphans) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.threads)
}

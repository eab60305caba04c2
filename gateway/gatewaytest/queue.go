package gatewaytest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

func newItem(conv string, n int) gateway.Item {
	return gateway.Item{
		ConversationID: conv,
		AgentID:        "main",
		Kind:           gateway.ItemMessage,
		Location:       "telegram:4242",
		Payload:        fmt.Appendf(nil, `{"text":"message %d"}`, n),
		Created:        time.Now().Add(-time.Minute).UTC().Add(time.Duration(n) * time.Millisecond),
	}
}

func mustEnqueue(t *testing.T, s gateway.Store, it gateway.Item, key string) gateway.Item {
	t.Helper()
	id, ok, err := s.Enqueue(t.Context(), it, key, time.Hour)
	if err != nil || !ok || id == 0 {
		t.Fatalf("Enqueue(%s, key %q) = %d, %v, %v; want a new item", it.ConversationID, key, id, ok, err)
	}
	it.ID = id
	it.Channel, _, _ = strings.Cut(it.Location, ":")
	return it
}

func pending(t *testing.T, s gateway.Store, conv string) []gateway.Item {
	t.Helper()
	items, err := s.Pending(t.Context(), conv)
	if err != nil {
		t.Fatalf("Pending(%s): %v", conv, err)
	}
	return items
}

func busy(t *testing.T, s gateway.Store) []string {
	t.Helper()
	ids, err := s.Busy(t.Context(), nil)
	if err != nil {
		t.Fatalf("Busy: %v", err)
	}
	slices.Sort(ids)
	return ids
}

func sorted(ss ...string) []string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return ss
}

func testQueueOrder(t *testing.T, s gateway.Store) {
	a, b := newID("conv"), newID("conv")
	var wantA, wantB []gateway.Item
	for n := range 6 {
		if n%2 == 0 {
			wantA = append(wantA, mustEnqueue(t, s, newItem(a, n), ""))
		} else {
			it := newItem(b, n)
			it.Kind = gateway.ItemNotification
			it.Payload = nil
			wantB = append(wantB, mustEnqueue(t, s, it, ""))
		}
	}
	check(t, "Pending(a)", pending(t, s, a), wantA)
	check(t, "Pending(b)", pending(t, s, b), wantB)
	if !slices.IsSortedFunc(wantA, func(x, y gateway.Item) int { return int(x.ID - y.ID) }) {
		t.Errorf("ids of successive items are not increasing: %d, %d, %d", wantA[0].ID, wantA[1].ID, wantA[2].ID)
	}
	check(t, "Busy", busy(t, s), sorted(a, b))
	if got := pending(t, s, newID("conv")); len(got) != 0 {
		t.Errorf("Pending of an idle conversation = %+v, want none", got)
	}

	// An item without Created gets the store's now.
	id, ok, err := s.Enqueue(t.Context(), gateway.Item{ConversationID: a, Kind: gateway.ItemResume}, "", 0)
	if err != nil || !ok {
		t.Fatalf("Enqueue without Created = %d, %v, %v", id, ok, err)
	}
	items := pending(t, s, a)
	if last := items[len(items)-1]; last.ID != id || last.Created.IsZero() || last.Kind != gateway.ItemResume {
		t.Errorf("last pending item = %+v, want id %d of kind resume with Created set", last, id)
	}
}

func testQueuePeekComplete(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a, b := newID("conv"), newID("conv")
	_, err := s.Peek(ctx, a, nil)
	wantNotFound(t, "Peek of an empty conversation", err)

	i1 := mustEnqueue(t, s, newItem(a, 1), "")
	ib := mustEnqueue(t, s, newItem(b, 2), "")
	i2 := mustEnqueue(t, s, newItem(a, 3), "")

	// Peek takes the oldest item and counts the attempt; until the item is
	// completed, every Peek returns it again (a worker that died).
	for attempt := 1; attempt <= 2; attempt++ {
		got, err := s.Peek(ctx, a, nil)
		if err != nil {
			t.Fatalf("Peek #%d: %v", attempt, err)
		}
		want := i1
		want.Attempts = attempt
		check(t, fmt.Sprintf("Peek #%d", attempt), got, want)
	}
	if err := s.Complete(ctx, i1.ID); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got, err := s.Peek(ctx, a, nil)
	if err != nil || got.ID != i2.ID || got.Attempts != 1 {
		t.Errorf("Peek after Complete = %+v, %v; want item %d with 1 attempt", got, err, i2.ID)
	}
	if p := pending(t, s, a); len(p) != 1 || p[0].ID != i2.ID || p[0].Attempts != 1 {
		t.Errorf("Pending after Complete = %+v, want only item %d with 1 attempt", p, i2.ID)
	}
	wantNotFound(t, "Complete of a done item", s.Complete(ctx, i1.ID))
	wantNotFound(t, "Complete of an unknown item", s.Complete(ctx, i2.ID+1000))

	if err := s.Complete(ctx, i2.ID); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	_, err = s.Peek(ctx, a, nil)
	wantNotFound(t, "Peek after every item is done", err)
	if p := pending(t, s, a); len(p) != 0 {
		t.Errorf("Pending after every item is done = %+v, want none", p)
	}
	check(t, "Busy with one conversation done", busy(t, s), []string{b})
	if p := pending(t, s, b); len(p) != 1 || p[0].ID != ib.ID || p[0].Attempts != 0 {
		t.Errorf("Pending(b) = %+v, want item %d untouched", p, ib.ID)
	}
	if err := s.Complete(ctx, ib.ID); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got := busy(t, s); len(got) != 0 {
		t.Errorf("Busy with every item done = %v, want none", got)
	}
}

func testQueueRejects(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	for _, it := range []gateway.Item{
		{Kind: gateway.ItemMessage},     // no conversation
		{ConversationID: newID("conv")}, // no kind
	} {
		if id, ok, err := s.Enqueue(ctx, it, "", 0); err == nil {
			t.Errorf("Enqueue(%+v) = %d, %v, nil; want an error", it, id, ok)
		}
	}
	if got := busy(t, s); len(got) != 0 {
		t.Errorf("Busy after rejected enqueues = %v, want none", got)
	}
}

func testDedupeWithinTTL(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a, b := newID("conv"), newID("conv")
	key := newID("slack:Ev")
	first := mustEnqueue(t, s, newItem(a, 1), key)

	// The platform retries: same key, within the TTL, nothing is stored,
	// also when the retry would go to another conversation. The id names
	// the first item (or is 0 for a store that does not remember it).
	for _, conv := range []string{a, b} {
		id, ok, err := s.Enqueue(ctx, newItem(conv, 2), key, time.Hour)
		if err != nil || ok || (id != 0 && id != first.ID) {
			t.Errorf("Enqueue of a duplicate to %s = %d, %v, %v; want %d (or 0), false, nil", conv, id, ok, err, first.ID)
		}
	}
	check(t, "Pending after duplicates", pending(t, s, a), []gateway.Item{first})
	if p := pending(t, s, b); len(p) != 0 {
		t.Errorf("Pending(b) after a duplicate = %+v, want none", p)
	}

	// Other keys and no key are not duplicates.
	second := mustEnqueue(t, s, newItem(a, 3), newID("slack:Ev"))
	third := mustEnqueue(t, s, newItem(a, 4), "")
	fourth := mustEnqueue(t, s, newItem(a, 5), "")
	check(t, "Pending after distinct keys", pending(t, s, a), []gateway.Item{first, second, third, fourth})

	// Completing the item does not forget its key: a late retry is still
	// dropped.
	if err := s.Complete(ctx, first.ID); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if id, ok, err := s.Enqueue(ctx, newItem(a, 6), key, time.Hour); err != nil || ok {
		t.Errorf("Enqueue of a duplicate of a done item = %d, %v, %v; want 0, false, nil", id, ok, err)
	}
}

func testDedupeAfterExpiry(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a := newID("conv")
	key := newID("telegram:update")
	if _, ok, err := s.Enqueue(ctx, newItem(a, 1), key, time.Millisecond); err != nil || !ok {
		t.Fatalf("Enqueue = %v, %v; want a new item", ok, err)
	}
	// The key's expiry is judged by the store's clock, which the suite
	// does not control: retry until the key is forgotten, which must
	// happen soon after its TTL. Rejected attempts store nothing; the
	// accepted one remembers the key for an hour.
	deadline := time.Now().Add(10 * time.Second)
	var tries int
	for {
		tries++
		_, ok, err := s.Enqueue(ctx, newItem(a, 2), key, time.Hour)
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a dedupe key with a TTL of 1ms still rejected items after %d tries in 10s", tries)
		}
	}
	if id, ok, err := s.Enqueue(ctx, newItem(a, 3), key, time.Hour); err != nil || ok {
		t.Errorf("Enqueue of a duplicate of the re-accepted key = %d, %v, %v; want 0, false, nil", id, ok, err)
	}
	if p := pending(t, s, a); len(p) != 2 {
		t.Errorf("Pending after the key expired = %d items, want 2", len(p))
	}
}

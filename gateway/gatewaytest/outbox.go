package gatewaytest

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

func send(location, text string) gateway.Outbound {
	return gateway.Outbound{
		Kind:     gateway.OutboundSend,
		Location: location,
		Body:     fmt.Appendf(nil, `{"text":%q}`, text),
	}
}

func mustEnqueueOutbound(t *testing.T, s gateway.Store, items ...gateway.Outbound) []int64 {
	t.Helper()
	ids, err := s.EnqueueOutbound(t.Context(), items...)
	if err != nil {
		t.Fatalf("EnqueueOutbound: %v", err)
	}
	if len(ids) != len(items) {
		t.Fatalf("EnqueueOutbound returned %d ids for %d items", len(ids), len(items))
	}
	return ids
}

func due(t *testing.T, s gateway.Store, now time.Time, limit int) []int64 {
	t.Helper()
	items, err := s.DueOutboundAfter(t.Context(), nil, now, 0, limit)
	if err != nil {
		t.Fatalf("DueOutbound: %v", err)
	}
	ids := make([]int64, len(items))
	for i, o := range items {
		if o.Sent {
			t.Errorf("DueOutbound returned item %d marked sent", o.ID)
		}
		ids[i] = o.ID
	}
	return ids
}

func outboundItem(t *testing.T, s gateway.Store, id int64) gateway.Outbound {
	t.Helper()
	o, err := s.OutboundItem(t.Context(), id)
	if err != nil {
		t.Fatalf("OutboundItem(%d): %v", id, err)
	}
	return o
}

func testOutboxDue(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	if got := due(t, s, time.Now(), 0); len(got) != 0 {
		t.Fatalf("DueOutbound on an empty store = %v, want none", got)
	}
	created := time.Now().Add(-time.Minute).UTC()
	later := time.Now().Add(time.Hour).UTC()
	first := send("telegram:4242", "one")
	first.Created = created
	delayed := send("slack:C1/T1", "two, later")
	delayed.NextAt = later
	edit := gateway.Outbound{Kind: gateway.OutboundEdit, Location: "telegram:4242", EditOf: 1, Body: []byte(`{"text":"one, edited"}`)}
	third := send("discord:55", "three")
	third.Body = nil
	ids := mustEnqueueOutbound(t, s, first, delayed, edit, third)
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("EnqueueOutbound ids %v are not increasing", ids)
		}
	}
	more := mustEnqueueOutbound(t, s, send("telegram:4242", "four"))
	if more[0] <= ids[len(ids)-1] {
		t.Errorf("a later EnqueueOutbound got id %d, not after %v", more[0], ids)
	}

	now := time.Now()
	check(t, "due items, oldest first", due(t, s, now, 0), []int64{ids[0], ids[2], ids[3], more[0]})
	check(t, "due items with limit 2", due(t, s, now, 2), []int64{ids[0], ids[2]})
	check(t, "due items once the delayed one is due", due(t, s, later, 0), []int64{ids[0], ids[1], ids[2], ids[3], more[0]})
	check(t, "due items just before the delayed one is due", due(t, s, later.Add(-time.Millisecond), 0), []int64{ids[0], ids[2], ids[3], more[0]})

	// WaitingOutbound: the unsent items not due yet, with their location
	// and time.
	waiting, err := s.WaitingOutbound(ctx, nil, now, 0)
	if err != nil || len(waiting) != 1 || waiting[0].ID != ids[1] || waiting[0].Location != delayed.Location || !waiting[0].NextAt.Equal(later) {
		t.Errorf("WaitingOutbound(now) = %+v, %v; want the delayed item %d at %v", waiting, err, ids[1], later)
	}
	if waiting, err := s.WaitingOutbound(ctx, nil, later, 0); err != nil || len(waiting) != 0 {
		t.Errorf("WaitingOutbound once the delayed item is due = %+v, %v; want none", waiting, err)
	}

	// Round trip: NextAt and Created default to now, new items are unsent.
	items, err := s.DueOutboundAfter(ctx, nil, later, 0, 0)
	if err != nil {
		t.Fatalf("DueOutbound: %v", err)
	}
	for i, want := range []gateway.Outbound{first, delayed, edit, third} {
		got := items[i]
		want.ID = ids[i]
		if want.NextAt.IsZero() {
			if got.NextAt.IsZero() || got.NextAt.After(now) {
				t.Errorf("item %d: NextAt = %v, want the time of EnqueueOutbound", i, got.NextAt)
			}
			want.NextAt = got.NextAt
		}
		if want.Created.IsZero() {
			if got.Created.IsZero() || got.Created.After(now) {
				t.Errorf("item %d: Created = %v, want the time of EnqueueOutbound", i, got.Created)
			}
			want.Created = got.Created
		}
		check(t, fmt.Sprintf("due item %d", i), got, want)
		check(t, fmt.Sprintf("OutboundItem(%d)", want.ID), outboundItem(t, s, want.ID), want)
	}
	_, err = s.OutboundItem(ctx, more[0]+1000)
	wantNotFound(t, "OutboundItem of an unknown id", err)
	if ids, err := s.EnqueueOutbound(ctx); err != nil || len(ids) != 0 {
		t.Errorf("EnqueueOutbound of nothing = %v, %v; want no ids", ids, err)
	}
}

func testOutboxMarkSent(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	ids := mustEnqueueOutbound(t, s, send("telegram:4242", "one"), send("telegram:4242", "two"))
	if err := s.MarkSent(ctx, ids[0], "msg-1"); err != nil {
		t.Fatalf("MarkSent: %v", err)
	}
	o := outboundItem(t, s, ids[0])
	if !o.Sent || o.MessageID != "msg-1" || o.LastErr != "" {
		t.Errorf("item after MarkSent = %+v, want sent with message id msg-1", o)
	}
	check(t, "due after MarkSent", due(t, s, time.Now().Add(time.Hour), 0), []int64{ids[1]})
	wantNotFound(t, "MarkSent of an unknown id", s.MarkSent(ctx, ids[1]+1000, "msg-x"))
	for i, want := range []bool{true, false} {
		if sent, err := s.OutboundSent(ctx, ids[i]); err != nil || sent != want {
			t.Errorf("OutboundSent(%d) = %v, %v; want %v", ids[i], sent, err, want)
		}
	}
	_, err := s.OutboundSent(ctx, ids[1]+1000)
	wantNotFound(t, "OutboundSent of an unknown id", err)
	// DueOutboundAfter reads only the items after its id.
	if got, err := s.DueOutboundAfter(ctx, nil, time.Now().Add(time.Hour), ids[0], 0); err != nil || len(got) != 1 || got[0].ID != ids[1] {
		t.Errorf("DueOutboundAfter(%d) = %+v, %v; want item %d", ids[0], got, err, ids[1])
	}
	if got, err := s.DueOutboundAfter(ctx, nil, time.Now().Add(time.Hour), ids[1], 0); err != nil || len(got) != 0 {
		t.Errorf("DueOutboundAfter(%d) = %+v, %v; want none", ids[1], got, err)
	}

	// An edit that succeeds keeps the message id it targeted.
	edit := gateway.Outbound{Kind: gateway.OutboundEdit, Location: "telegram:4242", MessageID: "msg-1", Body: []byte(`{}`)}
	eid := mustEnqueueOutbound(t, s, edit)[0]
	if err := s.MarkSent(ctx, eid, ""); err != nil {
		t.Fatalf("MarkSent(edit): %v", err)
	}
	if o := outboundItem(t, s, eid); !o.Sent || o.MessageID != "msg-1" {
		t.Errorf("edit after MarkSent with no id = %+v, want sent with message id msg-1", o)
	}
}

func testOutboxRetry(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	ids := mustEnqueueOutbound(t, s, send("slack:C1", "one"), send("slack:C1", "two"), send("slack:C1", "three"))
	now := time.Now()
	next := now.Add(30 * time.Second).UTC()
	if err := s.Retry(ctx, ids[0], next, "429 retry_after=30", false); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	o := outboundItem(t, s, ids[0])
	if o.Sent || o.Attempts != 1 || !sameTime(o.NextAt, next) || o.LastErr != "429 retry_after=30" {
		t.Errorf("item after Retry = %+v, want unsent, 1 attempt, NextAt %v, LastErr set", o, next)
	}
	check(t, "due before the retry time", due(t, s, now, 0), []int64{ids[1], ids[2]})
	check(t, "due at the retry time", due(t, s, next, 0), ids)

	if err := s.Retry(ctx, ids[0], next.Add(time.Minute), "500", false); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if o := outboundItem(t, s, ids[0]); o.Attempts != 2 || o.LastErr != "500" {
		t.Errorf("item after a second Retry = %+v, want 2 attempts and LastErr 500", o)
	}

	// A permanent failure is never due again and keeps its error.
	if err := s.Retry(ctx, ids[1], time.Time{}, "403 not_in_channel", true); err != nil {
		t.Fatalf("Retry(permanent): %v", err)
	}
	o = outboundItem(t, s, ids[1])
	if !o.Sent || o.LastErr != "403 not_in_channel" || o.Attempts != 1 {
		t.Errorf("item after a permanent failure = %+v, want sent with LastErr kept and 1 attempt", o)
	}
	check(t, "due after a permanent failure", due(t, s, now.Add(24*time.Hour), 0), []int64{ids[0], ids[2]})
	wantNotFound(t, "Retry of an unknown id", s.Retry(ctx, ids[2]+1000, next, "x", false))
}

func testOutboxRejects(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	good := send("telegram:4242", "fine")
	for _, bad := range []gateway.Outbound{
		{Kind: "post", Location: "telegram:4242"},
		{Location: "telegram:4242"},
	} {
		// The good item before the bad one must not be stored either.
		if ids, err := s.EnqueueOutbound(ctx, good, bad); err == nil {
			t.Errorf("EnqueueOutbound(%+v) = %v, nil; want an error", bad, ids)
		}
	}
	if got := due(t, s, time.Now().Add(time.Hour), 0); len(got) != 0 {
		t.Errorf("due after rejected batches = %v, want none", got)
	}
}

func testCompleteWithOutbound(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a := newID("conv")
	it := mustEnqueue(t, s, newItem(a, 1), "")
	next := mustEnqueue(t, s, newItem(a, 2), "")
	reply := send("telegram:4242", "the answer")
	edit := gateway.Outbound{Kind: gateway.OutboundEdit, Location: "telegram:4242", MessageID: "msg-9", Body: []byte(`{"text":"done"}`)}
	ids, err := s.CompleteWithOutbound(ctx, it.ID, reply, edit)
	if err != nil {
		t.Fatalf("CompleteWithOutbound: %v", err)
	}
	if len(ids) != 2 || ids[1] <= ids[0] {
		t.Fatalf("CompleteWithOutbound ids = %v, want two increasing ids", ids)
	}
	check(t, "Pending after CompleteWithOutbound", pending(t, s, a), []gateway.Item{next})
	check(t, "due after CompleteWithOutbound", due(t, s, time.Now(), 0), ids)
	if o := outboundItem(t, s, ids[0]); o.Kind != gateway.OutboundSend || string(o.Body) != string(reply.Body) {
		t.Errorf("first outbound item = %+v, want the reply", o)
	}

	// Without outbound items it is a plain Complete.
	if ids, err := s.CompleteWithOutbound(ctx, next.ID); err != nil || len(ids) != 0 {
		t.Errorf("CompleteWithOutbound with no items = %v, %v; want no ids", ids, err)
	}
	if p := pending(t, s, a); len(p) != 0 {
		t.Errorf("Pending after completing every item = %+v, want none", p)
	}
}

func testCompleteWithOutboundAtomic(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a := newID("conv")
	it := mustEnqueue(t, s, newItem(a, 1), "")
	reply := send("telegram:4242", "the answer")

	// Unknown item: nothing is stored.
	_, err := s.CompleteWithOutbound(ctx, it.ID+1000, reply)
	wantNotFound(t, "CompleteWithOutbound of an unknown item", err)
	if got := due(t, s, time.Now().Add(time.Hour), 0); len(got) != 0 {
		t.Errorf("due after completing an unknown item = %v, want none", got)
	}

	// A bad outbound item: the queue item stays unfinished.
	if _, err := s.CompleteWithOutbound(ctx, it.ID, reply, gateway.Outbound{Kind: "post"}); err == nil {
		t.Error("CompleteWithOutbound with a bad outbound item succeeded, want an error")
	}
	check(t, "Pending after a failed CompleteWithOutbound", pending(t, s, a), []gateway.Item{it})
	if got := due(t, s, time.Now().Add(time.Hour), 0); len(got) != 0 {
		t.Errorf("due after a failed CompleteWithOutbound = %v, want none", got)
	}

	// A done item (a second worker finishing the same turn): refused, and
	// the reply is not stored twice.
	ids, err := s.CompleteWithOutbound(ctx, it.ID, reply)
	if err != nil {
		t.Fatalf("CompleteWithOutbound: %v", err)
	}
	_, err = s.CompleteWithOutbound(ctx, it.ID, reply)
	wantNotFound(t, "CompleteWithOutbound of a done item", err)
	check(t, "due after completing twice", due(t, s, time.Now().Add(time.Hour), 0), ids)
}

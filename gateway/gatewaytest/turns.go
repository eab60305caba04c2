package gatewaytest

import (
	"errors"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

// testTakeItem: the item's attempt and the conversation's lease are taken
// together, or not at all.
func testTakeItem(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a := newID("conv")
	it := mustEnqueue(t, s, newItem(a, 1), "")
	n, ok, err := s.TakeItem(ctx, it.ID, a, "me", time.Hour)
	if err != nil || !ok || n != 1 {
		t.Fatalf("TakeItem = %d, %v, %v; want attempt 1 with the lease", n, ok, err)
	}
	// Another owner: the lease is held, nothing changes.
	if n, ok, err := s.TakeItem(ctx, it.ID, a, "other", time.Hour); err != nil || ok {
		t.Fatalf("TakeItem by another owner = %d, %v, %v; want no lease", n, ok, err)
	}
	// The holder again (a retried turn): the next attempt.
	if n, ok, err := s.TakeItem(ctx, it.ID, a, "me", time.Hour); err != nil || !ok || n != 2 {
		t.Fatalf("TakeItem again = %d, %v, %v; want attempt 2", n, ok, err)
	}
	if p := pending(t, s, a); len(p) != 1 || p[0].Attempts != 2 {
		t.Errorf("Pending = %+v, want the item with 2 attempts", p)
	}
	// A done item, or one of another conversation: ErrNotFound, and the
	// lease is not taken.
	if err := s.Complete(ctx, it.ID); err != nil {
		t.Fatal(err)
	}
	b := newID("conv")
	_, _, err = s.TakeItem(ctx, it.ID, b, "me", time.Hour)
	wantNotFound(t, "TakeItem of another conversation's item", err)
	next := mustEnqueue(t, s, newItem(b, 2), "")
	if n, ok, err := s.TakeItem(ctx, next.ID, b, "other", time.Hour); err != nil || !ok || n != 1 {
		t.Errorf("TakeItem after a refused take = %d, %v, %v; want the lease free", n, ok, err)
	}
}

// testFinishTurn: a turn's end is one transaction — items done, outbox,
// buttons, approval posts, settings and the lease's release.
func testFinishTurn(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a := newID("conv")
	it := mustEnqueue(t, s, newItem(a, 1), "")
	collected := mustEnqueue(t, s, newItem(a, 2), "")
	later := mustEnqueue(t, s, newItem(a, 3), "")
	if _, ok, err := s.TakeItem(ctx, it.ID, a, "me", time.Hour); err != nil || !ok {
		t.Fatalf("TakeItem = %v, %v", ok, err)
	}
	ap := newID("ap")
	end := gateway.TurnEnd{
		Turn:     agentcore.TurnWrite{ConversationID: a, Owner: "me", Release: true},
		Complete: []int64{it.ID, collected.ID},
		Outbound: []gateway.Outbound{send("telegram:1", "the ask"), send("telegram:4242", "the answer")},
		Buttons:  []gateway.Button{{Token: newID("tok"), ApprovalID: ap, Action: gateway.ButtonApprove}},
		Posts:    []gateway.TurnPost{{ApprovalID: ap, Location: "telegram:1", Outbound: 0}},
		Settings: []gateway.Setting{{Scope: "conversation:" + a, Key: "parked", Value: "x"}},
	}
	if _, err := s.FinishTurn(ctx, end); err != nil {
		t.Fatalf("FinishTurn: %v", err)
	}
	check(t, "Pending after FinishTurn", pending(t, s, a), []gateway.Item{later})
	ids := due(t, s, time.Now().Add(time.Hour), 0)
	if len(ids) != 2 {
		t.Fatalf("due after FinishTurn = %v, want the two items", ids)
	}
	if o := outboundItem(t, s, ids[1]); string(o.Body) != string(end.Outbound[1].Body) {
		t.Errorf("second outbound item = %s, want the answer", o.Body)
	}
	posts, err := s.ApprovalPosts(ctx, ap)
	if err != nil || len(posts) != 1 || posts[0].OutboxID != ids[0] || posts[0].Location != "telegram:1" {
		t.Errorf("ApprovalPosts = %+v, %v; want the post of outbox item %d", posts, err, ids[0])
	}
	if _, err := s.Button(ctx, end.Buttons[0].Token); err != nil {
		t.Errorf("Button: %v", err)
	}
	if vals, err := s.Settings(ctx, "conversation:"+a); err != nil || vals["parked"] != "x" {
		t.Errorf("Settings = %v, %v; want parked = x", vals, err)
	}
	if _, ok, err := s.TakeItem(ctx, later.ID, a, "other", time.Hour); err != nil || !ok {
		t.Errorf("TakeItem by another owner after FinishTurn = %v, %v; want the lease released", ok, err)
	}
}

// testFinishTurnAtomic: when the turn's item is done already (a second
// worker), or the lease was lost, nothing of the turn's end is stored.
func testFinishTurnAtomic(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a := newID("conv")
	it := mustEnqueue(t, s, newItem(a, 1), "")
	if err := s.Complete(ctx, it.ID); err != nil {
		t.Fatal(err)
	}
	end := gateway.TurnEnd{
		Turn:     agentcore.TurnWrite{ConversationID: a},
		Complete: []int64{it.ID},
		Outbound: []gateway.Outbound{send("telegram:4242", "twice")},
		Settings: []gateway.Setting{{Scope: "conversation:" + a, Key: "parked", Value: "x"}},
	}
	_, err := s.FinishTurn(ctx, end)
	wantNotFound(t, "FinishTurn of a done item", err)
	if got := due(t, s, time.Now().Add(time.Hour), 0); len(got) != 0 {
		t.Errorf("due after a refused FinishTurn = %v, want none", got)
	}
	if vals, _ := s.Settings(ctx, "conversation:"+a); vals["parked"] != "" {
		t.Error("a refused FinishTurn stored its setting")
	}

	b := newID("conv")
	it2 := mustEnqueue(t, s, newItem(b, 1), "")
	if _, ok, err := s.TakeItem(ctx, it2.ID, b, "other", time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	end.Turn = agentcore.TurnWrite{ConversationID: b, Owner: "me", Release: true}
	end.Complete = []int64{it2.ID}
	if _, err := s.FinishTurn(ctx, end); err == nil {
		t.Error("FinishTurn without the lease succeeded")
	}
	check(t, "Pending after FinishTurn without the lease", pending(t, s, b), []gateway.Item{{
		ID: it2.ID, ConversationID: it2.ConversationID, AgentID: it2.AgentID, Kind: it2.Kind, Location: it2.Location,
		Channel: it2.Channel, Payload: it2.Payload, Created: it2.Created, Attempts: 1}})
}

// testEnqueueNew: a location's first message, its new conversation and
// the binding are one write; a location bound meanwhile keeps its
// conversation; a duplicate stores nothing.
func testEnqueueNew(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	loc := "telegram:" + newID("chat")
	conv := agentcore.Conversation{ID: newID("conv"), AgentID: "main"}
	it := newItem("", 1)
	it.Location = loc
	b, id, ok, err := s.EnqueueNew(ctx, conv, gateway.Binding{Location: loc, AgentID: "main", ConversationID: conv.ID}, it, "telegram:"+newID("ev"), time.Hour)
	if err != nil || !ok || id == 0 || b.ConversationID != conv.ID {
		t.Fatalf("EnqueueNew = %+v, %d, %v, %v; want the item in %s", b, id, ok, err, conv.ID)
	}
	got, err := s.Binding(ctx, loc)
	if err != nil || got.ConversationID != conv.ID {
		t.Fatalf("Binding = %+v, %v; want %s", got, err, conv.ID)
	}
	if p := pending(t, s, conv.ID); len(p) != 1 || p[0].ID != id {
		t.Fatalf("Pending = %+v, want the item", p)
	}
	// Bound meanwhile: the item goes to the bound conversation.
	other := agentcore.Conversation{ID: newID("conv"), AgentID: "main"}
	key := "telegram:" + newID("ev")
	b2, id2, ok, err := s.EnqueueNew(ctx, other, gateway.Binding{Location: loc, AgentID: "main", ConversationID: other.ID}, it, key, time.Hour)
	if err != nil || !ok || b2.ConversationID != conv.ID {
		t.Fatalf("EnqueueNew on a bound location = %+v, %v, %v; want the item in %s", b2, ok, err, conv.ID)
	}
	if p := pending(t, s, conv.ID); len(p) != 2 || p[1].ID != id2 {
		t.Fatalf("Pending = %+v, want both items", p)
	}
	if p := pending(t, s, other.ID); len(p) != 0 {
		t.Errorf("the unused conversation got items: %+v", p)
	}
	// A duplicate: nothing stored.
	fresh := "telegram:" + newID("chat")
	_, _, ok, err = s.EnqueueNew(ctx, other, gateway.Binding{Location: fresh, AgentID: "main", ConversationID: other.ID}, it, key, time.Hour)
	if err != nil || ok {
		t.Fatalf("EnqueueNew of a seen event = %v, %v; want nothing enqueued", ok, err)
	}
	if _, err := s.Binding(ctx, fresh); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a duplicate bound its location: %v", err)
	}
}

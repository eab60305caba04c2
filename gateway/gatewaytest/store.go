package gatewaytest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

// TestStore runs the gateway.Store contract against stores made by open.
// open is called once per subtest and must return an empty store; it should
// register the store's cleanup with t.Cleanup.
func TestStore(t *testing.T, open func(t *testing.T) gateway.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s gateway.Store)
	}{
		{"Bindings", testBindings},
		{"QueueOrderPerConversation", testQueueOrder},
		{"QueuePeekAndComplete", testQueuePeekComplete},
		{"QueueRejects", testQueueRejects},
		{"DedupeWithinTTL", testDedupeWithinTTL},
		{"DedupeAfterExpiry", testDedupeAfterExpiry},
		{"PairingSameUserSameCode", testPairingSameUser},
		{"PairingNotifyOncePerInterval", testPairingNotifyOncePerInterval},
		{"PairingEvictsOldestStranger", testPairingEvictsOldest},
		{"PairingEvictionKeepsLimit", testPairingEvictionKeepsLimit},
		{"PairingExpiredCodes", testPairingExpired},
		{"PairingApprove", testPairingApprove},
		{"Buttons", testButtons},
		{"ApprovalPosts", testApprovalPosts},
		{"OutboxDueOrder", testOutboxDue},
		{"OutboxMarkSent", testOutboxMarkSent},
		{"OutboxRetry", testOutboxRetry},
		{"OutboxRejects", testOutboxRejects},
		{"CompleteWithOutbound", testCompleteWithOutbound},
		{"CompleteWithOutboundAtomic", testCompleteWithOutboundAtomic},
		{"QueueByChannel", testQueueByChannel},
		{"OutboxByChannel", testOutboxByChannel},
		{"ClaimDedupe", testClaimDedupe},
		{"RebindMovesLaterItems", testRebind},
		{"TakeItem", testTakeItem},
		{"FinishTurn", testFinishTurn},
		{"FinishTurnAtomic", testFinishTurnAtomic},
		{"EnqueueNew", testEnqueueNew},
		{"LatestIDs", testLatestIDs},
		{"Settings", testSettings},
		{"DecideAndResume", testDecideAndResume},
		{"PostApproval", testPostApproval},
		{"TaskStart", testTaskStart},
		{"TaskAdmit", testTaskAdmit},
		{"TaskFinishOnce", testTaskFinishOnce},
		{"TaskDetach", testTaskDetach},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// newID returns a random id with a prefix, so that subtests never depend
// on fixed ids being free.
func newID(prefix string) string { return prefix + "-" + rand.Text()[:12] }

// sameTime reports whether two times are equal to the microsecond.
func sameTime(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Microsecond && d < time.Microsecond && a.IsZero() == b.IsZero()
}

// check compares got with want after aligning times that are equal to the
// microsecond and treating empty and nil byte slices alike.
func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	g, w := reflect.ValueOf(&got).Elem(), reflect.ValueOf(&want).Elem()
	normalize(g, w)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// normalize rewrites g's times to w's where they are equal to the
// microsecond, and empty byte slices of both to nil.
func normalize(g, w reflect.Value) {
	switch {
	case g.Type() == reflect.TypeFor[time.Time]():
		if sameTime(g.Interface().(time.Time), w.Interface().(time.Time)) {
			g.Set(w)
		}
	case g.Type() == reflect.TypeFor[[]byte]():
		for _, v := range []reflect.Value{g, w} {
			if v.Len() == 0 {
				v.SetZero()
			}
		}
	case g.Kind() == reflect.Struct:
		for i := range g.NumField() {
			if g.Field(i).CanSet() {
				normalize(g.Field(i), w.Field(i))
			}
		}
	case g.Kind() == reflect.Slice:
		for i := range min(g.Len(), w.Len()) {
			normalize(g.Index(i), w.Index(i))
		}
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("%s: err = %v, want gateway.ErrNotFound", what, err)
	}
}

// base is a fixed reference time for the tests that pass now explicitly.
func base() time.Time { return time.Date(2026, 11, 2, 10, 0, 0, 123456000, time.UTC) }

func testBindings(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	_, err := s.Binding(ctx, "telegram:4242")
	wantNotFound(t, "Binding of an unbound location", err)

	c1, c2 := newID("conv"), newID("conv")
	created := time.Now().Add(-time.Hour).UTC()
	dm := gateway.Binding{Location: "telegram:4242", AgentID: "main", ConversationID: c1, Created: created}
	thread := gateway.Binding{Location: "slack:C1/T1", AgentID: "main", ConversationID: c1, Created: created.Add(time.Second)}
	for _, b := range []gateway.Binding{dm, thread} {
		if err := s.Bind(ctx, b); err != nil {
			t.Fatalf("Bind(%s): %v", b.Location, err)
		}
	}
	got, err := s.Binding(ctx, dm.Location)
	if err != nil {
		t.Fatalf("Binding: %v", err)
	}
	check(t, "Binding after Bind", got, dm)
	of, err := s.BindingsOf(ctx, c1)
	if err != nil {
		t.Fatalf("BindingsOf: %v", err)
	}
	sortBindings(of)
	check(t, "BindingsOf", of, sortBindings([]gateway.Binding{dm, thread}))

	// Rebinding moves the location to the other conversation.
	moved := gateway.Binding{Location: thread.Location, AgentID: "ops", ConversationID: c2}
	if err := s.Bind(ctx, moved); err != nil {
		t.Fatalf("Bind (replace): %v", err)
	}
	got, err = s.Binding(ctx, thread.Location)
	if err != nil {
		t.Fatalf("Binding after replace: %v", err)
	}
	if got.Created.IsZero() {
		t.Error("Bind with zero Created stored a zero time, want now")
	}
	moved.Created = got.Created
	check(t, "Binding after replace", got, moved)
	if of, err := s.BindingsOf(ctx, c1); err != nil || len(of) != 1 || of[0].Location != dm.Location {
		t.Errorf("BindingsOf(old conversation) = %+v, %v; want only %s", of, err, dm.Location)
	}
	if of, err := s.BindingsOf(ctx, c2); err != nil || len(of) != 1 || of[0].Location != thread.Location {
		t.Errorf("BindingsOf(new conversation) = %+v, %v; want only %s", of, err, thread.Location)
	}
	if of, err := s.BindingsOf(ctx, newID("conv")); err != nil || len(of) != 0 {
		t.Errorf("BindingsOf(unbound conversation) = %+v, %v; want none", of, err)
	}
	if err := s.Bind(ctx, gateway.Binding{ConversationID: c1}); err == nil {
		t.Error("Bind without a location succeeded, want an error")
	}
}

func sortBindings(bs []gateway.Binding) []gateway.Binding {
	slices.SortFunc(bs, func(a, b gateway.Binding) int {
		return strings.Compare(a.Location, b.Location)
	})
	return bs
}

func testButtons(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	approval := newID("approval")
	created := time.Now().Add(-time.Minute).UTC()
	bs := []gateway.Button{
		{Token: newID("tok"), ApprovalID: approval, Action: gateway.ButtonApprove, Created: created},
		{Token: newID("tok"), ApprovalID: approval, Action: gateway.ButtonAlways, Created: created},
		{Token: newID("tok"), ApprovalID: approval, Action: gateway.ButtonDeny},
	}
	if err := s.CreateButtons(ctx, bs); err != nil {
		t.Fatalf("CreateButtons: %v", err)
	}
	for i, want := range bs {
		got, err := s.Button(ctx, want.Token)
		if err != nil {
			t.Fatalf("Button %d: %v", i, err)
		}
		if want.Created.IsZero() {
			if got.Created.IsZero() {
				t.Errorf("button %d: zero Created stored as zero, want now", i)
			}
			want.Created = got.Created
		}
		check(t, fmt.Sprintf("Button %d", i), got, want)
	}
	_, err := s.Button(ctx, "no-such-token")
	wantNotFound(t, "Button of an unknown token", err)

	// Tokens are unique, and a batch is stored all or none.
	fresh := gateway.Button{Token: newID("tok"), ApprovalID: approval, Action: gateway.ButtonDeny}
	dup := gateway.Button{Token: bs[0].Token, ApprovalID: newID("approval"), Action: gateway.ButtonDeny}
	if err := s.CreateButtons(ctx, []gateway.Button{fresh, dup}); err == nil {
		t.Error("CreateButtons with an existing token succeeded, want an error")
	}
	_, err = s.Button(ctx, fresh.Token)
	wantNotFound(t, "Button from a failed batch", err)
	if got, err := s.Button(ctx, bs[0].Token); err != nil || got.ApprovalID != approval {
		t.Errorf("Button(%s) after a failed duplicate = %+v, %v; want the original", bs[0].Token, got, err)
	}
}

func testApprovalPosts(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a, b := newID("approval"), newID("approval")
	posts := []gateway.ApprovalPost{
		{ApprovalID: a, Location: "slack:C1/T1", OutboxID: 7},
		{ApprovalID: b, Location: "telegram:4242", MessageID: "m-2", OutboxID: 8},
		{ApprovalID: a, Location: "telegram:4242", MessageID: "m-3", OutboxID: 9},
		{ApprovalID: a, Location: "discord:55"},
	}
	for _, p := range posts {
		if err := s.AddApprovalPost(ctx, p); err != nil {
			t.Fatalf("AddApprovalPost: %v", err)
		}
	}
	got, err := s.ApprovalPosts(ctx, a)
	if err != nil {
		t.Fatalf("ApprovalPosts: %v", err)
	}
	check(t, "ApprovalPosts in insertion order", got, []gateway.ApprovalPost{posts[0], posts[2], posts[3]})
	if got, err := s.ApprovalPosts(ctx, newID("approval")); err != nil || len(got) != 0 {
		t.Errorf("ApprovalPosts of an unknown approval = %+v, %v; want none", got, err)
	}
}

package gatewaytest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

// The ports that let every host share one gateway: division of the work by
// channel, immediate-command dedupe, /new's rebind, noticing other
// processes' items, durable settings and the one decide transaction.

func testQueueByChannel(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	a, b := newID("conv"), newID("conv")
	web := newItem(a, 1)
	web.Location = "web::chat-1"
	web = mustEnqueue(t, s, web, "")
	tg := mustEnqueue(t, s, newItem(b, 2), "")
	if got := busyIn(t, s, []string{"web"}); !slices.Equal(got, []string{a}) {
		t.Errorf("Busy(web) = %v, want [%s]", got, a)
	}
	if got := busyIn(t, s, []string{"telegram", "slack"}); !slices.Equal(got, []string{b}) {
		t.Errorf("Busy(telegram, slack) = %v, want [%s]", got, b)
	}
	if got := busyIn(t, s, []string{}); len(got) != 0 {
		t.Errorf("Busy(no channels) = %v, want none", got)
	}
	// A foreign item is returned untouched.
	it, err := s.Peek(ctx, a, []string{"telegram"})
	if err != nil || it.ID != web.ID || it.Channel != "web" || it.Attempts != 0 {
		t.Fatalf("Peek of a foreign item = %+v, %v; want item %d, channel web, 0 attempts", it, err, web.ID)
	}
	it, err = s.Peek(ctx, a, []string{"web"})
	if err != nil || it.Attempts != 1 {
		t.Fatalf("Peek of an own item = %+v, %v; want 1 attempt", it, err)
	}
	if it, err := s.Peek(ctx, b, nil); err != nil || it.ID != tg.ID || it.Attempts != 1 {
		t.Fatalf("Peek(any channel) = %+v, %v", it, err)
	}
}

func busyIn(t *testing.T, s gateway.Store, channels []string) []string {
	t.Helper()
	ids, err := s.Busy(t.Context(), channels)
	if err != nil {
		t.Fatalf("Busy: %v", err)
	}
	return ids
}

func testOutboxByChannel(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	ids, err := s.EnqueueOutbound(ctx,
		gateway.Outbound{Kind: gateway.OutboundSend, Location: "web::c1", Body: []byte(`{}`)},
		gateway.Outbound{Kind: gateway.OutboundEphemeral, Location: "telegram::5", UserID: "42", Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	due, err := s.DueOutboundAfter(ctx, []string{"telegram"}, later, 0, 0)
	if err != nil || len(due) != 1 || due[0].ID != ids[1] || due[0].UserID != "42" || due[0].Kind != gateway.OutboundEphemeral {
		t.Fatalf("DueOutbound(telegram) = %+v, %v; want only the ephemeral item for user 42", due, err)
	}
	if due, _ := s.DueOutboundAfter(ctx, nil, later, 0, 0); len(due) != 2 {
		t.Errorf("DueOutbound(any) = %d items, want 2", len(due))
	}
	if waiting, err := s.WaitingOutbound(ctx, []string{"web"}, time.Now().Add(-time.Hour), 0); err != nil || len(waiting) != 1 || waiting[0].ID != ids[0] {
		t.Errorf("WaitingOutbound(web) = %+v, %v; want only the web item", waiting, err)
	}
}

func testClaimDedupe(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	key := newID("telegram:ev")
	if fresh, err := s.ClaimDedupe(ctx, key, time.Hour); err != nil || !fresh {
		t.Fatalf("first claim = %v, %v", fresh, err)
	}
	if fresh, err := s.ClaimDedupe(ctx, key, time.Hour); err != nil || fresh {
		t.Fatalf("second claim = %v, %v; want not fresh", fresh, err)
	}
	// A claimed key also dedupes an Enqueue (one key space).
	if _, ok, err := s.Enqueue(ctx, newItem(newID("conv"), 1), key, time.Hour); err != nil || ok {
		t.Fatalf("Enqueue with a claimed key = %v, %v; want dropped", ok, err)
	}
}

func testRebind(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	old, fresh := newID("conv"), newID("conv")
	loc := "telegram::" + newID("chat")
	mk := func(n int) gateway.Item {
		it := newItem(old, n)
		it.Location = loc
		return mustEnqueue(t, s, it, "")
	}
	before, cmd, after := mk(1), mk(2), mk(3)
	other := newItem(old, 4)
	other.Location = "telegram::elsewhere"
	other = mustEnqueue(t, s, other, "")
	if err := s.Rebind(ctx, gateway.Binding{Location: loc, AgentID: "main", ConversationID: fresh}, cmd.ID); err != nil {
		t.Fatal(err)
	}
	b, err := s.Binding(ctx, loc)
	if err != nil || b.ConversationID != fresh {
		t.Fatalf("binding after Rebind = %+v, %v", b, err)
	}
	var oldIDs, newIDs []int64
	for _, it := range pending(t, s, old) {
		oldIDs = append(oldIDs, it.ID)
	}
	for _, it := range pending(t, s, fresh) {
		newIDs = append(newIDs, it.ID)
	}
	if !slices.Equal(oldIDs, []int64{before.ID, cmd.ID, other.ID}) || !slices.Equal(newIDs, []int64{after.ID}) {
		t.Errorf("after Rebind: old conversation has %v, new has %v; want [%d %d %d] and [%d]", oldIDs, newIDs, before.ID, cmd.ID, other.ID, after.ID)
	}
}

func testLatestIDs(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	q0, o0, err := s.LatestIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it := mustEnqueue(t, s, newItem(newID("conv"), 1), "")
	ids, err := s.EnqueueOutbound(ctx, gateway.Outbound{Kind: gateway.OutboundSend, Location: "web::x", Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	q, o, err := s.LatestIDs(ctx)
	if err != nil || q != it.ID || o != ids[0] || q <= q0 || o <= o0 {
		t.Errorf("LatestIDs = %d, %d, %v; want %d, %d", q, o, err, it.ID, ids[0])
	}
}

func testSettings(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	scope := newID("location")
	if v, err := s.Settings(ctx, scope); err != nil || len(v) != 0 {
		t.Fatalf("Settings of an empty scope = %v, %v", v, err)
	}
	for _, kv := range [][2]string{{"queue_mode", "steer"}, {"queue_mode", "collect"}, {"other", "x"}} {
		if err := s.SetSetting(ctx, scope, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSetting(ctx, scope, "other", ""); err != nil {
		t.Fatal(err)
	}
	v, err := s.Settings(ctx, scope)
	if err != nil || len(v) != 1 || v["queue_mode"] != "collect" {
		t.Errorf("Settings = %v, %v; want queue_mode=collect only", v, err)
	}
}

// agentTables is what DecideAndResume needs besides the gateway ports:
// stores implement both sides.
type agentTables interface {
	EnsureAgent(ctx context.Context, agentID string) error
	CreateConversation(ctx context.Context, c agentcore.Conversation) error
	CreateApprovals(ctx context.Context, as []agentcore.Approval) error
	Approval(ctx context.Context, id string) (agentcore.Approval, error)
	AgentRules(ctx context.Context, agentID string) ([]string, error)
}

func testDecideAndResume(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	at, ok := s.(agentTables)
	if !ok {
		t.Fatal("the store does not implement the agent tables DecideAndResume needs")
	}
	conv := newID("conv")
	if err := at.EnsureAgent(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if err := at.CreateConversation(ctx, agentcore.Conversation{ID: conv, AgentID: "main", Created: time.Now(), Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	origin := "web::" + newID("chat")
	aps := []agentcore.Approval{
		{ID: newID("ap"), ConversationID: conv, AgentID: "main", ToolCallID: "c1", ToolName: "Bash", Rule: "Bash(git push:*)", Location: origin, State: agentcore.ApprovalPending, Created: now, Expires: now.Add(time.Hour)},
		{ID: newID("ap"), ConversationID: conv, AgentID: "main", ToolCallID: "c2", ToolName: "Bash", Location: origin, State: agentcore.ApprovalPending, Created: now, Expires: now.Add(time.Hour)},
	}
	if err := at.CreateApprovals(ctx, aps); err != nil {
		t.Fatal(err)
	}
	// The newest binding is elsewhere: the resume must go where the turn came from.
	if err := s.Bind(ctx, gateway.Binding{Location: "telegram::9", AgentID: "main", ConversationID: conv, Created: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddApprovalPost(ctx, gateway.ApprovalPost{ApprovalID: aps[0].ID, Location: origin, OutboxID: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddApprovalPost(ctx, gateway.ApprovalPost{ApprovalID: aps[0].ID, Location: "telegram::4242", MessageID: "m-3"}); err != nil {
		t.Fatal(err)
	}
	edit := func(ap agentcore.Approval) []byte {
		b, _ := json.Marshal(map[string]string{"state": string(ap.State)})
		return b
	}
	_, o0, _ := s.LatestIDs(ctx)

	ap, decided, resumed, err := s.DecideAndResume(ctx, aps[0].ID, agentcore.Decision{State: agentcore.ApprovalAlways, By: "web:alice"}, edit, gateway.Item{Kind: gateway.ItemResume})
	if err != nil || !decided || resumed || ap.State != agentcore.ApprovalAlways {
		t.Fatalf("first decision = %+v, decided %v, resumed %v, %v; want decided, not resumed (one ask still pending)", ap, decided, resumed, err)
	}
	if rules, _ := at.AgentRules(ctx, "main"); !slices.Contains(rules, "Bash(git push:*)") {
		t.Errorf("Always did not store its rule: %v", rules)
	}
	due, err := s.DueOutboundAfter(ctx, nil, time.Now().Add(time.Hour), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var edits []gateway.Outbound
	for _, o := range due {
		if o.ID > o0 {
			edits = append(edits, o)
		}
	}
	if len(edits) != 2 || edits[0].Kind != gateway.OutboundEdit || edits[0].EditOf != 7 || edits[0].Location != origin ||
		edits[1].MessageID != "m-3" || string(edits[1].Body) != `{"state":"always"}` {
		t.Errorf("edits of the posted copies = %+v", edits)
	}
	if p := pending(t, s, conv); len(p) != 0 {
		t.Errorf("a resume was queued while an ask is pending: %+v", p)
	}
	// A second decision of the same approval changes nothing.
	if _, decided, _, err := s.DecideAndResume(ctx, aps[0].ID, agentcore.Decision{State: agentcore.ApprovalDenied, By: "x"}, edit, gateway.Item{}); err != nil || decided {
		t.Fatalf("second decision: decided %v, %v", decided, err)
	}
	// The last ask: the resume is queued for the approval's location.
	_, decided, resumed, err = s.DecideAndResume(ctx, aps[1].ID, agentcore.Decision{State: agentcore.ApprovalDenied, By: "web:alice", Reason: "no"}, edit, gateway.Item{Kind: gateway.ItemResume})
	if err != nil || !decided || !resumed {
		t.Fatalf("last decision: decided %v resumed %v, %v", decided, resumed, err)
	}
	p := pending(t, s, conv)
	if len(p) != 1 || p[0].Kind != gateway.ItemResume || p[0].Location != origin || p[0].Channel != "web" || p[0].AgentID != "main" {
		t.Errorf("queued resume = %+v; want one resume for %s", p, origin)
	}
	if _, _, _, err := s.DecideAndResume(ctx, "no-such-approval", agentcore.Decision{State: agentcore.ApprovalDenied}, edit, gateway.Item{}); err == nil {
		t.Error("deciding an unknown approval succeeded")
	}
}

func testPostApproval(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	ap := newID("ap")
	bs := []gateway.Button{
		{Token: newID("tok"), ApprovalID: ap, Action: gateway.ButtonApprove},
		{Token: newID("tok"), ApprovalID: ap, Action: gateway.ButtonDeny},
	}
	items := []gateway.Outbound{
		{Kind: gateway.OutboundSend, Location: "telegram::1", Body: []byte(`{"a":1}`)},
		{Kind: gateway.OutboundSend, Location: "slack:T:C:1.2", Body: []byte(`{"a":2}`)},
	}
	ids, err := s.PostApproval(ctx, bs, items)
	if err != nil || len(ids) != 2 {
		t.Fatalf("PostApproval = %v, %v", ids, err)
	}
	posts, err := s.ApprovalPosts(ctx, ap)
	if err != nil || len(posts) != 2 || posts[0].OutboxID != ids[0] || posts[1].OutboxID != ids[1] ||
		posts[0].Location != "telegram::1" || posts[1].Location != "slack:T:C:1.2" {
		t.Fatalf("posts = %+v, %v; want one per item with its outbox id", posts, err)
	}
	got, err := s.ApprovalButtons(ctx, ap)
	if err != nil || len(got) != 2 {
		t.Fatalf("buttons = %+v, %v", got, err)
	}
	for _, b := range bs {
		if g, err := s.Button(ctx, b.Token); err != nil || g.ApprovalID != ap || g.Action != b.Action {
			t.Errorf("Button(%s) = %+v, %v", b.Action, g, err)
		}
	}
	// A token that exists already fails the whole post: nothing is stored.
	ap2 := newID("ap")
	if _, err := s.PostApproval(ctx, []gateway.Button{{Token: newID("tok"), ApprovalID: ap2, Action: gateway.ButtonApprove}, {Token: bs[0].Token, ApprovalID: ap2, Action: gateway.ButtonDeny}}, items[:1]); err == nil {
		t.Fatal("a post with a duplicate token succeeded")
	}
	if posts, _ := s.ApprovalPosts(ctx, ap2); len(posts) != 0 {
		t.Errorf("a failed post left %d post records", len(posts))
	}
	if bs2, _ := s.ApprovalButtons(ctx, ap2); len(bs2) != 0 {
		t.Errorf("a failed post left %d buttons", len(bs2))
	}
}

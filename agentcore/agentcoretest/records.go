package agentcoretest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
)

func testRuns(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	t0 := time.Now().Add(-time.Minute).UTC()
	r1 := agentcore.Run{ID: newID("run"), ConversationID: c.ID, TurnID: "turn-1", Step: 1, Model: "qwen3:8b", Started: t0}
	r2 := agentcore.Run{ID: newID("run"), ConversationID: c.ID, TurnID: "turn-1", Step: 2, Model: "qwen3:8b", Started: t0.Add(time.Second)}
	for _, r := range []agentcore.Run{r1, r2} {
		if err := s.StartRun(ctx(t), r); err != nil {
			t.Fatalf("StartRun: %v", err)
		}
	}
	runs, err := s.ListRuns(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("ListRuns: %v", err)
	}
	if diff := cmp.Diff([]agentcore.Run{r1, r2}, runs, cmpOpts()); diff != "" {
		t.Errorf("runs after start (-want +got):\n%s", diff)
	}

	r1.StopReason = agentcore.StopToolUse
	r1.Usage = agentcore.Usage{InputTokens: 1200, OutputTokens: 80, CachedTokens: 1024, Reported: true}
	r1.Finished = t0.Add(500 * time.Millisecond)
	r2.StopReason = agentcore.StopError
	r2.Error = "provider: 500 Internal Server Error"
	r2.Finished = t0.Add(2 * time.Second)
	for _, r := range []agentcore.Run{r1, r2} {
		if err := s.FinishRun(ctx(t), r); err != nil {
			t.Fatalf("FinishRun: %v", err)
		}
	}
	runs, err = s.ListRuns(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("ListRuns: %v", err)
	}
	if diff := cmp.Diff([]agentcore.Run{r1, r2}, runs, cmpOpts()); diff != "" {
		t.Errorf("runs after finish (-want +got):\n%s", diff)
	}
	recent, err := s.RecentRuns(ctx(t), c.ID, 1)
	if err != nil {
		t.Fatalf("RecentRuns: %v", err)
	}
	if diff := cmp.Diff([]agentcore.Run{r2}, recent, cmpOpts()); diff != "" {
		t.Errorf("RecentRuns(1) (-want +got):\n%s", diff)
	}
	if recent, err := s.RecentRuns(ctx(t), c.ID, 5); err != nil || len(recent) != 2 || recent[0].ID != r2.ID || recent[1].ID != r1.ID {
		t.Errorf("RecentRuns(5) = %v, %v; want r2 then r1", recent, err)
	}
	wantNotFound(t, "FinishRun of an unknown run", s.FinishRun(ctx(t), agentcore.Run{ID: "no-such-run", ConversationID: c.ID}))
	if err := s.StartRun(ctx(t), r1); err == nil {
		t.Error("StartRun with an existing id succeeded, want an error")
	}
	other := newConversation(t, s)
	if runs, err := s.ListRuns(ctx(t), other.ID); err != nil || len(runs) != 0 {
		t.Errorf("ListRuns of another conversation = %v, %v; want none", runs, err)
	}
}

func testToolLedger(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	other := newConversation(t, s)
	ids := []string{"call-a", "call-b", "call-z", "call-never"}
	got, err := s.StartedToolCalls(ctx(t), c.ID, ids)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("StartedToolCalls before any = %v, %v; want none", got, err)
	}
	for _, id := range []string{"call-a", "call-b", "call-a"} {
		if err := s.MarkToolStarted(ctx(t), c.ID, id); err != nil {
			t.Fatalf("MarkToolStarted(%s): %v", id, err)
		}
	}
	if err := s.MarkToolStarted(ctx(t), other.ID, "call-z"); err != nil {
		t.Fatalf("MarkToolStarted: %v", err)
	}
	got, err = s.StartedToolCalls(ctx(t), c.ID, ids)
	if err != nil {
		t.Fatalf("StartedToolCalls: %v", err)
	}
	if diff := cmp.Diff(map[string]bool{"call-a": true, "call-b": true}, got); diff != "" {
		t.Errorf("StartedToolCalls (-want +got):\n%s", diff)
	}
}

func newApproval(c agentcore.Conversation, callID, rule string) agentcore.Approval {
	now := time.Now().UTC()
	return agentcore.Approval{
		ID: newID("appr"), ConversationID: c.ID, AgentID: c.AgentID,
		ToolCallID: callID, ToolName: "Bash", Arguments: `{"command":"git push"}`,
		Summary: "git push", Reason: "Bash asks in standard mode", Rule: rule,
		Workdir: "/work/repo", Diff: "--- a\n+++ b\n", Requester: "slack:U1",
		Approvers: []string{"slack:U1", "telegram:42"},
		State:     agentcore.ApprovalPending, Created: now, Expires: now.Add(time.Hour),
	}
}

func testApprovals(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	a1 := newApproval(c, "call-1", "Bash(git push:*)")
	a2 := newApproval(c, "call-2", "")
	a2.Approvers = nil
	a2.Created = a1.Created.Add(time.Millisecond)
	if err := s.CreateApprovals(ctx(t), []agentcore.Approval{a1, a2}); err != nil {
		t.Fatalf("CreateApprovals: %v", err)
	}
	got, err := s.Approval(ctx(t), a1.ID)
	if err != nil {
		t.Fatalf("Approval: %v", err)
	}
	if diff := cmp.Diff(a1, got, cmpOpts()); diff != "" {
		t.Errorf("Approval round trip (-want +got):\n%s", diff)
	}
	_, err = s.Approval(ctx(t), "no-such-approval")
	wantNotFound(t, "Approval(missing)", err)

	pending, err := s.PendingApprovals(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("PendingApprovals: %v", err)
	}
	if diff := cmp.Diff([]agentcore.Approval{a1, a2}, pending, cmpOpts()); diff != "" {
		t.Errorf("PendingApprovals (-want +got):\n%s", diff)
	}
	byCall, err := s.ConversationApprovals(ctx(t), c.ID, []string{"call-2", "call-unknown"})
	if err != nil {
		t.Fatalf("ConversationApprovals: %v", err)
	}
	if diff := cmp.Diff(map[string]agentcore.Approval{"call-2": a2}, byCall, cmpOpts()); diff != "" {
		t.Errorf("ConversationApprovals(call-2) (-want +got):\n%s", diff)
	}
	byCall, err = s.ConversationApprovals(ctx(t), c.ID, nil)
	if err != nil {
		t.Fatalf("ConversationApprovals: %v", err)
	}
	if diff := cmp.Diff(map[string]agentcore.Approval{"call-1": a1, "call-2": a2}, byCall, cmpOpts()); diff != "" {
		t.Errorf("ConversationApprovals(all) (-want +got):\n%s", diff)
	}

	at := time.Now().UTC()
	d := agentcore.Decision{State: agentcore.ApprovalAllowed, Reason: "looks fine", By: "telegram:42", At: at}
	decided, ok, err := s.Decide(ctx(t), a1.ID, d)
	if err != nil || !ok {
		t.Fatalf("Decide = %v, %v; want decided", ok, err)
	}
	want := a1
	want.State, want.DecisionReason, want.DecidedBy, want.Decided = d.State, d.Reason, d.By, at
	if diff := cmp.Diff(want, decided, cmpOpts()); diff != "" {
		t.Errorf("decided approval (-want +got):\n%s", diff)
	}
	// A second decision changes nothing and reports the first.
	again, ok, err := s.Decide(ctx(t), a1.ID, agentcore.Decision{State: agentcore.ApprovalDenied, Reason: "no", By: "slack:U1"})
	if err != nil || ok {
		t.Fatalf("second Decide = %v, %v; want not decided, no error", ok, err)
	}
	if diff := cmp.Diff(want, again, cmpOpts()); diff != "" {
		t.Errorf("second Decide returned (-want +got):\n%s", diff)
	}
	stored, err := s.Approval(ctx(t), a1.ID)
	if err != nil {
		t.Fatalf("Approval: %v", err)
	}
	if diff := cmp.Diff(want, stored, cmpOpts()); diff != "" {
		t.Errorf("stored after second Decide (-want +got):\n%s", diff)
	}
	pending, err = s.PendingApprovals(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("PendingApprovals: %v", err)
	}
	if diff := cmp.Diff([]agentcore.Approval{a2}, pending, cmpOpts()); diff != "" {
		t.Errorf("PendingApprovals after a decision (-want +got):\n%s", diff)
	}
	if rules, err := s.AgentRules(ctx(t), c.AgentID); err != nil || len(rules) != 0 {
		t.Errorf("AgentRules after allow-once = %v, %v; want none", rules, err)
	}
	_, _, err = s.Decide(ctx(t), "no-such-approval", d)
	wantNotFound(t, "Decide(missing)", err)
	if _, _, err := s.Decide(ctx(t), a2.ID, agentcore.Decision{State: agentcore.ApprovalPending}); err == nil {
		t.Error("Decide with state pending succeeded, want an error")
	}

	// Racing deciders: exactly one wins.
	a3 := newApproval(c, "call-3", "")
	if err := s.CreateApprovals(ctx(t), []agentcore.Approval{a3}); err != nil {
		t.Fatalf("CreateApprovals: %v", err)
	}
	var wg sync.WaitGroup
	wins := make(chan string, 4)
	for i := range 4 {
		wg.Go(func() {
			by := fmt.Sprintf("user:%d", i)
			a, ok, err := s.Decide(ctx(t), a3.ID, agentcore.Decision{State: agentcore.ApprovalDenied, By: by})
			if err != nil {
				t.Errorf("concurrent Decide: %v", err)
				return
			}
			if ok {
				wins <- a.DecidedBy
			}
		})
	}
	wg.Wait()
	close(wins)
	var winners []string
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("concurrent Decide winners = %v, want exactly one", winners)
	}
	final, err := s.Approval(ctx(t), a3.ID)
	if err != nil || final.DecidedBy != winners[0] {
		t.Errorf("stored decider = %q, %v; want the winner %q", final.DecidedBy, err, winners[0])
	}
}

func testApprovalAlways(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	rule := "Bash(go test:*)"
	a1 := newApproval(c, "call-1", rule)
	a2 := newApproval(c, "call-2", rule)
	a3 := newApproval(c, "call-3", "Edit(src/**)")
	if err := s.CreateApprovals(ctx(t), []agentcore.Approval{a1, a2, a3}); err != nil {
		t.Fatalf("CreateApprovals: %v", err)
	}
	for _, a := range []agentcore.Approval{a1, a2} {
		got, ok, err := s.Decide(ctx(t), a.ID, agentcore.Decision{State: agentcore.ApprovalAlways, By: "slack:U1"})
		if err != nil || !ok || got.State != agentcore.ApprovalAlways {
			t.Fatalf("Decide(always) = %v %v %v", got.State, ok, err)
		}
	}
	// A denial stores no rule.
	if _, _, err := s.Decide(ctx(t), a3.ID, agentcore.Decision{State: agentcore.ApprovalDenied, By: "slack:U1"}); err != nil {
		t.Fatalf("Decide(deny): %v", err)
	}
	rules, err := s.AgentRules(ctx(t), c.AgentID)
	if err != nil {
		t.Fatalf("AgentRules: %v", err)
	}
	if diff := cmp.Diff([]string{rule}, rules); diff != "" {
		t.Errorf("AgentRules (-want +got):\n%s", diff)
	}
	// Rules belong to the agent, not to other agents.
	other := newConversation(t, s)
	if rules, err := s.AgentRules(ctx(t), other.AgentID); err != nil || len(rules) != 0 {
		t.Errorf("AgentRules of another agent = %v, %v; want none", rules, err)
	}
}

func testLeases(t *testing.T, s agentcore.Store) {
	conv := newID("conv")
	const ttl = time.Hour
	acquire := func(owner string, want bool) {
		t.Helper()
		ok, err := s.AcquireLease(ctx(t), conv, owner, ttl)
		if err != nil || ok != want {
			t.Fatalf("AcquireLease(%s) = %v, %v; want %v", owner, ok, err, want)
		}
	}
	renew := func(owner string, want bool) {
		t.Helper()
		ok, err := s.RenewLease(ctx(t), conv, owner, ttl)
		if err != nil || ok != want {
			t.Fatalf("RenewLease(%s) = %v, %v; want %v", owner, ok, err, want)
		}
	}
	release := func(owner string) {
		t.Helper()
		if err := s.ReleaseLease(ctx(t), conv, owner); err != nil {
			t.Fatalf("ReleaseLease(%s): %v", owner, err)
		}
	}
	renew("A", false) // nobody holds it yet
	acquire("A", true)
	acquire("B", false)
	acquire("A", true) // the holder may re-acquire (extends)
	renew("B", false)
	renew("A", true)
	release("B") // not B's: no effect
	acquire("B", false)
	release("A")
	renew("A", false)
	acquire("B", true)
	acquire("A", false)

	// Leases of different conversations are independent.
	ok, err := s.AcquireLease(ctx(t), newID("conv"), "A", ttl)
	if err != nil || !ok {
		t.Errorf("AcquireLease of another conversation = %v, %v; want true", ok, err)
	}
}

func testLeaseExpiry(t *testing.T, s agentcore.Store) {
	conv := newID("conv")
	ok, err := s.AcquireLease(ctx(t), conv, "A", time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("AcquireLease(A) = %v, %v", ok, err)
	}
	// B polls until A's lease has expired; no sleeping, a deadline instead.
	deadline := time.Now().Add(10 * time.Second)
	attempts := 0
	for {
		attempts++
		ok, err := s.AcquireLease(ctx(t), conv, "B", time.Hour)
		if err != nil {
			t.Fatalf("AcquireLease(B): %v", err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B could not take an expired 1ms lease within 10s (%d attempts)", attempts)
		}
	}
	if ok, err := s.RenewLease(ctx(t), conv, "A", time.Hour); err != nil || ok {
		t.Errorf("RenewLease by the previous owner = %v, %v; want false", ok, err)
	}
	if ok, err := s.AcquireLease(ctx(t), conv, "A", time.Hour); err != nil || ok {
		t.Errorf("AcquireLease(A) while B holds a live lease = %v, %v; want false", ok, err)
	}
}

func testConcurrentAppend(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	const writers, perWriter = 8, 10
	var wg sync.WaitGroup
	results := make([][]agentcore.Message, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				msgs := []agentcore.Message{userText(fmt.Sprintf("w%d m%d", w, i))}
				if i%3 == 0 { // some batches of two
					msgs = append(msgs, assistantText(fmt.Sprintf("w%d m%d reply", w, i)))
				}
				got, err := s.Append(ctx(t), c.ID, msgs...)
				if err != nil {
					t.Errorf("writer %d: Append: %v", w, err)
					return
				}
				if len(got) == 2 && got[1].Seq != got[0].Seq+1 {
					t.Errorf("writer %d: batch seqs %d, %d are not adjacent", w, got[0].Seq, got[1].Seq)
				}
				results[w] = append(results[w], got...)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var all []int64
	for _, r := range results {
		all = append(all, seqs(r)...)
	}
	slices.Sort(all)
	for i, s := range all {
		if s != int64(i+1) {
			t.Fatalf("seqs not unique and contiguous from 1: position %d holds %d (all: %v)", i, s, all)
		}
	}
	transcript, err := s.Messages(ctx(t), c.ID, 0, 0)
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	view, err := s.View(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if len(transcript) != len(all) {
		t.Fatalf("transcript holds %d messages, appended %d", len(transcript), len(all))
	}
	if diff := cmp.Diff(ids(transcript), ids(view)); diff != "" {
		t.Errorf("view order differs from seq order (-transcript +view):\n%s", diff)
	}
}

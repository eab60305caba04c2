package agentcoretest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// testCommitTurn: a turn's batch is stored whole — prompt, messages (Seq
// assigned after the existing ones), runs, approvals, tool starts — and
// releases the lease when asked.
func testCommitTurn(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	mustAppend(t, s, c.ID, userText("earlier"))
	if ok, err := s.AcquireLease(ctx(t), c.ID, "me", time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	now := time.Now().UTC()
	asst := assistantText("")
	asst.ID = newID("msg")
	asst.ToolCalls = []agentcore.ToolCall{{ID: "call-1", Name: "Bash", Arguments: `{"command":"ls"}`}}
	w := agentcore.TurnWrite{
		ConversationID: c.ID,
		SystemPrompt:   "the prompt",
		PromptRevision: "rev-1",
		Messages:       []agentcore.Message{userText("now"), asst},
		Runs:           []agentcore.Run{{ID: newID("run"), ConversationID: c.ID, TurnID: "turn-1", Step: 1, Started: now, Finished: now}},
		Approvals: []agentcore.Approval{{ID: newID("ap"), ConversationID: c.ID, AgentID: c.AgentID, ToolCallID: "call-1",
			ToolName: "Bash", State: agentcore.ApprovalPending, Created: now, Expires: now.Add(time.Hour)}},
		ToolStarted: []string{"call-0"},
		Owner:       "me",
		Release:     true,
	}
	stored, err := s.CommitTurn(ctx(t), w)
	if err != nil {
		t.Fatalf("CommitTurn: %v", err)
	}
	if diff := cmp.Diff([]int64{2, 3}, seqs(stored)); diff != "" {
		t.Errorf("Seq of the stored messages (-want +got):\n%s", diff)
	}
	if stored[1].ID != asst.ID {
		t.Errorf("stored assistant id = %q, want the given %q", stored[1].ID, asst.ID)
	}
	view, err := s.View(ctx(t), c.ID)
	if err != nil || len(view) != 3 {
		t.Fatalf("View = %d messages, %v; want 3", len(view), err)
	}
	got, err := s.Conversation(ctx(t), c.ID)
	if err != nil || got.SystemPrompt != "the prompt" || got.PromptRevision != "rev-1" {
		t.Errorf("Conversation = %q %q, %v; want the committed prompt", got.SystemPrompt, got.PromptRevision, err)
	}
	runs, err := s.ListRuns(ctx(t), c.ID)
	if err != nil || len(runs) != 1 || runs[0].ID != w.Runs[0].ID {
		t.Errorf("ListRuns = %v, %v; want the committed run", runs, err)
	}
	aps, err := s.PendingApprovals(ctx(t), c.ID)
	if err != nil || len(aps) != 1 || aps[0].ID != w.Approvals[0].ID {
		t.Errorf("PendingApprovals = %v, %v; want the committed approval", aps, err)
	}
	started, err := s.StartedToolCalls(ctx(t), c.ID, []string{"call-0", "call-1"})
	if err != nil || !started["call-0"] || started["call-1"] {
		t.Errorf("StartedToolCalls = %v, %v; want call-0 only", started, err)
	}
	// Released: another owner takes the lease.
	if ok, err := s.AcquireLease(ctx(t), c.ID, "other", time.Hour); err != nil || !ok {
		t.Errorf("AcquireLease after the release = %v, %v; want true", ok, err)
	}
}

// testCommitTurnLeaseLost: a batch whose owner does not hold the lease
// stores nothing.
func testCommitTurnLeaseLost(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	if ok, err := s.AcquireLease(ctx(t), c.ID, "other", time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	_, err := s.CommitTurn(ctx(t), agentcore.TurnWrite{ConversationID: c.ID, Messages: []agentcore.Message{userText("x")},
		SystemPrompt: "p", Owner: "me", Release: true})
	if !errors.Is(err, agentcore.ErrLeaseLost) {
		t.Fatalf("CommitTurn without the lease: err = %v, want ErrLeaseLost", err)
	}
	view, err := s.View(ctx(t), c.ID)
	if err != nil || len(view) != 0 {
		t.Errorf("View = %d messages, %v; want none stored", len(view), err)
	}
	if got, _ := s.Conversation(ctx(t), c.ID); got.SystemPrompt != "" {
		t.Errorf("system prompt %q stored by a refused batch", got.SystemPrompt)
	}
	if ok, _ := s.AcquireLease(ctx(t), c.ID, "me", time.Hour); ok {
		t.Error("the refused batch released (or gave away) the other owner's lease")
	}
}

// testCommitTurnAtomic: a batch with one bad record stores none of it.
func testCommitTurnAtomic(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	m := userText("dup")
	m.ID = newID("msg")
	mustAppend(t, s, c.ID, m)
	_, err := s.CommitTurn(ctx(t), agentcore.TurnWrite{ConversationID: c.ID, SystemPrompt: "p",
		Messages: []agentcore.Message{userText("fine"), m}})
	if err == nil {
		t.Fatal("CommitTurn with a message id already stored succeeded")
	}
	view, _ := s.View(ctx(t), c.ID)
	if len(view) != 1 {
		t.Errorf("view has %d messages, want the 1 from before", len(view))
	}
	if got, _ := s.Conversation(ctx(t), c.ID); got.SystemPrompt != "" {
		t.Errorf("system prompt %q stored by a failed batch", got.SystemPrompt)
	}
	_, err = s.CommitTurn(ctx(t), agentcore.TurnWrite{ConversationID: newID("conv"), Messages: []agentcore.Message{userText("x")}})
	wantNotFound(t, "CommitTurn to an unknown conversation", err)
}

// testSharedPrompts: conversations with the same prompt each read it back
// byte for byte, and a new prompt replaces an old one.
func testSharedPrompts(t *testing.T, s agentcore.Store) {
	a, b := newConversation(t, s), newConversation(t, s)
	prompt := "shared prompt\n\twith bytes: \x00 é"
	for _, c := range []agentcore.Conversation{a, b} {
		if err := s.SetSystemPrompt(ctx(t), c.ID, prompt, "r1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSystemPrompt(ctx(t), b.ID, "another", "r2"); err != nil {
		t.Fatal(err)
	}
	for c, want := range map[string]string{a.ID: prompt, b.ID: "another"} {
		got, err := s.Conversation(ctx(t), c)
		if err != nil || got.SystemPrompt != want {
			t.Errorf("Conversation(%s).SystemPrompt = %q, %v; want %q", c, got.SystemPrompt, err, want)
		}
	}
}

// testCreateRecordsAgent: a conversation of an agent never registered is
// stored (CreateConversation records the agent).
func testCreateRecordsAgent(t *testing.T, s agentcore.Store) {
	c := agentcore.Conversation{ID: newID("conv"), AgentID: newID("agent")}
	if err := s.CreateConversation(ctx(t), c); err != nil {
		t.Fatalf("CreateConversation of a new agent: %v", err)
	}
	got, err := s.LatestConversation(ctx(t), c.AgentID)
	if err != nil || got.ID != c.ID {
		t.Errorf("LatestConversation = %v, %v; want %s", got.ID, err, c.ID)
	}
}

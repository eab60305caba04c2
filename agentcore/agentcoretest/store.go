package agentcoretest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// TestStore runs the agentcore.Store contract against stores made by open.
// open is called once per subtest and must return an empty store; it should
// register the store's cleanup with t.Cleanup.
func TestStore(t *testing.T, open func(t *testing.T) agentcore.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s agentcore.Store)
	}{
		{"Conversations", testConversations},
		{"AppendAssignsSeqAndFillsFields", testAppendAssigns},
		{"AppendRoundTripsEveryField", testAppendRoundTrip},
		{"AppendRejects", testAppendRejects},
		{"ReplaceView", testReplaceView},
		{"MessagesPaging", testMessagesPaging},
		{"Search", testSearch},
		{"SearchOddQueries", testSearchOddQueries},
		{"LatestConversation", testLatestConversation},
		{"SystemPrompt", testSystemPrompt},
		{"Runs", testRuns},
		{"ToolLedger", testToolLedger},
		{"Approvals", testApprovals},
		{"ApprovalAlwaysAddsRule", testApprovalAlways},
		{"Leases", testLeases},
		{"LeaseExpiry", testLeaseExpiry},
		{"ConcurrentAppend", testConcurrentAppend},
		{"CommitTurn", testCommitTurn},
		{"CommitTurnLeaseLost", testCommitTurnLeaseLost},
		{"CommitTurnAtomic", testCommitTurnAtomic},
		{"SharedPrompts", testSharedPrompts},
		{"CreateRecordsAgent", testCreateRecordsAgent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// cmpOpts compares times to the microsecond (PostgreSQL's precision) and
// treats nil and empty slices alike.
func cmpOpts() cmp.Option {
	return cmp.Options{cmpopts.EquateApproxTime(time.Microsecond), cmpopts.EquateEmpty()}
}

func newID(prefix string) string { return prefix + "-" + uuid.NewString() }

// newConversation creates a conversation of a fresh agent.
func newConversation(t *testing.T, s agentcore.Store) agentcore.Conversation {
	t.Helper()
	return newConversationOf(t, s, newID("agent"))
}

func newConversationOf(t *testing.T, s agentcore.Store, agentID string) agentcore.Conversation {
	t.Helper()
	ctx := t.Context()
	if err := s.EnsureAgent(ctx, agentID); err != nil {
		t.Fatalf("EnsureAgent: %v", err)
	}
	c := agentcore.Conversation{ID: newID("conv"), AgentID: agentID}
	if err := s.CreateConversation(ctx, c); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	got, err := s.Conversation(ctx, c.ID)
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	return got
}

func userText(text string) agentcore.Message {
	return agentcore.Message{Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: text}}}
}

func assistantText(text string) agentcore.Message {
	return agentcore.Message{Role: agentcore.RoleAssistant, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: text}}}
}

func mustAppend(t *testing.T, s agentcore.Store, convID string, msgs ...agentcore.Message) []agentcore.Message {
	t.Helper()
	got, err := s.Append(t.Context(), convID, msgs...)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("Append returned %d messages, want %d", len(got), len(msgs))
	}
	return got
}

func ids(ms []agentcore.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func seqs(ms []agentcore.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, agentcore.ErrNotFound) {
		t.Errorf("%s: err = %v, want ErrNotFound", what, err)
	}
}

// ctx is a shorthand used by subtests that need no cancellation of their own.
func ctx(t *testing.T) context.Context { return t.Context() }

package agentcoretest

import (
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// CheckTranscript asserts the provider invariant on a transcript: every
// tool call is answered by exactly one tool message before the next user
// or assistant message, and — unless allowOpen (a turn parked on
// approvals) — nothing is left unanswered at the end.
func CheckTranscript(t testing.TB, msgs []agentcore.Message, allowOpen bool) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range msgs {
		switch m.Role {
		case agentcore.RoleAssistant, agentcore.RoleUser:
			if len(open) > 0 {
				t.Fatalf("message %d (%s) follows unanswered tool calls %v", m.Seq, m.Role, open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case agentcore.RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("tool result %d answers unknown or already answered call %s", m.Seq, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 && !allowOpen {
		t.Fatalf("transcript ends with unanswered tool calls %v", open)
	}
}

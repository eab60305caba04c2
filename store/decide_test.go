package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

// A decision is one transaction: when the store fails between its steps,
// the approval stays undecided and decidable, with no edit and no resume
// queued; once it succeeds, it is decided with its resume queued.
func TestDecideIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.EnsureAgent(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := db.CreateConversation(ctx, agentcore.Conversation{ID: "c", AgentID: "main", Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	ap := agentcore.Approval{ID: "ap1", ConversationID: "c", AgentID: "main", ToolCallID: "t1", ToolName: "Bash",
		Location: "web::chat", State: agentcore.ApprovalPending, Created: now, Expires: now.Add(time.Hour)}
	if err := db.CreateApprovals(ctx, []agentcore.Approval{ap}); err != nil {
		t.Fatal(err)
	}
	if err := db.AddApprovalPost(ctx, gateway.ApprovalPost{ApprovalID: "ap1", Location: "web::chat", OutboxID: 1}); err != nil {
		t.Fatal(err)
	}
	edit := func(agentcore.Approval) []byte { return []byte(`{}`) }
	crash := errors.New("the store failed here")
	for _, step := range []string{"decided", "edits", "resume"} {
		db.failAt = func(s string) error {
			if s == step {
				return crash
			}
			return nil
		}
		_, _, _, err := db.DecideAndResume(ctx, "ap1", agentcore.Decision{State: agentcore.ApprovalAllowed, By: "web:a"}, edit, gateway.Item{Kind: gateway.ItemResume})
		if !errors.Is(err, crash) {
			t.Fatalf("failing at %s: err %v", step, err)
		}
		got, err := db.Approval(ctx, "ap1")
		if err != nil || got.State != agentcore.ApprovalPending {
			t.Fatalf("after a failure at %s the approval is %s (%v); want still pending", step, got.State, err)
		}
		if p, _ := db.Pending(ctx, "c"); len(p) != 0 {
			t.Fatalf("after a failure at %s a resume is queued: %+v", step, p)
		}
		if due, _ := db.DueOutbound(ctx, nil, now.Add(time.Hour), 0); len(due) != 0 {
			t.Fatalf("after a failure at %s an edit is queued: %+v", step, due)
		}
	}
	db.failAt = nil
	got, decided, resumed, err := db.DecideAndResume(ctx, "ap1", agentcore.Decision{State: agentcore.ApprovalAllowed, By: "web:a"}, edit, gateway.Item{Kind: gateway.ItemResume})
	if err != nil || !decided || !resumed || got.State != agentcore.ApprovalAllowed {
		t.Fatalf("decision after the failures = %+v, %v, %v, %v", got, decided, resumed, err)
	}
	if p, _ := db.Pending(ctx, "c"); len(p) != 1 || p[0].Location != "web::chat" {
		t.Fatalf("resume = %+v", p)
	}
}

// A decision the agent core records itself (settling an ask) edits the
// approval's posted copies in its own transaction once the gateway
// installed its rendering.
func TestDecideEditsPostedCopies(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.EnsureAgent(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := db.CreateConversation(ctx, agentcore.Conversation{ID: "c", AgentID: "main", Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ap1", "ap2"} {
		if err := db.CreateApprovals(ctx, []agentcore.Approval{{ID: id, ConversationID: "c", AgentID: "main", ToolCallID: id, ToolName: "Bash", State: agentcore.ApprovalPending, Created: now, Expires: now.Add(time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddApprovalPost(ctx, gateway.ApprovalPost{ApprovalID: id, Location: "telegram::1", OutboxID: 9, MessageID: "m-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	// Without a rendering installed, nothing is queued.
	if _, ok, err := db.Decide(ctx, "ap1", agentcore.Decision{State: agentcore.ApprovalDenied, By: "switchboard"}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if due, _ := db.DueOutbound(ctx, nil, now.Add(time.Hour), 0); len(due) != 0 {
		t.Fatalf("edits queued without a rendering: %+v", due)
	}
	db.SetDecisionEdit(func(ap agentcore.Approval) []byte { return []byte(`{"decided":"` + string(ap.State) + `"}`) })
	if _, ok, err := db.Decide(ctx, "ap2", agentcore.Decision{State: agentcore.ApprovalDenied, By: "switchboard"}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	due, _ := db.DueOutbound(ctx, nil, now.Add(time.Hour), 0)
	if len(due) != 1 || due[0].Kind != gateway.OutboundEdit || due[0].MessageID != "m-ap2" || string(due[0].Body) != `{"decided":"denied"}` {
		t.Fatalf("edits = %+v; want one edit of ap2's copy", due)
	}
}

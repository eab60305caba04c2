package store

import (
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

func bindingFor(location string, c agentcore.Conversation) gateway.Binding {
	return gateway.Binding{Location: location, AgentID: c.AgentID, ConversationID: c.ID}
}

func TestConversationSummariesAndResolve(t *testing.T) {
	ctx := t.Context()
	db := openTemp(t, "")
	a := agentcore.Conversation{ID: "0190aaaa-0000-7000-8000-000000000001", AgentID: "main"}
	b := agentcore.Conversation{ID: "0190bbbb-0000-7000-8000-000000000002", AgentID: "helper"}
	for _, c := range []agentcore.Conversation{a, b} {
		if err := db.CreateConversation(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	reminderOnly := agentcore.Message{Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartReminder, Text: "<system-reminder>x</system-reminder>"}}}
	asked := agentcore.Message{Role: agentcore.RoleUser, Parts: []agentcore.Part{
		{Type: agentcore.PartReminder, Text: "<system-reminder>time</system-reminder>"},
		{Type: agentcore.PartText, Text: "fix the build"},
	}}
	if _, err := db.Append(ctx, a.ID, reminderOnly, asked, text(agentcore.RoleAssistant, "done")); err != nil {
		t.Fatal(err)
	}
	if err := db.Bind(ctx, bindingFor("telegram:42", a)); err != nil {
		t.Fatal(err)
	}
	if err := db.Bind(ctx, bindingFor("web:owner:1", a)); err != nil {
		t.Fatal(err)
	}

	all, err := db.ConversationSummaries(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != a.ID {
		t.Fatalf("summaries = %+v, want a (updated last) then b", all)
	}
	got := all[0]
	if got.Messages != 3 || got.FirstText != "fix the build" || strings.Join(got.Locations, ",") != "telegram:42,web:owner:1" && strings.Join(got.Locations, ",") != "web:owner:1,telegram:42" {
		t.Errorf("summary = %+v", got)
	}
	if all[1].Messages != 0 || all[1].FirstText != "" || all[1].Locations != nil {
		t.Errorf("empty conversation summary = %+v", all[1])
	}
	only, err := db.ConversationSummaries(ctx, "helper", 0)
	if err != nil || len(only) != 1 || only[0].ID != b.ID {
		t.Errorf("summaries of helper = %+v, %v", only, err)
	}

	for _, tc := range []struct {
		in, want, err string
	}{
		{a.ID, a.ID, ""},
		{"0190a", a.ID, ""},
		{"0190bbbb", b.ID, ""},
		{"0190", "", "matches several"},
		{"nope", "", ErrNotFound.Error()},
		{"0190%", "", ErrNotFound.Error()},
		{"0190_", "", ErrNotFound.Error()},
	} {
		c, err := db.ResolveConversation(ctx, tc.in)
		switch {
		case tc.err == "" && (err != nil || c.ID != tc.want):
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.in, c.ID, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Resolve(%q) error = %v; want %q", tc.in, err, tc.err)
		}
	}
}

func TestAllPendingApprovals(t *testing.T) {
	ctx := t.Context()
	db := openTemp(t, "")
	c1, c2 := newConv(t, db), newConv(t, db)
	as := []agentcore.Approval{
		{ID: "ap1", ConversationID: c1.ID, AgentID: "main", ToolCallID: "t1", ToolName: "Bash", Summary: "git push"},
		{ID: "ap2", ConversationID: c2.ID, AgentID: "main", ToolCallID: "t2", ToolName: "Bash", Summary: "rm -rf build"},
		{ID: "ap3", ConversationID: c2.ID, AgentID: "main", ToolCallID: "t3", ToolName: "Edit", Summary: "edit main.go"},
	}
	for _, a := range as {
		if err := db.CreateApprovals(ctx, []agentcore.Approval{a}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.Decide(ctx, "ap2", agentcore.Decision{State: agentcore.ApprovalDenied, By: "local:me"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.AllPendingApprovals(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range got {
		ids = append(ids, a.ID)
	}
	if strings.Join(ids, ",") != "ap1,ap3" {
		t.Errorf("pending = %v, want ap1,ap3", ids)
	}
}

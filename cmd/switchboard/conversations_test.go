package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

func TestConversationsAndApprovalsOnAnEmptyHome(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"conversations", "list"}, 0, "No conversations yet"},
		{[]string{"conversations", "list", "--json"}, 0, `"conversations": []`},
		{[]string{"approvals", "list"}, 0, "No approvals are waiting."},
		{[]string{"approvals", "list", "--json"}, 0, `"approvals": []`},
	} {
		r := e.run("", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.out) {
			t.Errorf("%v: exit %d, stdout %q; want %d and %q", tc.args, r.code, r.stdout, tc.code, tc.out)
		}
	}
	r := e.run("", "conversations", "show", "0190-nope")
	if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 ||
		!strings.Contains(r.stderr, `"0190-nope"`) || !strings.Contains(r.stderr, "switchboard conversations list") {
		t.Errorf("show of an unknown id: exit %d, stderr %q; want one line naming the id and the list command", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.home, dbFileName)); err == nil {
		t.Error("reading commands created a database")
	}
}

func TestConversationsListAndShow(t *testing.T) {
	e := newEnv(t, bashStep("call_1", "echo hi"), fakemodel.Step{Text: "The command printed hi."})
	r := e.run("", "run", "-p", "say hi\nplease", "--permission-mode", "unrestricted", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	convID := resultLine(t, r.stdout)["conversationId"].(string)

	r = e.run("", "conversations", "list")
	if r.code != 0 {
		t.Fatalf("list: exit %d %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "AGENT") {
		t.Fatalf("list = %q", r.stdout)
	}
	for _, w := range []string{"main", convID, "say hi please", " 4 "} {
		if !strings.Contains(lines[1], w) {
			t.Errorf("list row %q lacks %q", lines[1], w)
		}
	}
	r = e.run("", "conversations", "list", "--json")
	var listed struct {
		Conversations []store.ConversationSummary `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed.Conversations) != 1 {
		t.Fatalf("list --json: %v %s", err, r.stdout)
	}
	if c := listed.Conversations[0]; c.ID != convID || c.AgentID != "main" || c.Messages != 4 || c.FirstText != "say hi\nplease" {
		t.Errorf("list --json = %+v", c)
	}
	if r := e.run("", "conversations", "list", "--agent", "other"); !strings.Contains(r.stdout, "No conversations") {
		t.Errorf("list --agent other = %q", r.stdout)
	}

	// show, by a unique prefix of the id.
	r = e.run("", "conversations", "show", convID[:13])
	if r.code != 0 {
		t.Fatalf("show: exit %d %s", r.code, r.stderr)
	}
	for _, w := range []string{"Conversation " + convID + " of agent main: 4 messages", "user:", "  say hi", "  please",
		"→ Bash echo hi [ok]", "assistant:", "The command printed hi."} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("show lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "system-reminder") {
		t.Errorf("show prints reminders:\n%s", r.stdout)
	}
	r = e.run("", "conversations", "show", convID, "--json")
	var v transcriptView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("show --json: %v\n%s", err, r.stdout)
	}
	if len(v.Messages) != 3 || v.Messages[1].ToolCalls[0].Status != callOK || strings.TrimSpace(v.Messages[1].ToolCalls[0].Result) != "hi" {
		t.Errorf("show --json messages = %+v", v.Messages)
	}
}

func TestApprovalsListAndPendingInShow(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(e.home, dbFileName))
	if err != nil {
		t.Fatal(err)
	}
	conv := agentcore.Conversation{ID: "conv-parked", AgentID: "main"}
	if err := db.CreateConversation(ctx, conv); err != nil {
		t.Fatal(err)
	}
	msgs := []agentcore.Message{
		{Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "ship it"}}},
		{Role: agentcore.RoleAssistant, ToolCalls: []agentcore.ToolCall{{ID: "c1", Name: "Bash", Arguments: `{"command":"git push origin main"}`}}},
	}
	if _, err := db.Append(ctx, conv.ID, msgs...); err != nil {
		t.Fatal(err)
	}
	ap := agentcore.Approval{ID: "ap-1", ConversationID: conv.ID, AgentID: "main", ToolCallID: "c1", ToolName: "Bash",
		Summary: "git push origin main", Created: time.Now().Add(-5 * time.Minute), Expires: time.Now().Add(time.Hour)}
	if err := db.CreateApprovals(ctx, []agentcore.Approval{ap}); err != nil {
		t.Fatal(err)
	}
	if err := db.Bind(ctx, gateway.Binding{Location: "telegram:42", AgentID: "main", ConversationID: conv.ID}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	r := e.run("", "approvals", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("approvals list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"ap-1", "main", "conv-parked", "telegram:42", "5m", "Bash", "git push origin main"} {
		if !strings.Contains(lines[1], w) {
			t.Errorf("approvals row %q lacks %q", lines[1], w)
		}
	}
	r = e.run("", "approvals", "list", "--json")
	var got struct {
		Approvals []pendingApproval `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Approvals) != 1 ||
		got.Approvals[0].ID != "ap-1" || strings.Join(got.Approvals[0].Locations, ",") != "telegram:42" {
		t.Fatalf("approvals list --json: %v %+v", err, got)
	}

	r = e.run("", "conversations", "show", "conv-parked")
	for _, w := range []string{"→ Bash git push origin main [waiting for approval ap-1]", "Bound to: telegram:42", "Waiting for approval ap-1"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("show lacks %q:\n%s", w, r.stdout)
		}
	}
	if r := e.run("", "conversations", "list"); !strings.Contains(r.stdout, "telegram:42") || !strings.Contains(r.stdout, "ship it") {
		t.Errorf("list lacks the binding or title:\n%s", r.stdout)
	}
}

func TestVisibleMessages(t *testing.T) {
	txt := func(s string) []agentcore.Part { return []agentcore.Part{{Type: agentcore.PartText, Text: s}} }
	call := func(id, cmd string) agentcore.ToolCall {
		return agentcore.ToolCall{ID: id, Name: "Bash", Arguments: `{"command":"` + cmd + `"}`}
	}
	msgs := []agentcore.Message{
		{Seq: 1, Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartReminder, Text: "<system-reminder>x</system-reminder>"}}},
		{Seq: 2, Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartSummary, Text: "earlier we fixed the build"}}},
		{Seq: 3, Role: agentcore.RoleUser, Parts: append(txt("look"), agentcore.Part{Type: agentcore.PartImage, MIME: "image/png"})},
		{Seq: 4, Role: agentcore.RoleAssistant, ToolCalls: []agentcore.ToolCall{call("ok1", "ls"), call("err1", "false"), call("ask1", "git push"), call("lost1", "sleep 9")}},
		{Seq: 5, Role: agentcore.RoleTool, ToolCallID: "ok1", Parts: txt("a\nb")},
		{Seq: 6, Role: agentcore.RoleTool, ToolCallID: "err1", IsError: true, Parts: txt("exit status 1")},
		{Seq: 7, Role: agentcore.RoleAssistant},
	}
	approvals := map[string]agentcore.Approval{"ask1": {ID: "ap-9", ToolCallID: "ask1", State: agentcore.ApprovalPending}}
	got := visibleMessages(msgs, approvals)
	if len(got) != 3 {
		t.Fatalf("visible = %+v, want the summary, the user message and the assistant's calls", got)
	}
	if !got[0].Summary || got[0].Text != "earlier we fixed the build" {
		t.Errorf("summary entry = %+v", got[0])
	}
	if got[1].Text != "look" || got[1].Images != 1 {
		t.Errorf("user entry = %+v", got[1])
	}
	want := []struct{ subject, status, result string }{
		{"ls", callOK, "a b"},
		{"false", callError, "exit status 1"},
		{"git push", callAsking + " ap-9", ""},
		{"sleep 9", callNoResult, ""},
	}
	for i, w := range want {
		c := got[2].ToolCalls[i]
		if c.Subject != w.subject || c.Status != w.status || c.Result != w.result {
			t.Errorf("call %d = %+v, want %+v", i, c, w)
		}
	}
}

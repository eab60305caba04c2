package agentcoretest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
)

func testConversations(t *testing.T, s agentcore.Store) {
	agent := newID("agent")
	if err := s.EnsureAgent(ctx(t), agent); err != nil {
		t.Fatalf("EnsureAgent: %v", err)
	}
	if err := s.EnsureAgent(ctx(t), agent); err != nil {
		t.Fatalf("EnsureAgent twice: %v", err)
	}
	created := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	want := agentcore.Conversation{
		ID: newID("conv"), AgentID: agent, Created: created, Updated: created,
		SystemPrompt: "You are helpful.\n", PromptRevision: "rev1",
	}
	if err := s.CreateConversation(ctx(t), want); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	got, err := s.Conversation(ctx(t), want.ID)
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	if diff := cmp.Diff(want, got, cmpOpts()); diff != "" {
		t.Errorf("Conversation round trip (-want +got):\n%s", diff)
	}
	if err := s.CreateConversation(ctx(t), want); err == nil {
		t.Error("CreateConversation with an existing id succeeded, want an error")
	}
	_, err = s.Conversation(ctx(t), "no-such-conversation")
	wantNotFound(t, "Conversation(missing)", err)

	// Created defaults to now when zero.
	before := time.Now().Add(-time.Second)
	c2 := agentcore.Conversation{ID: newID("conv"), AgentID: agent}
	if err := s.CreateConversation(ctx(t), c2); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	got2, err := s.Conversation(ctx(t), c2.ID)
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	if got2.Created.Before(before) || got2.Updated.Before(before) {
		t.Errorf("defaulted times Created=%v Updated=%v, want about now", got2.Created, got2.Updated)
	}
}

func testAppendAssigns(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	before := time.Now().Add(-time.Second)
	first := mustAppend(t, s, c.ID, userText("one"), assistantText("two"))
	second := mustAppend(t, s, c.ID, userText("three"))
	all := append(slices.Clone(first), second...)

	if diff := cmp.Diff([]int64{1, 2, 3}, seqs(all)); diff != "" {
		t.Errorf("seqs (-want +got):\n%s", diff)
	}
	seen := map[string]bool{}
	for _, m := range all {
		if m.ID == "" || seen[m.ID] {
			t.Errorf("message id %q empty or repeated", m.ID)
		}
		seen[m.ID] = true
		if m.ConversationID != c.ID {
			t.Errorf("ConversationID = %q, want %q", m.ConversationID, c.ID)
		}
		if m.CreatedAt.Before(before) {
			t.Errorf("CreatedAt = %v, want about now", m.CreatedAt)
		}
	}

	view, err := s.View(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if diff := cmp.Diff(all, view, cmpOpts()); diff != "" {
		t.Errorf("View after appends (-want +got):\n%s", diff)
	}
	if empty, err := s.Append(ctx(t), c.ID); err != nil || len(empty) != 0 {
		t.Errorf("Append() of nothing = %v, %v; want no messages, no error", empty, err)
	}

	after, err := s.Conversation(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	if !after.Updated.After(c.Updated) && !after.Updated.Equal(c.Updated) {
		t.Errorf("Updated went backwards: %v -> %v", c.Updated, after.Updated)
	}
	if after.Updated.Before(before) {
		t.Errorf("Updated = %v after Append, want about now", after.Updated)
	}
}

func testAppendRoundTrip(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	at := time.Date(2026, 5, 2, 3, 4, 5, 6000, time.UTC)
	in := []agentcore.Message{
		{
			ID: newID("msg"), Role: agentcore.RoleUser, CreatedAt: at,
			Parts: []agentcore.Part{
				{Type: agentcore.PartText, Text: "look at this"},
				{Type: agentcore.PartImage, MIME: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}},
				{Type: agentcore.PartReminder, Text: "<system-reminder>time: noon</system-reminder>"},
			},
		},
		{
			ID: newID("msg"), Role: agentcore.RoleAssistant, CreatedAt: at, RunID: "run-1",
			Reasoning: "I should list files.",
			Parts:     []agentcore.Part{{Type: agentcore.PartText, Text: "Listing."}},
			ToolCalls: []agentcore.ToolCall{
				{ID: "call-1", Name: "Bash", Arguments: `{"command":"ls -la"}`},
				{ID: "call-2", Name: "Read", Arguments: `{not json`},
			},
		},
		{
			ID: newID("msg"), Role: agentcore.RoleTool, CreatedAt: at, RunID: "run-1",
			ToolCallID: "call-2", ToolName: "Read", IsError: true,
			Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "arguments are not JSON"}},
		},
	}
	got := mustAppend(t, s, c.ID, in...)
	want := slices.Clone(in)
	for i := range want {
		want[i].ConversationID = c.ID
		want[i].Seq = int64(i + 1)
	}
	if diff := cmp.Diff(want, got, cmpOpts()); diff != "" {
		t.Errorf("Append result (-want +got):\n%s", diff)
	}
	view, err := s.View(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if diff := cmp.Diff(want, view, cmpOpts()); diff != "" {
		t.Errorf("View round trip (-want +got):\n%s", diff)
	}
	all, err := s.Messages(ctx(t), c.ID, 0, 0)
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if diff := cmp.Diff(want, all, cmpOpts()); diff != "" {
		t.Errorf("Messages round trip (-want +got):\n%s", diff)
	}
}

func testAppendRejects(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	_, err := s.Append(ctx(t), "no-such-conversation", userText("hi"))
	wantNotFound(t, "Append to a missing conversation", err)

	m := mustAppend(t, s, c.ID, userText("once"))[0]
	if _, err := s.Append(ctx(t), c.ID, userText("new"), m); err == nil {
		t.Error("Append of an already stored message id succeeded, want an error")
	}
	other := newConversation(t, s)
	foreign := userText("wrong place")
	foreign.ConversationID = other.ID
	if _, err := s.Append(ctx(t), c.ID, foreign); err == nil {
		t.Error("Append of a message of another conversation succeeded, want an error")
	}
	// A failed Append stores nothing, not even the valid messages before
	// the bad one.
	all, err := s.Messages(ctx(t), c.ID, 0, 0)
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if diff := cmp.Diff([]string{m.ID}, ids(all)); diff != "" {
		t.Errorf("transcript after failed appends (-want +got):\n%s", diff)
	}
}

func testReplaceView(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	ms := mustAppend(t, s, c.ID, userText("a"), assistantText("b"), userText("c"), assistantText("d"))
	summary := mustAppend(t, s, c.ID, agentcore.Message{Role: agentcore.RoleUser,
		Parts: []agentcore.Part{{Type: agentcore.PartSummary, Text: "a and b happened"}}})[0]

	newView := []string{summary.ID, ms[2].ID, ms[3].ID}
	if err := s.ReplaceView(ctx(t), c.ID, newView); err != nil {
		t.Fatalf("ReplaceView: %v", err)
	}
	view, err := s.View(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if diff := cmp.Diff(newView, ids(view)); diff != "" {
		t.Errorf("view after ReplaceView (-want +got):\n%s", diff)
	}

	// Appending after a replacement extends the new view.
	e := mustAppend(t, s, c.ID, userText("e"))[0]
	if e.Seq != 6 {
		t.Errorf("Seq after ReplaceView = %d, want 6", e.Seq)
	}
	view, err = s.View(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if diff := cmp.Diff(append(newView, e.ID), ids(view)); diff != "" {
		t.Errorf("view after append (-want +got):\n%s", diff)
	}

	// Invalid replacements fail and leave the view unchanged.
	other := newConversation(t, s)
	o := mustAppend(t, s, other.ID, userText("elsewhere"))[0]
	for name, bad := range map[string][]string{
		"another conversation's message": {ms[0].ID, o.ID},
		"unknown id":                     {ms[0].ID, "no-such-message"},
		"repeated id":                    {ms[0].ID, ms[0].ID},
	} {
		if err := s.ReplaceView(ctx(t), c.ID, bad); err == nil {
			t.Errorf("ReplaceView with %s succeeded, want an error", name)
		}
	}
	after, err := s.View(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if diff := cmp.Diff(ids(view), ids(after)); diff != "" {
		t.Errorf("view changed by failed ReplaceView (-want +got):\n%s", diff)
	}
	wantNotFound(t, "ReplaceView of a missing conversation", s.ReplaceView(ctx(t), "no-such-conversation", nil))

	// The transcript itself is complete whatever the view says.
	all, err := s.Messages(ctx(t), c.ID, 0, 0)
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if diff := cmp.Diff([]int64{1, 2, 3, 4, 5, 6}, seqs(all)); diff != "" {
		t.Errorf("transcript after ReplaceView (-want +got):\n%s", diff)
	}

	// An empty view is allowed (and then grows again from empty).
	if err := s.ReplaceView(ctx(t), c.ID, nil); err != nil {
		t.Fatalf("ReplaceView(empty): %v", err)
	}
	view, err = s.View(ctx(t), c.ID)
	if err != nil || len(view) != 0 {
		t.Errorf("View after emptying = %v, %v; want empty", ids(view), err)
	}
	_, err = s.View(ctx(t), "no-such-conversation")
	wantNotFound(t, "View of a missing conversation", err)
}

func testMessagesPaging(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	var in []agentcore.Message
	for i := range 25 {
		in = append(in, userText(fmt.Sprintf("message %d", i+1)))
	}
	stored := mustAppend(t, s, c.ID, in...)

	var got []agentcore.Message
	after := int64(0)
	pages := 0
	for {
		page, err := s.Messages(ctx(t), c.ID, after, 10)
		if err != nil {
			t.Fatalf("Messages(after %d): %v", after, err)
		}
		if len(page) > 10 {
			t.Fatalf("page of %d messages, limit 10", len(page))
		}
		if len(page) == 0 {
			break
		}
		pages++
		got = append(got, page...)
		after = page[len(page)-1].Seq
	}
	if pages != 3 {
		t.Errorf("pages = %d, want 3", pages)
	}
	if diff := cmp.Diff(stored, got, cmpOpts()); diff != "" {
		t.Errorf("paged transcript (-want +got):\n%s", diff)
	}
	tail, err := s.Messages(ctx(t), c.ID, 20, 0)
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if diff := cmp.Diff([]int64{21, 22, 23, 24, 25}, seqs(tail)); diff != "" {
		t.Errorf("Messages(after 20, no limit) (-want +got):\n%s", diff)
	}
	_, err = s.Messages(ctx(t), "no-such-conversation", 0, 10)
	wantNotFound(t, "Messages of a missing conversation", err)
}

func testSearch(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	early := mustAppend(t, s, c.ID, userText("Let us call the migration plan Operation Flamingo."))[0]
	for i := range 30 {
		mustAppend(t, s, c.ID, userText(fmt.Sprintf("filler message number %d about nothing much", i)),
			assistantText(fmt.Sprintf("acknowledged %d", i)))
	}
	call := mustAppend(t, s, c.ID, agentcore.Message{Role: agentcore.RoleAssistant,
		ToolCalls: []agentcore.ToolCall{{ID: "call-9", Name: "Bash", Arguments: `{"command":"make quizzical-target"}`}}})[0]
	result := mustAppend(t, s, c.ID, agentcore.Message{Role: agentcore.RoleTool, ToolCallID: "call-9", ToolName: "Bash",
		Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "panic: segfault in zygomorphic parser"}}})[0]
	reminder := mustAppend(t, s, c.ID, agentcore.Message{Role: agentcore.RoleUser, Parts: []agentcore.Part{
		{Type: agentcore.PartText, Text: "ok"},
		{Type: agentcore.PartReminder, Text: "<system-reminder>memory changed: persona says xylophone</system-reminder>"},
	}})[0]
	summary := mustAppend(t, s, c.ID, agentcore.Message{Role: agentcore.RoleUser,
		Parts: []agentcore.Part{{Type: agentcore.PartSummary, Text: "Earlier we discussed the quokka budget."}}})[0]
	// Compaction drops the early message from the view; Search still finds it.
	if err := s.ReplaceView(ctx(t), c.ID, []string{summary.ID}); err != nil {
		t.Fatalf("ReplaceView: %v", err)
	}
	// A word in another conversation must not leak into this one.
	other := newConversation(t, s)
	mustAppend(t, s, other.ID, userText("flamingo flamingo flamingo"))

	for _, tc := range []struct {
		query string
		want  agentcore.Message
		role  agentcore.Role
	}{
		{"flamingo", early, agentcore.RoleUser},
		{"Flamingo?", early, agentcore.RoleUser},
		{"operation flamingo", early, agentcore.RoleUser},
		{"zygomorphic", result, agentcore.RoleTool},
		{"segfault parser", result, agentcore.RoleTool},
		{"quizzical", call, agentcore.RoleAssistant},
		{"xylophone", reminder, agentcore.RoleUser},
		{"quokka", summary, agentcore.RoleUser},
	} {
		hits, err := s.Search(ctx(t), c.ID, tc.query, 5)
		if err != nil {
			t.Errorf("Search(%q): %v", tc.query, err)
			continue
		}
		if len(hits) != 1 {
			t.Errorf("Search(%q) = %d hits %+v, want exactly 1", tc.query, len(hits), hits)
			continue
		}
		h := hits[0]
		if h.MessageID != tc.want.ID || h.Seq != tc.want.Seq || h.Role != tc.role {
			t.Errorf("Search(%q) hit = %+v, want message %s seq %d role %s", tc.query, h, tc.want.ID, tc.want.Seq, tc.role)
		}
		if h.Created.IsZero() {
			t.Errorf("Search(%q) hit has no Created time", tc.query)
		}
		first := strings.ToLower(strings.Fields(strings.Trim(tc.query, "?"))[0])
		if !strings.Contains(strings.ToLower(h.Snippet), first) {
			t.Errorf("Search(%q) snippet %q does not show %q", tc.query, h.Snippet, first)
		}
	}

	hits, err := s.Search(ctx(t), c.ID, "filler", 7)
	if err != nil {
		t.Fatalf("Search(filler): %v", err)
	}
	if len(hits) != 7 {
		t.Errorf("Search(filler, limit 7) = %d hits, want 7", len(hits))
	}
	hits, err = s.Search(ctx(t), c.ID, "nonexistentword", 5)
	if err != nil || len(hits) != 0 {
		t.Errorf("Search(no match) = %v, %v; want no hits, no error", hits, err)
	}
}

func testSearchOddQueries(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	mustAppend(t, s, c.ID, userText(`Run "go test ./..." and check the C++ build (NOT the docs): done?`))
	for _, q := range []string{"", "   ", "...", "!!! ???", `"`, `""`, "*", "-", "(", ")", "^", ":", "+", "NEAR(", "{}", "'", "\\", "🙂", "— –"} {
		hits, err := s.Search(ctx(t), c.ID, q, 5)
		if err != nil {
			t.Errorf("Search(%q) error: %v", q, err)
		}
		if len(hits) != 0 {
			t.Errorf("Search(%q) = %d hits, want none for a query without words", q, len(hits))
		}
	}
	// Words mixed with query-syntax characters are searched as words.
	for _, q := range []string{`"go`, "NOT", "AND", "docs):", "C++", "check:the", "build*", `test"`, "(check OR"} {
		hits, err := s.Search(ctx(t), c.ID, q, 5)
		if err != nil {
			t.Errorf("Search(%q) error: %v", q, err)
			continue
		}
		if len(hits) != 1 {
			t.Errorf("Search(%q) = %d hits, want the message", q, len(hits))
		}
	}
	_, err := s.Search(ctx(t), "no-such-conversation", "go", 5)
	wantNotFound(t, "Search of a missing conversation", err)
}

func testLatestConversation(t *testing.T, s agentcore.Store) {
	agent := newID("agent")
	_, err := s.LatestConversation(ctx(t), agent)
	wantNotFound(t, "LatestConversation of an agent without conversations", err)

	base := time.Now().Add(-time.Hour)
	older := agentcore.Conversation{ID: newID("conv"), AgentID: agent, Created: base, Updated: base}
	newer := agentcore.Conversation{ID: newID("conv"), AgentID: agent, Created: base.Add(time.Minute), Updated: base.Add(time.Minute)}
	for _, c := range []agentcore.Conversation{older, newer} {
		if err := s.CreateConversation(ctx(t), c); err != nil {
			t.Fatalf("CreateConversation: %v", err)
		}
	}
	// A conversation of another agent never counts.
	newConversation(t, s)

	latest, err := s.LatestConversation(ctx(t), agent)
	if err != nil {
		t.Fatalf("LatestConversation: %v", err)
	}
	if latest.ID != newer.ID {
		t.Errorf("LatestConversation = %s, want the newer %s", latest.ID, newer.ID)
	}
	mustAppend(t, s, older.ID, userText("back to the old one"))
	latest, err = s.LatestConversation(ctx(t), agent)
	if err != nil {
		t.Fatalf("LatestConversation: %v", err)
	}
	if latest.ID != older.ID {
		t.Errorf("LatestConversation after appending to the older = %s, want %s", latest.ID, older.ID)
	}
	list, err := s.ListConversations(ctx(t), agent, 0)
	if err != nil {
		t.Fatalf("ListConversations: %v", err)
	}
	var got []string
	for _, c := range list {
		got = append(got, c.ID)
	}
	if diff := cmp.Diff([]string{older.ID, newer.ID}, got); diff != "" {
		t.Errorf("ListConversations order (-want +got):\n%s", diff)
	}
	list, err = s.ListConversations(ctx(t), agent, 1)
	if err != nil || len(list) != 1 || list[0].ID != older.ID {
		t.Errorf("ListConversations(limit 1) = %v, %v; want only %s", list, err, older.ID)
	}
}

func testSystemPrompt(t *testing.T, s agentcore.Store) {
	c := newConversation(t, s)
	if c.SystemPrompt != "" || c.PromptRevision != "" {
		t.Errorf("new conversation has prompt %q revision %q, want both empty", c.SystemPrompt, c.PromptRevision)
	}
	prompt := "You are Switchboard.\r\n\tTrailing spaces   \n" + strings.Repeat("memory block ✓ 🙂 ", 2000) + "\n\n"
	if err := s.SetSystemPrompt(ctx(t), c.ID, prompt, "abc123"); err != nil {
		t.Fatalf("SetSystemPrompt: %v", err)
	}
	got, err := s.Conversation(ctx(t), c.ID)
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	if got.SystemPrompt != prompt {
		t.Errorf("system prompt changed in the round trip: %d bytes stored, %d read back", len(prompt), len(got.SystemPrompt))
	}
	if got.PromptRevision != "abc123" {
		t.Errorf("PromptRevision = %q, want abc123", got.PromptRevision)
	}
	if err := s.SetSystemPrompt(ctx(t), c.ID, "second", "def456"); err != nil {
		t.Fatalf("SetSystemPrompt: %v", err)
	}
	got, err = s.Conversation(ctx(t), c.ID)
	if err != nil || got.SystemPrompt != "second" || got.PromptRevision != "def456" {
		t.Errorf("after second SetSystemPrompt: %q %q %v", got.SystemPrompt, got.PromptRevision, err)
	}
	wantNotFound(t, "SetSystemPrompt of a missing conversation", s.SetSystemPrompt(ctx(t), "no-such-conversation", "p", "r"))
}

package store

import (
	"errors"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels/api"
	"github.com/switchboard-gw/switchboard/channels/api/apitest"
	"github.com/switchboard-gw/switchboard/gateway"
)

func TestAPIContract(t *testing.T) {
	apitest.Contract(t, func(t *testing.T) api.Store { return openTemp(t, "") })
}

// A retried enqueue learns the item its dedupe key stored the first time,
// so the API answers a retried POST with the first input's id.
func TestEnqueueDuplicateNamesTheFirstItem(t *testing.T) {
	db := openTemp(t, "")
	ctx := t.Context()
	it := gateway.Item{ConversationID: "conv-a", AgentID: "main", Kind: gateway.ItemMessage, Location: "api:ci:conv-a"}
	first, ok, err := db.Enqueue(ctx, it, "api:key:1", time.Hour)
	if err != nil || !ok || first == 0 {
		t.Fatalf("first Enqueue = %d, %v, %v", first, ok, err)
	}
	for range 2 {
		id, ok, err := db.Enqueue(ctx, it, "api:key:1", time.Hour)
		if err != nil || ok || id != first {
			t.Errorf("retried Enqueue = %d, %v, %v; want %d, false, nil", id, ok, err, first)
		}
	}
	if fresh, err := db.ClaimDedupe(ctx, "api:cmd:1", time.Hour); err != nil || !fresh {
		t.Fatal(fresh, err)
	}
	if id, ok, err := db.Enqueue(ctx, it, "api:cmd:1", time.Hour); err != nil || ok || id != 0 {
		t.Errorf("Enqueue under a ClaimDedupe key = %d, %v, %v; want 0, false, nil", id, ok, err)
	}
}

// A chat's first message, retried, is the first item again: no second
// conversation is created, and the location keeps the one it was bound to.
func TestEnqueueNewDuplicateNamesTheFirstItem(t *testing.T) {
	db := openTemp(t, "")
	ctx := t.Context()
	const loc = "web:u:chat-1"
	it := gateway.Item{Kind: gateway.ItemMessage, Location: loc}
	b1, first, ok, err := db.EnqueueNew(ctx, agentcore.Conversation{ID: "conv-1", AgentID: "main"},
		gateway.Binding{Location: loc, AgentID: "main", ConversationID: "conv-1"}, it, "web:e1", time.Hour)
	if err != nil || !ok || first == 0 || b1.ConversationID != "conv-1" {
		t.Fatalf("first EnqueueNew = %+v, %d, %v, %v", b1, first, ok, err)
	}
	b2, id, ok, err := db.EnqueueNew(ctx, agentcore.Conversation{ID: "conv-2", AgentID: "main"},
		gateway.Binding{Location: loc, AgentID: "main", ConversationID: "conv-2"}, it, "web:e1", time.Hour)
	if err != nil || ok || id != first || b2.ConversationID != "conv-1" {
		t.Errorf("retried EnqueueNew = %+v, %d, %v, %v; want conv-1, %d, false, nil", b2, id, ok, err, first)
	}
	if _, err := db.Conversation(ctx, "conv-2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the retry created conversation conv-2 (err %v)", err)
	}
	b3, id3, ok, err := db.EnqueueNew(ctx, agentcore.Conversation{ID: "conv-3", AgentID: "main"},
		gateway.Binding{Location: loc, AgentID: "main", ConversationID: "conv-3"}, it, "web:e2", time.Hour)
	if err != nil || !ok || id3 == first || b3.ConversationID != "conv-1" {
		t.Errorf("EnqueueNew at a bound location = %+v, %d, %v, %v; want a new item in conv-1", b3, id3, ok, err)
	}
}

func TestMessageSeq(t *testing.T) {
	db := openTemp(t, "")
	ctx := t.Context()
	if err := db.EnsureAgent(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"conv-a", "conv-b"} {
		if err := db.CreateConversation(ctx, agentcore.Conversation{ID: c, AgentID: "main", Created: time.Now(), Updated: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := db.Append(ctx, "conv-a",
		agentcore.Message{ID: "m1", Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "hi"}}},
		agentcore.Message{ID: "m2", Role: agentcore.RoleAssistant, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "yo"}}})
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := db.MessageSeq(ctx, "conv-a", "m2"); err != nil || seq != stored[1].Seq {
		t.Errorf("MessageSeq(m2) = %d, %v; want %d", seq, err, stored[1].Seq)
	}
	if _, err := db.MessageSeq(ctx, "conv-b", "m2"); !errors.Is(err, agentcore.ErrNotFound) {
		t.Errorf("MessageSeq in another conversation: %v, want ErrNotFound", err)
	}
}

// BenchmarkAppendEvent measures the API's per-event write (every streamed
// delta of an API conversation is one), one writer as a turn's stream is.
func BenchmarkAppendEvent(b *testing.B) {
	db := openTemp(b, "")
	ctx := b.Context()
	data := []byte(`{"type":"assistant_delta","uuid":"m1","otid":"m1","text":"a few words of an answer"}`)
	for b.Loop() {
		if _, err := db.AppendEvent(ctx, api.Event{ConversationID: "conv-b", RunID: "run-1", Type: "assistant_delta", Data: data}); err != nil {
			b.Fatal(err)
		}
	}
}

package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

// TestChatPosts: what the outbox has on record in a chat, its threads
// included and other chats not: the newest post from before a time, and
// every post above it, whenever its item was made.
func TestChatPosts(t *testing.T) {
	db := openTemp(t, "")
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour)
	post := func(loc, msgID string, kind gateway.OutboundKind, created time.Time) {
		t.Helper()
		ids, err := db.EnqueueOutbound(ctx, gateway.Outbound{Kind: kind, Location: loc, Body: []byte(`{}`), Created: created, NextAt: created})
		if err != nil {
			t.Fatal(err)
		}
		if msgID != "" {
			if err := db.MarkSent(ctx, ids[0], msgID); err != nil {
				t.Fatal(err)
			}
		}
	}
	const chat = "telegram::-1001"
	post(chat, "10", gateway.OutboundSend, t0)
	post(chat+":77", "12", gateway.OutboundSend, t0.Add(time.Minute))           // a thread of the chat
	post(chat, "9", gateway.OutboundEdit, t0.Add(2*time.Minute))                // an edit of an older message
	post("telegram::-10011", "50", gateway.OutboundSend, t0.Add(2*time.Minute)) // another chat
	post(chat, "", gateway.OutboundSend, t0.Add(3*time.Minute))                 // not sent
	post(chat, "15", gateway.OutboundSend, t0)                                  // an older item sent late (a retry)
	post(chat, "16", gateway.OutboundSend, t0.Add(10*time.Minute))              // after
	last, since, err := db.ChatPosts(ctx, chat, t0.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(since)
	if last != "15" || !slices.Equal(since, []string{"16"}) {
		t.Errorf("ChatPosts = %q, %q; want 15 and [16]", last, since)
	}
	last, since, err = db.ChatPosts(ctx, chat, t0.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(since)
	if last != "15" || !slices.Equal(since, []string{"16"}) {
		t.Errorf("ChatPosts before the thread's post = %q, %q; want 15 (the late retry) and [16]", last, since)
	}
	last, since, err = db.ChatPosts(ctx, "telegram::-1002", t0)
	if err != nil || last != "" || since == nil || len(since) != 0 {
		t.Errorf("ChatPosts of a chat with no posts = %q, %v (nil: %v), %v; want \"\" and an empty record", last, since, since == nil, err)
	}
}

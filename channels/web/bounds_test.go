package web

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// TestIdleChatsAreDropped: a chat nobody watches that did not change for
// chatIdle is forgotten once another chat starts after a sweep interval;
// its messages can no longer be edited (the outbox then sends anew).
func TestIdleChatsAreDropped(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	a := New(Options{Token: testToken, Now: clk.now})
	ctx := context.Background()
	old, err := a.Send(ctx, webLoc("old"), channels.TextMessage("hello"))
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(chatIdle - time.Second)
	recent, err := a.Send(ctx, webLoc("recent"), channels.TextMessage("hi"))
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(sweepEvery + time.Second)
	if _, err := a.Send(ctx, webLoc("new"), channels.TextMessage("hey")); err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, old, channels.TextMessage("edited")); !errors.Is(err, ErrMessageNotFound) {
		t.Errorf("edit in the idle chat: err = %v, want ErrMessageNotFound", err)
	}
	if err := a.Edit(ctx, recent, channels.TextMessage("edited")); err != nil {
		t.Errorf("edit in the recent chat: %v", err)
	}
	a.mu.Lock()
	n, kept := len(a.chats), a.kept
	a.mu.Unlock()
	if n != 2 || kept != 2 {
		t.Errorf("%d chats with %d messages kept, want 2 and 2", n, kept)
	}
}

// TestKeptMessagesBounded: however many chats get messages, at most
// maxKept messages are kept over all of them.
func TestKeptMessagesBounded(t *testing.T) {
	a := newTestAdapter()
	ctx := context.Background()
	for i := range maxKept + 300 {
		if _, err := a.Send(ctx, webLoc(fmt.Sprintf("c%d", i/3)), channels.TextMessage("m")); err != nil {
			t.Fatal(err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	total := 0
	for _, c := range a.chats {
		total += len(c.msgs)
	}
	if total != a.kept || total > maxKept || len(a.chats) > maxChats {
		t.Errorf("%d messages in %d chats (counted %d), want at most %d in %d", total, len(a.chats), a.kept, maxKept, maxChats)
	}
}

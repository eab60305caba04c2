package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

func TestPruneDelivered(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	enqueue := func(conv string) int64 {
		id, ok, err := db.Enqueue(ctx, gateway.Item{ConversationID: conv, Kind: gateway.ItemMessage, Payload: []byte("{}"), Created: now}, "", time.Hour)
		if err != nil || !ok {
			t.Fatal(err)
		}
		return id
	}
	done := enqueue("c1")
	if err := db.Complete(ctx, done); err != nil {
		t.Fatal(err)
	}
	queued := enqueue("c2")
	ids, err := db.EnqueueOutbound(ctx,
		gateway.Outbound{Kind: gateway.OutboundSend, Location: "l", Body: []byte("{}"), Created: now, NextAt: now}, // sent, plain
		gateway.Outbound{Kind: gateway.OutboundSend, Location: "l", Body: []byte("{}"), Created: now, NextAt: now}, // sent, an approval post
		gateway.Outbound{Kind: gateway.OutboundSend, Location: "l", Body: []byte("{}"), Created: now, NextAt: now}, // unsent
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:2] {
		if err := db.MarkSent(ctx, id, "m"); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddApprovalPost(ctx, gateway.ApprovalPost{ApprovalID: "ap", Location: "l", OutboxID: ids[1]}); err != nil {
		t.Fatal(err)
	}
	// Nothing is older than an hour ago: nothing goes.
	if n, err := db.PruneDelivered(ctx, now.Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("prune of recent work = %d, %v", n, err)
	}
	n, err := db.PruneDelivered(ctx, now.Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d records (%v), want 2: the done item and the plain sent message", n, err)
	}
	if _, err := db.OutboundItem(ctx, ids[0]); err == nil {
		t.Error("the delivered plain message was kept")
	}
	for _, id := range ids[1:] {
		if _, err := db.OutboundItem(ctx, id); err != nil {
			t.Errorf("outbox item %d (approval post or unsent) was pruned: %v", id, err)
		}
	}
	pending, err := db.Pending(ctx, "c2")
	if err != nil || len(pending) != 1 || pending[0].ID != queued {
		t.Fatalf("the queued item was touched: %+v %v", pending, err)
	}
}

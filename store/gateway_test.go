package store

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/gateway/gatewaytest"
)

func TestGatewayContract(t *testing.T) {
	gatewaytest.TestStore(t, func(t *testing.T) gateway.Store {
		return openTemp(t, "")
	})
}

// TestGatewayConcurrentEnqueue has 50 goroutines enqueue to 10
// conversations at once: per conversation three senders with distinct
// dedupe keys, each sending every event twice in a row (a platform retry),
// and two replayers that re-deliver the events of senders 0 and 1 while
// they run. Exactly one item per key must be stored, and each sender's
// items must be queued in the order it sent them.
func TestGatewayConcurrentEnqueue(t *testing.T) {
	const (
		conversations = 10
		perConv       = 5 // goroutines: senders 0..2, replayers of 0 and 1
		senders       = 3
		events        = 10
	)
	db := openTemp(t, "")
	type body struct{ Sender, Seq int }
	stored := make([]int, conversations*perConv) // items each goroutine stored
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range conversations * perConv {
		conv, role := g/perConv, g%perConv
		sender := role
		if role >= senders {
			sender = role - senders // replays sender 0 or 1
		}
		wg.Go(func() {
			<-start
			for i := range events {
				payload, err := json.Marshal(body{sender, i})
				if err != nil {
					t.Error(err)
					return
				}
				it := gateway.Item{ConversationID: fmt.Sprintf("conv-%d", conv), Kind: gateway.ItemMessage, Payload: payload}
				key := fmt.Sprintf("ev-%d-%d-%d", conv, sender, i)
				tries := 2
				if role >= senders {
					tries = 1
				}
				for range tries {
					_, ok, err := db.Enqueue(t.Context(), it, key, time.Hour)
					if err != nil {
						t.Errorf("Enqueue(%s): %v", key, err)
						return
					}
					if ok {
						stored[g]++
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()

	var total int
	for _, n := range stored {
		total += n
	}
	if want := conversations * senders * events; total != want {
		t.Errorf("Enqueue reported %d items stored, want %d (one per key)", total, want)
	}
	for conv := range conversations {
		id := fmt.Sprintf("conv-%d", conv)
		items, err := db.Pending(t.Context(), id)
		if err != nil {
			t.Fatalf("Pending(%s): %v", id, err)
		}
		if len(items) != senders*events {
			t.Errorf("%s has %d items, want %d", id, len(items), senders*events)
		}
		next := make([]int, senders) // the Seq expected next from each sender
		for k, it := range items {
			if k > 0 && it.ID <= items[k-1].ID {
				t.Errorf("%s: item ids out of order: %d after %d", id, it.ID, items[k-1].ID)
			}
			var b body
			if err := json.Unmarshal(it.Payload, &b); err != nil {
				t.Fatalf("%s: item %d payload %q: %v", id, it.ID, it.Payload, err)
			}
			if b.Sender < 0 || b.Sender >= senders || b.Seq != next[b.Sender] {
				t.Errorf("%s: item %d is event %d of sender %d, want event %d of that sender", id, it.ID, b.Seq, b.Sender, next[max(0, min(b.Sender, senders-1))])
				continue
			}
			next[b.Sender]++
		}
	}
	busy, err := db.Busy(t.Context(), nil)
	if err != nil || len(busy) != conversations {
		t.Errorf("Busy = %v, %v; want %d conversations", busy, err, conversations)
	}
}

// TestGatewayDedupePurge checks that an enqueue purges expired dedupe rows
// (so the table does not grow with every platform event ever seen) and
// keeps live ones.
func TestGatewayDedupePurge(t *testing.T) {
	db := openTemp(t, "")
	ctx := t.Context()
	if _, err := db.w.ExecContext(ctx, `INSERT INTO dedupe (key, expires) VALUES ('old-1', 1), ('old-2', ?)`,
		nanos(now().Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	it := gateway.Item{ConversationID: "c", Kind: gateway.ItemMessage}
	if _, ok, err := db.Enqueue(ctx, it, "live", time.Hour); err != nil || !ok {
		t.Fatalf("Enqueue = %v, %v", ok, err)
	}
	if _, ok, err := db.Enqueue(ctx, it, "", 0); err != nil || !ok {
		t.Fatalf("Enqueue without key = %v, %v", ok, err)
	}
	var keys []string
	rows, err := db.r.QueryContext(ctx, `SELECT key FROM dedupe ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "live" {
		t.Errorf("dedupe keys after enqueue = %v, want only [live]", keys)
	}
	// An expired key is accepted again (the row is replaced).
	if _, err := db.w.ExecContext(ctx, `UPDATE dedupe SET expires = 1 WHERE key = 'live'`); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Enqueue(ctx, it, "live", time.Hour); err != nil || !ok {
		t.Errorf("Enqueue with an expired key = %v, %v; want stored", ok, err)
	}
	if _, _, err := db.Enqueue(ctx, it, "k", 0); err == nil {
		t.Error("Enqueue with a dedupe key and no TTL succeeded, want an error")
	}
}

// TestGatewayStatesSurviveReopen checks the gateway's records are durable
// across handles: a second handle on the file sees the first one's queue,
// outbox and pairings.
func TestGatewayStatesSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	a := openTemp(t, path)
	ctx := t.Context()
	id, _, err := a.Enqueue(ctx, gateway.Item{ConversationID: "c", Kind: gateway.ItemMessage}, "ev", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.EnqueueOutbound(ctx, gateway.Outbound{Kind: gateway.OutboundSend, Location: "telegram:1"})
	if err != nil {
		t.Fatal(err)
	}
	b := openTemp(t, path)
	if it, err := b.Peek(ctx, "c", nil); err != nil || it.ID != id {
		t.Errorf("Peek on a second handle = %+v, %v; want item %d", it, err, id)
	}
	if _, ok, err := b.Enqueue(ctx, gateway.Item{ConversationID: "c", Kind: gateway.ItemMessage}, "ev", time.Hour); err != nil || ok {
		t.Errorf("duplicate Enqueue on a second handle = %v, %v; want rejected", ok, err)
	}
	if ids, err := b.CompleteWithOutbound(ctx, id); err != nil || len(ids) != 0 {
		t.Errorf("CompleteWithOutbound on a second handle = %v, %v", ids, err)
	}
	if _, err := a.CompleteWithOutbound(ctx, id, gateway.Outbound{Kind: gateway.OutboundSend, Location: "telegram:1"}); err == nil {
		t.Error("CompleteWithOutbound of an item the other handle completed succeeded")
	}
	due, err := a.DueOutbound(ctx, nil, time.Now(), 0)
	if err != nil || len(due) != 1 || due[0].ID != out[0] {
		t.Errorf("DueOutbound = %+v, %v; want only item %d", due, err, out[0])
	}
}

// BenchmarkEnqueue stores one message item with a fresh dedupe key per
// operation (one transaction), as an inbound platform event does.
func BenchmarkEnqueue(b *testing.B) {
	db := openTemp(b, filepath.Join(b.TempDir(), "bench.db"))
	payload := []byte(`{"text":"please run the tests in ./store and tell me what failed","sender":"telegram:4242"}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		it := gateway.Item{ConversationID: fmt.Sprintf("conv-%d", i%10), Kind: gateway.ItemMessage,
			Location: "telegram:4242", Payload: payload}
		if _, ok, err := db.Enqueue(b.Context(), it, fmt.Sprintf("telegram:update:%d", i), 10*time.Minute); err != nil || !ok {
			b.Fatalf("Enqueue = %v, %v", ok, err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkCompleteWithOutbound completes one item and stores its reply
// (a send and an edit of the streamed message) per operation; the items
// are enqueued outside the timer.
func BenchmarkCompleteWithOutbound(b *testing.B) {
	db := openTemp(b, filepath.Join(b.TempDir(), "bench.db"))
	ctx := b.Context()
	reply := []gateway.Outbound{
		{Kind: gateway.OutboundEdit, Location: "telegram:4242", MessageID: "m-1", Body: []byte(`{"text":"the final answer, edited in place"}`)},
		{Kind: gateway.OutboundSend, Location: "telegram:4242", Body: []byte(`{"text":"and the part that did not fit"}`)},
	}
	var ids []int64
	b.ReportAllocs()
	for b.Loop() {
		if len(ids) == 0 {
			b.StopTimer()
			for range 1000 {
				id, _, err := db.Enqueue(ctx, gateway.Item{ConversationID: "bench", Kind: gateway.ItemMessage, Payload: []byte(`{}`)}, "", 0)
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, id)
			}
			b.StartTimer()
		}
		if _, err := db.CompleteWithOutbound(ctx, ids[0], reply...); err != nil {
			b.Fatal(err)
		}
		ids = ids[1:]
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

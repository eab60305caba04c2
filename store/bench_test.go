package store

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

// benchMessage is a realistic mid-sized user message with a reminder.
func benchMessage(i int) agentcore.Message {
	return agentcore.Message{Role: agentcore.RoleUser, Parts: []agentcore.Part{
		{Type: agentcore.PartText, Text: fmt.Sprintf("message %d: please run the tests in ./store and tell me what failed", i)},
		{Type: agentcore.PartReminder, Text: "<system-reminder>time: 2026-11-02 10:00 UTC; workspace clean</system-reminder>"},
	}}
}

// BenchmarkAppend appends one message per transaction (one Append call).
func BenchmarkAppend(b *testing.B) {
	db := openTemp(b, filepath.Join(b.TempDir(), "bench.db"))
	c := agentcore.Conversation{ID: "bench", AgentID: "main"}
	if err := db.CreateConversation(b.Context(), c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := db.Append(b.Context(), c.ID, benchMessage(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkAppendBatch appends 16 messages per Append call (one
// transaction), as a step that stores an assistant message and its tool
// results does; ns/op is per batch.
func BenchmarkAppendBatch(b *testing.B) {
	const batch = 16
	db := openTemp(b, filepath.Join(b.TempDir(), "bench.db"))
	c := agentcore.Conversation{ID: "bench", AgentID: "main"}
	if err := db.CreateConversation(b.Context(), c); err != nil {
		b.Fatal(err)
	}
	msgs := make([]agentcore.Message, batch)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for j := range msgs {
			msgs[j] = benchMessage(i)
			i++
		}
		if _, err := db.Append(b.Context(), c.ID, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkView reads a 200-message in-context view, what every step does.
func BenchmarkView(b *testing.B) {
	db := openTemp(b, filepath.Join(b.TempDir(), "bench.db"))
	c := agentcore.Conversation{ID: "bench", AgentID: "main"}
	if err := db.CreateConversation(b.Context(), c); err != nil {
		b.Fatal(err)
	}
	msgs := make([]agentcore.Message, 200)
	for i := range msgs {
		msgs[i] = benchMessage(i)
	}
	if _, err := db.Append(b.Context(), c.ID, msgs...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v, err := db.View(b.Context(), c.ID)
		if err != nil || len(v) != len(msgs) {
			b.Fatalf("View: %d, %v", len(v), err)
		}
	}
}

// BenchmarkSearch searches a 5,000-message transcript (in a database
// that also holds another conversation of the same size) for a word in 1%
// of the messages ("rare") and for two words in all of them ("common", the
// worst case: every message is ranked).
func BenchmarkSearch(b *testing.B) {
	db := openTemp(b, filepath.Join(b.TempDir(), "bench.db"))
	for _, id := range []string{"other", "bench"} {
		if err := db.CreateConversation(b.Context(), agentcore.Conversation{ID: id, AgentID: "main"}); err != nil {
			b.Fatal(err)
		}
		msgs := make([]agentcore.Message, 500)
		for round := range 10 {
			for i := range msgs {
				n := round*len(msgs) + i
				msgs[i] = benchMessage(n)
				if n%100 == 0 {
					msgs[i].Parts[0].Text += " the flamingo protocol"
				}
			}
			if _, err := db.Append(b.Context(), id, msgs...); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, q := range []struct{ name, query string }{{"rare", "flamingo"}, {"common", "tests failed"}} {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hits, err := db.Search(b.Context(), "bench", q.query, 10)
				if err != nil || len(hits) != 10 {
					b.Fatalf("Search: %d hits, %v", len(hits), err)
				}
			}
		})
	}
}

// gatewayTurn is the store traffic of one gateway turn with an instant
// model and no tools: intake (binding lookup, enqueue with dedupe), the
// worker (peek, lease, view, append input, run start/finish, append reply,
// release), completion with the reply in the outbox, and its delivery.
func gatewayTurn(b *testing.B, db *DB, conv string, i int) {
	ctx := b.Context()
	loc := "chat:bot:" + conv
	if _, err := db.Binding(ctx, loc); err != nil {
		b.Fatal(err)
	}
	if _, _, err := db.Enqueue(ctx, gateway.Item{ConversationID: conv, AgentID: "main", Kind: gateway.ItemMessage, Location: loc,
		Payload: []byte(`{"text":"hello"}`)}, fmt.Sprintf("chat:%s-%d", conv, i), time.Hour); err != nil {
		b.Fatal(err)
	}
	it, err := db.Peek(ctx, conv, nil)
	if err != nil {
		b.Fatal(err)
	}
	if ok, err := db.AcquireLease(ctx, conv, "bench", time.Minute); err != nil || !ok {
		b.Fatal(ok, err)
	}
	if _, err := db.Conversation(ctx, conv); err != nil {
		b.Fatal(err)
	}
	if _, err := db.View(ctx, conv); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Append(ctx, conv, benchMessage(i)); err != nil {
		b.Fatal(err)
	}
	run := agentcore.Run{ID: fmt.Sprintf("run-%s-%d", conv, i), ConversationID: conv, Model: "m"}
	if err := db.StartRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	if _, err := db.View(ctx, conv); err != nil {
		b.Fatal(err)
	}
	if err := db.FinishRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	reply := agentcore.Message{Role: agentcore.RoleAssistant, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "done"}}}
	if _, err := db.Append(ctx, conv, reply); err != nil {
		b.Fatal(err)
	}
	if err := db.ReleaseLease(ctx, conv, "bench"); err != nil {
		b.Fatal(err)
	}
	ids, err := db.CompleteWithOutbound(ctx, it.ID, gateway.Outbound{Kind: gateway.OutboundSend, Location: loc, Body: []byte(`{"md":"done"}`)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.OutboundItem(ctx, ids[0]); err != nil {
		b.Fatal(err)
	}
	if err := db.MarkSent(ctx, ids[0], "m1"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGatewayTurn runs the store traffic of gateway turns from many
// goroutines at once (each on its own conversation, as the gateway's
// workers do); ns/op is per turn.
func BenchmarkGatewayTurn(b *testing.B) {
	db := openTemp(b, filepath.Join(b.TempDir(), "bench.db"))
	const convs = 64
	for c := range convs {
		conv := fmt.Sprintf("conv-%d", c)
		if err := db.CreateConversation(b.Context(), agentcore.Conversation{ID: conv, AgentID: "main"}); err != nil {
			b.Fatal(err)
		}
		if err := db.Bind(b.Context(), gateway.Binding{Location: "chat:bot:" + conv, AgentID: "main", ConversationID: conv}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(convs / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		conv := fmt.Sprintf("conv-%d", next.Add(1)-1)
		i := 0
		for pb.Next() {
			gatewayTurn(b, db, conv, i)
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

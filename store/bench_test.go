package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
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

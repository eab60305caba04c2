package apitest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/api"
)

// Contract runs the api.Store contract suite; newStore returns a fresh,
// empty store for each subtest.
func Contract(t *testing.T, newStore func(t *testing.T) api.Store) {
	t.Run("Conversations", func(t *testing.T) { testConversations(t, newStore(t)) })
	t.Run("SeqPerRun", func(t *testing.T) { testSeqPerRun(t, newStore(t)) })
	t.Run("EventsAfterAndByID", func(t *testing.T) { testEventsAfter(t, newStore(t)) })
	t.Run("LastEvent", func(t *testing.T) { testLastEvent(t, newStore(t)) })
	t.Run("Prune", func(t *testing.T) { testPrune(t, newStore(t)) })
	t.Run("ConcurrentAppends", func(t *testing.T) { testConcurrent(t, newStore(t)) })
	t.Run("Rejects", func(t *testing.T) { testRejects(t, newStore(t)) })
}

func newID(prefix string) string { return prefix + "-" + rand.Text()[:10] }

func mustAppend(t *testing.T, s api.Store, conv, run, typ, input string) api.Event {
	t.Helper()
	ev, err := s.AppendEvent(t.Context(), api.Event{ConversationID: conv, RunID: run, Type: typ, InputID: input, Data: []byte(`{"k":"` + typ + `"}`)})
	if err != nil {
		t.Fatalf("AppendEvent(%s %s %s): %v", conv, run, typ, err)
	}
	return ev
}

func testConversations(t *testing.T, s api.Store) {
	ctx := t.Context()
	var mine []api.Conversation
	for i := range 5 {
		c, err := s.AddConversation(ctx, api.Conversation{ID: newID("conv"), Account: "ci", Agent: "main", Title: fmt.Sprintf("t%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if c.Pos <= 0 || c.Created.IsZero() {
			t.Fatalf("AddConversation = %+v: want Pos and Created assigned", c)
		}
		if len(mine) > 0 && c.Pos <= mine[len(mine)-1].Pos {
			t.Fatalf("Pos %d after %d: want increasing", c.Pos, mine[len(mine)-1].Pos)
		}
		mine = append(mine, c)
	}
	other, err := s.AddConversation(ctx, api.Conversation{ID: newID("conv"), Account: "other", Agent: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddConversation(ctx, api.Conversation{ID: other.ID, Account: "ci"}); err == nil {
		t.Error("adding an id twice succeeded")
	}
	got, err := s.APIConversation(ctx, mine[2].ID)
	if err != nil || got.ID != mine[2].ID || got.Account != "ci" || got.Title != "t2" || got.Agent != "main" || got.Pos != mine[2].Pos {
		t.Errorf("APIConversation = %+v, %v; want %+v", got, err, mine[2])
	}
	if !got.Created.Equal(mine[2].Created) {
		t.Errorf("Created %v, want %v", got.Created, mine[2].Created)
	}
	if _, err := s.APIConversation(ctx, "conv-nope"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("unknown conversation: %v, want ErrNotFound", err)
	}
	// Pages, newest first, only the account's.
	page1, err := s.APIConversations(ctx, "ci", 0, 2)
	if err != nil || len(page1) != 2 || page1[0].ID != mine[4].ID || page1[1].ID != mine[3].ID {
		t.Fatalf("first page = %+v, %v", page1, err)
	}
	rest, err := s.APIConversations(ctx, "ci", page1[1].Pos, 10)
	if err != nil || len(rest) != 3 || rest[0].ID != mine[2].ID || rest[2].ID != mine[0].ID {
		t.Fatalf("second page = %+v, %v", rest, err)
	}
	if o, _ := s.APIConversations(ctx, "other", 0, 10); len(o) != 1 || o[0].ID != other.ID {
		t.Errorf("other's list = %+v", o)
	}
}

func testSeqPerRun(t *testing.T, s api.Store) {
	conv, other := newID("conv"), newID("conv")
	// Two runs interleaved, and a run that gets events again later (a
	// resumed tool call in a later turn): each run counts 1, 2, 3…
	want := map[string]int64{}
	var last int64
	for i, run := range []string{"run-a", "run-b", "run-a", "turn-1", "run-a", "run-b", "turn-1", "run-a"} {
		ev := mustAppend(t, s, conv, run, "e", "")
		want[run]++
		if ev.SeqID != want[run] {
			t.Errorf("event %d of %s: seq %d, want %d", i, run, ev.SeqID, want[run])
		}
		if ev.Pos <= last {
			t.Errorf("event %d: pos %d after %d, want increasing", i, ev.Pos, last)
		}
		last = ev.Pos
		if ev.At.IsZero() {
			t.Error("At not assigned")
		}
	}
	// The same run id in another conversation counts on its own.
	if ev := mustAppend(t, s, other, "run-a", "e", ""); ev.SeqID != 1 {
		t.Errorf("run-a in another conversation: seq %d, want 1", ev.SeqID)
	}
}

func testEventsAfter(t *testing.T, s api.Store) {
	ctx := t.Context()
	conv, other := newID("conv"), newID("conv")
	var all []api.Event
	for i := range 7 {
		all = append(all, mustAppend(t, s, conv, fmt.Sprintf("run-%d", i%2), fmt.Sprintf("t%d", i), "in-1"))
		mustAppend(t, s, other, "run-x", "noise", "")
	}
	got, err := s.EventsAfter(ctx, conv, 0, 0)
	if err != nil || len(got) != len(all) {
		t.Fatalf("EventsAfter(0) = %d events, %v; want %d", len(got), err, len(all))
	}
	for i := range all {
		g, w := got[i], all[i]
		if g.Pos != w.Pos || g.RunID != w.RunID || g.SeqID != w.SeqID || g.Type != w.Type || g.InputID != "in-1" || string(g.Data) != string(w.Data) || g.ConversationID != conv {
			t.Errorf("event %d = %+v, want %+v", i, g, w)
		}
	}
	page, err := s.EventsAfter(ctx, conv, all[2].Pos, 3)
	if err != nil || len(page) != 3 || page[0].Pos != all[3].Pos || page[2].Pos != all[5].Pos {
		t.Errorf("EventsAfter(3rd, 3) = %+v, %v", page, err)
	}
	if tail, _ := s.EventsAfter(ctx, conv, all[6].Pos, 10); len(tail) != 0 {
		t.Errorf("after the last: %d events", len(tail))
	}
	ev, err := s.EventByID(ctx, conv, all[4].RunID, all[4].SeqID)
	if err != nil || ev.Pos != all[4].Pos {
		t.Errorf("EventByID = %+v, %v; want pos %d", ev, err, all[4].Pos)
	}
	if _, err := s.EventByID(ctx, other, all[4].RunID, all[4].SeqID); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("EventByID in another conversation: %v, want ErrNotFound", err)
	}
	if _, err := s.EventByID(ctx, conv, "run-0", 99); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("EventByID of an unknown seq: %v, want ErrNotFound", err)
	}
}

func testLastEvent(t *testing.T, s api.Store) {
	ctx := t.Context()
	conv := newID("conv")
	if _, err := s.LastEvent(ctx, api.EventQuery{ConversationID: conv}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("LastEvent of an empty log: %v, want ErrNotFound", err)
	}
	u := mustAppend(t, s, conv, "in-1", "user_message", "in-1")
	ts := mustAppend(t, s, conv, "turn-1", "turn_start", "in-1")
	mustAppend(t, s, conv, "run-1", "assistant_delta", "in-1")
	mustAppend(t, s, conv, "in-2", "user_message", "in-2")
	d := mustAppend(t, s, conv, "run-1", "assistant_delta", "in-1")
	cases := []struct {
		name string
		q    api.EventQuery
		want api.Event
	}{
		{"newest", api.EventQuery{}, d},
		{"by type", api.EventQuery{Types: []string{"turn_start", "turn_end"}}, ts},
		{"by input and type", api.EventQuery{Types: []string{"user_message"}, InputID: "in-1"}, u},
		{"before a position", api.EventQuery{BeforePos: ts.Pos}, u},
	}
	for _, c := range cases {
		c.q.ConversationID = conv
		got, err := s.LastEvent(ctx, c.q)
		if err != nil || got.Pos != c.want.Pos {
			t.Errorf("%s: LastEvent = %+v, %v; want pos %d", c.name, got, err, c.want.Pos)
		}
	}
	if _, err := s.LastEvent(ctx, api.EventQuery{ConversationID: conv, Types: []string{"turn_end"}}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("no turn_end: %v, want ErrNotFound", err)
	}
	if _, err := s.LastEvent(ctx, api.EventQuery{ConversationID: conv, BeforePos: u.Pos}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("before the first: %v, want ErrNotFound", err)
	}
}

func testPrune(t *testing.T, s api.Store) {
	ctx := t.Context()
	conv := newID("conv")
	old := time.Now().Add(-48 * time.Hour).UTC()
	var olds []api.Event
	for range 3 {
		ev, err := s.AppendEvent(ctx, api.Event{ConversationID: conv, RunID: "run-1", Type: "e", Data: []byte(`{}`), At: old})
		if err != nil {
			t.Fatal(err)
		}
		olds = append(olds, ev)
	}
	fresh := mustAppend(t, s, conv, "run-2", "e", "")
	n, err := s.PruneEvents(ctx, time.Now().Add(-24*time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("PruneEvents = %d, %v; want 3", n, err)
	}
	if _, err := s.EventByID(ctx, conv, "run-1", 1); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("a pruned event: %v, want ErrNotFound", err)
	}
	left, _ := s.EventsAfter(ctx, conv, 0, 0)
	if len(left) != 1 || left[0].Pos != fresh.Pos {
		t.Errorf("after pruning: %+v", left)
	}
	// Positions are never reused, and a run keeps counting from what is
	// retained.
	if _, err := s.PruneEvents(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ev := mustAppend(t, s, conv, "run-2", "e", "")
	if ev.Pos <= fresh.Pos || ev.Pos <= olds[2].Pos {
		t.Errorf("pos %d after pruning everything: want above %d", ev.Pos, fresh.Pos)
	}
}

func testConcurrent(t *testing.T, s api.Store) {
	conv := newID("conv")
	const n, writers = 25, 4
	var wg sync.WaitGroup
	seqs := make(chan int64, n*writers)
	errs := make(chan error, n*writers)
	for range writers {
		wg.Go(func() {
			for range n {
				ev, err := s.AppendEvent(t.Context(), api.Event{ConversationID: conv, RunID: "run-1", Type: "e", Data: []byte(`{}`)})
				if err != nil {
					errs <- err
					return
				}
				seqs <- ev.SeqID
			}
		})
	}
	wg.Wait()
	close(seqs)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Errorf("seq %d assigned twice", s)
		}
		seen[s] = true
	}
	for i := int64(1); i <= n*writers; i++ {
		if !seen[i] {
			t.Errorf("seq %d missing: a gap", i)
		}
	}
}

func testRejects(t *testing.T, s api.Store) {
	ctx := t.Context()
	for _, ev := range []api.Event{
		{RunID: "r", Type: "e", Data: []byte(`{}`)},
		{ConversationID: "c", Type: "e", Data: []byte(`{}`)},
		{ConversationID: "c", RunID: "r", Data: []byte(`{}`)},
		{ConversationID: "c", RunID: "r", Type: "e", Data: []byte(`[1]`)},
		{ConversationID: "c", RunID: "r", Type: "e", Data: []byte(`{"a":`)},
	} {
		if _, err := s.AppendEvent(ctx, ev); err == nil {
			t.Errorf("AppendEvent(%+v) succeeded; want an error", ev)
		}
	}
	if _, err := s.AddConversation(ctx, api.Conversation{Account: "ci"}); err == nil {
		t.Error("a conversation without id was added")
	}
}

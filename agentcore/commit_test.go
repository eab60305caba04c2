package agentcore_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

// writesOf runs fn and returns the write transactions it made, by method.
func writesOf(db *store.DB, fn func()) map[string]int64 {
	before := db.Stats().ByMethod
	fn()
	got := maps.Clone(db.Stats().ByMethod)
	for k, v := range before {
		if got[k] -= v; got[k] == 0 {
			delete(got, k)
		}
	}
	return got
}

// TestTurnWrites pins where a turn writes: a plain text turn takes the
// lease and stores everything (prompt, input, answer, run row, the
// lease's release) in one write; a tool turn also stores the step before
// its call runs and the result right after.
func TestTurnWrites(t *testing.T) {
	w := newWorld(t, fakemodel.Step{Text: "hi"}, bashCall("c1", "ls"), fakemodel.Step{Text: "listed"})
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	got := writesOf(w.db, func() { turn(t, ag, conv, userInput("hello"), agentcore.Discard) })
	if diff := cmp.Diff(map[string]int64{"AcquireLease": 1, "CommitTurn": 1}, got); diff != "" {
		t.Errorf("writes of a plain text turn (-want +got):\n%s", diff)
	}
	got = writesOf(w.db, func() { turn(t, ag, conv, userInput("list"), agentcore.Discard) })
	if diff := cmp.Diff(map[string]int64{"AcquireLease": 1, "CommitTurn": 3}, got); diff != "" {
		t.Errorf("writes of a tool turn (-want +got):\n%s", diff)
	}
	if n := len(w.messages(conv)); n != 6 {
		t.Errorf("%d messages stored, want 6 (2 + user, call, result, answer)", n)
	}
}

// failingHost is a TurnHost whose last write fails, like a process that
// dies after the model answered and before the turn's end was stored.
type failingHost struct{ st agentcore.Store }

func (h failingHost) Begin(ctx context.Context, conv, owner string, ttl time.Duration) (bool, error) {
	return h.st.AcquireLease(ctx, conv, owner, ttl)
}

func (failingHost) Finish(context.Context, agentcore.TurnWrite, agentcore.TurnResult) ([]agentcore.Message, error) {
	return nil, errors.New("power cut")
}

// TestFailedFinishStoresNothing: when the turn's last write fails, nothing
// of the turn is stored and the lease is free; the input run again (same
// message id) is appended once.
func TestFailedFinishStoresNothing(t *testing.T) {
	w := newWorld(t, fakemodel.Step{Text: "lost"}, fakemodel.Step{Text: "kept"})
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	in := userInput("hello")
	in.MessageID = "in-1"
	in.Host = failingHost{w.db}
	if _, err := ag.Turn(t.Context(), conv, in, agentcore.Discard); err == nil {
		t.Fatal("a turn whose last write failed returned no error")
	}
	if msgs := w.messages(conv); len(msgs) != 0 {
		t.Fatalf("%d messages stored by a turn that failed to finish", len(msgs))
	}
	in.Host = nil
	res := turn(t, ag, conv, in, agentcore.Discard) // the lease is free again
	if res.Text != "kept" {
		t.Fatalf("rerun answered %q, want kept", res.Text)
	}
	msgs := w.messages(conv)
	if len(msgs) != 2 || msgs[0].ID != "in-1" || msgs[1].Text() != "kept" {
		t.Fatalf("transcript after the rerun = %+v, want the input once and the answer", msgs)
	}
}

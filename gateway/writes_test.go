package gateway_test

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

// TestPlainTextTurnIsFourWrites pins the write budget of a plain text turn
// in a conversation that exists: intake (Enqueue), turn start (TakeItem:
// the item's attempt with the lease), turn end (FinishTurn: user and
// assistant messages, run row, item done, reply in the outbox, lease
// released) and delivery (MarkSent) — on a surface that streams by edits
// with a Stop button, whose token the conversation's first turn made.
func TestPlainTextTurnIsFourWrites(t *testing.T) {
	h := newHarness(t, harnessOpts{}, fakemodel.Step{Text: "one"}, fakemodel.Step{Text: "two"})
	h.send(inbound("e1", "alice", "first", dm))
	waitText(t, h.chat, "one")
	eventually(t, "the first reply marked sent", func() bool { return h.db.Stats().ByMethod["MarkSent"] >= 1 })
	before := settledStats(t, h.db)

	h.send(inbound("e2", "alice", "second", dm))
	waitText(t, h.chat, "two")
	eventually(t, "the second reply marked sent", func() bool {
		return h.db.Stats().ByMethod["MarkSent"] > before.ByMethod["MarkSent"]
	})
	after := settledStats(t, h.db)
	got := maps.Clone(after.ByMethod)
	for k, v := range before.ByMethod {
		if got[k] -= v; got[k] == 0 {
			delete(got, k)
		}
	}
	want := map[string]int64{"Enqueue": 1, "TakeItem": 1, "FinishTurn": 1, "MarkSent": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("write transactions of one plain text turn (-want +got):\n%s", diff)
	}
	if n := after.Writes - before.Writes; n != 4 {
		t.Errorf("%d write transactions committed, want 4", n)
	}
}

// settledStats returns the store's counters once no write is in flight:
// every write started (ByMethod) has committed or failed.
func settledStats(t *testing.T, db *store.DB) store.Stats {
	t.Helper()
	var st store.Stats
	eventually(t, "writes in flight to settle", func() bool {
		st = db.Stats()
		var started int64
		for _, n := range st.ByMethod {
			started += n
		}
		return started == st.Writes+st.FailedWrites
	})
	return st
}

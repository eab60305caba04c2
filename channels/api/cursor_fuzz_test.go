package api

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
)

type memEvents struct {
	Store
	evs []Event
}

func (m *memEvents) EventByID(ctx context.Context, conv, run string, seq int64) (Event, error) {
	for _, ev := range m.evs {
		if ev.RunID == run && ev.SeqID == seq {
			return ev, nil
		}
	}
	return Event{}, ErrNotFound
}

func (m *memEvents) LastEvent(ctx context.Context, q EventQuery) (Event, error) {
	return Event{}, ErrNotFound
}

// Whatever a client sends as Last-Event-ID (or ?after=), the stream
// starts after exactly the event it names, at the start, resets, or
// refuses the cursor — it never fails otherwise.
func FuzzLastEventID(f *testing.F) {
	for _, s := range []string{"run-1:1", "run-1:2", "turn-x:1", "start", "", "run-1:0", "x", ":::", "run-1:99"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	st := &memEvents{evs: []Event{{Pos: 3, RunID: "run-1", SeqID: 1}, {Pos: 7, RunID: "run-1", SeqID: 2}, {Pos: 9, RunID: "turn-x", SeqID: 1}}}
	a := &Adapter{store: st}
	f.Fuzz(func(t *testing.T, cursor string, inQuery bool) {
		r := httptest.NewRequest("GET", "/v1/conversations/c/stream", nil)
		if inQuery {
			q := r.URL.Query()
			q.Set("after", cursor)
			r.URL.RawQuery = q.Encode()
		} else if cursor != "" {
			r.Header.Set("Last-Event-ID", cursor)
		}
		pos, reset, err := a.startPos(context.Background(), r, "c")
		var bad errBadCursor
		switch {
		case errors.As(err, &bad):
			if _, _, perr := ParseEventID(cursor); perr == nil {
				t.Fatalf("%q refused although it parses", cursor)
			}
		case err != nil:
			t.Fatalf("%q: %v", cursor, err)
		case reset:
			run, seq, perr := ParseEventID(cursor)
			if perr != nil {
				t.Fatalf("%q reset although it does not parse", cursor)
			}
			if _, err := st.EventByID(context.Background(), "c", run, seq); err == nil {
				t.Fatalf("%q reset although the event is kept", cursor)
			}
		case cursor == "" || cursor == "start":
			if pos != 0 {
				t.Fatalf("%q starts at %d", cursor, pos)
			}
		default:
			run, seq, _ := ParseEventID(cursor)
			ev, err := st.EventByID(context.Background(), "c", run, seq)
			if err != nil || ev.Pos != pos {
				t.Fatalf("%q starts at %d, want after %+v", cursor, pos, ev)
			}
		}
	})
}

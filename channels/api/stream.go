package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// streamBatch is how many events one store read returns.
const streamBatch = 256

// startPos resolves where a stream starts, as a store position: after
// the event Last-Event-ID names (a reconnect; the header wins), after the
// event ?after= names ("start": before every retained event), or, with
// neither, at the running turn's turn_start, else after the newest event.
// reset is true when the named event is no longer retained.
func (a *Adapter) startPos(ctx context.Context, r *http.Request, conv string) (pos int64, reset bool, err error) {
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		cursor = r.URL.Query().Get("after")
	}
	switch cursor {
	case cursorStart:
		return 0, false, nil
	case "":
		c, err := a.streamCursor(ctx, conv)
		if err != nil || c == cursorStart {
			return 0, false, err
		}
		cursor = c
	}
	run, seq, err := ParseEventID(cursor)
	if err != nil {
		return 0, false, errBadCursor{err}
	}
	ev, err := a.store.EventByID(ctx, conv, run, seq)
	if errors.Is(err, ErrNotFound) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	return ev.Pos, false, nil
}

type errBadCursor struct{ err error }

func (e errBadCursor) Error() string { return e.err.Error() }

// handleStream serves the conversation's event stream as Server-Sent
// Events: "id: <runId>:<seqId>", "event: <type>", "data: <JSON>". Every
// event is read from the log, so a reconnect with Last-Event-ID continues
// exactly after the last event the client saw — no gap, no duplicate —
// also after a restart, while the event is retained. When it is not, the
// stream sends one "reset" event and ends: backfill the history and follow
// its streamCursor.
func (a *Adapter) handleStream(w http.ResponseWriter, r *http.Request) {
	conv, ok := a.ownConversation(w, r)
	if !ok {
		return
	}
	if a.gateway(w) == nil {
		return
	}
	ctx := r.Context()
	// Subscribe before the first read: an append in between wakes us.
	wake, unsubscribe := a.hub.subscribe(conv.ID)
	defer unsubscribe()
	pos, reset, err := a.startPos(ctx, r, conv.ID)
	var bad errBadCursor
	if errors.As(err, &bad) {
		writeError(w, http.StatusBadRequest, "bad_cursor", "Last-Event-ID: "+bad.Error())
		return
	}
	if err != nil {
		a.internal(w, "resolve the stream cursor", err)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a server WriteTimeout must not cut the stream; unsupported is fine
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	flush := func() bool { return bw.Flush() == nil && rc.Flush() == nil }
	if reset {
		fmt.Fprintf(bw, "event: %s\ndata: {\"type\":%q,\"reason\":\"the event Last-Event-ID names is no longer retained; read the history and follow its streamCursor\"}\n\n", TypeReset, TypeReset)
		flush()
		return
	}
	fmt.Fprint(bw, "retry: 1000\n\n")
	if !flush() {
		return
	}
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	keep := time.NewTicker(a.keepAlive)
	defer keep.Stop()
	for {
		evs, err := a.store.EventsAfter(ctx, conv.ID, pos, streamBatch)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("read the event log", "conversation", conv.ID, "err", err)
			}
			return // the client reconnects with Last-Event-ID
		}
		for _, ev := range evs {
			data, err := encodeEvent(ev)
			if err != nil {
				a.log.Error("skip a stored event", "conversation", conv.ID, "err", err)
				pos = ev.Pos
				continue
			}
			fmt.Fprintf(bw, "id: %s\nevent: %s\ndata: %s\n\n", FormatEventID(ev.RunID, ev.SeqID), ev.Type, data)
			pos = ev.Pos
		}
		if len(evs) > 0 && !flush() {
			return
		}
		if len(evs) == streamBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-wake:
		case <-keep.C:
			fmt.Fprint(bw, ": keepalive\n\n")
			if !flush() {
				return
			}
		}
	}
}

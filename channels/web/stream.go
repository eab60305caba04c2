package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// streamEvent is one Server-Sent Event.
type streamEvent struct {
	name string // message, delete, typing, notice, reset
	data any
}

// handleEvents streams a chat's changes as Server-Sent Events:
//
//	event: reset    {}                      forget the live messages shown so far
//	event: message  viewMessage             a message's whole current state
//	event: delete   {"id": …}               a message was removed
//	event: typing   {}                      the agent is working
//	event: notice   {"text": …}             the page banner ("" hides it)
//
// A new stream (or one resuming another process's ids) starts with reset and
// every kept message; a stream resuming with Last-Event-ID gets only what
// changed since. A comment line every 15 s keeps proxies from closing it.
func (a *Adapter) handleEvents(w http.ResponseWriter, r *http.Request) {
	chatID := r.PathValue("chat")
	if !validID(chatID) {
		apiError(w, http.StatusBadRequest, "bad chat id")
		return
	}
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	select {
	case <-done:
		// Start has returned: answer with an error so the page's
		// EventSource stops instead of reconnecting every few seconds.
		apiError(w, http.StatusServiceUnavailable, "the gateway has stopped")
		return
	default:
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a server WriteTimeout must not cut the stream; unsupported is fine

	sub := &subscriber{chat: chatID, wake: make(chan struct{}, 1)}
	a.mu.Lock()
	a.chat(chatID)
	a.subs[sub] = struct{}{}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.subs, sub)
		a.mu.Unlock()
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	last, resume := a.resumePoint(r.Header.Get("Last-Event-ID"))
	noticeSeen := uint64(0)
	if resume {
		noticeSeen = last
	}
	keepalive := time.NewTicker(keepaliveInterval)
	defer keepalive.Stop()
	var buf bytes.Buffer
	for {
		events, seq := a.changes(chatID, last, !resume, &noticeSeen)
		resume = true
		if len(events) > 0 {
			buf.Reset()
			for i, ev := range events {
				id := ""
				if i == len(events)-1 {
					id = a.epoch + "-" + strconv.FormatUint(seq, 10)
				}
				writeEvent(&buf, ev, id)
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		last = seq
		select {
		case <-sub.wake:
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
	}
}

// resumePoint parses a Last-Event-ID "<epoch>-<seq>" of this process.
func (a *Adapter) resumePoint(lastEventID string) (uint64, bool) {
	epoch, n, ok := strings.Cut(lastEventID, "-")
	if !ok || epoch != a.epoch {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq > a.seq {
		return 0, false
	}
	return seq, true
}

// changes returns the events that bring a page that saw everything up to
// change number since up to date, and the current change number. full
// starts over with a reset and every kept message.
func (a *Adapter) changes(chatID string, since uint64, full bool, noticeSeen *uint64) ([]streamEvent, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var evs []streamEvent
	if full {
		evs = append(evs, streamEvent{name: "reset", data: struct{}{}})
		since = 0
	}
	if full || a.noticeSeq > *noticeSeen {
		evs = append(evs, streamEvent{name: "notice", data: map[string]string{"text": a.notice}})
		*noticeSeen = a.noticeSeq
	}
	c, ok := a.chats[chatID]
	if !ok {
		return evs, a.seq
	}
	typing := !full && c.typingSeq > since
	for _, m := range c.msgs {
		if m.seq <= since {
			continue
		}
		switch {
		case m.deleted && full:
		case m.deleted:
			evs = append(evs, streamEvent{name: "delete", data: map[string]string{"id": m.view.ID}})
		default:
			evs = append(evs, streamEvent{name: "message", data: m.view})
			if m.view.Role != "user" && m.seq > c.typingSeq {
				typing = false // a message after the typing signal ends it
			}
		}
	}
	if typing {
		evs = append(evs, streamEvent{name: "typing", data: struct{}{}})
	}
	return evs, a.seq
}

// writeEvent writes one event. JSON has no raw newlines, so data is one
// line.
func writeEvent(buf *bytes.Buffer, ev streamEvent, id string) {
	data, err := json.Marshal(ev.data)
	if err != nil {
		data = []byte(`{}`) // view types always marshal
	}
	if id != "" {
		buf.WriteString("id: " + id + "\n")
	}
	buf.WriteString("event: " + ev.name + "\nretry: 2000\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
}

package main

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// event is one thing that happened during a campaign: a kill, a start, a
// message or press the campaign sent, a model step the fake answered, an
// answer seen in a chat.
type event struct {
	At    time.Duration // since the campaign started
	Inc   int           // the switchboard process running then (1-based; 0 when none)
	Kind  string
	Token string // the user message it concerns, if any
	Text  string
}

// eventLog records events in order. It is safe for concurrent use.
type eventLog struct {
	start time.Time
	mu    sync.Mutex
	inc   int
	evs   []event
	live  io.Writer // with -v, every event is printed as it happens
}

func newEventLog(live io.Writer) *eventLog {
	return &eventLog{start: time.Now(), live: live}
}

// setIncarnation says which process runs from now on.
func (l *eventLog) setIncarnation(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inc = n
}

func (l *eventLog) add(kind, token, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := event{At: time.Since(l.start), Inc: l.inc, Kind: kind, Token: token, Text: fmt.Sprintf(format, args...)}
	l.evs = append(l.evs, e)
	if l.live != nil {
		fmt.Fprintln(l.live, e)
	}
}

func (l *eventLog) since(t time.Time) time.Duration { return t.Sub(l.start) }

func (l *eventLog) all() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

func (e event) String() string {
	tok := ""
	if e.Token != "" {
		tok = " " + e.Token
	}
	return fmt.Sprintf("%9.3fs  #%-3d %-8s%s  %s", e.At.Seconds(), e.Inc, e.Kind, tok, e.Text)
}

// story returns the events that explain what happened to token: its own
// events, those of the related tokens (a superseded message's successor),
// and every process start and kill from its message to its last event (or
// the end).
func story(evs []event, token string, related ...string) []event {
	mine := func(e event) bool { return e.Token == token || e.Token != "" && slices.Contains(related, e.Token) }
	first, last := -1, -1
	for i, e := range evs {
		if mine(e) {
			if first < 0 {
				first = i
			}
			if e.Kind != "old-press" && e.Kind != "old-answer" {
				last = i // the final phase's presses of old buttons do not extend the story
			}
		}
	}
	if first < 0 {
		return nil
	}
	// Process events after the token's last one still matter (a kill just
	// after its last model step is the usual culprit), up to the next run's
	// readiness.
	end := len(evs)
	readies := 0
	for i := last + 1; i < len(evs); i++ {
		if evs[i].Kind == "ready" || evs[i].Kind == "stop" {
			readies++
			if readies == 2 {
				end = i + 1
				break
			}
		}
	}
	var out []event
	for i := first; i < end; i++ {
		e := evs[i]
		if mine(e) || isProcessEvent(e.Kind) {
			out = append(out, e)
		}
	}
	return out
}

func isProcessEvent(kind string) bool {
	switch kind {
	case "start", "ready", "kill", "exit", "stop":
		return true
	}
	return false
}

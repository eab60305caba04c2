package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// StreamOptions say where a stream starts.
type StreamOptions struct {
	// LastEventID resumes after this event (an Event.ID seen before).
	LastEventID string
	// After, when LastEventID is empty, starts after this event id, or
	// before every retained event with "start": a MessagePage's
	// StreamCursor. With neither, the stream starts at the running turn's
	// start, else with new events.
	After string
	// MaxLine bounds one line of the stream (default DefaultMaxLine).
	MaxLine int
}

// Stream reads a conversation's event stream. When the connection drops
// it reconnects with backoff and resumes by Last-Event-ID, so Next yields
// every event once, in order. A Stream is used by one goroutine.
type Stream struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc
	conv   string
	opts   StreamOptions

	last       string // the id of the last event read
	body       io.ReadCloser
	rd         *sseReader
	wait       time.Duration
	reconnects int
	reset      bool
}

// Stream opens a conversation's event stream; it connects on the first
// Next and lives until ctx ends or Close.
func (c *Client) Stream(ctx context.Context, conv string, o StreamOptions) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	return &Stream{c: c, ctx: ctx, cancel: cancel, conv: conv, opts: o, last: o.LastEventID}
}

// LastEventID is the id of the last event Next returned (where a new
// Stream would resume).
func (s *Stream) LastEventID() string { return s.last }

// Reconnects counts the connections made after one was lost.
func (s *Stream) Reconnects() int { return s.reconnects }

// Close ends the stream.
func (s *Stream) Close() error {
	s.cancel()
	s.drop()
	return nil
}

// Restart continues a stream that was reset (an EventReset: the server no
// longer retains the event it would resume after) after the event id, or
// "start", after: the StreamCursor of the history read since.
func (s *Stream) Restart(after string) {
	s.drop()
	s.reset = false
	s.last, s.opts.After = "", after
}

func (s *Stream) drop() {
	if s.body != nil {
		s.body.Close()
	}
	s.body, s.rd = nil, nil
}

// connect opens one connection, resuming after the last event.
func (s *Stream) connect() error {
	q := url.Values{}
	if s.last == "" && s.opts.After != "" {
		q.Set("after", s.opts.After)
	}
	req, err := http.NewRequestWithContext(s.ctx, "GET", s.c.base+"/v1/conversations/"+url.PathEscape(s.conv)+"/stream"+query(q), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.c.token)
	req.Header.Set("Accept", "text/event-stream")
	if s.last != "" {
		req.Header.Set("Last-Event-ID", s.last)
	}
	resp, err := s.c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("stream of %s: %w", s.conv, err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return statusError(resp.StatusCode, data)
	}
	s.body, s.rd = resp.Body, newSSEReader(resp.Body, s.opts.MaxLine)
	return nil
}

// Next returns the next event. Lost connections are reopened with
// backoff (the API's refusals — a wrong token, an unknown conversation —
// are returned instead). An EventReset is returned as an event; then the
// stream waits for Restart.
func (s *Stream) Next() (Event, error) {
	if s.reset {
		return Event{}, ErrNeedsRestart
	}
	for {
		if err := s.ctx.Err(); err != nil {
			return Event{}, err
		}
		if s.rd == nil {
			if err := s.connect(); err != nil {
				if !retryable(err) || s.ctx.Err() != nil {
					return Event{}, err
				}
				if !s.backoff() {
					return Event{}, s.ctx.Err()
				}
				continue
			}
		}
		sev, err := s.rd.next()
		if err != nil {
			s.drop()
			if s.ctx.Err() != nil {
				return Event{}, s.ctx.Err()
			}
			s.reconnects++
			if !s.backoff() {
				return Event{}, s.ctx.Err()
			}
			continue
		}
		if sev.data == "" {
			if sev.hasID {
				s.last = sev.id
			}
			continue
		}
		var ev Event
		if err := json.Unmarshal([]byte(sev.data), &ev); err != nil {
			// Not ours (a proxy's page?): treat it as a lost connection.
			s.drop()
			s.reconnects++
			if !s.backoff() {
				return Event{}, s.ctx.Err()
			}
			continue
		}
		ev.Data = json.RawMessage(sev.data)
		if ev.Type == "" {
			ev.Type = sev.event
		}
		if sev.hasID {
			s.last = sev.id
			ev.ID = sev.id
		}
		s.wait = 0
		if ev.Type == EventReset {
			s.drop()
			s.reset = true
		}
		return ev, nil
	}
}

// backoff waits before the next connection; false when the stream ended.
func (s *Stream) backoff() bool {
	s.wait = nextBackoff(s.wait, s.c.opts.MinBackoff, s.c.opts.MaxBackoff)
	return sleep(s.ctx, s.wait)
}

// All iterates the stream's events until an error (which it yields last)
// or until the loop stops.
func (s *Stream) All() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			ev, err := s.Next()
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

package client

import (
	"context"
	"fmt"
)

// Follower keeps a conversation's transcript up to date: it reads the
// history, then follows the stream from the history's StreamCursor,
// applying every event to an Accumulator. It backfills only between turns
// (a turn ended with slices the stream did not complete, or its process
// stopped) and after a reset, rebasing in-progress slices onto the fetched
// rows. A Follower is used by one goroutine.
type Follower struct {
	c         *Client
	conv      string
	acc       *Accumulator
	st        *Stream
	backfills int
}

// Follow reads the conversation's history and opens its stream.
func (c *Client) Follow(ctx context.Context, conv string, o StreamOptions) (*Follower, error) {
	f := &Follower{c: c, conv: conv, acc: NewAccumulator()}
	cursor, err := f.backfill(ctx)
	if err != nil {
		return nil, err
	}
	o.LastEventID, o.After = "", cursor
	f.st = c.Stream(ctx, conv, o)
	return f, nil
}

// backfill fetches the history after the last stored message, page by
// page, into the accumulator, and returns the first page's StreamCursor.
func (f *Follower) backfill(ctx context.Context) (string, error) {
	var msgs []Message
	cursor := ""
	after := f.acc.LastStored()
	for first := true; ; first = false {
		page, err := f.c.Messages(ctx, f.conv, MessageQuery{After: after, Limit: 500})
		if err != nil {
			return "", fmt.Errorf("backfill %s: %w", f.conv, err)
		}
		if first {
			cursor = page.StreamCursor
		}
		msgs = append(msgs, page.Messages...)
		if !page.More || len(page.Messages) == 0 {
			break
		}
		after = page.Messages[len(page.Messages)-1].UUID
	}
	f.acc.Backfill(msgs)
	f.backfills++
	return cursor, nil
}

// Next applies the next event to the transcript and returns it (also a
// replay the accumulator dropped, and a reset after it was handled).
func (f *Follower) Next(ctx context.Context) (Event, error) {
	ev, err := f.st.Next()
	if err != nil {
		return Event{}, err
	}
	if ev.Type == EventReset {
		f.acc.Reset()
		cursor, err := f.backfill(ctx)
		if err != nil {
			return Event{}, err
		}
		f.st.Restart(cursor)
		return ev, nil
	}
	f.acc.Apply(ev)
	if f.acc.NeedsBackfill() {
		if _, err := f.backfill(ctx); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

// Accumulator is the follower's transcript state.
func (f *Follower) Accumulator() *Accumulator { return f.acc }

// Transcript is the transcript so far.
func (f *Follower) Transcript() []Entry { return f.acc.Transcript() }

// Stream is the underlying stream (its LastEventID and Reconnects).
func (f *Follower) Stream() *Stream { return f.st }

// Backfills counts the history reads (the first one included).
func (f *Follower) Backfills() int { return f.backfills }

// Close ends the stream.
func (f *Follower) Close() error { return f.st.Close() }

package agentcore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrLeaseLost is returned (wrapped) by a turn write whose lease owner no
// longer holds the conversation's lease: another process took it after it
// expired, so nothing of the write is stored.
var ErrLeaseLost = errors.New("lost the conversation's lease to another process")

// TurnWrite is a batch of a turn's records that the store commits in one
// transaction (TurnStore.CommitTurn). A turn buffers what it produces and
// stores it where it must be durable: before a tool runs (the call must be
// on record before its effects), before a compaction, before queued
// messages are marked consumed, and when the turn ends. A plain text turn
// is therefore one write at its end, with the lease's release (and, through
// a TurnHost, the host's own records).
type TurnWrite struct {
	ConversationID string
	// SystemPrompt, when not empty, is a newly compiled system prompt to
	// cache with PromptRevision (Transcript.SetSystemPrompt's semantics).
	SystemPrompt   string
	PromptRevision string
	// Messages are appended in order (Transcript.Append's semantics: Seq is
	// assigned; ID and CreatedAt kept when set).
	Messages []Message
	// Runs are recorded (Runs.StartRun's semantics).
	Runs []Run
	// Approvals are created (Approvals.CreateApprovals' semantics).
	Approvals []Approval
	// ToolStarted are call ids marked as begun (ToolLedger.MarkToolStarted).
	ToolStarted []string
	// Owner, when set, must hold the conversation's lease: otherwise
	// nothing is stored and the error wraps ErrLeaseLost.
	Owner string
	// Release releases Owner's lease in the same transaction.
	Release bool
}

// Empty reports whether w stores nothing (a lease release aside).
func (w TurnWrite) Empty() bool {
	return w.SystemPrompt == "" && len(w.Messages) == 0 && len(w.Runs) == 0 && len(w.Approvals) == 0 && len(w.ToolStarted) == 0
}

// TurnStore commits a turn's buffered records.
type TurnStore interface {
	// CommitTurn stores w in one transaction and returns the stored
	// messages (with Seq assigned). When w.Owner is set and does not hold
	// the lease, nothing is stored and the error wraps ErrLeaseLost.
	CommitTurn(ctx context.Context, w TurnWrite) ([]Message, error)
}

// TurnHost lets a host fold its own records into a turn's first and last
// writes (Input.Host): a worker of a durable queue takes its queue item
// together with the conversation's lease, and completes it, with the reply
// in its outbox, together with the turn's last records. So a plain text
// turn costs the host two write transactions, not five.
type TurnHost interface {
	// Begin takes the conversation's lease for owner for ttl, with
	// Leases.AcquireLease's semantics, together with the host's records;
	// false means another owner holds it (Turn returns ErrBusy). An error
	// ends the turn before it did anything; Turn returns it wrapped.
	Begin(ctx context.Context, conversationID, owner string, ttl time.Duration) (bool, error)
	// Finish stores w — the turn's last records; w.Release is set — and
	// the host's records in one transaction with CommitTurn's semantics for
	// w, once the turn has ended as res, and returns the stored messages.
	// It is called on the turn's goroutine after its last event, before
	// Turn returns; ctx is not cancelled. When it fails, Turn releases the
	// lease itself and returns the error: nothing of w is stored.
	Finish(ctx context.Context, w TurnWrite, res TurnResult) ([]Message, error)
}

// storeHost is the TurnHost of a turn without one: the lease and the last
// write, nothing of its own.
type storeHost struct{ st Store }

func (h storeHost) Begin(ctx context.Context, conversationID, owner string, ttl time.Duration) (bool, error) {
	return h.st.AcquireLease(ctx, conversationID, owner, ttl)
}

func (h storeHost) Finish(ctx context.Context, w TurnWrite, _ TurnResult) ([]Message, error) {
	return h.st.CommitTurn(ctx, w)
}

// buffer adds messages to the turn's pending records and to its view: they
// are stored with the next flush (flush, or the turn's end). Parts are
// redacted here, and ID, CreatedAt and a provisional Seq (the next after
// the view's last; the store assigns the same under the lease) are set, so
// events can name the messages before they are stored.
func (t *turn) buffer(msgs ...Message) []Message {
	red := t.a.deps.Env.Redactor
	now := t.a.deps.Now().UTC()
	seq := t.lastSeq()
	for i := range msgs {
		m := &msgs[i]
		for j := range m.Parts {
			if m.Parts[j].Type != PartImage {
				m.Parts[j].Text = red.Redact(m.Parts[j].Text)
			}
		}
		m.Reasoning = red.Redact(m.Reasoning)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = red.Redact(m.ToolCalls[j].Arguments)
		}
		if m.ID == "" {
			m.ID = newID()
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		m.ConversationID = t.conv.ID
		seq++
		m.Seq = seq
	}
	t.pending.Messages = append(t.pending.Messages, msgs...)
	if t.viewOK {
		// In place: the turn owns the backing array, and loadView hands
		// out views capped at their length, so no holder of an earlier
		// view can see or overwrite what is appended here.
		t.view = append(t.view, msgs...)
	}
	return msgs
}

// lastSeq is the Seq of the newest message the turn knows of.
func (t *turn) lastSeq() int64 {
	if n := len(t.pending.Messages); n > 0 {
		return t.pending.Messages[n-1].Seq
	}
	var seq int64
	for _, m := range t.view {
		seq = max(seq, m.Seq)
	}
	return seq
}

// append buffers messages and stores them at once, with everything else
// pending.
func (t *turn) append(ctx context.Context, msgs ...Message) ([]Message, error) {
	n := len(t.pending.Messages)
	t.buffer(msgs...)
	stored, err := t.flush(ctx)
	if err != nil {
		return nil, err
	}
	return stored[n:], nil
}

// flush stores the pending records in one write (checking the lease) and
// returns the stored messages. The view keeps the stored copies.
func (t *turn) flush(ctx context.Context) ([]Message, error) {
	if t.pending.Empty() {
		return nil, nil
	}
	w := t.take()
	stored, err := t.a.deps.Store.CommitTurn(context.WithoutCancel(ctx), w)
	if err != nil {
		t.viewOK = false
		return nil, fmt.Errorf("store the turn's records in %s: %w", t.conv.ID, err)
	}
	t.adopt(stored)
	return stored, nil
}

// take returns the pending records as a write for this turn's lease and
// clears them.
func (t *turn) take() TurnWrite {
	w := t.pending
	w.ConversationID, w.Owner = t.conv.ID, t.a.deps.Owner
	t.pending = TurnWrite{}
	return w
}

// adopt replaces the view's buffered copies of stored messages by the
// stored ones (their Seq as the store assigned it).
func (t *turn) adopt(stored []Message) {
	if !t.viewOK || len(stored) == 0 {
		return
	}
	byID := make(map[string]int, len(stored))
	for i, m := range stored {
		byID[m.ID] = i
	}
	// Usually the buffered copies are the stored ones already (the turn
	// numbered and stamped them as the store did): then nothing changes
	// and nothing is copied.
	differ, found := false, 0
	for i := len(t.view) - 1; i >= 0 && found < len(byID) && !differ; i-- {
		if j, ok := byID[t.view[i].ID]; ok {
			found++
			v, st := &t.view[i], &stored[j]
			differ = v.Seq != st.Seq || !v.CreatedAt.Equal(st.CreatedAt) || v.CreatedAt.Location() != st.CreatedAt.Location() ||
				v.ConversationID != st.ConversationID
		}
	}
	if !differ {
		return
	}
	// A copy: views handed out earlier (a request's messages) keep theirs.
	t.view = slices.Clone(t.view)
	for i := len(t.view) - 1; i >= 0 && len(byID) > 0; i-- {
		if j, ok := byID[t.view[i].ID]; ok {
			t.view[i] = stored[j]
			delete(byID, t.view[i].ID)
		}
	}
}

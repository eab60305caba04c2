package channelstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// Op is the kind of a recorded call.
type Op string

// Recorded operations.
const (
	OpSend      Op = "send"
	OpEdit      Op = "edit"
	OpDelete    Op = "delete"
	OpEphemeral Op = "ephemeral"
	OpTyping    Op = "typing"
)

// Record is one call the gateway made on the fake, successful or not.
type Record struct {
	Seq      int // 1-based order of the call
	Op       Op
	Location channels.Location
	// Ref is the message the call created (send) or targeted (edit,
	// delete); zero for typing and ephemeral sends.
	Ref     channels.MessageRef
	UserID  string // the recipient of an ephemeral send
	Message channels.Message
	// Chunks is Message rendered for the fake's capabilities at the time of
	// the call (channels.RenderMessage).
	Chunks []string
	// Err is what the call returned; nil for calls that succeeded.
	Err error
	// At is when the call was made.
	At time.Time
}

// Text returns the record's rendered chunks joined by newlines.
func (r Record) Text() string { return strings.Join(r.Chunks, "\n") }

// Posted is the current state of one message the fake accepted.
type Posted struct {
	Ref     channels.MessageRef
	Message channels.Message // the latest content, after edits
	Edits   int
	Deleted bool
}

// Adapter is a fake channels.Adapter that keeps everything in memory. It
// also implements channels.Typer, channels.Deleter,
// channels.EphemeralSender, channels.DirectMessenger and
// channels.CommandRegistrar. Create it with New.
type Adapter struct {
	name string

	mu       sync.Mutex
	caps     channels.Capabilities
	handler  channels.Handler
	started  chan struct{} // closed when Start has a handler
	changed  chan struct{} // closed and replaced on every new record
	records  []Record
	posted   map[string]*Posted // by message id
	order    []string           // message ids in send order
	nextID   int
	failSend []error
	failEdit []error
	startErr error
	commands []channels.Command
}

var (
	_ channels.Adapter          = (*Adapter)(nil)
	_ channels.Typer            = (*Adapter)(nil)
	_ channels.Deleter          = (*Adapter)(nil)
	_ channels.EphemeralSender  = (*Adapter)(nil)
	_ channels.DirectMessenger  = (*Adapter)(nil)
	_ channels.CommandRegistrar = (*Adapter)(nil)
)

// New returns a fake adapter for the channel name with the given
// capabilities.
func New(name string, caps channels.Capabilities) *Adapter {
	return &Adapter{
		name:    name,
		caps:    caps,
		started: make(chan struct{}),
		changed: make(chan struct{}),
		posted:  make(map[string]*Posted),
	}
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return a.name }

// Capabilities implements channels.Adapter.
func (a *Adapter) Capabilities() channels.Capabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}

// SetCapabilities changes what Capabilities reports from now on.
func (a *Adapter) SetCapabilities(c channels.Capabilities) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.caps = c
}

// FailStart makes the next Start return err at once, as an adapter with bad
// credentials would.
func (a *Adapter) FailStart(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.startErr = err
}

// Start implements channels.Adapter: it remembers h, so Inbound and Press
// can call it, and blocks until ctx ends. Calling Start again replaces the
// handler (a restart).
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("start fake adapter: nil handler")
	}
	a.mu.Lock()
	if err := a.startErr; err != nil {
		a.startErr = nil
		a.mu.Unlock()
		return err
	}
	a.handler = h
	select {
	case <-a.started:
	default:
		close(a.started)
	}
	a.mu.Unlock()
	<-ctx.Done()
	return nil
}

// WaitStarted blocks until Start has been called or ctx ends.
func (a *Adapter) WaitStarted(ctx context.Context) error {
	select {
	case <-a.started:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for fake adapter %s to start: %w", a.name, ctx.Err())
	}
}

func (a *Adapter) handlerFor(ctx context.Context) (channels.Handler, error) {
	if err := a.WaitStarted(ctx); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handler, nil
}

// Inbound delivers in to the handler as if the platform sent it, waiting
// for Start first. It fills an empty Location.Channel with the adapter's
// name and returns what OnInbound returned.
func (a *Adapter) Inbound(ctx context.Context, in channels.Inbound) error {
	h, err := a.handlerFor(ctx)
	if err != nil {
		return err
	}
	if in.Location.Channel == "" {
		in.Location.Channel = a.name
	}
	return h.OnInbound(ctx, in)
}

// Press delivers a button press to the handler, waiting for Start first,
// and returns the reply the adapter would show the presser.
func (a *Adapter) Press(ctx context.Context, act channels.Action) (channels.ActionReply, error) {
	h, err := a.handlerFor(ctx)
	if err != nil {
		return channels.ActionReply{}, err
	}
	if act.Location.Channel == "" {
		act.Location.Channel = a.name
	}
	if len(act.Token) > channels.MaxTokenLen {
		return channels.ActionReply{}, fmt.Errorf("press: token is %d bytes, platforms allow %d", len(act.Token), channels.MaxTokenLen)
	}
	return h.OnAction(ctx, act)
}

// FailSends makes the next n calls to Send fail with err (a transient error
// when err is nil). Calls queue up: FailSends(1, rl); FailSends(2, nil)
// fails three sends, the first with rl.
func (a *Adapter) FailSends(n int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failSend = appendFailures(a.failSend, n, err, "send")
}

// FailEdits makes the next n calls to Edit fail with err (a transient error
// when err is nil).
func (a *Adapter) FailEdits(n int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failEdit = appendFailures(a.failEdit, n, err, "edit")
}

func appendFailures(q []error, n int, err error, op string) []error {
	if err == nil {
		err = fmt.Errorf("fake %s failure (transient)", op)
	}
	for range n {
		q = append(q, err)
	}
	return q
}

// record appends r and wakes waiters. Callers hold a.mu.
func (a *Adapter) record(r Record) {
	r.At = time.Now()
	r.Seq = len(a.records) + 1
	a.records = append(a.records, r)
	close(a.changed)
	a.changed = make(chan struct{})
}

// Send implements channels.Adapter. It validates the message as a platform
// would (a permanent error for an invalid one), then records it.
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return channels.MessageRef{}, fmt.Errorf("fake send: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := Record{Op: OpSend, Location: loc, Message: m, Chunks: channels.RenderMessage(m, a.caps)}
	if len(a.failSend) > 0 {
		rec.Err = a.failSend[0]
		a.failSend = a.failSend[1:]
	} else if err := m.Validate(); err != nil {
		rec.Err = channels.Permanent(err)
	} else if loc.ChatID == "" {
		rec.Err = channels.Permanent(errors.New("fake send: chat not found: empty chat id"))
	}
	if rec.Err != nil {
		a.record(rec)
		return channels.MessageRef{}, rec.Err
	}
	a.nextID++
	ref := channels.MessageRef{Location: loc, ID: "m" + strconv.Itoa(a.nextID)}
	rec.Ref = ref
	a.posted[ref.ID] = &Posted{Ref: ref, Message: m}
	a.order = append(a.order, ref.ID)
	a.record(rec)
	return ref, nil
}

// Edit implements channels.Adapter. Editing an unknown or deleted message,
// or editing when Capabilities().Edit is false, is a permanent error.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fake edit: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := Record{Op: OpEdit, Location: ref.Location, Ref: ref, Message: m, Chunks: channels.RenderMessage(m, a.caps)}
	p := a.posted[ref.ID]
	switch {
	case !a.caps.Edit:
		rec.Err = channels.Permanent(fmt.Errorf("fake edit: %w", channels.ErrNotSupported))
	case len(a.failEdit) > 0:
		rec.Err = a.failEdit[0]
		a.failEdit = a.failEdit[1:]
	case p == nil || p.Deleted || p.Ref.Location != ref.Location:
		rec.Err = channels.Permanent(fmt.Errorf("fake edit %s: message not found", ref))
	default:
		if err := m.Validate(); err != nil {
			rec.Err = channels.Permanent(err)
		}
	}
	if rec.Err == nil {
		p.Message = m
		p.Edits++
	}
	a.record(rec)
	return rec.Err
}

// Delete implements channels.Deleter.
func (a *Adapter) Delete(ctx context.Context, ref channels.MessageRef) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fake delete: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := Record{Op: OpDelete, Location: ref.Location, Ref: ref}
	if p := a.posted[ref.ID]; p == nil || p.Deleted {
		rec.Err = channels.Permanent(fmt.Errorf("fake delete %s: message not found", ref))
	} else {
		p.Deleted = true
	}
	a.record(rec)
	return rec.Err
}

// SendEphemeral implements channels.EphemeralSender; it fails permanently
// when Capabilities().Ephemeral is false.
func (a *Adapter) SendEphemeral(ctx context.Context, loc channels.Location, userID string, m channels.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fake ephemeral send: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := Record{Op: OpEphemeral, Location: loc, UserID: userID, Message: m, Chunks: channels.RenderMessage(m, a.caps)}
	if !a.caps.Ephemeral {
		rec.Err = channels.Permanent(fmt.Errorf("fake ephemeral send: %w", channels.ErrNotSupported))
	}
	a.record(rec)
	return rec.Err
}

// Typing implements channels.Typer.
func (a *Adapter) Typing(ctx context.Context, loc channels.Location) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fake typing: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(Record{Op: OpTyping, Location: loc})
	return nil
}

// Records returns a copy of every call recorded so far, in order.
func (a *Adapter) Records() []Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Record(nil), a.records...)
}

// Sent returns the successful sends, in order.
func (a *Adapter) Sent() []Record {
	return Filter(a.Records(), func(r Record) bool { return r.Op == OpSend && r.Err == nil })
}

// Posted returns the current state of every accepted message in send order;
// with a non-zero loc, only those at loc.
func (a *Adapter) Posted(loc channels.Location) []Posted {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Posted
	for _, id := range a.order {
		p := a.posted[id]
		if loc.IsZero() || p.Ref.Location == loc {
			out = append(out, *p)
		}
	}
	return out
}

// Message returns the current content of the message ref names.
func (a *Adapter) Message(ref channels.MessageRef) (channels.Message, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.posted[ref.ID]
	if !ok || p.Deleted {
		return channels.Message{}, false
	}
	return p.Message, true
}

// WaitFor blocks until pred holds for the records so far and returns them,
// or returns ctx's error (with the records seen, to explain the failure).
// pred is called without the fake's lock held, on a copy of the records.
func (a *Adapter) WaitFor(ctx context.Context, pred func([]Record) bool) ([]Record, error) {
	for {
		a.mu.Lock()
		recs := append([]Record(nil), a.records...)
		changed := a.changed
		a.mu.Unlock()
		if pred(recs) {
			return recs, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return recs, fmt.Errorf("wait for fake adapter %s (%d records: %s): %w",
				a.name, len(recs), Summary(recs), ctx.Err())
		}
	}
}

// Filter returns the records for which keep is true.
func Filter(recs []Record, keep func(Record) bool) []Record {
	var out []Record
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Count is a WaitFor predicate: at least n records satisfy keep.
func Count(n int, keep func(Record) bool) func([]Record) bool {
	return func(recs []Record) bool { return len(Filter(recs, keep)) >= n }
}

// Contains is a record filter: a successful send or edit whose rendered
// text contains substr.
func Contains(substr string) func(Record) bool {
	return func(r Record) bool {
		return r.Err == nil && (r.Op == OpSend || r.Op == OpEdit) && strings.Contains(r.Text(), substr)
	}
}

// Summary describes records in one line each, for failure messages.
func Summary(recs []Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "\n  #%d %s %s %s %q", r.Seq, r.Op, r.Location, r.Ref.ID, r.Text())
		if r.Err != nil {
			fmt.Fprintf(&b, " err=%v", r.Err)
		}
	}
	return b.String()
}

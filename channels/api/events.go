package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// Event types the API adds to the agent core's (which it relays as they
// are: assistant_delta, reasoning_delta, assistant_message, tool_call,
// tool_result, approval_request, approval_decision, plan, task_*,
// compaction).
const (
	TypeUserMessage = "user_message" // an input was queued (POST .../messages)
	TypeTurnStart   = "turn_start"   // a turn began; names its input, with the user's text when posted here
	TypeTurnEnd     = "turn_end"     // the turn ended: stopReason, usage, steps, error
	TypeChatMessage = "chat_message" // a message the gateway posted (notices, command replies, the final reply)
	TypeChatEdit    = "chat_message_edit"
	TypeReset       = "reset" // the stream cannot resume from Last-Event-ID: backfill and reconnect
)

// StopRestarted is the stop reason of a turn_end the API adds for a turn
// whose process stopped before it ended: what the turn stored is in the
// history, and its input may be worked again as a new turn.
const StopRestarted = "restarted"

// maxRunIDLen bounds the run id part of an event id.
const maxRunIDLen = 200

// FormatEventID is an event's SSE id: "<runId>:<seqId>".
func FormatEventID(runID string, seqID int64) string {
	return runID + ":" + strconv.FormatInt(seqID, 10)
}

// ParseEventID parses what FormatEventID wrote: a run id of 1..200
// printable ASCII characters other than space and ':', a colon, and a
// positive decimal seqId without leading zeros. Every id it accepts is the
// FormatEventID of its result.
func ParseEventID(s string) (runID string, seqID int64, err error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("event id %q: want runId:seqId", clip(s))
	}
	runID, num := s[:i], s[i+1:]
	if len(runID) > maxRunIDLen {
		return "", 0, fmt.Errorf("event id %q: run id longer than %d", clip(s), maxRunIDLen)
	}
	for j := 0; j < len(runID); j++ {
		if c := runID[j]; c <= ' ' || c >= 0x7f || c == ':' {
			return "", 0, fmt.Errorf("event id %q: bad character in the run id", clip(s))
		}
	}
	if num == "" || num[0] == '0' || len(num) > 19 {
		return "", 0, fmt.Errorf("event id %q: seqId must be a positive number", clip(s))
	}
	for j := 0; j < len(num); j++ {
		if num[j] < '0' || num[j] > '9' {
			return "", 0, fmt.Errorf("event id %q: seqId must be a positive number", clip(s))
		}
	}
	seqID, err = strconv.ParseInt(num, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("event id %q: seqId out of range", clip(s))
	}
	return runID, seqID, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// encodeEvent is the SSE data of a stored event: its JSON with the stream
// identity the API gave it.
func encodeEvent(ev Event) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("stored event %s is not a JSON object", FormatEventID(ev.RunID, ev.SeqID))
	}
	set := func(k string, v any) {
		b, _ := json.Marshal(v)
		m[k] = b
	}
	set("type", ev.Type)
	set("runId", ev.RunID)
	set("seqId", ev.SeqID)
	set("id", FormatEventID(ev.RunID, ev.SeqID))
	set("conversationId", ev.ConversationID)
	if ev.InputID != "" {
		set("inputId", ev.InputID)
	}
	if _, ok := m["at"]; !ok && !ev.At.IsZero() {
		set("at", ev.At.UTC())
	}
	return json.Marshal(m)
}

// hub wakes the event streams of a conversation when its log grows. A
// wake channel has one slot: a pending wake-up covers every later append,
// since a stream reads the log itself.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: map[string]map[chan struct{}]struct{}{}} }

// subscribe returns a wake channel for conversation conv and its cancel.
func (h *hub) subscribe(conv string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[conv] == nil {
		h.subs[conv] = map[chan struct{}]struct{}{}
	}
	h.subs[conv][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[conv], ch)
		if len(h.subs[conv]) == 0 {
			delete(h.subs, conv)
		}
		h.mu.Unlock()
	}
}

func (h *hub) wake(conv string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[conv] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// convLocks order what two goroutines write into one conversation's log
// when the order matters: a queued input's user_message goes in before the
// turn_start of its turn. Striped, so memory stays bounded.
type convLocks [64]sync.Mutex

func (l *convLocks) lock(conv string) func() {
	var h uint32 = 2166136261
	for i := 0; i < len(conv); i++ {
		h = (h ^ uint32(conv[i])) * 16777619
	}
	m := &l[h%uint32(len(l))]
	m.Lock()
	return m.Unlock
}

// appendTimeout bounds one store write of an event; events are written
// also while the gateway stops (the turn's last events must not be lost).
const appendTimeout = 10 * time.Second

// appendEvent stores one event (retrying a failed write twice) and wakes
// the conversation's streams.
func (a *Adapter) appendEvent(ctx context.Context, ev Event) (Event, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	if ev.At.IsZero() {
		ev.At = a.now().UTC()
	}
	var stored Event
	var err error
	for try := 0; try < 3; try++ {
		if stored, err = a.store.AppendEvent(ctx, ev); err == nil {
			a.hub.wake(ev.ConversationID)
			return stored, nil
		}
		if ctx.Err() != nil {
			break
		}
		t := time.NewTimer(time.Duration(50*(try+1)) * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return Event{}, fmt.Errorf("store %s event of %s: %w", ev.Type, ev.ConversationID, err)
}

// Live implements channels.LiveSurface: every event of a turn at an API
// location goes into the conversation's log, in order.
func (a *Adapter) Live(ctx context.Context, ev channels.LiveEvent) {
	if ev.Location.Channel != Name {
		return
	}
	conv := ev.ConversationID
	if conv == "" {
		conv = ev.Location.ChatID
	}
	var err error
	switch ev.Kind {
	case channels.LiveTurnStart:
		err = a.turnStart(ctx, conv, ev)
	case channels.LiveTurnEnd:
		err = a.turnEnd(ctx, conv, ev)
	default:
		err = a.relay(ctx, conv, ev)
	}
	if err != nil {
		a.log.Error("an event of the API stream was not stored; clients will not see it", "conversation", conv, "kind", ev.Kind, "err", err)
	}
}

// turnStart notes that a turn begins. It is logged with the turn's first
// event (or its end): a turn that does not run after all (another process
// holds the conversation; the gateway tries again later) leaves nothing
// in the log.
func (a *Adapter) turnStart(ctx context.Context, conv string, ev channels.LiveEvent) error {
	a.mu.Lock()
	a.pending[conv] = ev
	a.mu.Unlock()
	return nil
}

// flushStart logs the pending turn_start of a conversation, if any: it
// closes a turn of an earlier process that never ended, then logs
// turn_start with the input's text when it was posted here. The
// conversation's lock orders it after the input's user_message.
func (a *Adapter) flushStart(ctx context.Context, conv string) error {
	a.mu.Lock()
	ev, ok := a.pending[conv]
	delete(a.pending, conv)
	a.mu.Unlock()
	if !ok {
		return nil
	}
	unlock := a.locks.lock(conv)
	defer unlock()
	if err := a.closeOpenTurn(ctx, conv, true); err != nil {
		return err
	}
	run := "turn-" + randomID()
	a.mu.Lock()
	a.turns[conv] = run
	a.mu.Unlock()
	data := map[string]any{"at": ev.At.UTC()}
	if ev.InputID != "" {
		um, err := a.store.LastEvent(ctx, EventQuery{ConversationID: conv, Types: []string{TypeUserMessage}, InputID: ev.InputID})
		switch {
		case err == nil:
			var u struct {
				Text   string `json:"text"`
				Images int    `json:"images,omitempty"`
			}
			if json.Unmarshal(um.Data, &u) == nil {
				data["user"] = map[string]any{"uuid": ev.InputID, "text": u.Text, "images": u.Images}
			}
		case !errors.Is(err, ErrNotFound):
			a.log.Warn("look up the input of a turn", "conversation", conv, "input", ev.InputID, "err", err)
		}
	}
	body, _ := json.Marshal(data)
	_, err := a.appendEvent(ctx, Event{ConversationID: conv, RunID: run, Type: TypeTurnStart, InputID: ev.InputID, Data: body})
	return err
}

// closeOpenTurn logs a turn_end for the conversation's last turn when it
// has none: its process stopped (a crash, a shutdown mid-turn) or it did
// not run after all (another process held the conversation). A turn running
// in this process is left open unless force (a new turn starts). Called
// with the conversation's lock held.
func (a *Adapter) closeOpenTurn(ctx context.Context, conv string, force bool) error {
	last, err := a.store.LastEvent(ctx, EventQuery{ConversationID: conv, Types: []string{TypeTurnStart, TypeTurnEnd}})
	if errors.Is(err, ErrNotFound) || (err == nil && last.Type == TypeTurnEnd) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the last turn of %s: %w", conv, err)
	}
	a.mu.Lock()
	running := a.turns[conv] == last.RunID
	a.mu.Unlock()
	if running && !force {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"stopReason": StopRestarted,
		"error": "this turn stopped without ending (its process stopped, or another process held the conversation); what it stored is in the history, and its input may run again as a new turn"})
	_, err = a.appendEvent(ctx, Event{ConversationID: conv, RunID: last.RunID, Type: TypeTurnEnd, InputID: last.InputID, Data: body})
	return err
}

// turnEnd closes the turn.
func (a *Adapter) turnEnd(ctx context.Context, conv string, ev channels.LiveEvent) error {
	if err := a.flushStart(ctx, conv); err != nil {
		return err
	}
	a.mu.Lock()
	run := a.turns[conv]
	delete(a.turns, conv)
	a.mu.Unlock()
	if run == "" {
		run = "turn-" + randomID() // an end without a start; never seen in practice
	}
	data := map[string]any{"stopReason": ev.StopReason, "steps": ev.Steps, "at": ev.At.UTC(),
		"usage": map[string]int64{"inputTokens": ev.Usage.InputTokens, "outputTokens": ev.Usage.OutputTokens, "cachedTokens": ev.Usage.CachedTokens}}
	if ev.Error != "" {
		data["error"] = ev.Error
	}
	body, _ := json.Marshal(data)
	_, err := a.appendEvent(ctx, Event{ConversationID: conv, RunID: run, Type: TypeTurnEnd, InputID: ev.InputID, Data: body})
	return err
}

// relay logs an agent core event as the stream-json wire form has it.
func (a *Adapter) relay(ctx context.Context, conv string, ev channels.LiveEvent) error {
	if len(ev.Wire) == 0 {
		return nil
	}
	var head struct {
		Type  string `json:"type"`
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal(ev.Wire, &head); err != nil || !validType(head.Type) {
		return fmt.Errorf("live event %s: wire form has no valid type", ev.Kind)
	}
	if err := a.flushStart(ctx, conv); err != nil {
		return err
	}
	run := head.RunID
	if run == "" {
		a.mu.Lock()
		run = a.turns[conv]
		a.mu.Unlock()
		if run == "" {
			run = "turn-" + randomID()
		}
	}
	_, err := a.appendEvent(ctx, Event{ConversationID: conv, RunID: run, Type: head.Type, InputID: ev.InputID, Data: bytes.Clone(ev.Wire)})
	return err
}

// sweepOpenTurns closes, at start, the turns earlier processes left open in
// every API conversation.
func (a *Adapter) sweepOpenTurns(ctx context.Context) {
	for _, t := range a.tokens {
		var before int64
		for ctx.Err() == nil {
			convs, err := a.store.APIConversations(ctx, t.name, before, 200)
			if err != nil {
				a.log.Warn("list API conversations to close open turns", "err", err)
				return
			}
			for _, c := range convs {
				unlock := a.locks.lock(c.ID)
				err := a.closeOpenTurn(ctx, c.ID, false)
				unlock()
				if err != nil && ctx.Err() == nil {
					a.log.Warn("close an open turn", "conversation", c.ID, "err", err)
				}
			}
			if len(convs) < 200 {
				break
			}
			before = convs[len(convs)-1].Pos
		}
	}
}

func randomID() string { return strings.ToLower(rand.Text()[:16]) }

// validType accepts event type names ([a-z_], 1..64): they go on the SSE
// "event:" line as they are.
func validType(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

package client

import (
	"encoding/json"
	"slices"
	"strings"
)

// Entry kinds of a transcript.
const (
	KindUser      = "user"
	KindReasoning = "reasoning"
	KindAssistant = "assistant"
	KindToolCall  = "tool_call"
)

// Entry is one row of a reassembled transcript: a user message, a
// reasoning or assistant slice, or a tool call joined with its result.
type Entry struct {
	Kind string
	// UUID is the message the entry belongs to (the user message, the
	// assistant message of a slice or a call).
	UUID string
	// OTID names a reasoning or assistant slice together with Kind.
	OTID   string
	Text   string
	Images int // user messages
	Tool   *ToolCall
	// Streaming: the slice is still arriving; it is not (yet) known to be
	// stored.
	Streaming bool
	turn      *Turn // the turn a streaming slice belongs to
}

// ToolCall is a tool call and, once it ran, its result.
type ToolCall struct {
	ID    string
	Name  string
	Title string
	Kind  string
	// RawArguments accumulates the arguments' text; Arguments is set once
	// it parses as JSON (and never replaced by a fragment that does not).
	RawArguments string
	Arguments    json.RawMessage
	Result       *ToolResult
	Approval     *EventApproval // the ask, while the call waits or once decided
	// complete: the arguments came whole (a complete event or the
	// history); fragments are no longer added.
	complete bool
}

// ToolResult is the result of a tool call.
type ToolResult struct {
	UUID    string // the tool message's uuid
	Text    string
	Outcome string
	IsError bool
}

// Turn is what the stream said about the turn that answers one input.
type Turn struct {
	InputID    string
	Running    bool
	StopReason string
	Error      string
	Usage      Usage
	Steps      int
	// after is the entry the turn's rows follow (nil: the start).
	after *Entry
}

type sliceKey struct{ kind, id string }

// Accumulator reassembles a conversation's transcript from its event
// stream and history, following the identity rules of the stream
// (DESIGN §7, the Agent SDK notes):
//
//   - seqId suppresses replays: an event whose seqId is not above the
//     highest seen for its runId is dropped (compared only within a run);
//   - assistant and reasoning slices are keyed on (type, otid) — an otid
//     reused across kinds stays two slices — falling back to uuid only
//     within the same family;
//   - tool calls and results are joined on toolCallId; arguments stay raw
//     until they parse, and a parsed value is never overwritten by a
//     partial fragment;
//   - fetched history is never merged into a streaming turn: Backfill is
//     for after a turn ended (or a reset), and rebases the in-progress
//     slices onto the fetched rows instead of appending them again.
//
// An Accumulator is not safe for concurrent use.
type Accumulator struct {
	entries []*Entry
	slices  map[sliceKey]*Entry
	users   map[string]*Entry // by uuid
	calls   map[string]*Entry // by toolCallId
	results map[string]*Entry // tool result uuid → its call's entry
	seen    map[string]int64  // runId → highest seqId applied
	inputs  map[string]EventUser
	turns   map[string]*Turn
	order   []string // input ids in the order their turns started
	open    *Turn
	plan    []Todo
	// lastStored is the uuid of the newest message known to be stored:
	// where a backfill continues.
	lastStored   string
	needBackfill bool
	replays      int
}

// NewAccumulator returns an empty accumulator.
func NewAccumulator() *Accumulator {
	return &Accumulator{slices: map[sliceKey]*Entry{}, users: map[string]*Entry{}, calls: map[string]*Entry{},
		results: map[string]*Entry{}, seen: map[string]int64{}, inputs: map[string]EventUser{}, turns: map[string]*Turn{}}
}

func sliceOf(kind, otid, uuid string) sliceKey {
	if otid != "" {
		return sliceKey{kind, otid}
	}
	return sliceKey{kind, "uuid:" + uuid}
}

// Replays counts the events Apply dropped as replays.
func (a *Accumulator) Replays() int { return a.replays }

// NeedsBackfill reports that rows may be stored that the stream did not
// show (a turn ended with slices that never completed, a turn whose
// process stopped): fetch the history after LastStored and Backfill it.
func (a *Accumulator) NeedsBackfill() bool { return a.needBackfill }

// LastStored is the uuid of the newest message known to be stored ("" for
// none): the After of a backfill.
func (a *Accumulator) LastStored() string { return a.lastStored }

// Plan is the agent's latest plan.
func (a *Accumulator) Plan() []Todo { return slices.Clone(a.plan) }

// Turn returns what the stream said about the (latest) turn answering an
// input.
func (a *Accumulator) Turn(inputID string) (Turn, bool) {
	t, ok := a.turns[inputID]
	if !ok {
		return Turn{}, false
	}
	return *t, true
}

// Running returns the turn running now, if any.
func (a *Accumulator) Running() (Turn, bool) {
	if a.open == nil {
		return Turn{}, false
	}
	return *a.open, true
}

// Apply takes one event of the stream; it reports false when the event was
// a replay (already applied) and was dropped.
func (a *Accumulator) Apply(ev Event) bool {
	if ev.RunID != "" && ev.SeqID > 0 {
		if ev.SeqID <= a.seen[ev.RunID] {
			a.replays++
			return false
		}
		a.seen[ev.RunID] = ev.SeqID
	}
	switch ev.Type {
	case EventUserMessage:
		id := ev.InputID
		if id == "" {
			id = ev.UUID
		}
		u := EventUser{UUID: id, Text: ev.Text, Images: ev.Images}
		a.inputs[id] = u
		if t := a.turns[id]; t != nil && t.Running {
			a.user(u, a.index(t.after)+1) // its turn started before it arrived
		}
	case EventTurnStart:
		if a.open != nil {
			// The open turn never ended: its process stopped.
			a.endTurn(Event{StopReason: StopRestarted})
		}
		t := &Turn{InputID: ev.InputID, Running: true}
		if n := len(a.entries); n > 0 {
			t.after = a.entries[n-1]
		}
		a.turns[ev.InputID] = t
		a.order = append(a.order, ev.InputID)
		a.open = t
		u, ok := a.inputs[ev.InputID]
		if ev.User != nil {
			u, ok = *ev.User, true
			if u.UUID == "" {
				u.UUID = ev.InputID
			}
		}
		if ok {
			a.user(u, len(a.entries))
		}
	case EventTurnEnd:
		a.endTurn(ev)
	case EventAssistantDelta, EventReasoningDelta:
		kind := KindAssistant
		if ev.Type == EventReasoningDelta {
			kind = KindReasoning
		}
		key := sliceOf(kind, ev.OTID, ev.UUID)
		e := a.slices[key]
		if e == nil {
			e = &Entry{Kind: kind, UUID: ev.UUID, OTID: ev.OTID, Streaming: true, turn: a.open}
			a.insert(e, len(a.entries))
		}
		if e.Streaming {
			e.Text += ev.Text
		}
	case EventAssistantMessage:
		key := sliceOf(KindAssistant, ev.OTID, ev.UUID)
		e := a.slices[key]
		if e == nil {
			e = &Entry{Kind: KindAssistant, UUID: ev.UUID, OTID: ev.OTID}
			a.insert(e, len(a.entries))
		}
		e.Text, e.Streaming = ev.Text, false
		a.stored(ev.UUID)
	case EventToolCall:
		e := a.call(ev.ToolCallID, ev.UUID, len(a.entries))
		tc := e.Tool
		if ev.ToolName != "" {
			tc.Name = ev.ToolName
		}
		if ev.Title != "" {
			tc.Title, tc.Kind = ev.Title, ev.Kind
		}
		tc.addArguments(ev.Arguments)
		a.stored(ev.UUID)
	case EventToolResult:
		e := a.call(ev.ToolCallID, "", len(a.entries))
		e.Tool.finishArguments()
		if e.Tool.Name == "" {
			e.Tool.Name = ev.ToolName
		}
		e.Tool.Result = &ToolResult{UUID: ev.UUID, Text: ev.Text, Outcome: ev.Outcome, IsError: ev.IsError}
		if ev.UUID != "" {
			a.results[ev.UUID] = e
			a.lastStored = ev.UUID
		}
	case EventApprovalRequest, EventApprovalDecision:
		if ev.Approval != nil && ev.ToolCallID != "" {
			e := a.call(ev.ToolCallID, "", len(a.entries))
			ap := *ev.Approval
			e.Tool.Approval = &ap
		}
	case EventPlan:
		a.plan = slices.Clone(ev.Todos)
	}
	return true
}

// stored marks the slices of a message as stored: its assistant_message or
// a tool call was sent, which happens after the message was written.
func (a *Accumulator) stored(uuid string) {
	if uuid == "" {
		return
	}
	for _, e := range a.entries {
		if e.UUID == uuid && (e.Kind == KindReasoning || e.Kind == KindAssistant) {
			e.Streaming = false
		}
	}
	a.lastStored = uuid
}

// endTurn closes the open turn. Slices that never completed may not be
// stored (the step failed, or its events were lost with its process): a
// backfill rebases them onto what was stored and drops the rest.
func (a *Accumulator) endTurn(ev Event) {
	t := a.open
	if t == nil {
		t = a.turns[ev.InputID]
	}
	if t != nil {
		t.Running, t.StopReason, t.Error, t.Steps = false, ev.StopReason, ev.Error, ev.Steps
		if ev.Usage != nil {
			t.Usage = *ev.Usage
		}
	}
	a.open = nil
	if ev.StopReason == StopRestarted || slices.ContainsFunc(a.entries, func(e *Entry) bool { return e.Streaming }) {
		a.needBackfill = true
	}
}

// dropStale removes the slices still streaming for a turn that is not
// running any more: they were never stored.
func (a *Accumulator) dropStale() {
	a.entries = slices.DeleteFunc(a.entries, func(e *Entry) bool {
		if !e.Streaming || (e.turn != nil && e.turn == a.open && e.turn.Running) {
			return false
		}
		delete(a.slices, sliceOf(e.Kind, e.OTID, e.UUID))
		return true
	})
}

// Reset notes that the stream was reset (the server no longer retains the
// event it would resume after): Backfill the history next and restart the
// stream at its StreamCursor. The stream then replays the running turn
// from its start; the replay thresholds stay, so what was applied is
// dropped and what was missed is applied, onto slices the backfill
// rebased.
func (a *Accumulator) Reset() { a.needBackfill = true }

// insert puts e at index i and indexes it.
func (a *Accumulator) insert(e *Entry, i int) {
	a.entries = slices.Insert(a.entries, i, e)
	switch e.Kind {
	case KindUser:
		a.users[e.UUID] = e
	case KindReasoning, KindAssistant:
		a.slices[sliceOf(e.Kind, e.OTID, e.UUID)] = e
	case KindToolCall:
		a.calls[e.Tool.ID] = e
	}
}

func (a *Accumulator) index(e *Entry) int { return slices.Index(a.entries, e) }

// user adds a user message at index i unless it is known.
func (a *Accumulator) user(u EventUser, i int) *Entry {
	if e := a.users[u.UUID]; e != nil {
		return e
	}
	e := &Entry{Kind: KindUser, UUID: u.UUID, Text: u.Text, Images: u.Images}
	a.insert(e, i)
	return e
}

// call returns the entry of a tool call, adding it at index i when new.
func (a *Accumulator) call(id, uuid string, i int) *Entry {
	if e := a.calls[id]; e != nil {
		if e.UUID == "" {
			e.UUID = uuid
		}
		return e
	}
	e := &Entry{Kind: KindToolCall, UUID: uuid, Tool: &ToolCall{ID: id}}
	a.insert(e, i)
	return e
}

// addArguments takes a tool_call's arguments: a JSON string is a fragment
// of raw text (arguments that did not parse, or a piece of streamed
// arguments) appended to RawArguments; any other JSON is the whole value.
// Arguments is set only from text that parses.
func (tc *ToolCall) addArguments(raw json.RawMessage) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 {
		return
	}
	var frag string
	if raw[0] == '"' && json.Unmarshal(raw, &frag) == nil {
		if tc.complete {
			return // a fragment after the whole value: a replay, never a replacement
		}
		tc.RawArguments += frag
		if parsesAsObject(tc.RawArguments) {
			tc.Arguments = json.RawMessage(tc.RawArguments)
		}
		return
	}
	if !json.Valid(raw) {
		return
	}
	tc.RawArguments, tc.Arguments, tc.complete = string(raw), slices.Clone(raw), true
}

// finishArguments parses the accumulated raw arguments once the call is
// over (its result came).
func (tc *ToolCall) finishArguments() {
	if tc.Arguments == nil && tc.RawArguments != "" && json.Valid([]byte(tc.RawArguments)) {
		tc.Arguments = json.RawMessage(tc.RawArguments)
	}
	tc.complete = true
}

func parsesAsObject(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// Backfill rebases the transcript onto stored messages fetched from the
// history (after LastStored, oldest first): a row the transcript has (the
// same user uuid, the same (type, otid) slice, the same toolCallId) takes
// the stored content in place — an in-progress slice becomes the stored
// row, so later fragments cannot append to a stale copy — and a row it
// lacks is inserted after the rows before it. Slices of turns that are
// over and were not stored are dropped. Call it before following the
// stream, after a turn ended (NeedsBackfill) or after a reset — never
// merge history into a turn that streams without one of those.
func (a *Accumulator) Backfill(msgs []Message) {
	pos := len(a.entries)
	if a.lastStored != "" {
		if e := a.entryOf(a.lastStored); e != nil {
			pos = a.index(e) + 1
		}
	} else {
		pos = 0
	}
	place := func(e *Entry) {
		if i := a.index(e); i >= pos {
			pos = i + 1
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			e := a.users[m.UUID]
			if e == nil {
				e = &Entry{Kind: KindUser, UUID: m.UUID}
				a.insert(e, pos)
			}
			e.Text, e.Images = m.Text, m.Images
			place(e)
		case RoleAssistant:
			otid := m.OTID
			if otid == "" {
				otid = m.UUID
			}
			for _, s := range []struct{ kind, text string }{{KindReasoning, m.Reasoning}, {KindAssistant, m.Text}} {
				if s.text == "" {
					continue
				}
				key := sliceOf(s.kind, otid, m.UUID)
				e := a.slices[key]
				if e == nil {
					e = &Entry{Kind: s.kind, UUID: m.UUID, OTID: otid}
					a.insert(e, pos)
				}
				e.Text, e.Streaming = s.text, false
				place(e)
			}
			for _, c := range m.ToolCalls {
				e := a.calls[c.ToolCallID]
				if e == nil {
					e = &Entry{Kind: KindToolCall, UUID: m.UUID, Tool: &ToolCall{ID: c.ToolCallID}}
					a.insert(e, pos)
				}
				tc := e.Tool
				e.UUID, tc.Name = m.UUID, c.ToolName
				if c.Title != "" {
					tc.Title, tc.Kind = c.Title, c.Kind
				}
				tc.RawArguments, tc.Arguments, tc.complete = "", nil, false
				tc.addArguments(c.Arguments)
				tc.complete = true
				place(e)
			}
		case RoleTool:
			e := a.calls[m.ToolCallID]
			if e == nil {
				e = &Entry{Kind: KindToolCall, Tool: &ToolCall{ID: m.ToolCallID, Name: m.ToolName}}
				a.insert(e, pos)
			}
			e.Tool.finishArguments()
			e.Tool.Result = &ToolResult{UUID: m.UUID, Text: m.Text, Outcome: m.Outcome, IsError: m.IsError}
			a.results[m.UUID] = e
			place(e)
		}
		a.lastStored = m.UUID
	}
	a.dropStale()
	a.needBackfill = false
}

// entryOf finds the entry that holds a stored message's uuid.
func (a *Accumulator) entryOf(uuid string) *Entry {
	if e := a.results[uuid]; e != nil {
		return e
	}
	for i := len(a.entries) - 1; i >= 0; i-- {
		if a.entries[i].UUID == uuid {
			return a.entries[i]
		}
	}
	return nil
}

// Transcript returns the entries in order (a copy), streaming slices
// included (Entry.Streaming).
func (a *Accumulator) Transcript() []Entry {
	out := make([]Entry, 0, len(a.entries))
	for _, e := range a.entries {
		c := *e
		if e.Tool != nil {
			tc := *e.Tool
			tc.Arguments = slices.Clone(e.Tool.Arguments)
			if e.Tool.Result != nil {
				r := *e.Tool.Result
				tc.Result = &r
			}
			if e.Tool.Approval != nil {
				ap := *e.Tool.Approval
				tc.Approval = &ap
			}
			c.Tool = &tc
		}
		out = append(out, c)
	}
	return out
}

// Answer is the assistant text that follows the user message of an
// input, up to the next user message, paragraphs joined by blank lines.
func (a *Accumulator) Answer(inputID string) string {
	var texts []string
	in := false
	for _, e := range a.entries {
		if e.Kind == KindUser {
			in = e.UUID == inputID
			continue
		}
		if in && e.Kind == KindAssistant && e.Text != "" {
			texts = append(texts, e.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// TranscriptOf is the transcript of stored history alone: what a fresh
// Accumulator backfilled with msgs shows.
func TranscriptOf(msgs []Message) []Entry {
	a := NewAccumulator()
	a.Backfill(msgs)
	return a.Transcript()
}

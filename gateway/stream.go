package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// stream is a turn's agentcore.Sink: it feeds the pure turnView on the
// turn's goroutine (cheap, under a mutex) and does every platform call on
// its own goroutine, so a slow platform never slows the agent and a turn
// never waits on storage or the network. For surfaces that render live
// (channels.LiveSurface) it forwards the typed events in order; for the
// others it streams the paginated snapshot by editing the live message's
// pages, at most once per edit interval. The final message goes through
// the outbox (see processor).
type stream struct {
	env      *env
	ad       channels.Adapter
	live     channels.LiveSurface // nil: snapshots by edits
	loc      channels.Location
	caps     channels.Capabilities
	interval time.Duration
	replyTo  string
	base     channels.LiveEvent // identity every live event carries

	mu      sync.Mutex
	view    *turnView
	dirty   bool
	refs    []string // platform ids of the live message's pages
	shown   []string // what each page showed last (encoded), to skip no-op edits
	queue   []channels.LiveEvent
	closed  bool
	stopTok string // the Stop button's token, once made
	started bool   // the live turn_start was queued
	// limited: a send or edit was refused with a rate limit until then; the
	// turn's final message waits for it (see processor.finalItems).
	limited time.Time
	// reposts counts, per page, how often the page's message was lost and
	// posted anew (see pageKey).
	reposts map[int]int

	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func newStream(ctx context.Context, e *env, loc channels.Location, conv, turnID, inputID, replyTo string, parked *parkedView) *stream {
	s := &stream{env: e, loc: loc, replyTo: replyTo, wake: make(chan struct{}, 1), done: make(chan struct{}),
		interval: e.channel(loc.Channel).EditInterval,
		base:     channels.LiveEvent{Location: loc, ConversationID: conv, TurnID: turnID, InputID: inputID}}
	if a, ok := e.adapter(loc); ok {
		s.ad = a
		s.caps = a.Capabilities()
		s.live, _ = a.(channels.LiveSurface)
	}
	s.view = newTurnView(s.caps)
	if parked != nil && parked.Location == loc.String() {
		s.view.adopt(*parked)
		s.refs = append(s.refs, parked.Refs...)
	}
	switch {
	case s.ad == nil:
	case s.live != nil:
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.forward(ctx) }()
	case s.caps.Edit:
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.edits(ctx) }()
	}
	return s
}

// Emit implements agentcore.Sink.
func (s *stream) Emit(e agentcore.Event) {
	if e.Type == agentcore.EventToolResult {
		s.env.log.Info("tool call", "conversation", e.ConversationID, "tool", e.ToolName, "call", e.ToolCallID, "outcome", e.Outcome)
	}
	s.mu.Lock()
	changed := s.view.apply(e)
	if changed {
		s.dirty = true
	}
	if s.live != nil {
		if ev, ok := s.liveEvent(e); ok {
			s.startLocked()
			s.queue = append(s.queue, ev)
			changed = true
		}
	}
	s.mu.Unlock()
	if changed {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// startLocked queues the turn's start before its first event: only a turn
// that runs (it holds the lease) starts. Called with s.mu held.
func (s *stream) startLocked() {
	if s.started {
		return
	}
	s.started = true
	start := s.base
	start.Kind, start.At = channels.LiveTurnStart, s.env.now()
	s.queue = append(s.queue, start)
}

// liveEvent converts an agent core event for live surfaces. Called with
// s.mu held, after the view took the event.
func (s *stream) liveEvent(e agentcore.Event) (channels.LiveEvent, bool) {
	ev := s.base
	ev.RunID, ev.SeqID, ev.UUID, ev.OTID, ev.Text, ev.At = e.RunID, e.SeqID, e.UUID, e.OTID, e.Text, s.env.now()
	switch e.Type {
	case agentcore.EventAssistantDelta:
		ev.Kind = channels.LiveText
	case agentcore.EventReasoningDelta:
		ev.Kind = channels.LiveReasoning
	case agentcore.EventAssistantMessage:
		ev.Kind = channels.LiveMessage
	case agentcore.EventToolCall, agentcore.EventToolResult, agentcore.EventApprovalDecision:
		i := s.view.find(e.ToolCallID)
		if i < 0 {
			return ev, false
		}
		t := s.view.activity[i]
		if e.Type == agentcore.EventToolResult {
			t.Output = clipString(e.Text, 4000)
		}
		ev.Kind, ev.Tool = channels.LiveTool, &t
		ev.Text = ""
	case agentcore.EventPlan:
		var items []channels.PlanItem
		for _, t := range e.Todos {
			items = append(items, channels.PlanItem{Content: t.Content, Status: t.Status, Priority: t.Priority})
		}
		ev.Kind, ev.Plan = channels.LivePlan, &channels.Plan{Items: items}
	case agentcore.EventApprovalRequest:
		if e.Approval == nil {
			return ev, false
		}
		ev.Kind, ev.Approval = channels.LiveApproval, approvalCard(*e.Approval, nil, "")
	case agentcore.EventTaskStarted, agentcore.EventTaskProgress, agentcore.EventTaskNotification:
		ev.Kind = channels.LiveTask
		if t := e.Task; t != nil {
			ev.Task = &channels.TaskActivity{ID: t.ID, Type: t.Type, Description: t.Description, Status: t.Status,
				Progress: t.Progress, Duration: time.Duration(t.DurationMs) * time.Millisecond}
		}
	default:
		ev.Kind = channels.LiveKind(e.Type) // compaction events: relayed by Wire
	}
	ev.Wire, _ = json.Marshal(e)
	return ev, true
}

// approvalCard is an approval as rich surfaces show it.
func approvalCard(ap agentcore.Approval, bs []Button, approvers string) *channels.ApprovalCard {
	c := &channels.ApprovalCard{ID: ap.ID, ToolCallID: ap.ToolCallID, Tool: ap.ToolName, Summary: ap.Summary, Reason: ap.Reason,
		Diff: ap.Diff, Workdir: ap.Workdir, Rule: ap.Rule, Requester: ap.Requester, Approvers: approvers, Task: ap.TaskID, Expires: ap.Expires}
	if len(bs) > 0 {
		c.Buttons = approvalButtons(ap, bs)
	}
	return c
}

// forward delivers queued live events in order until the stream stops,
// then the rest.
func (s *stream) forward(ctx context.Context) {
	for {
		s.mu.Lock()
		evs := s.queue
		s.queue = nil
		closed := s.closed
		s.mu.Unlock()
		for _, ev := range evs {
			s.live.Live(ctx, ev)
		}
		if closed && len(evs) == 0 {
			return
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-s.done:
		}
	}
}

// liveEnd sends the turn's end to a live surface, after every event of the
// turn (the stream has stopped).
func (s *stream) liveEnd(ctx context.Context, res agentcore.TurnResult) {
	if s.live == nil {
		return
	}
	s.mu.Lock()
	started := s.started
	s.started = true
	s.mu.Unlock()
	if !started { // a turn that emitted nothing still starts before it ends
		start := s.base
		start.Kind, start.At = channels.LiveTurnStart, s.env.now()
		s.live.Live(ctx, start)
	}
	ev := s.base
	ev.Kind, ev.At = channels.LiveTurnEnd, s.env.now()
	ev.StopReason, ev.Error, ev.Steps = string(res.StopReason), res.Error, res.Steps
	ev.Usage = channels.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CachedTokens: res.Usage.CachedTokens}
	s.live.Live(ctx, ev)
}

// edits keeps the live message's pages up to date, at most once per
// interval.
func (s *stream) edits(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		if wait := s.interval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		s.mu.Lock()
		dirty := s.dirty
		s.dirty = false
		snap := s.view.snapshot()
		s.mu.Unlock()
		if !dirty || len(snap.Parts) == 0 {
			continue
		}
		if tok := s.stopToken(ctx); tok != "" {
			snap.Parts = append(snap.Parts, channels.Buttons{Rows: [][]channels.Button{{{Label: "Stop", Style: channels.StyleDanger, Token: tok}}}})
		}
		last = time.Now()
		for i, page := range channels.Paginate(snap, s.caps) {
			if err := s.showPage(ctx, i, page); err != nil {
				if d, limited := channels.RetryAfter(err); limited {
					last = time.Now().Add(d)
					s.mu.Lock()
					s.limited = s.env.now().Add(d)
					s.mu.Unlock()
				}
				break
			}
		}
	}
}

// stopToken returns the token of the live message's Stop button, on
// surfaces with buttons: the conversation's, made by its first turn and
// reused by the later ones (a read, not a write per turn).
func (s *stream) stopToken(ctx context.Context) string {
	if !s.caps.Buttons || s.base.ConversationID == "" {
		return ""
	}
	if s.stopTok != "" {
		return s.stopTok
	}
	st := s.env.opts.Store
	if bs, err := st.ApprovalButtons(ctx, s.base.ConversationID); err == nil {
		for _, b := range bs {
			if b.Action == ButtonStop {
				s.stopTok = b.Token
				return s.stopTok
			}
		}
	}
	now := s.env.now().UTC()
	b := Button{Token: newToken(now), ApprovalID: s.base.ConversationID, Action: ButtonStop, Created: now}
	if err := st.CreateButtons(context.WithoutCancel(ctx), []Button{b}); err != nil {
		s.env.log.Warn("store the stop button", "conversation", s.base.ConversationID, "err", err)
		return ""
	}
	s.stopTok = b.Token
	return s.stopTok
}

// showPage sends page i of the live message, or edits it when it changed.
func (s *stream) showPage(ctx context.Context, i int, page channels.Message) error {
	enc, _ := channels.EncodeMessage(page)
	s.mu.Lock()
	var ref string
	if i < len(s.refs) {
		ref = s.refs[i]
	}
	same := i < len(s.shown) && s.shown[i] == string(enc)
	s.mu.Unlock()
	if same {
		return nil
	}
	s.env.metrics.StreamEdits.WithLabelValues(s.loc.Channel).Inc()
	if ref != "" {
		if err := s.ad.Edit(ctx, channels.MessageRef{Location: s.loc, ID: ref}, page); err != nil {
			if channels.IsPermanent(err) {
				// Gone (deleted, or forgotten across a restart): the next
				// round posts this page anew.
				s.mu.Lock()
				s.refs[i], s.dirty = "", true
				if s.reposts == nil {
					s.reposts = map[int]int{}
				}
				s.reposts[i]++
				s.mu.Unlock()
			}
			return err
		}
	} else {
		if i == 0 {
			page.ReplyTo = s.replyTo
		}
		page.Key = s.pageKey(i)
		mr, err := s.ad.Send(ctx, s.loc, page)
		if err != nil {
			return err
		}
		ref = mr.ID
	}
	s.mu.Lock()
	for len(s.refs) <= i {
		s.refs = append(s.refs, "")
	}
	s.refs[i] = ref
	for len(s.shown) <= i {
		s.shown = append(s.shown, "")
	}
	s.shown[i] = string(enc)
	s.mu.Unlock()
	return nil
}

// stop ends streaming (live events already queued are still delivered) and
// waits for the stream's goroutine.
func (s *stream) stop() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	s.wg.Wait()
}

// pageKey is the idempotency key of the send of page i of the turn's
// message: derived from the input, so the rerun of a turn after a crash
// (and its final message, when nothing was streamed) sends with the key of
// the message the crashed run posted or was posting, and a surface that
// honours keys (Discord's nonce) returns that message instead of posting a
// second one. A page whose message was lost gets a new key.
func (s *stream) pageKey(i int) string {
	s.mu.Lock()
	n := s.reposts[i]
	s.mu.Unlock()
	key := "st-" + s.base.InputID + "/p" + strconv.Itoa(i)
	if n > 0 {
		key += "/r" + strconv.Itoa(n)
	}
	return key
}

// limitedUntil is when the platform's last rate limit of this stream ends
// (zero: none).
func (s *stream) limitedUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// pageRefs returns the platform ids of the live message's pages.
func (s *stream) pageRefs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refs...)
}

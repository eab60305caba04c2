package agentcore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// InputKind says what started a turn.
type InputKind string

// Input kinds.
const (
	// InputUser is a message from a person.
	InputUser InputKind = "user"
	// InputResume continues a turn parked on approvals after a decision.
	InputResume InputKind = "resume"
	// InputNotification is a harness message such as a task report.
	InputNotification InputKind = "notification"
)

// Input is what a turn starts from.
type Input struct {
	Kind  InputKind
	Parts []Part
	// Requester is the qualified id of who started the turn; by default
	// they may decide its approvals.
	Requester string
	// Speaker and Origin describe who speaks and from where, for the
	// reminder on the user message ("alice (telegram:4242)", "Telegram DM").
	Speaker string
	Origin  string
	// MessageID, when set, is the id the input's message gets. A host that
	// retries an input after a crash passes the same id, and the turn
	// continues instead of appending the input twice. A resume has no
	// message of its own: the tool results it appends carry ids made from
	// it (resultID), so a retried resume whose turn already ended returns
	// that turn's answer instead of finding nothing to do.
	MessageID string
	// Steer, when set, is asked at each step boundary for messages that
	// arrived while the turn worked (queue mode steer); each is appended as
	// a user message, then Steered is called with their message ids so the
	// host can mark them consumed.
	Steer   func(ctx context.Context) []Input
	Steered func(ctx context.Context, messageIDs []string)
	// DenyAsks, when set, turns every "ask" into a denial with this reason:
	// for hosts where nobody can answer (run -p with text input).
	DenyAsks string
	// Location is where the turn's replies go (the host's location key,
	// opaque here); approvals record it so a decision resumes the turn
	// there.
	Location string
	// TurnID, when set, is the id the turn gets (hosts that name the turn
	// in their own events); default a random one.
	TurnID string
	// Tasks, when set, is the host that runs sub-agent tasks (the Agent
	// tool); nil: the Agent tool says sub-agents are not available.
	Tasks TaskHost
	// TaskID names the task whose report an InputNotification carries.
	TaskID string
	// Client, when set, is the host's client that can do tool work itself
	// (an ACP editor); the agent's ClientRoute says which tools use it.
	Client Client
	// Host, when set, takes the lease and stores the turn's last records
	// together with its own (see TurnHost); nil: the store directly.
	Host TurnHost
	// TaskLookedUp says the host already read whether the conversation is
	// a task's child (a read every turn would repeat): Task is that task,
	// or nil when it is no task's. Without it the turn reads it.
	TaskLookedUp bool
	Task         *Task
}

// TurnResult is how a turn ended.
type TurnResult struct {
	AgentID        string
	ConversationID string
	TurnID         string
	StopReason     StopReason
	Text           string // the last assistant text of the turn
	Steps          int
	Usage          Usage
	Pending        []Approval // approvals the turn waits on (requires_approval)
	Tasks          []Task     // foreground tasks the turn waits on (waiting_for_task)
	Error          string     // for StopError: what happened, for people
	Duration       time.Duration
	// Idle: the input found nothing to do (a resume whose calls were
	// settled meanwhile); the turn said nothing new.
	Idle bool
	// Deferred: a notification that came while the turn was parked is
	// kept for the turn's next step (the turn stays parked).
	Deferred bool
}

// Turn runs one turn of a conversation: it takes the conversation's lease
// (ErrBusy when another worker holds it), settles calls left from an
// earlier step, appends the input and steps the model until the agent
// stops. A returned error means storage failed; model and tool failures end
// the turn with StopError and a message in the result. The turn's records
// are stored in batches (TurnWrite): at the latest when it ends, through
// in.Host when set.
func (a *Agent) Turn(ctx context.Context, conversationID string, in Input, sink Sink) (TurnResult, error) {
	start := a.deps.Now()
	host := in.Host
	if host == nil {
		host = storeHost{a.deps.Store}
	}
	conv, ctx, release, err := a.hold(ctx, conversationID, host.Begin)
	if err != nil {
		return TurnResult{}, err
	}
	released := false
	defer func() { release(!released) }()
	if a.cfg.TurnTimeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, a.cfg.TurnTimeout, turnTimeoutError{a.cfg.TurnTimeout})
		defer stop()
	}
	t := &turn{
		a:    a.forConversation(ctx, conv.ID),
		conv: conv,
		in:   in,
		id:   cmp.Or(in.TurnID, "turn-"+randomID(8)),
		em:   newEmitter(sink, a.deps.Env.Redactor.Redact, a.cfg.ID, conv.ID),
	}
	t.a.deps.Env.Client = in.Client
	if err := t.configureTask(ctx); err != nil {
		return TurnResult{}, err
	}
	res, err := t.run(ctx)
	res.AgentID = a.cfg.ID
	res.ConversationID = conv.ID
	res.TurnID = t.id
	res.Steps = t.steps
	res.Usage = t.usage
	res.Duration = a.deps.Now().Sub(start)
	res.Text = a.deps.Env.Redactor.Redact(res.Text)
	res.Error = a.deps.Env.Redactor.Redact(res.Error)
	if err != nil {
		return res, err
	}
	// The turn's last records, the lease's release and the host's own
	// records are one write.
	w := t.take()
	w.Release = true
	if _, err := host.Finish(context.WithoutCancel(ctx), w, res); err != nil {
		return res, fmt.Errorf("finish the turn of %s: %w", conv.ID, err)
	}
	released = true
	return res, nil
}

// hold loads a conversation of this agent and takes its lease through
// begin (ErrBusy when another worker holds it), renewing it until release
// is called; release(true) also gives the lease up. The returned context
// ends when the lease is lost.
func (a *Agent) hold(ctx context.Context, conversationID string, begin func(context.Context, string, string, time.Duration) (bool, error)) (Conversation, context.Context, func(giveUp bool), error) {
	st := a.deps.Store
	conv, err := st.Conversation(ctx, conversationID)
	if err != nil {
		return Conversation{}, ctx, nil, fmt.Errorf("load conversation %s: %w", conversationID, err)
	}
	if conv.AgentID != a.cfg.ID {
		return Conversation{}, ctx, nil, fmt.Errorf("conversation %s belongs to agent %s, not %s", conversationID, conv.AgentID, a.cfg.ID)
	}
	ok, err := begin(ctx, conversationID, a.deps.Owner, a.cfg.LeaseTTL)
	if err != nil {
		return Conversation{}, ctx, nil, fmt.Errorf("take lease on %s: %w", conversationID, err)
	}
	if !ok {
		return Conversation{}, ctx, nil, ErrBusy
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.renewLease(ctx, conversationID, cancel)
	}()
	release := func(giveUp bool) {
		cancel(nil)
		wg.Wait()
		if giveUp {
			_ = st.ReleaseLease(context.WithoutCancel(ctx), conversationID, a.deps.Owner)
		}
	}
	return conv, ctx, release, nil
}

var errLeaseLost = ErrLeaseLost

// turnTimeoutError is the cause of a turn's context ended by TurnTimeout.
type turnTimeoutError struct{ limit time.Duration }

func (e turnTimeoutError) Error() string {
	return fmt.Sprintf("the turn took longer than turn_timeout (%s) and was stopped; "+
		"send a message to continue, or raise turn_timeout in [agents.NAME]", e.limit)
}

// renewLease keeps the lease alive until ctx ends; losing it cancels the
// turn.
func (a *Agent) renewLease(ctx context.Context, convID string, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(a.cfg.LeaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			ok, err := a.deps.Store.RenewLease(ctx, convID, a.deps.Owner, a.cfg.LeaseTTL)
			if err == nil && !ok {
				cancel(errLeaseLost)
				return
			}
		}
	}
}

// turn is the state of one running turn.
type turn struct {
	a     *Agent
	conv  Conversation
	in    Input
	id    string
	em    *emitter
	steps int
	usage Usage
	// memoryNotified is the memory revision the model last heard of.
	memoryNotified string
	lastText       string
	view           []Message // cached in-context view (see loadView), with the pending messages
	viewOK         bool
	// pending are the records not stored yet (commit.go).
	pending TurnWrite
	// bud estimates requests against the window (budget.go); overflowRetry
	// is set while a step is retried after a context-length error.
	bud           budget
	overflowRetry bool
	// task is set when this conversation is a task's child (task_turn.go).
	task *Task
	// curRun is the run of the step whose calls execute (for events the
	// Agent tool emits).
	curRun string
	// deferred are notifications kept while the conversation was parked.
	deferred []deferredInput
}

func (t *turn) run(ctx context.Context) (TurnResult, error) {
	if err := t.ensurePrompt(ctx); err != nil {
		return TurnResult{}, err
	}
	view, err := t.loadView(ctx)
	if err != nil {
		return TurnResult{}, fmt.Errorf("load view of %s: %w", t.conv.ID, err)
	}
	t.memoryNotified = lastMemoryRevision(view, t.conv.PromptRevision)

	replay, from := false, -1
	// An input whose message (a resume: one of its results) is already in
	// view was appended by an earlier attempt that died (the host retries
	// its queue item): continue that turn instead of appending the input
	// again. When that turn already ended, its answer is the result: the
	// attempt died before the host recorded the end (and sent the reply).
	if from = t.replayFrom(view); from >= 0 {
		replay = true
		if last := view[len(view)-1]; last.Role == RoleAssistant && len(last.ToolCalls) == 0 && last.ID != t.in.MessageID {
			t.replayed(view[from:])
			return TurnResult{StopReason: StopEndTurn, Text: last.Text()}, nil
		}
	}

	if err := t.loadDeferred(ctx); err != nil {
		return TurnResult{}, err
	}
	notification := t.in.Kind == InputNotification && !replay
	// Settle the calls an earlier step left without results. A person's
	// new message settles what waits (asks are denied, foreground tasks go
	// to the background); a notification does not: while the turn is
	// parked it is kept for the turn's next step.
	if asst, calls := unansweredCalls(view); len(calls) > 0 {
		res, parked, err := t.resolveCalls(ctx, asst, calls, t.in.Kind == InputUser && !replay)
		if err != nil {
			return TurnResult{}, err
		}
		if parked {
			if notification {
				if err := t.deferInput(ctx); err != nil {
					return TurnResult{}, err
				}
				res.Deferred = true
			}
			return res, nil
		}
	} else if t.in.Kind == InputResume || replay {
		if replay || endsWithToolResults(view) {
			// The decided calls already have results (an earlier attempt
			// of this resume, or of this input, died before the next model
			// call): continue with that call, so the answer still comes.
			// What the dead attempt stored is told again first, so the
			// host's message shows the calls' outcomes.
			if replay {
				t.replayed(view[from:])
			} else {
				t.replayed(view[trailingResults(view):])
			}
			if err := t.deliverDeferred(ctx); err != nil {
				return TurnResult{}, err
			}
			return t.loop(ctx)
		}
		// Nothing waits for a decision any more (another process resumed
		// and finished it, or the approvals were settled by a new message).
		return TurnResult{StopReason: StopEndTurn, Text: lastAssistantText(view), Idle: true}, nil
	}
	if err := t.deliverDeferred(ctx); err != nil {
		return TurnResult{}, err
	}

	if t.in.Kind != InputResume && !replay {
		// Stored with the turn's first durable write: a crash before it
		// reruns the input from the start.
		t.buffer(Message{ID: t.in.MessageID, Role: RoleUser, Parts: t.userParts(ctx, view)})
		if notification {
			t.notified(ctx, t.in.TaskID)
		}
	}
	return t.loop(ctx)
}

// loop steps the model until the turn stops.
func (t *turn) loop(ctx context.Context) (TurnResult, error) {
	for {
		if t.steps >= t.a.cfg.MaxSteps {
			return TurnResult{StopReason: StopMaxSteps, Text: t.lastText,
				Error: fmt.Sprintf("stopped after %d steps (max_steps); send a message to continue", t.steps)}, nil
		}
		if res, err := t.fitContext(ctx); err != nil || res != nil {
			if res == nil {
				res = &TurnResult{}
			}
			return *res, err
		}
		asst, resp, res, err := t.step(ctx)
		if err != nil || res != nil {
			if res == nil {
				res = &TurnResult{}
			}
			return *res, err
		}
		if len(asst.ToolCalls) == 0 {
			if resp.FinishReason == "length" {
				return TurnResult{StopReason: StopMaxTokens, Text: t.lastText,
					Error: "the model reached its output token limit (max_output_tokens)"}, nil
			}
			return TurnResult{StopReason: StopEndTurn, Text: t.lastText}, nil
		}
		res2, parked, err := t.resolveCalls(ctx, asst, asst.ToolCalls, false)
		if err != nil {
			return TurnResult{}, err
		}
		if parked {
			return res2, nil
		}
		if err := ctx.Err(); err != nil {
			return t.cancelled(ctx), nil
		}
		if err := t.steer(ctx); err != nil {
			return TurnResult{}, err
		}
	}
}

// steer appends the messages the host says arrived while the turn worked
// (queue mode steer), at a step boundary: after the tool results, before
// the next model call.
func (t *turn) steer(ctx context.Context) error {
	if t.in.Steer == nil {
		return nil
	}
	ins := t.in.Steer(ctx)
	if len(ins) == 0 {
		return nil
	}
	view, err := t.loadView(ctx)
	if err != nil {
		return fmt.Errorf("load view of %s: %w", t.conv.ID, err)
	}
	var ids []string
	for _, in := range ins {
		if in.MessageID != "" && hasMessage(view, in.MessageID) {
			ids = append(ids, in.MessageID)
			continue
		}
		parts := append([]Part{{Type: PartReminder, Text: reminder("The user sent this while you were working; take it into account.")}}, in.Parts...)
		ids = append(ids, t.buffer(Message{ID: in.MessageID, Role: RoleUser, Parts: parts})[0].ID)
	}
	// The messages are on record before the host marks them consumed.
	if _, err := t.flush(ctx); err != nil {
		return err
	}
	if t.in.Steered != nil {
		t.in.Steered(context.WithoutCancel(ctx), ids)
	}
	return nil
}

func (t *turn) cancelled(ctx context.Context) TurnResult {
	cause := context.Cause(ctx)
	reason := StopCancelled
	msg := "cancelled"
	switch {
	case errors.As(cause, new(turnTimeoutError)):
		reason, msg = StopError, cause.Error()
	case errors.Is(cause, errLeaseLost):
		reason, msg = StopError, cause.Error()
	}
	return TurnResult{StopReason: reason, Text: t.lastText, Error: msg}
}

// step makes one model call and buffers its assistant message and run row
// (stored before any of its tool calls runs, else when the turn ends). A
// non-nil *TurnResult means the turn ends here.
func (t *turn) step(ctx context.Context) (Message, Response, *TurnResult, error) {
	view, err := t.loadView(ctx)
	if err != nil {
		return Message{}, Response{}, nil, fmt.Errorf("load view of %s: %w", t.conv.ID, err)
	}
	t.steps++
	run := Run{
		ID:             "run-" + newID(),
		ConversationID: t.conv.ID,
		TurnID:         t.id,
		Step:           t.steps,
		Model:          t.a.cfg.Model,
		Started:        t.a.deps.Now().UTC(),
	}
	// The run row is recorded once, when the step has ended; a step cut
	// short by a crash leaves nothing behind.
	msgID := newID()
	t.em.newRun(run.ID)
	req := Request{
		Model:           t.a.cfg.Model,
		System:          t.conv.SystemPrompt,
		Messages:        view,
		Tools:           t.a.deps.Tools.Specs(),
		MaxOutputTokens: t.a.cfg.MaxOutputTokens,
		MaxStepOutput:   t.a.cfg.MaxStepOutput,
	}
	est := requestChars(req)
	resp, err := t.a.deps.Provider.Step(ctx, req, func(d Delta) {
		typ := EventAssistantDelta
		if d.Kind == DeltaReasoning {
			typ = EventReasoningDelta
		}
		t.em.emit(Event{Type: typ, RunID: run.ID, UUID: msgID, OTID: msgID, Text: d.Text})
	})
	run.Finished = t.a.deps.Now().UTC()
	run.Usage = resp.Usage
	t.usage = t.usage.Add(resp.Usage)
	t.bud.observe(est, resp.Usage)
	if err != nil && IsContextLength(err) && !t.overflowRetry && ctx.Err() == nil {
		// The estimate was wrong: compact as if the request had filled the
		// window, then retry the step once.
		run.StopReason, run.Error = StopError, UserMessage(err)
		t.pending.Runs = append(t.pending.Runs, run)
		t.overflowRetry = true
		defer func() { t.overflowRetry = false }()
		if res, rerr := t.recoverOverflow(ctx, view, est, err); rerr != nil || res != nil {
			return Message{}, resp, res, rerr
		}
		return t.step(ctx)
	}
	if err != nil {
		res := TurnResult{StopReason: StopError, Text: t.lastText, Error: UserMessage(err)}
		if ctx.Err() != nil {
			res = t.cancelled(ctx)
		}
		run.StopReason, run.Error = res.StopReason, res.Error
		t.pending.Runs = append(t.pending.Runs, run)
		return Message{}, resp, &res, nil
	}
	calls, err := t.uniqueCallIDs(ctx, view, resp.ToolCalls)
	if err != nil {
		return Message{}, resp, nil, err
	}
	asst := Message{
		ID:        msgID,
		Role:      RoleAssistant,
		Reasoning: resp.Reasoning,
		ToolCalls: calls,
		RunID:     run.ID,
	}
	if resp.Text != "" {
		asst.Parts = []Part{{Type: PartText, Text: resp.Text}}
	}
	asst = t.buffer(asst)[0]
	if resp.Text != "" {
		t.lastText = resp.Text
		t.em.emit(Event{Type: EventAssistantMessage, RunID: run.ID, UUID: asst.ID, OTID: asst.ID, Text: resp.Text})
	}
	for _, c := range asst.ToolCalls {
		title, kind := t.a.deps.Tools.Describe(c.Name, json.RawMessage(c.Arguments))
		t.em.emit(Event{Type: EventToolCall, RunID: run.ID, UUID: asst.ID, ToolCallID: c.ID, ToolName: c.Name, Arguments: jsonOrString(c.Arguments), Title: title, Kind: kind})
	}
	switch {
	case len(asst.ToolCalls) > 0:
		run.StopReason = StopToolUse
	case resp.FinishReason == "length":
		run.StopReason = StopMaxTokens
	default:
		run.StopReason = StopEndTurn
	}
	// The run row is stored with the step's assistant message.
	t.pending.Runs = append(t.pending.Runs, run)
	return asst, resp, nil, nil
}

// unansweredCalls returns the last assistant message of the view and its
// tool calls that have no result after it.
func unansweredCalls(view []Message) (Message, []ToolCall) {
	for i := len(view) - 1; i >= 0; i-- {
		m := view[i]
		if m.Role == RoleUser {
			return Message{}, nil
		}
		if m.Role != RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, r := range view[i+1:] {
			if r.Role == RoleTool {
				answered[r.ToolCallID] = true
			}
		}
		var open []ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				open = append(open, c)
			}
		}
		return m, open
	}
	return Message{}, nil
}

// uniqueCallIDs gives every call of a step an id no earlier call of the
// conversation used: the tool ledger and approvals are keyed by call id,
// and some models and servers repeat ids across steps (or send none).
func (t *turn) uniqueCallIDs(ctx context.Context, view []Message, calls []ToolCall) ([]ToolCall, error) {
	if len(calls) == 0 {
		return calls, nil
	}
	used := map[string]bool{}
	for _, m := range view {
		for _, c := range m.ToolCalls {
			used[c.ID] = true
		}
	}
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	started, err := t.a.deps.Store.StartedToolCalls(ctx, t.conv.ID, ids)
	if err != nil {
		return nil, fmt.Errorf("load tool ledger: %w", err)
	}
	asked, err := t.a.deps.Store.ConversationApprovals(ctx, t.conv.ID, ids)
	if err != nil {
		return nil, fmt.Errorf("load approvals: %w", err)
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		_, hasApproval := asked[c.ID]
		if c.ID == "" || used[c.ID] || started[c.ID] || hasApproval {
			c.ID = strings.TrimSuffix("call_"+c.ID, "_") + "-" + randomID(4)
		}
		used[c.ID] = true
		out[i] = c
	}
	return out, nil
}

// loadView returns the conversation's in-context view. The turn holds the
// conversation's lease, so only its own appends change the view: it is
// read from the store once and then kept up to date (decoding the view was
// a quarter of a turn's CPU).
//
// The view handed out is capped at its length (its holder cannot append
// into the turn's backing array), and the turn never changes a message a
// view handed out holds (replacing one clones the array first, see
// adopt).
func (t *turn) loadView(ctx context.Context) ([]Message, error) {
	if !t.viewOK {
		v, err := t.a.deps.Store.View(ctx, t.conv.ID)
		if err != nil {
			return nil, err
		}
		t.view, t.viewOK = v, true
	}
	return t.view[:len(t.view):len(t.view)], nil
}

// endsWithToolResults reports whether the view ends with tool results that
// no model call has seen yet.
func endsWithToolResults(view []Message) bool {
	return len(view) > 0 && view[len(view)-1].Role == RoleTool
}

// trailingResults is the index of the first of the tool results that end
// view.
func trailingResults(view []Message) int {
	i := len(view)
	for i > 0 && view[i-1].Role == RoleTool {
		i--
	}
	return i
}

// lastAssistantText is the text of the view's last assistant message, if it
// ends the view.
func lastAssistantText(view []Message) string {
	if len(view) > 0 && view[len(view)-1].Role == RoleAssistant {
		return view[len(view)-1].Text()
	}
	return ""
}

// replayFrom is the index in view of the first message this turn's input
// appended in an earlier attempt (its message; for a resume, its first
// result), or -1.
func (t *turn) replayFrom(view []Message) int {
	if t.in.MessageID == "" {
		return -1
	}
	for i, m := range view {
		if m.ID == t.in.MessageID || (t.in.Kind == InputResume && strings.HasPrefix(m.ID, t.in.MessageID+"/")) {
			return i
		}
	}
	return -1
}

// resultID is the message id of a call's result: one made from a resume's
// input id (see replayFrom), else "" (the store assigns one).
func (t *turn) resultID(callID string) string {
	if t.in.Kind != InputResume || t.in.MessageID == "" {
		return ""
	}
	return t.in.MessageID + "/" + callID
}

// replayed tells the host again what an earlier attempt of this turn
// stored from the input on (tail), before the attempt died with the events
// it had emitted: the results, calls and texts, so the host's final
// message shows them (a resumed turn's parked calls their outcome).
func (t *turn) replayed(tail []Message) {
	for _, m := range tail {
		switch m.Role {
		case RoleAssistant:
			if text := m.Text(); text != "" {
				t.em.emit(Event{Type: EventAssistantMessage, RunID: m.RunID, UUID: m.ID, OTID: m.ID, Text: text})
			}
			for _, c := range m.ToolCalls {
				title, kind := t.a.deps.Tools.Describe(c.Name, json.RawMessage(c.Arguments))
				t.em.emit(Event{Type: EventToolCall, RunID: m.RunID, UUID: m.ID, ToolCallID: c.ID, ToolName: c.Name, Arguments: jsonOrString(c.Arguments), Title: title, Kind: kind})
			}
		case RoleTool:
			text := ""
			if len(m.Parts) > 0 {
				text = m.Parts[0].Text
			}
			t.em.emit(Event{Type: EventToolResult, RunID: m.RunID, UUID: m.ID, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Text: text, IsError: m.IsError, Outcome: m.Outcome})
		}
	}
}

func hasMessage(view []Message, id string) bool {
	for i := len(view) - 1; i >= 0; i-- {
		if view[i].ID == id {
			return true
		}
	}
	return false
}

package agentcore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/sandbox"
)

// Results the model reads when a call did not run.
const (
	outcomeUnknown   = "Outcome unknown: this tool call was running when the process stopped. It may have run; check before repeating it."
	deniedNewMessage = "the user sent a new message instead"
)

// clampNoteRoom is how far a result may exceed the clamp before the loop
// cuts it: room for the note a tool that clamps its own output (Bash) adds
// after it.
const clampNoteRoom = 1024

// callPlan is what will happen to one tool call of a step.
type callPlan struct {
	call     ToolCall
	tool     Tool
	args     json.RawMessage
	run      bool   // execute it
	approved bool   // a person approved it: no new ask at execution time
	checked  bool   // classified allow just now: no re-check needed
	result   Result // when !run
	outcome  string // when !run: why it did not run (Outcome constants)
	task     *Task  // a foreground task whose report is this call's result
}

// Tool call outcomes, on tool messages and tool_result events: how a call
// went, so hosts never parse result text.
const (
	OutcomeOK           = "ok"
	OutcomeError        = "error"
	OutcomeDeniedPolicy = "denied_policy"
	OutcomeDeniedPerson = "denied_person"
	OutcomeUnknown      = "unknown"
)

// resolveCalls decides every open call of a step: settled, executed,
// denied or parked on an approval. With settleAsks (a new message arrived)
// nothing parks: pending and new asks are denied.
func (t *turn) resolveCalls(ctx context.Context, asst Message, calls []ToolCall, settleAsks bool) (TurnResult, bool, error) {
	st := t.a.deps.Store
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	started, err := st.StartedToolCalls(ctx, t.conv.ID, ids)
	if err != nil {
		return TurnResult{}, false, fmt.Errorf("load tool ledger: %w", err)
	}
	approvals, err := st.ConversationApprovals(ctx, t.conv.ID, ids)
	if err != nil {
		return TurnResult{}, false, fmt.Errorf("load approvals: %w", err)
	}
	var tasks map[string]Task
	for _, c := range calls {
		if c.Name == ToolAgent {
			if tasks, err = st.CallTasks(ctx, t.conv.ID, ids); err != nil {
				return TurnResult{}, false, fmt.Errorf("load tasks: %w", err)
			}
			break
		}
	}
	now := t.a.deps.Now().UTC()
	plans := make([]callPlan, len(calls))
	var pol *permission.Policy // read when the first call needs it
	var asks, waiting []Approval
	var waitingTasks []Task
	for i, c := range calls {
		p := callPlan{call: c}
		tool, known := t.a.deps.Tools.Get(c.Name)
		p.tool = tool
		if json.Valid([]byte(c.Arguments)) {
			p.args = json.RawMessage(c.Arguments)
		}
		ap, hasApproval := approvals[c.ID]
		task, hasTask := tasks[c.ID]
		switch {
		case hasTask:
			// The call started a task before the process stopped or while
			// the turn was parked on it.
			switch {
			case task.Background:
				p.result, p.outcome = TaskStarted(task), OutcomeOK
			case !task.Status.Final() && settleAsks:
				// A new message: the task goes on in the background.
				if task, err = st.DetachTask(ctx, task.ID); err != nil {
					return TurnResult{}, false, fmt.Errorf("detach task %s: %w", task.ID, err)
				}
				if task.Status.Final() && !task.Background {
					p.result, p.task = taskResult(task), &task
				} else {
					p.result, p.outcome = detachedResult(task), OutcomeOK
				}
			case !task.Status.Final():
				waitingTasks = append(waitingTasks, task)
			default:
				p.result, p.task = taskResult(task), &task
			}
			if p.task != nil {
				p.outcome = map[bool]string{true: OutcomeError, false: OutcomeOK}[p.result.IsError]
			}
		case started[c.ID]:
			p.result, p.outcome = ErrorResult(outcomeUnknown), OutcomeUnknown
		case hasApproval:
			if ap.State == ApprovalPending && (settleAsks || now.After(ap.Expires)) {
				d := Decision{State: ApprovalDenied, Reason: deniedNewMessage, By: "switchboard", At: now}
				if !settleAsks {
					d = Decision{State: ApprovalExpired, Reason: "the approval expired before anyone decided", By: "switchboard", At: now}
				}
				ap, _, err = st.Decide(ctx, ap.ID, d)
				if err != nil {
					return TurnResult{}, false, fmt.Errorf("settle approval %s: %w", ap.ID, err)
				}
				t.em.emit(Event{Type: EventApprovalDecision, RunID: asst.RunID, ToolCallID: c.ID, Approval: &ap})
			} else if ap.State != ApprovalPending && ap.DecidedBy == "switchboard" {
				// Settled by the harness (a new message, the expiry) in an
				// attempt that died before the result was appended: tell the
				// host again, so the posted copies still get edited (an edit
				// to the same text is harmless).
				t.em.emit(Event{Type: EventApprovalDecision, RunID: asst.RunID, ToolCallID: c.ID, Approval: &ap})
			}
			switch ap.State {
			case ApprovalPending:
				waiting = append(waiting, ap)
			case ApprovalAllowed, ApprovalAlways:
				p.run, p.approved = true, true
			default:
				p.result, p.outcome = deniedResult(ap), OutcomeDeniedPerson
			}
		case !known:
			p.result, p.outcome = t.a.deps.Tools.unknownTool(c.Name), OutcomeError
		case p.args == nil:
			p.result, p.outcome = ErrorResult("Invalid arguments: not a JSON object (%q). Send a JSON object matching the %s tool's schema.", clip(c.Arguments, 200), c.Name), OutcomeError
		default:
			if pol == nil {
				pol = t.policy(ctx)
			}
			dec := classify(pol, c)
			switch dec.Decision {
			case permission.Allow:
				p.run, p.checked = true, true
			case permission.Deny:
				p.result, p.outcome = ErrorResult("Permission denied: %s", dec.Reason), OutcomeDeniedPolicy
			default:
				switch {
				case settleAsks:
					p.result, p.outcome = ErrorResult("Not run: it needed approval, and %s.", deniedNewMessage), OutcomeDeniedPerson
				case t.in.DenyAsks != "":
					p.result, p.outcome = ErrorResult("Permission denied: this call needs approval (%s), but %s.", dec.Reason, t.in.DenyAsks), OutcomeDeniedPolicy
				default:
					asks = append(asks, t.newApproval(c, p.args, dec, now))
				}
			}
		}
		plans[i] = p
	}
	if len(asks) > 0 {
		// Stored before they are announced: whoever sees the request
		// (an API client, an editor) may decide it at once, and a decision
		// needs the stored approval. The turn's last write then posts them.
		t.pending.Approvals = append(t.pending.Approvals, asks...)
		if _, err := t.flush(context.WithoutCancel(ctx)); err != nil {
			return TurnResult{}, false, fmt.Errorf("store approvals: %w", err)
		}
		for i := range asks {
			t.em.emit(Event{Type: EventApprovalRequest, RunID: asst.RunID, ToolCallID: asks[i].ToolCallID, ToolName: asks[i].ToolName, Approval: &asks[i]})
		}
	}
	if pending := append(waiting, asks...); len(pending) > 0 {
		return TurnResult{StopReason: StopRequiresApproval, Text: t.lastText, Pending: pending}, true, nil
	}
	if len(waitingTasks) > 0 {
		return TurnResult{StopReason: StopWaitingForTask, Text: t.lastText, Tasks: waitingTasks}, true, nil
	}
	parked, err := t.execute(ctx, asst, plans)
	if err != nil {
		return TurnResult{}, false, err
	}
	if len(parked) > 0 {
		return TurnResult{StopReason: StopWaitingForTask, Text: t.lastText, Tasks: parked}, true, nil
	}
	return TurnResult{}, false, nil
}

func deniedResult(ap Approval) Result {
	who := ap.DecidedBy
	if who == "" {
		who = "a person"
	}
	switch ap.State {
	case ApprovalExpired:
		return ErrorResult("Permission denied: the approval expired before anyone decided. Ask again only if it is still needed.")
	default:
		if ap.DecisionReason != "" {
			return ErrorResult("Permission denied by %s: %s", who, ap.DecisionReason)
		}
		return ErrorResult("Permission denied by %s.", who)
	}
}

// policy is the agent's permission policy with its stored "Always" rules
// added to the allow rules, read once per use (a step's classification, the
// re-check before execution).
func (t *turn) policy(ctx context.Context) *permission.Policy {
	pol := t.a.cfg.Policy
	if rules, err := t.a.deps.Store.AgentRules(ctx, t.a.cfg.ID); err == nil && len(rules) > 0 {
		pol.Allow = append(append([]permission.Rule(nil), pol.Allow...), parseRules(rules)...)
	}
	return &pol
}

func classify(pol *permission.Policy, c ToolCall) permission.Result {
	return pol.Check(permission.Call{Tool: c.Name, Args: json.RawMessage(c.Arguments)})
}

func parseRules(rules []string) []permission.Rule {
	var out []permission.Rule
	for _, s := range rules {
		if r, err := permission.ParseRule(s); err == nil {
			out = append(out, r)
		}
	}
	return out
}

func (t *turn) newApproval(c ToolCall, args json.RawMessage, dec permission.Result, now time.Time) Approval {
	ap := Approval{
		ID:             "ap-" + randomID(6),
		ConversationID: t.conv.ID,
		AgentID:        t.a.cfg.ID,
		ToolCallID:     c.ID,
		ToolName:       c.Name,
		Arguments:      c.Arguments,
		Summary:        t.a.deps.Env.Redactor.Redact(summarizeCall(c.Name, args)),
		Reason:         t.a.deps.Env.Redactor.Redact(dec.Reason), // it quotes the command
		Rule:           dec.Suggest,
		Workdir:        t.a.deps.Env.Workspace,
		Requester:      t.in.Requester,
		Location:       t.in.Location,
		Approvers:      t.a.cfg.Approvers,
		State:          ApprovalPending,
		Created:        now,
		Expires:        now.Add(t.a.cfg.ApprovalTimeout),
	}
	if t.a.deps.Env.Redactor.Contains(ap.Rule) {
		// An Always rule spells the command's words: it would show the
		// secret on its button and keep it in the agent's rules.
		ap.Rule = ""
	}
	if t.task != nil {
		ap.TaskID, ap.TaskType = t.task.ID, t.task.Type
	}
	if d, ok := t.a.deps.Tools.Get(c.Name); ok {
		if dp, ok := d.(DiffPreviewer); ok {
			if diff, err := dp.PreviewDiff(args, &t.a.deps.Env); err == nil {
				ap.Diff = clip(t.a.deps.Env.Redactor.Redact(diff), 4000)
			}
		}
	}
	return ap
}

// DiffPreviewer is implemented by tools that can show the change a call
// would make (Write, Edit), for approval messages.
type DiffPreviewer interface {
	PreviewDiff(args json.RawMessage, env *ToolEnv) (string, error)
}

// summarizeCall is a one-line description of a call for people.
func summarizeCall(name string, args json.RawMessage) string {
	if s := CallSubject(args); s != "" {
		return name + ": " + clip(s, 300)
	}
	return name + " " + clip(string(args), 300)
}

// CallSubject is what a tool call acts on, for people: its command, file
// path, pattern, query or description, whichever comes first; "" if none.
func CallSubject(args json.RawMessage) string {
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	for _, k := range []string{"command", "file_path", "pattern", "query", "description"} {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// execute runs the plans' calls (batched by resource: reads in parallel,
// writes serialized per path, exclusive calls alone, in call order) and
// appends every result in call order. It returns the foreground tasks
// the calls started: their calls get results when the tasks end, and the
// turn parks on them.
func (t *turn) execute(ctx context.Context, asst Message, plans []callPlan) ([]Task, error) {
	env := &t.a.deps.Env
	t.curRun = asst.RunID
	var pol *permission.Policy
	// Re-check each call that was decided earlier (approved while the turn
	// was parked) right before it runs: a deny rule or guard that matches
	// now wins; an approval is not asked again.
	for i := range plans {
		p := &plans[i]
		if !p.run || p.checked {
			continue
		}
		if pol == nil {
			pol = t.policy(ctx)
		}
		dec := classify(pol, p.call)
		if dec.Decision == permission.Deny {
			p.run = false
			p.result, p.outcome = ErrorResult("Permission denied at execution time: %s", dec.Reason), OutcomeDeniedPolicy
		}
	}
	// Each batch's calls are marked started, together with everything the
	// turn has not stored yet (the step's assistant message first of all),
	// in one write right before the batch runs.
	ran := false
	for _, batch := range t.batches(plans) {
		// Recorded even when the turn's time is up, so that a limit reached
		// between two batches ends the turn with a message, not a storage
		// error; the call then reports "cancelled before it ran".
		for _, i := range batch {
			t.pending.ToolStarted = append(t.pending.ToolStarted, plans[i].call.ID)
		}
		if _, err := t.flush(context.WithoutCancel(ctx)); err != nil {
			return nil, fmt.Errorf("record tool start: %w", err)
		}
		ran = true
		var wg sync.WaitGroup
		for _, i := range batch {
			wg.Go(func() { plans[i].result = t.runOne(ctx, &plans[i]) })
		}
		wg.Wait()
	}

	msgs := make([]Message, 0, len(plans))
	of := make([]int, 0, len(plans)) // the plan of each message
	var parked []Task
	for i, p := range plans {
		r := p.result
		if p.run && r.Task != nil && !r.Task.Background {
			parked = append(parked, *r.Task)
			continue
		}
		of = append(of, i)
		content := env.Redactor.Redact(r.Content)
		// A tool that clamps its own output (Bash) adds a note naming its
		// overflow file; cutting that again would hide part of the tail
		// and write a second overflow file holding only clamped text.
		if utf8.RuneCountInString(content) > t.a.cfg.ClampChars+clampNoteRoom {
			out, _ := sandbox.Clamp(content, t.a.cfg.ClampChars)
			note := ""
			if env.OverflowDir != "" {
				// Call ids come from the model and repeat across
				// conversations (and some models reuse them): a random
				// part keeps one result from overwriting another's file.
				path, err := sandbox.WriteOverflow(env.OverflowDir, "result-"+randomID(6)+"-"+p.call.ID, content, env.Redactor)
				if err == nil {
					note = fmt.Sprintf("\n[Output was %d characters; the full output is in %s — Read it with offset/limit or Grep it.]", len([]rune(content)), path)
				}
			}
			content = out + note
		}
		outcome := p.outcome
		switch {
		case outcome != "":
		case r.IsError:
			outcome = OutcomeError
		default:
			outcome = OutcomeOK
		}
		msgs = append(msgs, Message{
			ID:         t.resultID(p.call.ID),
			Role:       RoleTool,
			ToolCallID: p.call.ID,
			ToolName:   p.call.Name,
			IsError:    r.IsError,
			Outcome:    outcome,
			Parts:      []Part{{Type: PartText, Text: content}},
			RunID:      asst.RunID,
		})
	}
	if len(msgs) == 0 {
		return parked, nil
	}
	if rem := t.memoryReminder(ctx); rem != "" {
		last := &msgs[len(msgs)-1]
		last.Parts = append(last.Parts, Part{Type: PartReminder, Text: rem})
	}
	stored := t.buffer(msgs...)
	// Results of calls that ran are stored at once: a crash after this
	// keeps what they did instead of "outcome unknown".
	if ran {
		if _, err := t.flush(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
	}
	for j, m := range stored {
		p := &plans[of[j]]
		ev := Event{Type: EventToolResult, RunID: asst.RunID, UUID: m.ID, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Text: m.Parts[0].Text, IsError: m.IsError, Outcome: m.Outcome}
		ev.Attachments = p.result.Attachments
		if p.result.Task != nil {
			ev.TaskID = p.result.Task.ID
		}
		t.em.emit(ev)
		if len(p.result.Todos) > 0 {
			t.em.emit(Event{Type: EventPlan, RunID: asst.RunID, ToolCallID: m.ToolCallID, Todos: p.result.Todos})
		}
		if p.task != nil {
			t.notified(ctx, p.task.ID)
		}
	}
	return parked, nil
}

// batches groups the calls to run by resource, in call order: reads run
// together, writes to one path one after the other, exclusive calls alone.
func (t *turn) batches(plans []callPlan) [][]int {
	env := &t.a.deps.Env
	var out [][]int
	var cur []int
	cut := func() {
		if len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	writes := map[string]bool{}
	for i := range plans {
		p := &plans[i]
		if !p.run {
			continue
		}
		res := p.tool.Resource(p.args, env)
		switch res.Kind {
		case ResourceExclusive:
			cut()
			clear(writes)
			cur = append(cur, i)
			cut()
		case ResourceWrite:
			if writes[res.Path] {
				cut()
				clear(writes)
			}
			writes[res.Path] = true
			cur = append(cur, i)
		default:
			cur = append(cur, i)
		}
	}
	cut()
	return out
}

// runOne runs one call, committing memory when it wrote there.
func (t *turn) runOne(ctx context.Context, p *callPlan) (res Result) {
	env := &t.a.deps.Env
	defer func() {
		if r := recover(); r != nil {
			res = ErrorResult("Tool %s failed unexpectedly: %v", p.call.Name, r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return ErrorResult("Cancelled before it ran.")
	}
	callEnv := *env
	callEnv.ToolCallID = p.call.ID
	res = p.tool.Run(ctx, p.args, &callEnv)
	if mem := t.a.deps.Memory; mem != nil {
		r := p.tool.Resource(p.args, env)
		if r.Kind == ResourceWrite && inDir(r.Path, mem.Dir()) {
			if _, err := mem.Commit(context.WithoutCancel(ctx), fmt.Sprintf("%s %s", p.call.Name, relTo(mem.Dir(), r.Path)), r.Path); err != nil {
				return ErrorResult("The memory change was not kept: %v. The file was restored; fix the content and try again.", err)
			}
		}
	}
	return res
}

func inDir(path, dir string) bool {
	if path == "" || dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func relTo(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil {
		return rel
	}
	return path
}

func jsonOrString(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

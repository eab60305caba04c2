package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// DefaultMaxTasks is how many tasks of one agent run at once unless
// AgentOptions.MaxTasks says otherwise (a task waiting for approval does
// not count).
const DefaultMaxTasks = 4

// tasks is the part that works sub-agent tasks (DESIGN §5). A task's child
// is a conversation whose items are worked by the same workers as every
// other conversation's, at the parent turn's location: its asks are posted
// there and decided through the one decide path, its activity is one
// status line per task (edited), and its end — the report posted once and
// the parent's <task-notification> input (or the parked parent's resume)
// — is written in the transaction that completes the child's last item.
type tasks struct {
	env       *env
	outbox    *outbox
	approvals *approvals
	workers   *workers

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc // task id → its child's running turn (this process)
}

func newTasks(e *env, o *outbox, a *approvals, w *workers) *tasks {
	return &tasks{env: e, outbox: o, approvals: a, workers: w, running: map[string]context.CancelCauseFunc{}}
}

// of returns the task whose child conversation conv is.
func (ts *tasks) of(ctx context.Context, conv string) (agentcore.Task, bool, error) {
	t, err := ts.env.opts.AgentStore.TaskOfConversation(ctx, conv)
	if errors.Is(err, agentcore.ErrNotFound) || errors.Is(err, ErrNotFound) {
		return agentcore.Task{}, false, nil
	}
	if err != nil {
		return agentcore.Task{}, false, fmt.Errorf("look up the task of %s: %w", conv, err)
	}
	return t, true, nil
}

func (ts *tasks) maxTasks(agentID string) int {
	if n := ts.env.opts.AgentOptions[agentID].MaxTasks; n > 0 {
		return n
	}
	return DefaultMaxTasks
}

// host is the agentcore.TaskHost of a turn at loc.
func (ts *tasks) host(loc channels.Location) agentcore.TaskHost { return taskHost{ts, loc} }

type taskHost struct {
	ts  *tasks
	loc channels.Location
}

// StartTask implements agentcore.TaskHost: the task, its child's first
// item and its status line in one transaction, then the child's worker.
func (h taskHost) StartTask(ctx context.Context, t agentcore.Task) (agentcore.Task, error) {
	ts, e := h.ts, h.ts.env
	if t.ParentLocation == "" {
		t.ParentLocation = h.loc.String()
	}
	now := e.now().UTC()
	first := Item{ConversationID: t.ConversationID, AgentID: t.AgentID, Kind: ItemTask, Location: t.ParentLocation, Created: now}
	var status Outbound
	if ts.statusLine(h.loc) {
		var buttons []Button
		if ad, ok := e.adapter(h.loc); ok && ad.Capabilities().Buttons {
			buttons = []Button{{Token: newToken(now), ApprovalID: t.ConversationID, Action: ButtonStop, Created: now}}
			if err := e.opts.Store.CreateButtons(ctx, buttons); err != nil {
				return agentcore.Task{}, fmt.Errorf("store the stop button: %w", err)
			}
		}
		status, _ = ts.outbox.item(OutboundSend, h.loc, statusMessage(t, "", now, buttons))
	}
	stored, err := e.opts.Store.StartTask(ctx, t, first, status)
	if err != nil {
		return agentcore.Task{}, err
	}
	e.log.Info("task started", "task", stored.ID, "type", stored.Type, "agent", stored.AgentID,
		"parent", stored.ParentConversationID, "child", stored.ConversationID, "background", stored.Background, "location", stored.ParentLocation)
	ts.workers.kick(stored.ConversationID)
	ts.outbox.kick()
	return stored, nil
}

// statusLine says whether a location gets a status line message per task:
// surfaces that render live get task events instead.
func (ts *tasks) statusLine(loc channels.Location) bool {
	ad, ok := ts.env.adapter(loc)
	if !ok {
		return true // another process's channel: its adapter edits the line
	}
	_, live := ad.(channels.LiveSurface)
	return !live
}

// work runs one item of a task's child. busy reports that the item must
// wait: another process holds the lease, or the agent's max_tasks slots
// are taken.
func (ts *tasks) work(ctx context.Context, w *worker, p *processor, it Item, ag *agentcore.Agent, loc channels.Location, task agentcore.Task) (bool, error) {
	e := ts.env
	st := e.opts.Store
	if task.Status.Final() {
		// Left behind by a task that ended (stopped while a decision's
		// resume was queued): nothing runs.
		if err := st.Complete(ctx, it.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return false, fmt.Errorf("drop item %d of ended task %s: %w", it.ID, task.ID, err)
		}
		return false, nil
	}
	if task.Status == agentcore.TaskQueued {
		t, runs, err := st.AdmitTask(ctx, task.ID, ts.maxTasks(task.AgentID))
		if err != nil {
			return false, err
		}
		if !runs {
			return true, nil // wait for a slot: a task that ends wakes this worker
		}
		task = t
	}
	if task.Status == agentcore.TaskWaiting {
		if err := st.SetTaskStatus(ctx, task.ID, agentcore.TaskRunning); err != nil {
			return false, err
		}
		task.Status = agentcore.TaskRunning
	}
	in := agentcore.Input{Kind: agentcore.InputResume}
	switch it.Kind {
	case ItemTask:
		in = agentcore.TaskInput(task)
	case ItemResume:
	default: // a notification of the child's own task, or a message
		pl, err := decodePayload(it.Payload)
		if err != nil {
			e.log.Error("task item with a bad payload; dropping it", "item", it.ID, "task", task.ID, "err", err)
			return false, st.Complete(ctx, it.ID)
		}
		in, _ = inputFor(false, pl)
		in.TaskID = pl.Task
		if it.Kind == ItemNotification {
			in.Kind = agentcore.InputNotification
		}
	}
	in.MessageID = inputID(it)
	in.Location = it.Location
	in.DenyAsks = e.channel(loc.Channel).DenyAsks
	in.Tasks = ts.host(loc)
	if in.Requester == "" {
		in.Requester = task.Requester
	}

	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.workers.setCancel(w, cancel)
	ts.mu.Lock()
	ts.running[task.ID] = cancel
	ts.mu.Unlock()
	defer func() {
		ts.mu.Lock()
		delete(ts.running, task.ID)
		ts.mu.Unlock()
	}()

	start := time.Now()
	s := newTaskStream(ctx, e, loc, task)
	res, err := ag.Turn(turnCtx, it.ConversationID, in, s)
	s.stop()
	cause := context.Cause(turnCtx)
	if errors.Is(err, agentcore.ErrBusy) {
		return true, nil
	}
	if err != nil && errors.Is(cause, errStopped) {
		// Stopped before the turn got going (its store reads failed with
		// the cancellation): the task ends here all the same.
		err, res = nil, agentcore.TurnResult{StopReason: agentcore.StopCancelled}
	}
	if err != nil {
		return false, err
	}
	p.observe(res, time.Since(start), loc)
	if res.StopReason == agentcore.StopCancelled && errors.Is(cause, errShutdown) {
		return false, nil // the next start continues it
	}
	parked := res.StopReason == agentcore.StopRequiresApproval || res.StopReason == agentcore.StopWaitingForTask
	if parked || res.Idle {
		if res.StopReason == agentcore.StopRequiresApproval && !res.Deferred {
			// Asks go to the parent's location (and the agent's approval
			// routes), labelled with the task; a decision resumes the
			// child there.
			for _, ap := range res.Pending {
				p.approvals.post(ctx, ap, loc)
			}
		}
		if parked {
			// A parked child holds no slot (its own foreground task may
			// need one); its resume runs at once.
			if err := st.SetTaskStatus(ctx, task.ID, agentcore.TaskWaiting); err != nil {
				return false, err
			}
			task.Status = agentcore.TaskWaiting
			what := "for approval"
			if res.StopReason == agentcore.StopWaitingForTask {
				var ids []string
				for _, t := range res.Tasks {
					ids = append(ids, t.ID)
				}
				what = "for sub-agent task " + strings.Join(ids, ", ")
			}
			s.show(ctx, task, what)
		}
		if err := st.Complete(context.WithoutCancel(ctx), it.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return false, fmt.Errorf("complete item %d: %w", it.ID, err)
		}
		p.outbox.kick()
		return false, nil
	}
	end := ag.EndTask(task, res, errors.Is(cause, errStopped))
	return false, ts.finish(context.WithoutCancel(ctx), it.ID, end, loc)
}

// finish ends a task: its end, the parent's input, the report and the
// status line's last edit in one transaction (with the child's item when
// itemID is not 0), then wakes the parent and the agent's queued tasks.
func (ts *tasks) finish(ctx context.Context, itemID int64, end agentcore.Task, loc channels.Location) error {
	e := ts.env
	now := e.now().UTC()
	body, err := encodePayload(messagePayload{EventID: "task:" + end.ID, Text: agentcore.TaskNotification(end), Who: end.Requester, Task: end.ID})
	if err != nil {
		return err
	}
	notify := Item{Kind: ItemNotification, Location: end.ParentLocation, Payload: body, Created: now}
	resume := Item{Kind: ItemResume, Location: end.ParentLocation, Created: now}
	var out []Outbound
	if end.StatusPost != 0 {
		if it, ok := ts.outbox.item(OutboundEdit, loc, statusMessage(end, "", now, nil)); ok {
			it.EditOf = end.StatusPost
			out = append(out, it)
		}
	}
	caps := channels.Capabilities{}
	if ad, ok := e.adapter(loc); ok {
		caps = ad.Capabilities()
	}
	for _, page := range channels.Paginate(reportMessage(end, now), caps) {
		if it, ok := ts.outbox.item(OutboundSend, loc, page); ok {
			out = append(out, it)
		}
	}
	finished, err := e.opts.Store.FinishTask(ctx, itemID, end, notify, resume, out)
	if errors.Is(err, ErrNotFound) {
		e.log.Warn("a task's item was completed by another worker; its end is theirs", "task", end.ID, "item", itemID)
		return nil
	}
	if err != nil {
		return err
	}
	if finished {
		e.log.Info("task ended", "task", end.ID, "status", string(end.Status), "duration", end.Duration(now).Round(time.Millisecond),
			"parent", end.ParentConversationID, "background", end.Background)
		if sl, ok := ts.liveSurface(loc); ok {
			sl.Live(ctx, taskLiveEvent(loc, end, "", now))
		}
		ts.workers.kick(end.ParentConversationID)
		if queued, err := e.opts.Store.QueuedTasks(ctx, end.AgentID); err == nil {
			for _, c := range queued {
				ts.workers.kick(c)
			}
		}
	}
	ts.outbox.kick()
	return nil
}

func (ts *tasks) liveSurface(loc channels.Location) (channels.LiveSurface, bool) {
	ad, ok := ts.env.adapter(loc)
	if !ok {
		return nil, false
	}
	sl, ok := ad.(channels.LiveSurface)
	return sl, ok
}

// stop stops a task and the tasks it started: a child turn running here
// is cancelled (its end follows as for any turn); otherwise the task ends
// now as cancelled and its pending asks are denied. It reports whether the
// task was still running.
func (ts *tasks) stop(ctx context.Context, task agentcore.Task, why string) bool {
	e := ts.env
	if kids, err := e.opts.AgentStore.ConversationTasks(ctx, task.ConversationID, 0); err == nil {
		for _, k := range kids {
			if !k.Status.Final() {
				ts.stop(ctx, k, why)
			}
		}
	}
	if task.Status.Final() {
		return false
	}
	ts.mu.Lock()
	cancel, running := ts.running[task.ID]
	ts.mu.Unlock()
	if running {
		cancel(errStopped)
		return true
	}
	end := task
	if ag, ok := e.opts.Agents[task.AgentID]; ok {
		end = ag.CancelTask(task, why)
	} else {
		end.Status, end.Error, end.Ended = agentcore.TaskCancelled, why, e.now().UTC()
	}
	loc, err := channels.ParseLocation(task.ParentLocation)
	if err != nil {
		e.log.Error("task with a bad location", "task", task.ID, "err", err)
		return false
	}
	if err := ts.finish(context.WithoutCancel(ctx), 0, end, loc); err != nil {
		e.log.Error("stop task", "task", task.ID, "err", err)
		return false
	}
	if pending, err := e.opts.AgentStore.PendingApprovals(ctx, task.ConversationID); err == nil {
		for _, ap := range pending {
			if _, err := ts.approvals.decide(ctx, DecideRequest{ApprovalID: ap.ID, Action: ButtonDeny, By: systemActor, Reason: "the task was stopped"}); err != nil {
				e.log.Warn("deny an ask of a stopped task", "approval", ap.ID, "err", err)
			}
		}
	}
	return true
}

// stopAll stops every unfinished task a conversation started.
func (ts *tasks) stopAll(ctx context.Context, conv, why string) int {
	list, err := ts.env.opts.AgentStore.ConversationTasks(ctx, conv, 0)
	if err != nil {
		return 0
	}
	n := 0
	for _, t := range list {
		if !t.Status.Final() && ts.stop(ctx, t, why) {
			n++
		}
	}
	return n
}

// StopTasks stops the given tasks (run -p stops its unfinished background
// tasks as it exits) and returns the ids of those that were still running.
func (g *Gateway) StopTasks(ctx context.Context, ids []string, why string) []string {
	var stopped []string
	for _, id := range ids {
		t, err := g.env.opts.AgentStore.Task(ctx, id)
		if err != nil || t.Status.Final() {
			continue
		}
		if g.tasks.stop(ctx, t, why) {
			stopped = append(stopped, id)
		}
	}
	return stopped
}

// statusWords is how a task's status reads on its status line.
func statusWords(t agentcore.Task, now time.Time) (icon, words string) {
	d := t.Duration(now).Round(time.Second)
	switch t.Status {
	case agentcore.TaskQueued:
		return "🕒", "waiting for a free slot (max_tasks)"
	case agentcore.TaskWaiting:
		return "🔐", "waiting"
	case agentcore.TaskDone:
		return "✅", "done in " + d.String()
	case agentcore.TaskFailed:
		return "❌", "failed after " + d.String()
	case agentcore.TaskCancelled:
		return "⏹", "cancelled after " + d.String()
	}
	return "⏳", "running"
}

// statusText is a task's one status line.
func statusText(t agentcore.Task, progress string, now time.Time) string {
	icon, words := statusWords(t, now)
	s := fmt.Sprintf("%s sub-agent **%s** · task `%s` · %s — %s", icon, channels.EscapeMarkdown(t.Type), t.ID, words, channels.EscapeMarkdown(t.Description))
	if t.Status.Final() && t.Error != "" && t.Status != agentcore.TaskCancelled {
		s += "\n" + channels.EscapeMarkdown(clipString(t.Error, 300))
	} else if p := strings.TrimSpace(progress); p != "" && !t.Status.Final() {
		s += "\n↳ " + clipString(p, 200)
	}
	return s
}

// statusMessage is a task's status line with its Stop button, if any.
func statusMessage(t agentcore.Task, progress string, now time.Time, buttons []Button) channels.Message {
	m := channels.TextMessage(statusText(t, progress, now))
	for _, b := range buttons {
		if b.Action == ButtonStop {
			m.Parts = append(m.Parts, channels.Buttons{Rows: [][]channels.Button{{{Label: "Stop task", Style: channels.StyleDanger, Token: b.Token}}}})
		}
	}
	return m
}

// reportMessage is a task's report as posted (once) where it was started.
func reportMessage(t agentcore.Task, now time.Time) channels.Message {
	_, words := statusWords(t, now)
	head := fmt.Sprintf("📋 **Report** · sub-agent %s · task `%s` · %s — %s", channels.EscapeMarkdown(t.Type), t.ID, words, channels.EscapeMarkdown(t.Description))
	parts := []channels.Part{channels.Text{Markdown: head}}
	if t.Error != "" && t.Status != agentcore.TaskDone {
		parts = append(parts, channels.Notice{Text: "⚠ " + t.Error})
	}
	if r := strings.TrimSpace(t.Report); r != "" {
		parts = append(parts, channels.Text{Markdown: r})
	}
	return channels.Message{Parts: parts}
}

// taskLiveEvent is a task's status as live surfaces get it: a LiveTask
// event whose Wire is a task_progress event.
func taskLiveEvent(loc channels.Location, t agentcore.Task, progress string, now time.Time) channels.LiveEvent {
	te := agentcore.TaskEventOf(t, now)
	te.Progress = progress
	// The status events of a task are one run; seqId counts milliseconds
	// since the task was created, so it grows across processes too.
	seq := now.Sub(t.Created).Milliseconds() + 1
	if seq < 1 {
		seq = 1
	}
	wire := agentcore.Event{Type: agentcore.EventTaskProgress, RunID: t.ID + "-status", SeqID: seq, AgentID: t.AgentID,
		ConversationID: t.ParentConversationID, ToolCallID: t.ParentToolCallID, TaskID: t.ID, Task: te}
	ev := channels.LiveEvent{Kind: channels.LiveTask, Location: loc, ConversationID: t.ParentConversationID, At: now,
		Task: &channels.TaskActivity{ID: t.ID, Type: t.Type, Description: t.Description, Status: string(t.Status), Progress: progress, Duration: t.Duration(now)}}
	ev.Wire = marshalEvent(wire)
	return ev
}

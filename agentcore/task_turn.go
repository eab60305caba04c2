package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore/permission"
)

// ToolAgent is the name of the tool that starts sub-agents.
const ToolAgent = "Agent"

// configureTask makes a turn of a task's child conversation a sub-agent's
// turn (the type's tools, model and instructions, a policy no looser than
// the agent's, no memory), and gives turns whose host runs tasks the
// Agent tool's starter.
func (t *turn) configureTask(ctx context.Context) error {
	var task Task
	var err error
	switch {
	case !t.in.TaskLookedUp:
		task, err = t.a.deps.Store.TaskOfConversation(ctx, t.conv.ID)
	case t.in.Task != nil:
		task = *t.in.Task
	default:
		err = ErrNotFound
	}
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return fmt.Errorf("look up the task of %s: %w", t.conv.ID, err)
	default:
		t.task = &task
		t.a = t.a.forTask(task)
		if t.in.Requester == "" {
			t.in.Requester = task.Requester
		}
	}
	if t.in.Tasks != nil {
		t.a.deps.Env.Tasks = taskStarter{t}
	}
	return nil
}

// forTask returns a copy of a (already this turn's copy) for a turn of
// the task's child.
func (a *Agent) forTask(task Task) *Agent {
	c := *a
	spec := task.Spec
	c.cfg.Policy = childPolicy(a.cfg.Policy, spec.Mode)
	if spec.Model != "" {
		c.cfg.Model = spec.Model
	}
	c.cfg.Preset = subagentPreset(a.cfg.ID, a.deps.Env.Workspace, spec)
	c.deps.Memory = nil
	c.deps.Tools = childTools(a.deps.Tools, spec.Tools, task.Depth)
	env := a.deps.Env
	env.MemoryDir = ""
	var writable []string
	for _, d := range env.Writable {
		if d != a.cfg.Policy.MemoryDir {
			writable = append(writable, d)
		}
	}
	env.Writable = writable
	c.deps.Env = env
	return &c
}

// childPolicy is a child's policy: the parent's rules, guards and
// directories, the mode capped by the parent's, and the agent's memory
// directory out of reach (a child never writes the parent's memory).
func childPolicy(p permission.Policy, want permission.Mode) permission.Policy {
	p.Mode = CapMode(p.Mode, want)
	if p.MemoryDir != "" {
		if p.MemoryRoot == "" {
			p.MemoryRoot = p.MemoryDir
		}
		p.MemoryDir = ""
	}
	return p
}

// childTools is the parent's tool set narrowed to the type's tools, without
// the Agent tool at the depth limit.
func childTools(parent *Tools, names []string, depth int) *Tools {
	set := parent
	if len(names) > 0 {
		set = parent.Only(names...)
	}
	if depth >= MaxTaskDepth {
		set = set.Without(ToolAgent)
	}
	return set
}

// runID is the run of the step whose calls are executing.
func (t *turn) runID() string { return t.curRun }

// notified tells the sink that the parent received a task's report (the
// task_notification event): when a notification input is appended, or a
// foreground task's report becomes its call's result.
func (t *turn) notified(ctx context.Context, taskID string) {
	if taskID == "" {
		return
	}
	task, err := t.a.deps.Store.Task(ctx, taskID)
	if err != nil {
		return
	}
	ev := taskEvent(task, task.Ended)
	ev.Report, ev.ReportFile = clip(task.Report, taskReportChars), task.ReportFile
	t.em.emit(Event{Type: EventTaskNotification, RunID: t.id + "-task", ToolCallID: task.ParentToolCallID, TaskID: task.ID, Task: ev})
}

// deferredInput is a notification kept while its conversation was parked.
type deferredInput struct {
	MessageID string    `json:"messageId"`
	TaskID    string    `json:"taskId,omitempty"`
	Parts     []Part    `json:"parts"`
	Created   time.Time `json:"created"`
}

func deferredScope(conv string) string { return "deferred:" + conv }

// loadDeferred reads the notifications kept for this conversation (one
// read per turn).
func (t *turn) loadDeferred(ctx context.Context) error {
	vals, err := t.a.deps.Store.Settings(ctx, deferredScope(t.conv.ID))
	if err != nil {
		return fmt.Errorf("read kept notifications of %s: %w", t.conv.ID, err)
	}
	t.deferred = t.deferred[:0]
	for _, v := range vals {
		var d deferredInput
		if json.Unmarshal([]byte(v), &d) == nil && d.MessageID != "" {
			t.deferred = append(t.deferred, d)
		}
	}
	sort.Slice(t.deferred, func(i, j int) bool { return t.deferred[i].Created.Before(t.deferred[j].Created) })
	return nil
}

// deferInput keeps this turn's notification until the parked turn goes on
// (its id stays the message id, so it is appended once).
func (t *turn) deferInput(ctx context.Context) error {
	if t.in.MessageID == "" {
		return errors.New("a notification without a message id cannot be kept")
	}
	d := deferredInput{MessageID: t.in.MessageID, TaskID: t.in.TaskID, Parts: t.in.Parts, Created: t.a.deps.Now().UTC()}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("keep the notification: %w", err)
	}
	if err := t.a.deps.Store.SetSetting(ctx, deferredScope(t.conv.ID), d.MessageID, string(b)); err != nil {
		return fmt.Errorf("keep the notification: %w", err)
	}
	return nil
}

// deliverDeferred appends the kept notifications (at a step boundary: after
// the parked step's results), each once, then forgets them.
func (t *turn) deliverDeferred(ctx context.Context) error {
	if len(t.deferred) == 0 {
		return nil
	}
	view, err := t.loadView(ctx)
	if err != nil {
		return fmt.Errorf("load view of %s: %w", t.conv.ID, err)
	}
	for _, d := range t.deferred {
		if !hasMessage(view, d.MessageID) {
			parts := append([]Part{{Type: PartReminder, Text: reminder("This notification came while you were waiting.")}}, d.Parts...)
			if _, err := t.append(ctx, Message{ID: d.MessageID, Role: RoleUser, Parts: parts}); err != nil {
				return err
			}
			t.notified(ctx, d.TaskID)
		}
		if err := t.a.deps.Store.SetSetting(context.WithoutCancel(ctx), deferredScope(t.conv.ID), d.MessageID, ""); err != nil {
			return fmt.Errorf("forget a delivered notification: %w", err)
		}
	}
	t.deferred = nil
	return nil
}

package agentcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/sandbox"
)

// A task is a sub-agent run started by the Agent tool (DESIGN §1, §5): a
// child conversation of the same agent whose turns the host works like any
// other conversation's (the gateway: queue items in the same durable queue,
// at the parent turn's location), and one final report that returns to the
// parent — as a <task-notification> input (background) or as the Agent
// call's result (foreground: the parent's turn parks on the task like on an
// approval). The child's policy is the parent's with the type's mode capped
// by the parent's; it never writes the agent's memory.

// TaskStatus is where a task stands. Done, failed and cancelled are final.
type TaskStatus string

// Task states.
const (
	TaskQueued    TaskStatus = "queued"  // waiting for one of the agent's max_tasks slots
	TaskRunning   TaskStatus = "running" // its child works (or its next item is due)
	TaskWaiting   TaskStatus = "waiting" // its child's turn is parked on approvals
	TaskDone      TaskStatus = "done"
	TaskFailed    TaskStatus = "failed"
	TaskCancelled TaskStatus = "cancelled"
)

// Final reports whether the task has ended.
func (s TaskStatus) Final() bool { return s == TaskDone || s == TaskFailed || s == TaskCancelled }

// MaxTaskDepth is how deep tasks nest: a child at this depth has no Agent
// tool.
const MaxTaskDepth = 2

// Task is the durable record of one sub-agent run.
type Task struct {
	ID                   string `json:"id"` // t-…
	AgentID              string `json:"agentId"`
	ParentConversationID string `json:"parentConversationId"`
	// ParentLocation is where the parent turn came from (the host's
	// location key, opaque here): the child's turns, asks and report go
	// there.
	ParentLocation   string       `json:"parentLocation,omitempty"`
	ParentToolCallID string       `json:"parentToolCallId,omitempty"` // the Agent call
	ConversationID   string       `json:"conversationId"`             // the child's
	Type             string       `json:"type"`
	Description      string       `json:"description"`
	Prompt           string       `json:"prompt"` // the brief
	Spec             SubagentType `json:"spec"`   // the type as it was when the task started
	Fork             bool         `json:"fork,omitempty"`
	Background       bool         `json:"background,omitempty"`
	Depth            int          `json:"depth"`               // 1 for a child of a top-level conversation
	Requester        string       `json:"requester,omitempty"` // who started the parent turn: decides the child's asks
	Status           TaskStatus   `json:"status"`
	Report           string       `json:"report,omitempty"` // the child's final message
	Error            string       `json:"error,omitempty"`  // why it failed, for people and the parent
	ReportFile       string       `json:"reportFile,omitempty"`
	Created          time.Time    `json:"created"`
	Started          time.Time    `json:"started,omitzero"` // when it got a slot
	Ended            time.Time    `json:"ended,omitzero"`
	Usage            Usage        `json:"usage"`
	// StatusPost is the host's message showing the task's status (the
	// gateway: the outbox item of its status line), opaque here.
	StatusPost int64 `json:"-"`
}

// Duration is how long the task ran (until now while it runs).
func (t Task) Duration(now time.Time) time.Duration {
	start := t.Started
	if start.IsZero() {
		start = t.Created
	}
	end := t.Ended
	if end.IsZero() {
		end = now
	}
	if d := end.Sub(start); d > 0 {
		return d
	}
	return 0
}

// Tasks stores task records. A host creates them (TaskHost: the record and
// the child's first turn are made due in one transaction); the loop reads
// them to configure a child's turns and to settle an Agent call.
type Tasks interface {
	Task(ctx context.Context, id string) (Task, error)
	// TaskOfConversation returns the task whose child conversation this
	// is, or ErrNotFound for a conversation that is no task's.
	TaskOfConversation(ctx context.Context, conversationID string) (Task, error)
	// CallTasks returns the tasks the given Agent calls of a parent
	// conversation started, keyed by call id.
	CallTasks(ctx context.Context, parentConversationID string, callIDs []string) (map[string]Task, error)
	// ConversationTasks returns the tasks a conversation started, the
	// unfinished first, then the newest.
	ConversationTasks(ctx context.Context, parentConversationID string, limit int) ([]Task, error)
	// DetachTask makes a task that has not ended a background task (its
	// report then arrives as a notification) and returns the record as it
	// is after the call.
	DetachTask(ctx context.Context, id string) (Task, error)
}

// TaskHost is the host's side of starting a task: StartTask stores the
// record (Status queued) and makes the child's first turn due at
// t.ParentLocation, in one transaction, and returns the stored record.
type TaskHost interface {
	StartTask(ctx context.Context, t Task) (Task, error)
}

// TaskRequest is one Agent call.
type TaskRequest struct {
	Description string
	Prompt      string
	Type        string
	Fork        *bool // nil: the type's default
	Background  *bool // nil: background at the top level, foreground below
	ToolCallID  string
}

// TaskStarter starts tasks for the Agent tool (ToolEnv.Tasks); the loop
// sets it for turns whose host runs tasks.
type TaskStarter interface {
	StartTask(ctx context.Context, req TaskRequest) (Task, error)
	// Subagents are the types a task may have.
	Subagents() []SubagentType
}

// ErrNoTasks is returned by a TaskStarter whose host cannot run tasks.
var ErrNoTasks = errors.New("sub-agents are not available in this host")

// taskStarter is the TaskStarter of one turn.
type taskStarter struct{ t *turn }

func (s taskStarter) Subagents() []SubagentType { return s.t.a.subagents() }

// subagents are the agent's types: the built-ins and the configured ones.
func (a *Agent) subagents() []SubagentType { return MergeSubagents(a.cfg.Subagents...) }

// StartTask creates the child conversation (a copy of the parent's view
// for a fork) and hands the task to the host, then tells the turn's sink.
func (s taskStarter) StartTask(ctx context.Context, req TaskRequest) (Task, error) {
	t := s.t
	if t.in.Tasks == nil {
		return Task{}, ErrNoTasks
	}
	depth := 1
	if t.task != nil {
		depth = t.task.Depth + 1
	}
	if depth > MaxTaskDepth {
		return Task{}, fmt.Errorf("sub-agents nest at most %d deep; do this work yourself", MaxTaskDepth)
	}
	spec, ok := FindSubagent(t.a.subagents(), req.Type)
	if !ok {
		var names []string
		for _, st := range t.a.subagents() {
			names = append(names, st.Name)
		}
		return Task{}, fmt.Errorf("unknown subagent_type %q; use one of: %s", req.Type, strings.Join(names, ", "))
	}
	fork := spec.Fork
	if req.Fork != nil {
		fork = *req.Fork
	}
	background := depth == 1
	if req.Background != nil {
		background = *req.Background
	}
	st := t.a.deps.Store
	red := t.a.deps.Env.Redactor
	now := t.a.deps.Now().UTC()
	child := Conversation{ID: conversationID(now), AgentID: t.a.cfg.ID, Created: now, Updated: now}
	var copied []Message
	if fork {
		child.SystemPrompt, child.PromptRevision = t.conv.SystemPrompt, t.conv.PromptRevision
		view, err := t.loadView(ctx)
		if err != nil {
			return Task{}, fmt.Errorf("read the view to fork: %w", err)
		}
		copied = forkView(view)
	}
	if err := st.CreateConversation(ctx, child); err != nil {
		return Task{}, fmt.Errorf("create the sub-agent's conversation: %w", err)
	}
	if len(copied) > 0 {
		if _, err := st.Append(ctx, child.ID, copied...); err != nil {
			return Task{}, fmt.Errorf("copy the view into the fork: %w", err)
		}
	}
	task := Task{
		ID:                   "t-" + randomID(4),
		AgentID:              t.a.cfg.ID,
		ParentConversationID: t.conv.ID,
		ParentLocation:       t.in.Location,
		ParentToolCallID:     req.ToolCallID,
		ConversationID:       child.ID,
		Type:                 spec.Name,
		Description:          clip(strings.Join(strings.Fields(red.Redact(req.Description)), " "), 120),
		Prompt:               red.Redact(req.Prompt),
		Spec:                 spec,
		Fork:                 fork,
		Background:           background,
		Depth:                depth,
		Requester:            t.in.Requester,
		Status:               TaskQueued,
		Created:              now,
	}
	stored, err := t.in.Tasks.StartTask(ctx, task)
	if err != nil {
		return Task{}, fmt.Errorf("start the task: %w", err)
	}
	t.em.emit(Event{Type: EventTaskStarted, RunID: t.runID(), ToolCallID: req.ToolCallID, TaskID: stored.ID, Task: taskEvent(stored, now)})
	return stored, nil
}

// forkView is the parent's view as a fork starts from it: every message
// up to the step that is calling Agent (whose calls have no results yet),
// as new messages of the child.
func forkView(view []Message) []Message {
	end := len(view)
	if asst, open := unansweredCalls(view); len(open) > 0 {
		for i := len(view) - 1; i >= 0; i-- {
			if view[i].ID == asst.ID {
				end = i
				break
			}
		}
	}
	out := make([]Message, 0, end)
	for _, m := range view[:end] {
		out = append(out, Message{Role: m.Role, Parts: m.Parts, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls,
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError, Outcome: m.Outcome})
	}
	return out
}

// TaskInput is the first input of a task's child: its brief, and for a
// fork the reminder that it is a sub-agent.
func TaskInput(t Task) Input {
	parts := []Part{}
	if t.Fork {
		parts = append(parts, Part{Type: PartReminder, Text: reminder(fmt.Sprintf(
			"You are now a forked sub-agent (task %s, type %s): the messages above are the conversation as the agent that started you saw it. "+
				"You are NOT that agent and cannot talk to the person. Do only the brief below; your final message is your report, the only thing that returns.",
			t.ID, t.Type))})
	}
	parts = append(parts, Part{Type: PartText, Text: t.Prompt})
	return Input{Kind: InputUser, Parts: parts, Requester: t.Requester, Location: t.ParentLocation}
}

// subagentPreset is the system prompt of a fresh child.
func subagentPreset(agentID, workspace string, spec SubagentType) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are a sub-agent of %s, an agent run by switchboard: a %s worker started to do one job, whose brief is the first message.\n", agentID, spec.Name)
	fmt.Fprintf(&b, "Your workspace is %s; relative paths resolve there. You cannot talk to the person: work on the brief alone. ", workspace)
	b.WriteString("Some tool calls may need a person's approval; if one is denied, do without it. ")
	b.WriteString("Your last message is your report, the only thing that returns to the agent that started you: make it complete and self-contained (what you found or did, with file paths and evidence), without preamble.")
	if p := strings.TrimSpace(spec.Prompt); p != "" {
		b.WriteString("\n\n# Instructions for this sub-agent\n")
		b.WriteString(p)
	}
	return b.String()
}

// Report clamps: the notification carries at most this much of the
// report; the whole text is in ReportFile.
const taskReportChars = 8000

// EndTask is how a task ends after its child's turn res: status, report,
// error and end time, with the whole report written to a file the parent
// may Read (in the agent's overflow directory). A cancellation gives
// TaskCancelled whatever the turn said.
func (a *Agent) EndTask(t Task, res TurnResult, cancelled bool) Task {
	red := a.deps.Env.Redactor
	t.Ended = a.deps.Now().UTC()
	t.Report = strings.TrimSpace(red.Redact(res.Text))
	t.Error = red.Redact(res.Error)
	switch {
	case cancelled || res.StopReason == StopCancelled:
		t.Status = TaskCancelled
		if t.Error == "" || t.Error == "cancelled" {
			t.Error = "stopped before it finished"
		}
	case res.StopReason == StopEndTurn:
		t.Status, t.Error = TaskDone, ""
	default:
		t.Status = TaskFailed
		if t.Error == "" {
			t.Error = "stopped: " + string(res.StopReason)
		}
	}
	if dir := a.deps.Env.OverflowDir; dir != "" && t.Report != "" {
		if path, err := sandbox.WriteOverflow(dir, "task-"+t.ID+".md", t.Report, red); err == nil {
			t.ReportFile = path
		}
	}
	return t
}

// CancelTask is EndTask for a task stopped while no turn of its child ran.
func (a *Agent) CancelTask(t Task, why string) Task {
	return a.EndTask(t, TurnResult{StopReason: StopCancelled, Error: why}, true)
}

// TaskNotification is the <task-notification> text the parent reads when a
// background task ends: id, type, status, duration, the report clamped, and
// the file holding all of it.
func TaskNotification(t Task) string {
	var b strings.Builder
	b.WriteString("<task-notification>\n")
	fmt.Fprintf(&b, "task-id: %s\ntype: %s\ndescription: %s\nstatus: %s\nduration: %s\n", t.ID, t.Type, t.Description, t.Status, t.Duration(t.Ended).Round(time.Second))
	if t.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", clip(t.Error, 500))
	}
	if t.ReportFile != "" {
		fmt.Fprintf(&b, "report-file: %s\n", t.ReportFile)
	}
	report, cut := sandbox.Clamp(t.Report, taskReportChars)
	if cut && t.ReportFile != "" {
		report += "\n[The report was cut; Read " + t.ReportFile + " for all of it.]"
	}
	if report == "" {
		report = "(no report)"
	}
	b.WriteString("<report>\n" + report + "\n</report>\n</task-notification>")
	return b.String()
}

// TaskEvent is a task in an event (task_started, task_progress,
// task_notification): the stream-json contract.
type TaskEvent struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	Description    string `json:"description"`
	Status         string `json:"status"`
	Background     bool   `json:"background"`
	ConversationID string `json:"conversationId"` // the child's
	Progress       string `json:"progress,omitempty"`
	DurationMs     int64  `json:"durationMs"`
	Report         string `json:"report,omitempty"`
	ReportFile     string `json:"reportFile,omitempty"`
	Error          string `json:"error,omitempty"`
}

func taskEvent(t Task, now time.Time) *TaskEvent {
	return &TaskEvent{ID: t.ID, Type: t.Type, Description: t.Description, Status: string(t.Status), Background: t.Background,
		ConversationID: t.ConversationID, DurationMs: t.Duration(now).Milliseconds(), Error: t.Error}
}

// TaskEventOf is a task as events carry it (for hosts that emit
// task_progress from a child's activity).
func TaskEventOf(t Task, now time.Time) *TaskEvent { return taskEvent(t, now) }

// taskResult is what an Agent call returns once its foreground task ended.
func taskResult(t Task) Result {
	text := fmt.Sprintf("Task %s (%s) %s after %s.", t.ID, t.Type, t.Status, t.Duration(t.Ended).Round(time.Second))
	if t.Error != "" {
		text += " " + t.Error + "."
	}
	if t.Report != "" {
		text += "\nReport:\n" + t.Report
	}
	return Result{Content: text, IsError: t.Status != TaskDone}
}

// TaskStarted is an Agent call's result for a background task (for a
// foreground one the call has no result until the task ends).
func TaskStarted(t Task) Result {
	if !t.Background {
		return Result{Content: "Waiting for task " + t.ID + "."}
	}
	return Result{Content: fmt.Sprintf("Started task %s (%s) in the background. Do not wait for it or poll: its report arrives later as a <task-notification> message. "+
		"Tell the person it is running and go on with other work.", t.ID, t.Type)}
}

// detachedResult answers an Agent call whose foreground task went to the
// background because a new message came.
func detachedResult(t Task) Result {
	return Result{Content: fmt.Sprintf("The person sent a new message while you waited, so task %s (%s) continues in the background; "+
		"its report arrives later as a <task-notification> message.", t.ID, t.Type)}
}

package gateway

import (
	"context"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// ItemTask starts a task's child: its brief is in the task record.
const ItemTask ItemKind = "task"

// TaskStore is the storage of sub-agent tasks as the gateway works them:
// every change of a task that must go with a queue or outbox change is one
// transaction, so a task's start, its slot, its end and its report are each
// written exactly once, whatever crashes in between.
type TaskStore interface {
	// StartTask stores t (its Status queued) with first, the child's first
	// queue item, and status, the outbox item of its status line (when
	// status.Kind is set; its id becomes t.StatusPost), in one transaction,
	// and returns the stored task.
	StartTask(ctx context.Context, t agentcore.Task, first Item, status Outbound) (agentcore.Task, error)
	// AdmitTask moves a queued task to running when fewer than limit
	// tasks of its agent are running, recording now as its start. A task
	// waiting for approval holds no slot (it costs nothing while it
	// waits), and one that resumes runs at once. It returns the task as it
	// is after the call and whether it runs (true also for a task that
	// already ran).
	AdmitTask(ctx context.Context, id string, limit int) (agentcore.Task, bool, error)
	// SetTaskStatus sets a running task waiting (its child parked on
	// approvals) or a waiting task running; a final task is left alone.
	SetTaskStatus(ctx context.Context, id string, s agentcore.TaskStatus) error
	// FinishTask ends a task, in one transaction: it completes the queue
	// item itemID (when not 0; an unknown or done item is ErrNotFound and
	// nothing is written); then, unless the task already ended (finished
	// is false), it records end's status, report, error, report file and
	// end time and the child's token usage, queues notify (a background
	// task: the parent's <task-notification>) or resume (a foreground
	// task: the parent's parked turn), and stores out (the report
	// message, the status line's last edit).
	FinishTask(ctx context.Context, itemID int64, end agentcore.Task, notify, resume Item, out []Outbound) (finished bool, err error)
	// QueuedTasks returns the child conversations of an agent's queued
	// tasks, oldest first (to wake them when a slot frees).
	QueuedTasks(ctx context.Context, agentID string) ([]string, error)
}

// TaskReader is what the gateway reads of the agents' task records.
type TaskReader interface {
	Task(ctx context.Context, id string) (agentcore.Task, error)
	TaskOfConversation(ctx context.Context, conversationID string) (agentcore.Task, error)
	ConversationTasks(ctx context.Context, parentConversationID string, limit int) ([]agentcore.Task, error)
}

package agentcore

import (
	"encoding/json"
	"sync"
	"time"
)

// EventType names an event; the names are the stream-json contract
// (DESIGN §7).
type EventType string

// Event types.
const (
	EventAssistantDelta   EventType = "assistant_delta"
	EventReasoningDelta   EventType = "reasoning_delta"
	EventAssistantMessage EventType = "assistant_message"
	EventToolCall         EventType = "tool_call"
	EventToolResult       EventType = "tool_result"
	EventApprovalRequest  EventType = "approval_request"
	EventApprovalDecision EventType = "approval_decision"
	EventPlan             EventType = "plan"
	EventTaskStarted      EventType = "task_started"      // the Agent tool started a task
	EventTaskProgress     EventType = "task_progress"     // a task's child did something (summarized)
	EventTaskNotification EventType = "task_notification" // the parent received a task's report
	EventCompaction       EventType = "compaction"
)

// Event is anything a turn emits. One event model serves every host.
// Identity follows the Agent SDK rules: RunID+SeqID is a replay cursor,
// OTID identifies an assistant or reasoning slice (together with Type),
// UUID is the message id, ToolCallID joins a call with its result.
type Event struct {
	Type           EventType       `json:"type"`
	RunID          string          `json:"runId"`
	SeqID          int64           `json:"seqId"`
	UUID           string          `json:"uuid,omitempty"`
	OTID           string          `json:"otid,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	AgentID        string          `json:"agentId,omitempty"`
	ConversationID string          `json:"conversationId,omitempty"`
	Text           string          `json:"text,omitempty"`
	ToolName       string          `json:"toolName,omitempty"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	IsError        bool            `json:"isError,omitempty"`
	// Outcome (tool_result): ok, error, denied_policy, denied_person or
	// unknown. Title and Kind (tool_call): how the tool describes the call.
	Outcome  string    `json:"outcome,omitempty"`
	Title    string    `json:"title,omitempty"`
	Kind     string    `json:"kind,omitempty"`
	Approval *Approval `json:"approval,omitempty"`
	// TaskID names the task an event belongs to: task events, and the
	// approval_request of a task's child.
	TaskID      string     `json:"taskId,omitempty"`
	Task        *TaskEvent `json:"task,omitempty"`
	Todos       []Todo     `json:"todos,omitempty"`
	Attachments []string   `json:"attachments,omitempty"`
}

// Todo is one item of the agent's plan (TodoWrite).
type Todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`             // pending | in_progress | completed
	Priority string `json:"priority,omitempty"` // high | medium | low
}

// Sink receives a turn's events in order, from the goroutine running the
// turn. It must not block for long.
type Sink interface {
	Emit(e Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Emit calls f(e).
func (f SinkFunc) Emit(e Event) { f(e) }

// Discard is a Sink that drops every event.
var Discard Sink = SinkFunc(func(Event) {})

// emitter stamps events with identity and counts seqIds per run.
//
// A run's events may come from several turns: a resumed turn emits the
// results of calls an earlier step (run) asked for. seqIds must still grow
// within the run, across turns and processes, so that a replay cursor never
// repeats: a run this turn started counts from 1; a run of an earlier turn
// counts from the turn's start in microseconds, which is later than any
// seqId an earlier turn gave it (its own count, or an earlier start).
type emitter struct {
	mu      sync.Mutex
	sink    Sink
	redact  func(string) string
	agentID string
	convID  string
	seq     map[string]int64
	base    int64 // first seqId of an earlier turn's run
}

func newEmitter(sink Sink, redact func(string) string, agentID, convID string) *emitter {
	if sink == nil {
		sink = Discard
	}
	return &emitter{sink: sink, redact: redact, agentID: agentID, convID: convID, seq: map[string]int64{}, base: time.Now().UnixMicro()}
}

// newRun registers a run this turn started: its seqIds count from 1.
func (em *emitter) newRun(runID string) {
	em.mu.Lock()
	defer em.mu.Unlock()
	if _, ok := em.seq[runID]; !ok {
		em.seq[runID] = 0
	}
}

func (em *emitter) emit(e Event) {
	em.mu.Lock()
	defer em.mu.Unlock()
	n, ok := em.seq[e.RunID]
	if !ok {
		n = em.base - 1
	}
	em.seq[e.RunID] = n + 1
	e.SeqID = n + 1
	e.AgentID = em.agentID
	e.ConversationID = em.convID
	if em.redact != nil {
		e.Text = em.redact(e.Text)
		e.Title = em.redact(e.Title)
		if len(e.Arguments) > 0 {
			e.Arguments = json.RawMessage(em.redact(string(e.Arguments)))
		}
		if e.Task != nil {
			te := *e.Task
			te.Report, te.Progress, te.Error = em.redact(te.Report), em.redact(te.Progress), em.redact(te.Error)
			e.Task = &te
		}
		if e.Approval != nil {
			a := *e.Approval
			a.Arguments = em.redact(a.Arguments)
			a.Summary = em.redact(a.Summary)
			a.Diff = em.redact(a.Diff)
			e.Approval = &a
		}
	}
	em.sink.Emit(e)
}

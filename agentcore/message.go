package agentcore

import (
	"strings"
	"time"
)

// Role is who wrote a message in a conversation's transcript.
type Role string

// Roles of transcript messages. A tool result is its own message with
// RoleTool; a compaction summary is a RoleUser message (DESIGN §5).
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType says what a message part carries.
type PartType string

// Part types. A reminder is a `<system-reminder>` text the harness adds to a
// user message or tool result; it is sent to the model as text but hosts do
// not show it as something the user wrote.
const (
	PartText     PartType = "text"
	PartReminder PartType = "reminder"
	PartImage    PartType = "image"
	PartSummary  PartType = "summary"
)

// Part is one piece of a message's content.
type Part struct {
	Type PartType `json:"type"`
	Text string   `json:"text,omitempty"`
	// MIME and Data carry an image (Type PartImage).
	MIME string `json:"mime,omitempty"`
	Data []byte `json:"data,omitempty"`
}

// ToolCall is one tool call requested by the model in an assistant message.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the raw JSON text the model produced. It may be invalid
	// JSON: the loop answers such a call with an error result.
	Arguments string `json:"arguments"`
}

// Message is one entry of a conversation's append-only transcript.
// Messages are never updated or deleted once stored.
type Message struct {
	ID             string     `json:"id"`
	ConversationID string     `json:"conversationId"`
	Seq            int64      `json:"seq"` // position in the transcript, assigned by the store
	Role           Role       `json:"role"`
	Parts          []Part     `json:"parts,omitempty"`
	Reasoning      string     `json:"reasoning,omitempty"`
	ToolCalls      []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID, ToolName and IsError are set on RoleTool messages.
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
	// Outcome says how a tool call went (RoleTool): ok, error,
	// denied_policy, denied_person or unknown (see the Outcome constants).
	Outcome   string    `json:"outcome,omitempty"`
	RunID     string    `json:"runId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Text joins the message's text parts (not reminders, images or summaries).
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ModelText joins every textual part the model sees, reminders and
// summaries included, in order.
func (m Message) ModelText() string {
	var b strings.Builder
	for i, p := range m.Parts {
		if p.Type == PartImage {
			continue
		}
		if i > 0 && b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// StopReason says why a step or a turn ended.
type StopReason string

// Stop reasons (DESIGN §1, issue 2).
const (
	StopEndTurn          StopReason = "end_turn"
	StopToolUse          StopReason = "tool_use" // a step that ended with tool calls; the turn goes on
	StopRequiresApproval StopReason = "requires_approval"
	StopWaitingForTask   StopReason = "waiting_for_task" // parked on foreground sub-agent tasks
	StopMaxSteps         StopReason = "max_steps"
	StopMaxTokens        StopReason = "max_tokens"
	StopCancelled        StopReason = "cancelled"
	StopError            StopReason = "error"
)

// Usage counts tokens of one model call as the provider reported them.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
	// Reported is false when the provider sent no usage at all.
	Reported bool `json:"-"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + o.InputTokens,
		OutputTokens: u.OutputTokens + o.OutputTokens,
		CachedTokens: u.CachedTokens + o.CachedTokens,
		Reported:     u.Reported || o.Reported,
	}
}

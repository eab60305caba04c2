package client

import (
	"encoding/json"
	"time"
)

// Agent is an agent conversations can talk to.
type Agent struct {
	Name    string `json:"name"`
	Model   string `json:"model,omitempty"`
	Default bool   `json:"default,omitempty"`
}

// Conversation is one of the caller's conversations.
type Conversation struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Title     string    `json:"title,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// NewConversation is what CreateConversation sends; both fields may be
// empty (the channel's agent, no title).
type NewConversation struct {
	Agent string `json:"agent,omitempty"`
	Title string `json:"title,omitempty"`
}

// ConversationPage is one page of Conversations, newest first.
type ConversationPage struct {
	Conversations []Conversation `json:"conversations"`
	// NextCursor, when not empty, is the Cursor of the next page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one stored message of a conversation's history.
type Message struct {
	UUID string `json:"uuid"`
	// OTID is, for assistant messages, the otid of their text and
	// reasoning slices.
	OTID       string         `json:"otid,omitempty"`
	Seq        int64          `json:"seq"`
	Role       string         `json:"role"`
	Text       string         `json:"text,omitempty"`
	Images     int            `json:"images,omitempty"`
	Reasoning  string         `json:"reasoning,omitempty"`
	ToolCalls  []ToolCallInfo `json:"toolCalls,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	ToolName   string         `json:"toolName,omitempty"`
	Outcome    string         `json:"outcome,omitempty"`
	IsError    bool           `json:"isError,omitempty"`
	RunID      string         `json:"runId,omitempty"`
	CreatedAt  time.Time      `json:"createdAt"`
}

// ToolCallInfo is a tool call of a stored assistant message.
type ToolCallInfo struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	// Arguments is JSON when the model's arguments parsed, else the raw
	// text as a JSON string.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Title     string          `json:"title,omitempty"`
	Kind      string          `json:"kind,omitempty"`
}

// MessageQuery selects a page of history by message uuid cursors.
type MessageQuery struct {
	After, Before string
	Limit         int // 1..1000; 0: the server's default (100)
}

// MessagePage is one page of history, oldest first.
type MessagePage struct {
	Messages []Message `json:"messages"`
	More     bool      `json:"more"`
	// StreamCursor is where to follow the stream from after reading the
	// history (StreamOptions.After): read before the messages, so the
	// stream overlaps them and never leaves a gap. Use the first page's.
	StreamCursor string `json:"streamCursor"`
}

// NewMessage is a message to queue: text, images, or both.
type NewMessage struct {
	Text   string  `json:"text,omitempty"`
	Images []Image `json:"images,omitempty"`
}

// Image is an image sent with a message.
type Image struct {
	MIME string `json:"mime"`
	Data []byte `json:"data"` // sent as standard base64
	Name string `json:"name,omitempty"`
}

// Queued is the answer to Send: the input is durably queued.
type Queued struct {
	// InputID names the input: the events of the turn that answers it
	// carry it (Event.InputID), and it is the uuid of its user message.
	InputID        string `json:"inputId"`
	ConversationID string `json:"conversationId"`
	// Duplicate: a retry of a request already queued (same
	// Idempotency-Key); InputID names the first.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Approval is a pending approval the caller may decide.
type Approval struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversationId"`
	Agent          string    `json:"agent"`
	ToolCallID     string    `json:"toolCallId"`
	ToolName       string    `json:"toolName"`
	Summary        string    `json:"summary"`
	Reason         string    `json:"reason,omitempty"`
	Diff           string    `json:"diff,omitempty"`
	Workdir        string    `json:"workdir,omitempty"`
	Rule           string    `json:"rule,omitempty"`
	Always         bool      `json:"always"` // the caller may choose DecideAlways
	Requester      string    `json:"requester,omitempty"`
	Approvers      string    `json:"approvers,omitempty"`
	Task           string    `json:"task,omitempty"`
	Location       string    `json:"location,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	ExpiresAt      time.Time `json:"expiresAt"`
}

// Decisions.
const (
	DecideAllow  = "allow"
	DecideAlways = "always"
	DecideDeny   = "deny"
)

// Decision answers an approval.
type Decision struct {
	Decision string `json:"decision"` // DecideAllow, DecideAlways or DecideDeny
	Reason   string `json:"reason,omitempty"`
}

// DecisionResult is what a decision did.
type DecisionResult struct {
	ApprovalID string `json:"approvalId"`
	Decided    bool   `json:"decided"`
	Resumed    bool   `json:"resumed"` // the turn's last ask: the turn continues
	Text       string `json:"text"`
}

// Event types of the stream.
const (
	EventUserMessage      = "user_message"
	EventTurnStart        = "turn_start"
	EventTurnEnd          = "turn_end"
	EventAssistantDelta   = "assistant_delta"
	EventReasoningDelta   = "reasoning_delta"
	EventAssistantMessage = "assistant_message"
	EventToolCall         = "tool_call"
	EventToolResult       = "tool_result"
	EventApprovalRequest  = "approval_request"
	EventApprovalDecision = "approval_decision"
	EventPlan             = "plan"
	EventChatMessage      = "chat_message"
	EventChatEdit         = "chat_message_edit"
	EventReset            = "reset"
)

// StopRestarted is the stop reason of a turn whose process stopped before
// the turn ended (what it stored is in the history).
const StopRestarted = "restarted"

// Event is one event of a conversation's stream. Identity (the Agent SDK
// rules): RunID+SeqID is the replay cursor (ID is its SSE form), UUID the
// message, OTID the assistant or reasoning slice (with Type), ToolCallID
// the tool call, InputID the input the turn answers.
type Event struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	RunID          string          `json:"runId"`
	SeqID          int64           `json:"seqId"`
	ConversationID string          `json:"conversationId"`
	InputID        string          `json:"inputId,omitempty"`
	UUID           string          `json:"uuid,omitempty"`
	OTID           string          `json:"otid,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	Text           string          `json:"text,omitempty"`
	ToolName       string          `json:"toolName,omitempty"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	IsError        bool            `json:"isError,omitempty"`
	Outcome        string          `json:"outcome,omitempty"`
	Title          string          `json:"title,omitempty"`
	Kind           string          `json:"kind,omitempty"`
	Approval       *EventApproval  `json:"approval,omitempty"`
	Todos          []Todo          `json:"todos,omitempty"`
	// User is turn_start's input, when it was posted through the API.
	User *EventUser `json:"user,omitempty"`
	// Images counts user_message's images.
	Images     int    `json:"images,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	Usage      *Usage `json:"usage,omitempty"`
	Steps      int    `json:"steps,omitempty"`
	Error      string `json:"error,omitempty"`
	// MessageID, Notices and Final are set on chat_message events.
	MessageID string    `json:"messageId,omitempty"`
	Notices   []string  `json:"notices,omitempty"`
	Final     bool      `json:"final,omitempty"`
	At        time.Time `json:"at,omitzero"`
	// Data is the event's JSON as received.
	Data json.RawMessage `json:"-"`
}

// EventApproval is the approval an approval_request or approval_decision
// carries.
type EventApproval struct {
	ID             string    `json:"id"`
	ToolCallID     string    `json:"toolCallId"`
	ToolName       string    `json:"toolName"`
	Summary        string    `json:"summary"`
	Reason         string    `json:"reason,omitempty"`
	Rule           string    `json:"rule,omitempty"`
	State          string    `json:"state"`
	DecidedBy      string    `json:"decidedBy,omitempty"`
	DecisionReason string    `json:"decisionReason,omitempty"`
	Expires        time.Time `json:"expires"`
}

// EventUser is the input a turn answers.
type EventUser struct {
	UUID   string `json:"uuid"`
	Text   string `json:"text"`
	Images int    `json:"images,omitempty"`
}

// Todo is one item of the agent's plan.
type Todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority,omitempty"`
}

// Usage counts a turn's tokens.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
}

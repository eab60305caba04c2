package channels

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Optional Handler abilities for surfaces that serve programs rather than
// people in a chat (the HTTP API): they name what they queued, create
// conversations on request, read the stored transcript with its stream
// identities and list the approvals a caller may decide. Adapters discover
// each by type assertion on the Handler they were started with, like
// HistoryHandler and Decider.

// ErrUnknownMessage is returned (wrapped) by TranscriptReader when a cursor
// names no message of the conversation.
var ErrUnknownMessage = errors.New("no such message in this conversation")

// Queuer is OnInbound that also says what the inbound became, so a surface
// can tell its caller which input the turn's live events
// (LiveEvent.InputID) answer.
type Queuer interface {
	// Queue has OnInbound's contract: it returns only after the inbound was
	// durably accepted (or deliberately ignored).
	Queue(ctx context.Context, in Inbound) (Queued, error)
}

// Queued is what Queue did with an inbound.
type Queued struct {
	// InputID names the queued input: LiveEvent.InputID of the turn that
	// answers it and the id of its message in the transcript. "" when
	// nothing was queued (a command that acted at once, an ignored
	// message).
	InputID        string
	ConversationID string
	// Duplicate: an inbound with the same EventID was queued before (a
	// retry); nothing new was queued and InputID names the first one.
	Duplicate bool
	// Ignored: the message was not for the agent and nothing was done (a
	// group message without a mention outside a bound thread, one from
	// someone not allowed there, an empty one). A surface whose platform
	// may deliver a thread's replies before the message that starts it
	// can hand such a reply over again once the thread is taken.
	Ignored bool
}

// AgentInfo describes one agent a surface may start conversations with.
type AgentInfo struct {
	Name    string
	Model   string
	Default bool // the channel's agent: new conversations talk to it unless told otherwise
}

// ConversationStarter lets a surface list the agents and create a
// conversation on request, before anything was said in it.
type ConversationStarter interface {
	Agents(ctx context.Context) ([]AgentInfo, error)
	// StartConversation creates a conversation of agent ("" for the
	// channel's agent) and binds loc to it; when loc.ChatID is empty the
	// conversation's id becomes the chat id. The returned Location is the
	// bound one. title is echoed for the surface to keep; the gateway does
	// not store it.
	StartConversation(ctx context.Context, loc Location, agent, title string) (ConversationInfo, error)
}

// TranscriptReader reads the stored messages of a conversation with the
// identities its live events carry (DESIGN §7: the message id is the
// events' uuid, and an assistant message's id is also the otid of its text
// and reasoning slices).
type TranscriptReader interface {
	// Transcript returns the visible messages (user messages with text or
	// images, assistant messages, tool results) of the conversation at loc,
	// oldest first, at most q.Limit of them: those after the message q.After
	// (from the start when empty) and before the message q.Before (to the
	// end when empty); with only Before, the last Limit before it. A cursor
	// that names no message of the conversation is ErrUnknownMessage.
	Transcript(ctx context.Context, loc Location, q TranscriptQuery) (TranscriptPage, error)
}

// TranscriptQuery selects a page of a transcript by message id cursors.
type TranscriptQuery struct {
	After, Before string
	Limit         int // at most this many; <= 0 means 100
}

// TranscriptPage is one page of a transcript.
type TranscriptPage struct {
	Messages []TranscriptMessage
	// More: there are more messages in the direction of the page (after
	// the last one, or before the first one when only Before was given).
	More bool
}

// Transcript message roles (TranscriptMessage.Role).
const (
	TranscriptUser      = "user"
	TranscriptAssistant = "assistant"
	TranscriptTool      = "tool"
)

// TranscriptMessage is one stored message.
type TranscriptMessage struct {
	ID     string // the message id: the uuid of its events
	Seq    int64  // position in the transcript
	Role   string // TranscriptUser, TranscriptAssistant or TranscriptTool
	Text   string
	Images int // user messages: images sent with the text
	// Reasoning and ToolCalls are set on assistant messages.
	Reasoning string
	ToolCalls []TranscriptCall
	// ToolCallID, ToolName, Outcome and IsError are set on tool results.
	ToolCallID string
	ToolName   string
	Outcome    string
	IsError    bool
	RunID      string
	At         time.Time
}

// TranscriptCall is one tool call of an assistant message.
type TranscriptCall struct {
	ID   string
	Name string
	// Arguments is the call's arguments as JSON when they parse, else the
	// raw text as a JSON string (the stream-json tool_call form).
	Arguments json.RawMessage
	Title     string // how the tool describes the call
	Kind      string
}

// ApprovalLister lists the pending approvals someone may decide.
type ApprovalLister interface {
	// PendingApprovals returns the undecided approvals the qualified
	// identity who may decide (as an approver, the requester, an admin or
	// an approval route), oldest first, at most limit (<= 0: 100).
	PendingApprovals(ctx context.Context, who string, limit int) ([]PendingApproval, error)
}

// PendingApproval is an undecided approval with where it belongs.
type PendingApproval struct {
	ApprovalCard   // Buttons are left empty: decide through Decider
	ConversationID string
	Agent          string
	// Location is where the turn that asked came from (zero when unknown).
	Location Location
	Created  time.Time
	// Always: who may choose "always" (an admin, and the call has a rule).
	Always bool
}

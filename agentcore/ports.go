package agentcore

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by storage ports when a record does not exist.
var ErrNotFound = errors.New("not found")

// Conversation is one transcript of an agent (DESIGN §1).
type Conversation struct {
	ID      string    `json:"id"`
	AgentID string    `json:"agentId"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// SystemPrompt is the compiled system prompt, cached byte-for-byte until
	// the next recompile; PromptRevision is the memory revision it was
	// compiled from. Both are empty until the first turn compiles them.
	SystemPrompt   string `json:"-"`
	PromptRevision string `json:"promptRevision,omitempty"`
}

// Run is one step: one model call (DESIGN §7 stream identity).
type Run struct {
	ID             string
	ConversationID string
	TurnID         string
	Step           int
	Model          string
	StopReason     StopReason
	Usage          Usage
	Error          string
	Started        time.Time
	Finished       time.Time
}

// ApprovalState is where an approval stands.
type ApprovalState string

// Approval states. Every state but pending is final.
const (
	ApprovalPending ApprovalState = "pending"
	ApprovalAllowed ApprovalState = "allowed" // allow once
	ApprovalAlways  ApprovalState = "always"  // allow and store Rule for the agent
	ApprovalDenied  ApprovalState = "denied"
	ApprovalExpired ApprovalState = "expired"
)

// Approval is the durable record of a tool call whose permission decision
// was "ask" (DESIGN §1). The turn that asked is parked until every approval
// of its step is decided.
type Approval struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversationId"`
	AgentID        string `json:"agentId"`
	ToolCallID     string `json:"toolCallId"`
	ToolName       string `json:"toolName"`
	Arguments      string `json:"arguments"`
	Summary        string `json:"summary"`        // one line for people: what would run
	Reason         string `json:"reason"`         // why the checker asked
	Rule           string `json:"rule,omitempty"` // the rule "Always" would store
	// TaskID and TaskType are set when a task's child asked.
	TaskID    string `json:"taskId,omitempty"`
	TaskType  string `json:"taskType,omitempty"`
	Workdir   string `json:"workdir,omitempty"`
	Diff      string `json:"diff,omitempty"`
	Requester string `json:"requester,omitempty"` // qualified id of who started the turn
	// Location is where the turn that asked came from (opaque to the agent
	// core: the host's location key), so a decision resumes it there.
	Location       string        `json:"location,omitempty"`
	Approvers      []string      `json:"approvers,omitempty"` // qualified ids; empty: requester and admins
	State          ApprovalState `json:"state"`
	DecisionReason string        `json:"decisionReason,omitempty"`
	DecidedBy      string        `json:"decidedBy,omitempty"`
	Created        time.Time     `json:"created"`
	Expires        time.Time     `json:"expires"`
	Decided        time.Time     `json:"decided,omitzero"`
}

// Decision is a person's answer to an approval.
type Decision struct {
	State  ApprovalState // ApprovalAllowed, ApprovalAlways, ApprovalDenied or ApprovalExpired
	Reason string
	By     string // qualified id of who decided
	At     time.Time
}

// SearchHit is one result of a full-text search over a transcript.
type SearchHit struct {
	MessageID string    `json:"messageId"`
	Seq       int64     `json:"seq"`
	Role      Role      `json:"role"`
	Created   time.Time `json:"created"`
	Snippet   string    `json:"snippet"`
}

// Transcript stores conversations, their append-only messages and the
// in-context view (an ordered list of message ids).
type Transcript interface {
	EnsureAgent(ctx context.Context, agentID string) error
	// CreateConversation stores a new conversation, recording its agent
	// (EnsureAgent) in the same transaction.
	CreateConversation(ctx context.Context, c Conversation) error
	Conversation(ctx context.Context, id string) (Conversation, error)
	// LatestConversation returns the agent's most recently updated
	// conversation, or ErrNotFound.
	LatestConversation(ctx context.Context, agentID string) (Conversation, error)
	ListConversations(ctx context.Context, agentID string, limit int) ([]Conversation, error)
	SetSystemPrompt(ctx context.Context, conversationID, prompt, revision string) error
	// Append adds messages to the end of the transcript and of the
	// in-context view in one transaction, assigning Seq (and ID and Created
	// when empty). It returns the stored messages.
	Append(ctx context.Context, conversationID string, msgs ...Message) ([]Message, error)
	// View returns the in-context messages in view order.
	View(ctx context.Context, conversationID string) ([]Message, error)
	// ReplaceView sets the in-context view (compaction). Every id must
	// belong to the conversation.
	ReplaceView(ctx context.Context, conversationID string, ids []string) error
	// Messages pages through the whole transcript by Seq.
	Messages(ctx context.Context, conversationID string, afterSeq int64, limit int) ([]Message, error)
	// Search runs a full-text query over the whole transcript.
	Search(ctx context.Context, conversationID, query string, limit int) ([]SearchHit, error)
}

// Runs records one row per step.
type Runs interface {
	StartRun(ctx context.Context, r Run) error
	FinishRun(ctx context.Context, r Run) error
	ListRuns(ctx context.Context, conversationID string) ([]Run, error)
	// RecentRuns returns the conversation's n newest runs, newest first
	// (the per-turn reads need only the last ones, however long the
	// conversation).
	RecentRuns(ctx context.Context, conversationID string, n int) ([]Run, error)
}

// ToolLedger remembers which tool calls began executing, so that after a
// crash a call that started but has no result is settled as "outcome
// unknown" rather than run again.
type ToolLedger interface {
	MarkToolStarted(ctx context.Context, conversationID, toolCallID string) error
	// StartedToolCalls returns which of the given calls began executing.
	StartedToolCalls(ctx context.Context, conversationID string, callIDs []string) (map[string]bool, error)
}

// Approvals stores approval records.
type Approvals interface {
	CreateApprovals(ctx context.Context, as []Approval) error
	Approval(ctx context.Context, id string) (Approval, error)
	// ConversationApprovals returns the approvals of the given tool calls
	// (all of the conversation's when callIDs is empty), keyed by call id.
	ConversationApprovals(ctx context.Context, conversationID string, callIDs []string) (map[string]Approval, error)
	PendingApprovals(ctx context.Context, conversationID string) ([]Approval, error)
	// Decide records a decision if the approval is still pending and
	// returns the updated record with decided=true; otherwise it returns the
	// record unchanged with decided=false. For ApprovalAlways the approval's
	// Rule is added to the agent's rules in the same transaction.
	Decide(ctx context.Context, id string, d Decision) (a Approval, decided bool, err error)
	// AgentRules returns the rules added by "Always" decisions.
	AgentRules(ctx context.Context, agentID string) ([]string, error)
}

// Leases gives one process at a time the right to work a conversation
// (DESIGN §2). A lease has an owner and an expiry and is renewed while
// working; an expired lease may be taken by anyone.
type Leases interface {
	AcquireLease(ctx context.Context, conversationID, owner string, ttl time.Duration) (bool, error)
	RenewLease(ctx context.Context, conversationID, owner string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, conversationID, owner string) error
}

// Settings stores small durable run-time settings by scope and key (an
// agent's /mode and /model: scope "agent:<id>"). The gateway keeps its own
// settings (a location's /queue mode) in the same store under other scopes.
type Settings interface {
	// Settings returns every key of a scope (an empty map when none).
	Settings(ctx context.Context, scope string) (map[string]string, error)
	// SetSetting stores a value; "" deletes the key.
	SetSetting(ctx context.Context, scope, key, value string) error
}

// Store is every storage port the agent core needs.
type Store interface {
	Transcript
	Runs
	ToolLedger
	Approvals
	Leases
	Settings
	Tasks
	TurnStore
}

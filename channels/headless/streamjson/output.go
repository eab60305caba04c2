package streamjson

import (
	"encoding/json"
	"io"
	"sync"
)

// Init is the first line of stream-json output.
type Init struct {
	Type           string   `json:"type"` // "init"
	AgentID        string   `json:"agentId"`
	ConversationID string   `json:"conversationId"`
	Model          string   `json:"model"`
	Tools          []string `json:"tools"`
	Cwd            string   `json:"cwd"`
	PermissionMode string   `json:"permissionMode"`
}

// Result subtypes.
const (
	SubtypeSuccess          = "success"
	SubtypeError            = "error"
	SubtypeCancelled        = "cancelled"
	SubtypeRequiresApproval = "requires_approval"
	SubtypeWaitingForTask   = "waiting_for_task" // parked on a foreground sub-agent task
)

// Result ends each turn in stream-json and is the only output of
// --output-format json.
type Result struct {
	Type           string            `json:"type"` // "result"
	Subtype        string            `json:"subtype"`
	Result         string            `json:"result"`
	StopReason     string            `json:"stopReason"`
	NumSteps       int               `json:"numSteps"`
	Usage          Usage             `json:"usage"`
	AgentID        string            `json:"agentId"`
	ConversationID string            `json:"conversationId"`
	DurationMs     int64             `json:"durationMs"`
	Error          string            `json:"error,omitempty"`
	Pending        []json.RawMessage `json:"pendingApprovals,omitempty"`
	// CancelledTasks are the background tasks the session cancelled as it
	// ended (run -p without --wait-tasks).
	CancelledTasks []string `json:"cancelledTasks,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
}

// SubtypeOf maps a stop reason to a result subtype.
func SubtypeOf(stopReason string) string {
	switch stopReason {
	case "end_turn":
		return SubtypeSuccess
	case "requires_approval":
		return SubtypeRequiresApproval
	case "waiting_for_task":
		return SubtypeWaitingForTask
	case "cancelled":
		return SubtypeCancelled
	}
	return SubtypeError
}

// ErrorLine answers a bad input line (or reports a problem) without ending
// the session.
type ErrorLine struct {
	Type    string `json:"type"` // "error"
	Message string `json:"message"`
}

// NewError returns an error line.
func NewError(msg string) ErrorLine { return ErrorLine{Type: "error", Message: msg} }

// Encoder writes one JSON object per line; it is safe for concurrent use.
type Encoder struct {
	mu sync.Mutex
	w  io.Writer
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Write writes v as one line.
func (e *Encoder) Write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	e.WriteRaw(b)
}

// WriteRaw writes an already encoded object as one line.
func (e *Encoder) WriteRaw(b []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(append([]byte(nil), b...), '\n'))
}

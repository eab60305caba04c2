package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ToolSpec is what the model is told about a tool.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON schema of the arguments object
}

// Request is one model call.
type Request struct {
	Model           string
	System          string
	Messages        []Message
	Tools           []ToolSpec
	MaxOutputTokens int
	// MaxStepOutput bounds, in bytes, the text, reasoning and tool calls
	// the step may stream; past it the step fails with
	// ProviderOutputLimit. 0 means DefaultMaxStepOutput.
	MaxStepOutput int
}

// DeltaKind says what a streamed delta carries.
type DeltaKind string

// Delta kinds.
const (
	DeltaText      DeltaKind = "text"
	DeltaReasoning DeltaKind = "reasoning"
)

// Delta is a streamed fragment of the model's answer.
type Delta struct {
	Kind DeltaKind
	Text string
}

// Response is the complete result of one model call.
type Response struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	// FinishReason as the provider reported it: "stop", "tool_calls",
	// "length", "content_filter", or "".
	FinishReason string
	Usage        Usage
	Model        string
}

// Provider makes one streamed model step. Implementations call onDelta in
// order from the calling goroutine and must be safe for concurrent use by
// several conversations.
type Provider interface {
	Step(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// ProviderErrorKind classifies provider failures so hosts can tell users
// what to do.
type ProviderErrorKind string

// Provider error kinds.
const (
	ProviderUnreachable   ProviderErrorKind = "unreachable"
	ProviderAuth          ProviderErrorKind = "auth"
	ProviderModelNotFound ProviderErrorKind = "model_not_found"
	ProviderRateLimited   ProviderErrorKind = "rate_limited"
	ProviderServer        ProviderErrorKind = "server"
	ProviderBadRequest    ProviderErrorKind = "bad_request"
	ProviderBadResponse   ProviderErrorKind = "bad_response"
	ProviderContextLength ProviderErrorKind = "context_length"
	// ProviderOutputLimit: the step streamed more than MaxStepOutput.
	ProviderOutputLimit ProviderErrorKind = "output_limit"
	// ProviderStalled: the server sent nothing for the stream idle
	// timeout.
	ProviderStalled ProviderErrorKind = "stalled"
)

// ProviderError is a failed model call, already classified.
type ProviderError struct {
	Kind    ProviderErrorKind
	Status  int    // HTTP status, 0 when none
	Message string // what happened, without secrets
	Hint    string // what the user should do
	Err     error
}

func (e *ProviderError) Error() string {
	s := "model call failed: " + e.Message
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (e *ProviderError) Unwrap() error { return e.Err }

// IsContextLength reports whether err says the request exceeded the
// model's context window.
func IsContextLength(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Kind == ProviderContextLength
}

// UserMessage renders err as one line for people: the provider's
// classified message and hint, not a chain of wrapped errors.
func UserMessage(err error) string {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return fmt.Sprint(err)
}

package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// DefaultModel is the model name GET /v1/models lists and streamed chunks
// carry when a request names none.
const DefaultModel = "fake-model"

// ExhaustedMessage is the error message of the 500 answer given when the
// script is empty and no responder is set.
const ExhaustedMessage = "fakemodel: script exhausted"

// ToolCall is one tool call a Step streams.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is what a Step reports in its final usage chunk.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int
}

// Step is one scripted answer to one chat-completions request.
type Step struct {
	// Text is streamed as content deltas in a few chunks.
	Text string
	// Reasoning is streamed as delta.reasoning_content (what Ollama, vLLM
	// and DeepSeek use) before the text.
	Reasoning string
	// ToolCalls are streamed after the text; each call's id and name come in
	// its first delta and its arguments in several fragments.
	ToolCalls []ToolCall
	// OmitIndex streams tool-call deltas without the "index" field.
	OmitIndex bool
	// ReuseIndex streams every tool call with index 0 (an Ollama quirk).
	ReuseIndex bool
	// Status, if non-zero, answers with this HTTP status and an
	// OpenAI-style error JSON body instead of a completion.
	Status int
	// ErrorBody replaces the default error body sent with Status.
	ErrorBody string
	// RetryAfter is sent as the Retry-After header with Status.
	RetryAfter string
	// Malformed sends a broken stream: a valid first chunk, then garbage
	// JSON, then the connection closes without [DONE].
	Malformed bool
	// Usage is reported in the usage chunk; nil computes it from sizes
	// (prompt tokens ~ request bytes/4, completion tokens ~ output bytes/4).
	Usage *Usage
	// FinishReason defaults to "tool_calls" when there are ToolCalls, else
	// "stop". Use "length" to simulate max_tokens.
	FinishReason string
	// Block, if set, holds the answer until the channel is closed or the
	// request's context ends (then nothing is sent).
	Block <-chan struct{}
	// BlockMidStream, if set, holds the stream after the first content
	// chunk has been flushed, until the channel is closed or the request's
	// context ends (then the connection is dropped without [DONE]).
	BlockMidStream <-chan struct{}
	// Stall holds the stream after the first content chunk until the
	// client or the server goes away: a server that stops sending without
	// closing the connection. It is BlockMidStream with a channel nobody
	// closes.
	Stall bool
	// Endless streams deltas of this kind without end (after Text, if
	// any), until the client goes away: a model that never stops.
	Endless Endless
	// HugeChunk, if positive, streams one content delta of this many bytes
	// in a single SSE event (after Text, if any). The fake writes it in
	// pieces without holding it in memory.
	HugeChunk int
}

// Endless names what a Step streams without end.
type Endless string

// Endless kinds.
const (
	// EndlessText streams content deltas.
	EndlessText Endless = "text"
	// EndlessReasoning streams reasoning_content deltas.
	EndlessReasoning Endless = "reasoning"
	// EndlessArguments streams one tool call whose arguments never end.
	EndlessArguments Endless = "arguments"
	// EndlessEvent streams one SSE event whose data lines never end (no
	// blank line ever dispatches it).
	EndlessEvent Endless = "event"
)

// ContextLengthError is a Step that fails the way OpenAI does when the
// request exceeds the model's context window.
func ContextLengthError() Step {
	return Step{
		Status:    http.StatusBadRequest,
		ErrorBody: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
	}
}

// ModelNotFoundError is a Step that fails the way OpenAI does for an
// unknown model name.
func ModelNotFoundError(model string) Step {
	body, _ := json.Marshal(errorEnvelope{Error: errorObject{
		Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model),
		Type:    "invalid_request_error",
		Code:    "model_not_found",
	}})
	return Step{Status: http.StatusNotFound, ErrorBody: string(body)}
}

// Server is a running fake. The zero value is not usable; use New or
// NewServer.
type Server struct {
	ts   *httptest.Server
	done chan struct{}

	mu        sync.Mutex
	script    []Step
	responder func(Request) Step
	requests  []Request
	changed   chan struct{} // closed and replaced whenever requests grows or active changes
	active    int           // chat-completions handlers running
	closeOnce sync.Once
	seq       int
	discard   bool // keep no requests (long-running load)
}

// New starts a fake on 127.0.0.1 answering from steps and closes it when the
// test ends.
func New(t testing.TB, steps ...Step) *Server {
	t.Helper()
	s := NewServer(steps...)
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a fake on 127.0.0.1 for use outside tests (benchmarks,
// load tools). The caller must Close it.
func NewServer(steps ...Step) *Server {
	s := &Server{
		done:    make(chan struct{}),
		script:  append([]Step(nil), steps...),
		changed: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleCompletions)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	s.ts = httptest.NewServer(mux)
	return s
}

// Close stops the server, releases held steps and waits for handlers to
// return. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.ts.Close()
	})
}

// URL is the base URL to configure clients with, including "/v1".
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// Push appends steps to the script.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, steps...)
}

// SetResponder installs f to compute the answer to each request that
// arrives while the script is empty. f may be called from several
// goroutines at once.
func (s *Server) SetResponder(f func(req Request) Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// DiscardRequests stops recording requests, so a fake that serves a long
// load keeps no memory per request; Requests and WaitRequests then see
// none of the later ones.
func (s *Server) DiscardRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.discard = true
	s.requests = nil
}

// Remaining is the number of scripted steps not yet used.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Requests returns every chat-completions request received so far, in
// arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ForgetRequests drops the requests recorded so far (a benchmark that
// measures the memory of the client side).
func (s *Server) ForgetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// WaitRequests blocks until at least n requests have arrived or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := len(s.requests), s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakemodel: waiting for %d requests, have %d: %w", n, got, ctx.Err())
		}
	}
}

// record stores req and returns the step to answer it with; ok is false
// when the script is exhausted and there is no responder.
func (s *Server) record(req Request) (step Step, id string, ok bool) {
	s.mu.Lock()
	if !s.discard {
		s.requests = append(s.requests, req)
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.seq++
	id = fmt.Sprintf("chatcmpl-fake-%d", s.seq)
	if len(s.script) > 0 {
		step = s.script[0]
		s.script = s.script[1:]
		s.mu.Unlock()
		return step, id, true
	}
	responder := s.responder
	s.mu.Unlock()
	if responder == nil {
		return Step{}, id, false
	}
	return responder(req), id, true
}

// WaitIdle blocks until no chat-completions answer is in progress (every
// stream has ended: finished, or the client went away) or ctx ends.
func (s *Server) WaitIdle(ctx context.Context) error {
	for {
		s.mu.Lock()
		active, ch := s.active, s.changed
		s.mu.Unlock()
		if active == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakemodel: waiting for %d answers to end: %w", active, ctx.Err())
		}
	}
}

// track counts a running handler until the returned function is called.
func (s *Server) track() func() {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.active--
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	defer s.track()()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "fakemodel: read body: "+err.Error())
		return
	}
	req, perr := parseRequest(raw)
	req.Header = r.Header.Clone()
	req.Time = time.Now()
	step, id, ok := s.record(req)
	if perr != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "fakemodel: "+perr.Error())
		return
	}
	if !ok {
		writeError(w, http.StatusInternalServerError, "server_error", "", ExhaustedMessage)
		return
	}
	if !s.wait(r.Context(), step.Block) {
		return
	}
	if step.Status != 0 {
		s.writeStatus(w, req, step)
		return
	}
	model := req.Model
	if model == "" {
		model = DefaultModel
	}
	if !req.Stream {
		writeCompletion(w, id, model, req, step)
		return
	}
	st := &streamer{w: w, id: id, model: model}
	st.run(r.Context(), s, req, step)
}

// wait holds until ch is closed (nil never holds); false means the client
// or the server went away first.
func (s *Server) wait(ctx context.Context, ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) writeStatus(w http.ResponseWriter, req Request, step Step) {
	if step.RetryAfter != "" {
		w.Header().Set("Retry-After", step.RetryAfter)
	}
	if step.ErrorBody != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.Status)
		_, _ = io.WriteString(w, step.ErrorBody)
		return
	}
	typ, code, msg := "server_error", "", http.StatusText(step.Status)
	switch step.Status {
	case http.StatusUnauthorized:
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case http.StatusForbidden:
		typ, msg = "permission_denied", "You are not allowed to use this model."
	case http.StatusNotFound:
		typ, code, msg = "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model)
	case http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."
	case http.StatusBadRequest:
		typ, msg = "invalid_request_error", "Bad request."
	}
	writeError(w, step.Status, typ, code, msg)
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

type errorEnvelope struct {
	Error errorObject `json:"error"`
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, errorEnvelope{Error: errorObject{Message: msg, Type: typ, Code: c}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	names := []string{DefaultModel}
	seen := map[string]bool{DefaultModel: true}
	for _, req := range s.Requests() {
		if req.Model != "" && !seen[req.Model] {
			seen[req.Model] = true
			names = append(names, req.Model)
		}
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, n := range names {
		list.Data = append(list.Data, model{ID: n, Object: "model", Created: 1700000000, OwnedBy: "fakemodel"})
	}
	writeJSON(w, http.StatusOK, list)
}

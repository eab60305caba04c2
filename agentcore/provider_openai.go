package agentcore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Defaults of OpenAIOptions.
const (
	DefaultProviderRetries = 3
	// DefaultMaxRetryWait caps how long a retry waits for a server's
	// Retry-After; a server asking for longer gets no retry and the caller
	// sees ProviderRateLimited or ProviderServer.
	DefaultMaxRetryWait = 30 * time.Second

	openAIBaseURL = "https://api.openai.com/v1"
	ollamaBaseURL = "http://127.0.0.1:11434/v1"
)

// imageOmitted replaces an image part for models without vision.
const imageOmitted = "[image omitted: the model does not accept images]"

// OpenAIOptions configures an OpenAI-compatible chat-completions provider.
type OpenAIOptions struct {
	// BaseURL of the API including the version path, e.g.
	// "http://127.0.0.1:11434/v1". Empty means OpenAI's API when APIKey is
	// set and a local Ollama otherwise.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization header.
	APIKey string
	// Model is used when a Request names none.
	Model string
	// MaxOutputTokens is sent as max_tokens when a Request sets none; 0
	// sends nothing.
	MaxOutputTokens int
	// MaxRetries bounds retries on 429, 5xx and connection errors. 0 means
	// DefaultProviderRetries; negative means none.
	MaxRetries int
	// MaxRetryWait caps one wait between retries (0: DefaultMaxRetryWait).
	MaxRetryWait time.Duration
	// HTTPClient is used for requests; nil uses a client without timeout
	// (streams are long; StreamIdleTimeout and the caller's context bound
	// them).
	HTTPClient *http.Client
	// Vision says the model accepts images; without it image parts are
	// replaced by a short text note.
	Vision bool
	// StreamIdleTimeout ends a step when the server sends nothing (no
	// response headers, no stream bytes) for this long. 0 means
	// DefaultStreamIdleTimeout; negative means none.
	StreamIdleTimeout time.Duration
}

// OpenAI is a Provider for any OpenAI-compatible chat-completions endpoint
// (OpenAI, Ollama, vLLM, llama.cpp server, OpenRouter, ...). It is safe
// for concurrent use; each Step is independent.
type OpenAI struct {
	opts    OpenAIOptions
	baseURL string        // with defaults applied
	idle    time.Duration // stream idle timeout, 0 for none
	client  openai.Client // Options only: nothing read from the environment
	// tools caches each tool spec as the JSON it is sent as: the specs are
	// the same on every step, and decoding them was a tenth of a turn's
	// CPU (encoding them again, a twentieth). At most maxToolSpecs.
	toolsMu sync.RWMutex
	tools   map[string]toolSpecJSON // by tool name
}

// NewOpenAI returns a provider for opts. It reads nothing from the
// environment: configuration resolves OPENAI_* variables.
func NewOpenAI(opts OpenAIOptions) *OpenAI {
	base := strings.TrimRight(opts.BaseURL, "/")
	if base == "" {
		base = ollamaBaseURL
		if opts.APIKey != "" {
			base = openAIBaseURL
		}
	}
	retries := opts.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultProviderRetries
	case retries < 0:
		retries = 0
	}
	wait := opts.MaxRetryWait
	if wait <= 0 {
		wait = DefaultMaxRetryWait
	}
	client := opts.HTTPClient
	if client == nil {
		// Many conversations call one endpoint at once: keep their
		// connections instead of the default two idle per host.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 512
		tr.MaxIdleConnsPerHost = 256
		client = &http.Client{Transport: tr}
	}
	ro := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(client),
		option.WithMaxRetries(retries),
		option.WithMaxRetryDelay(wait),
	}
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	idle := opts.StreamIdleTimeout
	switch {
	case idle == 0:
		idle = DefaultStreamIdleTimeout
	case idle < 0:
		idle = 0
	}
	return &OpenAI{opts: opts, baseURL: base, idle: idle, client: openai.Client{Options: ro}}
}

// Step streams one chat completion. onDelta (may be nil) receives text and
// reasoning fragments in order, on the calling goroutine. Failures are
// *ProviderError, except cancellation, which wraps ctx.Err(). The step is
// bounded: past req.MaxStepOutput bytes of output, or after the idle
// timeout without a byte from the server, the stream is closed and the
// step fails (ProviderOutputLimit, ProviderStalled); nothing it streamed
// is kept beyond the cap.
func (p *OpenAI) Step(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	if onDelta == nil {
		onDelta = func(Delta) {}
	}
	body, model, err := p.requestBody(req)
	if err != nil {
		return Response{}, err
	}
	limit := req.MaxStepOutput
	if limit <= 0 {
		limit = DefaultMaxStepOutput
	}
	parent := ctx
	ctx, guard := newStreamGuard(ctx, p.idle)
	defer guard.stop()
	// A raw POST, not NewStreaming: the body is read by sseReader, which
	// bounds every event, and each chunk is decoded once (sse.go).
	var httpRes *http.Response
	err = p.client.Post(ctx, "chat/completions", body, &httpRes, option.WithMiddleware(guard.middleware))
	if httpRes != nil && httpRes.Body != nil {
		defer httpRes.Body.Close()
	}
	if err == nil && (httpRes == nil || httpRes.Body == nil) {
		err = errors.New("no response body")
	}

	acc := newStreamAccumulator(limit)
	if err == nil {
		sse := newSSEReader(httpRes.Body, limit+eventSlack)
		for {
			data, rerr := sse.next()
			if rerr != nil {
				if rerr != io.EOF {
					err = rerr
				}
				break
			}
			if aerr := acc.add(data, onDelta); aerr != nil {
				var se *streamError
				switch {
				case errors.Is(aerr, errOutputLimit):
					return Response{}, outputLimitError(limit, aerr)
				case errors.As(aerr, &se):
					err = se
				default:
					return Response{}, p.badResponse("the server sent a chunk that is not a chat-completions chunk", aerr)
				}
				break
			}
		}
	}
	if err != nil {
		switch {
		case parent.Err() != nil:
			return Response{}, fmt.Errorf("model call: %w", parent.Err())
		case guard.idled(ctx):
			return Response{}, p.stalledError(err)
		case errors.Is(err, errEventTooLarge):
			return Response{}, outputLimitError(limit, err)
		}
		return Response{}, p.classify(err, httpRes, model, acc.started)
	}
	resp, err := acc.response()
	if err != nil {
		return Response{}, p.badResponse(err.Error(), err)
	}
	if resp.Model == "" {
		resp.Model = model
	}
	return resp, nil
}

// streamChunk is the part of a chat.completion.chunk we read. Fields whose
// type varies between servers are raw and read leniently.
type streamChunk struct {
	Model   string          `json:"model"`
	Error   json.RawMessage `json:"error"` // a server reporting a failure mid-stream
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          lenientString   `json:"content"`
			Refusal          lenientString   `json:"refusal"`
			ReasoningContent lenientString   `json:"reasoning_content"`
			Reasoning        lenientString   `json:"reasoning"`
			ToolCalls        []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// toolCallDelta is one streamed fragment of a tool call.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// lenientString decodes a JSON string and takes any other value (null,
// numbers, objects: servers differ) as "" instead of failing the chunk.
// Decoding in place saves a copy per delta over json.RawMessage.
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	var v string
	if len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &v) == nil {
		*s = lenientString(v)
	}
	return nil
}

// rawString returns the string in raw, or "" for null, absent or any
// other JSON type.
func rawString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// streamAccumulator builds a Response from chunks. Not safe for concurrent
// use; one Step owns it.
type streamAccumulator struct {
	text, reasoning strings.Builder
	budget          outputBudget // bounds text + reasoning + calls
	calls           toolCallAccumulator
	finish          string
	model           string
	usage           Usage
	sawChoice       bool
	started         bool // a delta was passed to onDelta
}

// newStreamAccumulator returns an accumulator whose text, reasoning and
// tool calls together may not pass limit bytes.
func newStreamAccumulator(limit int) *streamAccumulator {
	a := &streamAccumulator{budget: outputBudget{limit: limit}}
	a.calls = newToolCallAccumulator(&a.budget)
	return a
}

func (a *streamAccumulator) add(raw []byte, onDelta func(Delta)) error {
	var c streamChunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("decode chunk: %w", err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return &streamError{raw: c.Error}
	}
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage = Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens, Reported: true}
		if d := c.Usage.PromptTokensDetails; d != nil {
			a.usage.CachedTokens = d.CachedTokens
		}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // we ask for one choice
		}
		a.sawChoice = true
		reasoning := string(ch.Delta.ReasoningContent)
		if reasoning == "" {
			reasoning = string(ch.Delta.Reasoning)
		}
		if reasoning != "" {
			if err := a.budget.spend(len(reasoning)); err != nil {
				return err
			}
			a.reasoning.WriteString(reasoning)
			a.started = true
			onDelta(Delta{Kind: DeltaReasoning, Text: reasoning})
		}
		for _, text := range []string{string(ch.Delta.Content), string(ch.Delta.Refusal)} {
			if text != "" {
				if err := a.budget.spend(len(text)); err != nil {
					return err
				}
				a.text.WriteString(text)
				a.started = true
				onDelta(Delta{Kind: DeltaText, Text: text})
			}
		}
		for _, d := range ch.Delta.ToolCalls {
			if err := a.calls.add(d); err != nil {
				return err
			}
			a.started = true
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
	}
	return nil
}

func (a *streamAccumulator) response() (Response, error) {
	if !a.sawChoice {
		return Response{}, errors.New("the server's stream had no choices")
	}
	if a.finish == "" {
		return Response{}, errors.New("the stream ended before the model finished (no finish_reason)")
	}
	return Response{
		Text:         a.text.String(),
		Reasoning:    a.reasoning.String(),
		ToolCalls:    a.calls.result(),
		FinishReason: a.finish,
		Usage:        a.usage,
		Model:        a.model,
	}, nil
}

// toolCallAccumulator joins streamed tool-call fragments into calls,
// normalized by call id first: a delta with a new id starts a new call
// even if its index repeats (Ollama reuses index 0); a delta without id
// continues the call last seen with its index, or the last call when the
// index is absent too (servers that omit it). openai-go's accumulator
// keys by index alone and merges such calls (LIBRARIES.md).
// Every call and fragment is counted against the step's budget.
type toolCallAccumulator struct {
	calls   []ToolCall
	args    [][]byte // arguments of calls[i], appended without copying the prefix again
	byID    map[string]int
	byIndex map[int]int
	last    int // position of the last call touched, -1 before any
	budget  *outputBudget
}

func newToolCallAccumulator(b *outputBudget) toolCallAccumulator {
	return toolCallAccumulator{byID: map[string]int{}, byIndex: map[int]int{}, last: -1, budget: b}
}

func (a *toolCallAccumulator) add(d toolCallDelta) error {
	if err := a.budget.spend(len(d.ID) + len(d.Function.Name) + len(d.Function.Arguments)); err != nil {
		return err
	}
	n := len(a.calls)
	pos := -1
	switch {
	case d.ID != "":
		if p, ok := a.byID[d.ID]; ok {
			pos = p
		} else {
			pos = a.start(d.ID)
		}
	case d.Index != nil:
		if p, ok := a.byIndex[*d.Index]; ok {
			pos = p
		} else {
			pos = a.start("")
		}
	case a.last >= 0:
		pos = a.last
	default:
		pos = a.start("")
	}
	if len(a.calls) > n {
		// A new call: its bookkeeping counts too.
		if err := a.budget.spend(callOverhead); err != nil {
			return err
		}
	}
	if d.Index != nil {
		a.byIndex[*d.Index] = pos
	}
	a.last = pos
	c := &a.calls[pos]
	// Most servers send the name once; some repeat it in every fragment,
	// a few split it. Appending only what differs handles all three.
	if name := d.Function.Name; name != "" && name != c.Name {
		c.Name += name
	}
	a.args[pos] = append(a.args[pos], d.Function.Arguments...)
	return nil
}

func (a *toolCallAccumulator) start(id string) int {
	if id == "" {
		id = "call_" + rand.Text()[:16] // servers that send no ids still need distinct ones
	}
	a.calls = append(a.calls, ToolCall{ID: id})
	a.args = append(a.args, nil)
	a.byID[id] = len(a.calls) - 1
	return len(a.calls) - 1
}

func (a *toolCallAccumulator) result() []ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	out := append([]ToolCall(nil), a.calls...)
	for i := range out {
		out[i].Arguments = string(a.args[i])
	}
	return out
}

// streamError is an error a server sent as a stream event
// ({"error": ...}), raw as it came.
type streamError struct{ raw json.RawMessage }

func (e *streamError) Error() string { return "error event in the stream: " + string(e.raw) }

// classify turns a failed request or stream into a *ProviderError.
func (p *OpenAI) classify(err error, res *http.Response, model string, started bool) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = rawErrorText(apiErr.RawJSON())
		}
		return p.statusError(apiErr.StatusCode, apiErr.Code, apiErr.Type, msg, model, err)
	}
	if res != nil && res.StatusCode >= 400 {
		// The SDK could not parse the error body (plain text, HTML).
		return p.statusError(res.StatusCode, "", "", readErrorBody(res), model, err)
	}
	var streamErr *streamError
	if errors.As(err, &streamErr) {
		var obj struct{ Message, Type, Code string }
		msg := rawString(streamErr.raw)
		if json.Unmarshal(streamErr.raw, &obj) == nil && obj.Message != "" {
			msg = obj.Message
		}
		pe := p.statusError(0, obj.Code, obj.Type, msg, model, err)
		if pe.Kind == ProviderBadRequest {
			pe.Kind = ProviderServer
		}
		pe.Message = "the server reported an error mid-stream: " + pe.Message
		return pe
	}
	if started || isDecodeError(err) || errors.Is(err, io.ErrUnexpectedEOF) {
		return p.badResponse("the stream broke off", err)
	}
	if reason, ok := networkReason(err); ok {
		return &ProviderError{
			Kind:    ProviderUnreachable,
			Message: fmt.Sprintf("cannot reach the model server at %s: %s", p.safeURL(), reason),
			Hint: "start the server (Ollama listens on 127.0.0.1:11434) or set OPENAI_BASE_URL " +
				"or base_url in [providers] to an endpoint that answers",
			Err: err,
		}
	}
	return p.badResponse("unexpected failure", err)
}

func (p *OpenAI) statusError(status int, code, typ, msg, model string, err error) *ProviderError {
	msg = p.redact(strings.TrimSpace(msg))
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	lower := strings.ToLower(code + " " + typ + " " + msg)
	pe := &ProviderError{Status: status, Err: err}
	describe := func(what string) string {
		s := what
		if status != 0 {
			s += fmt.Sprintf(" (HTTP %d)", status)
		}
		if msg != "" {
			s += ": " + msg
		}
		return s
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		pe.Kind = ProviderAuth
		pe.Message = describe(p.safeURL() + " rejected the credentials")
		pe.Hint = "set OPENAI_API_KEY or api_key in [providers] to a valid key for this endpoint"
	case status == http.StatusTooManyRequests:
		pe.Kind = ProviderRateLimited
		pe.Message = describe("rate limited by " + p.safeURL())
		pe.Hint = "wait and try again; retries were exhausted or the server asked to wait too long"
		if strings.Contains(lower, "quota") {
			pe.Hint = "the account is out of quota: check billing or use another key"
		}
	case isContextLength(lower):
		pe.Kind = ProviderContextLength
		pe.Message = describe("the request exceeds the model's context window")
		pe.Hint = "compact the conversation or raise context_window if the model allows it"
	case status == http.StatusNotFound || isModelNotFound(lower):
		pe.Kind = ProviderModelNotFound
		pe.Message = describe(fmt.Sprintf("model %q not found at %s", model, p.safeURL()))
		pe.Hint = fmt.Sprintf("set SWITCHBOARD_MODEL or model in [providers] to a model the server has "+
			"(for Ollama: ollama pull %s), and check that base_url ends in /v1", model)
	case status >= 500:
		pe.Kind = ProviderServer
		pe.Message = describe("the model server failed")
		pe.Hint = "the server kept failing after retries; check its logs or try again later"
	case status == 0:
		pe.Kind = ProviderServer
		pe.Message = describe("the model server failed")
	default:
		pe.Kind = ProviderBadRequest
		pe.Message = describe("the model server rejected the request")
	}
	return pe
}

func isContextLength(lower string) bool {
	for _, s := range []string{"context_length_exceeded", "maximum context length", "context window",
		"context length", "exceed_context_size", "exceeds the available context", "prompt is too long"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

func isModelNotFound(lower string) bool {
	return strings.Contains(lower, "model_not_found") ||
		(strings.Contains(lower, "model") && (strings.Contains(lower, "not found") || strings.Contains(lower, "does not exist")))
}

func (p *OpenAI) badResponse(msg string, err error) *ProviderError {
	return &ProviderError{
		Kind:    ProviderBadResponse,
		Message: fmt.Sprintf("bad response from %s: %s", p.safeURL(), msg),
		Hint:    "the server does not speak OpenAI chat completions as expected; check base_url and the server's logs",
		Err:     err,
	}
}

// safeURL is the base URL without user info, for messages.
func (p *OpenAI) safeURL() string {
	u, err := url.Parse(p.baseURL)
	if err != nil {
		return "the configured base URL"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

// redact removes the API key from text a server sent back.
func (p *OpenAI) redact(s string) string {
	if k := p.opts.APIKey; k != "" {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}

func networkReason(err error) (string, bool) {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr):
		return "host not found", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out", true
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out", true
	case errors.As(err, &opErr):
		return "network error", true
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "the connection was closed", true
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return "request failed", true
	}
	return "", false
}

func isDecodeError(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}

func readErrorBody(res *http.Response) string {
	if res.Body == nil {
		return http.StatusText(res.StatusCode)
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
	if msg := rawErrorText(string(b)); msg != "" {
		return msg
	}
	return http.StatusText(res.StatusCode)
}

// rawErrorText extracts a message from an error body that may be JSON
// ({"error":"..."} as Ollama sends, or {"message":"..."}) or plain text.
func rawErrorText(body string) string {
	body = strings.TrimSpace(body)
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal([]byte(body), &v) == nil {
		if s := rawString(v.Error); s != "" {
			return s
		}
		var inner struct{ Message string }
		if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		if v.Message != "" {
			return v.Message
		}
	}
	return body
}

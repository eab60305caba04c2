package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func userText(text string) Message {
	return Message{Role: RoleUser, Parts: []Part{{Type: PartText, Text: text}}}
}

// providerStep runs one Step and collects its deltas.
func providerStep(t *testing.T, p *OpenAI, req Request) (Response, []Delta, error) {
	t.Helper()
	var deltas []Delta
	resp, err := p.Step(t.Context(), req, func(d Delta) { deltas = append(deltas, d) })
	return resp, deltas, err
}

func wantProviderError(t *testing.T, err error, kind ProviderErrorKind) *ProviderError {
	t.Helper()
	var pe *ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ProviderError", err, err)
	}
	if pe.Kind != kind {
		t.Fatalf("kind %q, want %q: %v", pe.Kind, kind, err)
	}
	return pe
}

func TestProviderStreamsTextWithCachedUsage(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{
		Text:  "Hello from the fake model.",
		Usage: &fakemodel.Usage{PromptTokens: 1200, CompletionTokens: 7, CachedTokens: 1024},
	})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m1"})
	resp, deltas, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	want := Response{
		Text:         "Hello from the fake model.",
		FinishReason: "stop",
		Usage:        Usage{InputTokens: 1200, OutputTokens: 7, CachedTokens: 1024, Reported: true},
		Model:        "m1",
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if len(deltas) < 2 {
		t.Errorf("%d deltas: text was not streamed", len(deltas))
	}
	var joined strings.Builder
	for _, d := range deltas {
		if d.Kind != DeltaText {
			t.Errorf("delta kind %q", d.Kind)
		}
		joined.WriteString(d.Text)
	}
	if joined.String() != want.Text {
		t.Errorf("deltas join to %q", joined.String())
	}
}

func TestProviderUsageNotReportedWithoutUsageChunk(t *testing.T) {
	// A server that ignores stream_options sends no usage chunk.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	}))
	t.Cleanup(srv.Close)
	p := NewOpenAI(OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m"})
	resp, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.Reported || resp.Text != "ok" || resp.Model != "m" {
		t.Errorf("response %+v", resp)
	}
}

func TestProviderReasoningDeltas(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Reasoning: "Let me think about it.", Text: "42"})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	resp, deltas, err := providerStep(t, p, Request{Messages: []Message{userText("q")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "Let me think about it." || resp.Text != "42" {
		t.Errorf("reasoning %q text %q", resp.Reasoning, resp.Text)
	}
	var kinds []DeltaKind
	for _, d := range deltas {
		if len(kinds) == 0 || kinds[len(kinds)-1] != d.Kind {
			kinds = append(kinds, d.Kind)
		}
	}
	if diff := cmp.Diff([]DeltaKind{DeltaReasoning, DeltaText}, kinds); diff != "" {
		t.Errorf("delta kinds in order (-want +got):\n%s", diff)
	}
}

func TestProviderTwoToolCallsIntact(t *testing.T) {
	calls := []fakemodel.ToolCall{
		{ID: "call_a", Name: "Bash", Arguments: `{"command":"echo hi","timeout":1000}`},
		{ID: "call_b", Name: "Read", Arguments: `{"file_path":"/tmp/x.go","limit":20}`},
	}
	want := []ToolCall{
		{ID: "call_a", Name: "Bash", Arguments: `{"command":"echo hi","timeout":1000}`},
		{ID: "call_b", Name: "Read", Arguments: `{"file_path":"/tmp/x.go","limit":20}`},
	}
	for _, tc := range []struct {
		name string
		step fakemodel.Step
	}{
		{"with index", fakemodel.Step{ToolCalls: calls}},
		{"index omitted", fakemodel.Step{ToolCalls: calls, OmitIndex: true}},
		{"index reused", fakemodel.Step{ToolCalls: calls, ReuseIndex: true}},
		{"text then calls", fakemodel.Step{Text: "Running two tools.", ToolCalls: calls, ReuseIndex: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.New(t, tc.step)
			p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
			resp, _, err := providerStep(t, p, Request{Messages: []Message{userText("go")}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if resp.FinishReason != "tool_calls" || resp.Text != tc.step.Text {
				t.Errorf("finish %q text %q", resp.FinishReason, resp.Text)
			}
		})
	}
}

func TestProviderRequestBody(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Text: "done"})
	const key = "sk-test-SECRET-0123456789"
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), APIKey: key, Model: "fallback", MaxOutputTokens: 512})
	req := Request{
		Model:  "qwen3:8b",
		System: "You are switchboard.",
		Tools: []ToolSpec{{
			Name: "Bash", Description: "Run a command.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
		}},
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{
				{Type: PartText, Text: "look at this"},
				{Type: PartImage, MIME: "image/png", Data: []byte{1, 2, 3}},
				{Type: PartReminder, Text: "<system-reminder>time: noon</system-reminder>"},
			}},
			{Role: RoleAssistant, Parts: []Part{{Type: PartText, Text: "Running."}}, ToolCalls: []ToolCall{
				{ID: "call_1", Name: "Bash", Arguments: `{"command":"ls"}`},
				{ID: "call_2", Name: "Bash", Arguments: `{"command": "ls`}, // invalid JSON from the model
			}},
			{Role: RoleTool, ToolCallID: "call_1", ToolName: "Bash", Parts: []Part{{Type: PartText, Text: "a.go"}, {Type: PartReminder, Text: "memory changed"}}},
			{Role: RoleTool, ToolCallID: "call_2", ToolName: "Bash", IsError: true, Parts: []Part{{Type: PartText, Text: "arguments are not valid JSON"}}},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_3", Name: "Read", Arguments: `[1,2]`}}},
			{Role: RoleTool, ToolCallID: "call_3", Parts: []Part{{Type: PartText, Text: "x"}}},
			{Role: RoleUser, Parts: []Part{{Type: PartSummary, Text: "summary of earlier work"}}},
		},
	}
	if _, _, err := providerStep(t, p, req); err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	if r.Model != "qwen3:8b" || !r.Stream || !r.IncludeUsage || r.MaxTokens != 512 || r.MaxTokensField != "max_tokens" {
		t.Errorf("request model %q stream %v usage %v max %d (%s)", r.Model, r.Stream, r.IncludeUsage, r.MaxTokens, r.MaxTokensField)
	}
	type msg struct {
		Role, Text, ToolCallID string
		Parts                  []string
		Calls                  []string
	}
	var msgs []msg
	for _, m := range r.Messages {
		g := msg{Role: m.Role, Text: m.Text(), ToolCallID: m.ToolCallID}
		for _, part := range m.Parts() {
			g.Parts = append(g.Parts, part.Type)
		}
		for _, c := range m.ToolCalls {
			g.Calls = append(g.Calls, c.ID+" "+c.Type+" "+c.Function.Name+" "+c.Function.Arguments)
		}
		msgs = append(msgs, g)
	}
	want := []msg{
		{Role: "system", Text: "You are switchboard.", Parts: []string{"text"}},
		{Role: "user", Text: "look at this\n[image omitted: the model does not accept images]\n<system-reminder>time: noon</system-reminder>", Parts: []string{"text", "text", "text"}},
		{Role: "assistant", Text: "Running.", Parts: []string{"text"}, Calls: []string{`call_1 function Bash {"command":"ls"}`, "call_2 function Bash {}"}},
		{Role: "tool", Text: "a.go\nmemory changed", ToolCallID: "call_1", Parts: []string{"text"}},
		{Role: "tool", Text: "arguments are not valid JSON", ToolCallID: "call_2", Parts: []string{"text"}},
		{Role: "assistant", Calls: []string{"call_3 function Read {}"}},
		{Role: "tool", Text: "x", ToolCallID: "call_3", Parts: []string{"text"}},
		{Role: "user", Text: "summary of earlier work", Parts: []string{"text"}},
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	var tool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if len(r.Tools) != 1 || json.Unmarshal(r.Tools[0], &tool) != nil {
		t.Fatalf("tools %s", r.Tools)
	}
	if tool.Type != "function" || tool.Function.Name != "Bash" || tool.Function.Description != "Run a command." || tool.Function.Parameters["required"] == nil {
		t.Errorf("tool %+v", tool)
	}

	// The key travels only in the Authorization header.
	if got := r.Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization %q", got)
	}
	if strings.Contains(string(r.Raw), key) {
		t.Error("API key in the request body")
	}
	for name, values := range r.Header {
		if name == "Authorization" {
			continue
		}
		for _, v := range values {
			if strings.Contains(v, key) {
				t.Errorf("API key in header %s", name)
			}
		}
	}
}

func TestProviderVisionSendsImages(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Text: "a cat"})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m", Vision: true})
	_, _, err := providerStep(t, p, Request{Messages: []Message{{Role: RoleUser, Parts: []Part{
		{Type: PartText, Text: "what is this"}, {Type: PartImage, MIME: "image/png", Data: []byte("PNG")},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	parts := fake.Requests()[0].Messages[0].Parts()
	if len(parts) != 2 || parts[1].Type != "image_url" || parts[1].ImageURL == nil || parts[1].ImageURL.URL != "data:image/png;base64,UE5H" {
		t.Errorf("parts %+v", parts)
	}
}

func TestProviderNoKeyNoAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-be-used")
	fake := fakemodel.New(t, fakemodel.Step{Text: "ok"})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	if _, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}}); err != nil {
		t.Fatal(err)
	}
	if h := fake.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a configured key", h)
	}
}

func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

func TestProviderUnreachable(t *testing.T) {
	base := closedPortURL(t)
	const key = "sk-unreachable-SECRET"
	p := NewOpenAI(OpenAIOptions{BaseURL: base, APIKey: key, Model: "m", MaxRetries: -1})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	pe := wantProviderError(t, err, ProviderUnreachable)
	for _, want := range []string{base, "OPENAI_BASE_URL", "base_url", "11434"} {
		if !strings.Contains(pe.Error(), want) {
			t.Errorf("message %q does not name %q", pe.Error(), want)
		}
	}
	if strings.Contains(UserMessage(err), key) {
		t.Error("API key in the user message")
	}
	if !strings.Contains(pe.Message, "connection refused") {
		t.Errorf("message %q does not say why", pe.Message)
	}
}

func TestProviderServerErrorAfterRetries(t *testing.T) {
	step := fakemodel.Step{Status: http.StatusInternalServerError, RetryAfter: "0"}
	fake := fakemodel.New(t, step, step, step, step, fakemodel.Step{Text: "never reached"})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m", MaxRetries: 3})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	pe := wantProviderError(t, err, ProviderServer)
	if pe.Status != http.StatusInternalServerError {
		t.Errorf("status %d", pe.Status)
	}
	if got := len(fake.Requests()); got != 4 {
		t.Errorf("%d requests, want 1 + 3 retries", got)
	}
}

func TestProviderRetriesRateLimitHonouringRetryAfter(t *testing.T) {
	fake := fakemodel.New(t,
		fakemodel.Step{Status: http.StatusTooManyRequests, RetryAfter: "1"},
		fakemodel.Step{Text: "after the wait"},
	)
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	resp, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "after the wait" {
		t.Errorf("text %q", resp.Text)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// A correctness check that Retry-After was honoured, not a speed test:
	// the retry must not come before the server allowed it.
	if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 900*time.Millisecond {
		t.Errorf("retry came %v after the 429 with Retry-After: 1", gap)
	}
	if string(reqs[0].Raw) != string(reqs[1].Raw) {
		t.Error("the retry sent a different body")
	}
}

func TestProviderRateLimitedWhenServerAsksTooLong(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Status: http.StatusTooManyRequests, RetryAfter: "3600"})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	wantProviderError(t, err, ProviderRateLimited)
	if got := len(fake.Requests()); got != 1 {
		t.Errorf("%d requests: a Retry-After above the cap must not be waited for", got)
	}
}

func TestProviderModelNotFound(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.ModelNotFoundError("nosuch:7b"))
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "nosuch:7b"})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	pe := wantProviderError(t, err, ProviderModelNotFound)
	for _, want := range []string{"nosuch:7b", "SWITCHBOARD_MODEL"} {
		if !strings.Contains(pe.Error(), want) {
			t.Errorf("message %q does not name %q", pe.Error(), want)
		}
	}
}

func TestProviderOllamaStyleModelNotFound(t *testing.T) {
	// Ollama answers an unknown model with {"error":"model \"x\" not found, try pulling it first"}.
	fake := fakemodel.New(t, fakemodel.Step{Status: http.StatusNotFound, ErrorBody: `{"error":"model \"x\" not found, try pulling it first"}`})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "x"})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	pe := wantProviderError(t, err, ProviderModelNotFound)
	if !strings.Contains(pe.Message, "try pulling it first") {
		t.Errorf("message %q lost the server's words", pe.Message)
	}
}

func TestProviderAuth(t *testing.T) {
	const key = "sk-wrong-SECRET-key"
	fake := fakemodel.New(t, fakemodel.Step{Status: http.StatusUnauthorized,
		ErrorBody: `{"error":{"message":"Incorrect API key provided: sk-wrong-SECRET-key.","type":"invalid_request_error","code":"invalid_api_key"}}`})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), APIKey: key, Model: "m"})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	pe := wantProviderError(t, err, ProviderAuth)
	if !strings.Contains(pe.Hint, "OPENAI_API_KEY") {
		t.Errorf("hint %q", pe.Hint)
	}
	if strings.Contains(UserMessage(err), key) {
		t.Errorf("API key echoed: %q", UserMessage(err))
	}
}

func TestProviderContextLength(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.ContextLengthError(),
		fakemodel.Step{Status: http.StatusBadRequest, ErrorBody: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	for range 2 {
		_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
		if !IsContextLength(err) {
			t.Errorf("IsContextLength(%v) = false", err)
		}
	}
}

func TestProviderPlainTextError(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Status: http.StatusBadRequest, ErrorBody: "bad things"})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	pe := wantProviderError(t, err, ProviderBadRequest)
	if pe.Status != http.StatusBadRequest {
		t.Errorf("status %d", pe.Status)
	}
}

func TestProviderMalformedStream(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Malformed: true, Text: "partial"}, fakemodel.Step{Text: "not used"})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	_, deltas, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	wantProviderError(t, err, ProviderBadResponse)
	if len(deltas) == 0 {
		t.Error("no deltas before the break: the test does not cover a mid-stream failure")
	}
	if got := len(fake.Requests()); got != 1 {
		t.Errorf("%d requests: a stream that broke after deltas must not be retried", got)
	}
}

func TestProviderTruncatedStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"half"}}]}` + "\n\n"))
	}))
	t.Cleanup(srv.Close)
	p := NewOpenAI(OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m"})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	wantProviderError(t, err, ProviderBadResponse)
}

func TestProviderErrorEventMidStream(t *testing.T) {
	const key = "sk-test-SECRET-in-error"
	for _, tc := range []struct{ name, event, want string }{
		{"object", `{"error":{"message":"the model is overloaded (key ` + key + `)","type":"server_error"}}`, "overloaded"},
		{"string", `{"error":"upstream went away"}`, "upstream went away"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"half"}}]}` + "\n\n" +
					"data: " + tc.event + "\n\n"))
			}))
			t.Cleanup(srv.Close)
			p := NewOpenAI(OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m", APIKey: key})
			_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
			pe := wantProviderError(t, err, ProviderServer)
			if !strings.Contains(pe.Message, "mid-stream") || !strings.Contains(pe.Message, tc.want) {
				t.Errorf("message %q", pe.Message)
			}
			if strings.Contains(pe.Error(), key) {
				t.Errorf("message %q shows the API key", pe.Error())
			}
		})
	}
}

func TestProviderNoChoices(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	}))
	t.Cleanup(srv.Close)
	p := NewOpenAI(OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m"})
	_, _, err := providerStep(t, p, Request{Messages: []Message{userText("hi")}})
	wantProviderError(t, err, ProviderBadResponse)
}

func TestProviderCancelMidStream(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	fake := fakemodel.New(t, fakemodel.Step{Text: "one two three", BlockMidStream: hold})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	ctx, cancel := context.WithCancel(t.Context())
	_, err := p.Step(ctx, Request{Messages: []Message{userText("hi")}}, func(Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		t.Errorf("cancellation reported as provider error %v", pe)
	}
}

func TestProviderNoModel(t *testing.T) {
	p := NewOpenAI(OpenAIOptions{BaseURL: closedPortURL(t)})
	_, _, err := providerStep(t, p, Request{})
	pe := wantProviderError(t, err, ProviderModelNotFound)
	if !strings.Contains(pe.Hint, "SWITCHBOARD_MODEL") {
		t.Errorf("hint %q", pe.Hint)
	}
}

func TestProviderToolCallAccumulator(t *testing.T) {
	idx := func(i int) *int { return &i }
	d := func(index *int, id, name, args string) toolCallDelta {
		var td toolCallDelta
		td.Index, td.ID, td.Function.Name, td.Function.Arguments = index, id, name, args
		return td
	}
	for _, tc := range []struct {
		name   string
		deltas []toolCallDelta
		want   []ToolCall
	}{
		{"openai", []toolCallDelta{d(idx(0), "a", "X", ""), d(idx(0), "", "", `{"n":`), d(idx(1), "b", "Y", ""), d(idx(0), "", "", `1}`), d(idx(1), "", "", `{}`)},
			[]ToolCall{{ID: "a", Name: "X", Arguments: `{"n":1}`}, {ID: "b", Name: "Y", Arguments: `{}`}}},
		{"id repeated on every fragment", []toolCallDelta{d(nil, "a", "X", `{"n"`), d(nil, "a", "X", `:1}`)},
			[]ToolCall{{ID: "a", Name: "X", Arguments: `{"n":1}`}}},
		{"whole calls, index 0 reused", []toolCallDelta{d(idx(0), "a", "X", `{}`), d(idx(0), "b", "Y", `{"k":2}`)},
			[]ToolCall{{ID: "a", Name: "X", Arguments: `{}`}, {ID: "b", Name: "Y", Arguments: `{"k":2}`}}},
		{"name split", []toolCallDelta{d(idx(0), "a", "Ba", ""), d(idx(0), "", "sh", `{}`)},
			[]ToolCall{{ID: "a", Name: "Bash", Arguments: `{}`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc := newToolCallAccumulator(&outputBudget{limit: DefaultMaxStepOutput})
			for _, delta := range tc.deltas {
				if err := acc.add(delta); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, acc.result()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}

	// Without ids and indexes every call gets a distinct generated id.
	acc := newToolCallAccumulator(&outputBudget{limit: DefaultMaxStepOutput})
	_ = acc.add(d(idx(0), "", "X", "{}"))
	_ = acc.add(d(idx(1), "", "Y", "{}"))
	got := acc.result()
	if len(got) != 2 || got[0].ID == "" || got[0].ID == got[1].ID || got[0].Name != "X" || got[1].Name != "Y" {
		t.Errorf("calls without ids %+v", got)
	}
}

// FuzzProviderStreamChunks feeds arbitrary chunk payloads (one per line)
// through the stream accumulator: it must never panic, it never keeps more
// output than its cap, and every tool call it returns has a distinct,
// non-empty id.
func FuzzProviderStreamChunks(f *testing.F) {
	f.Add(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`)
	f.Add(`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"X","arguments":"{"}}]}}]}` + "\n" +
		`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}` + "\n" +
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"Y"}}]},"finish_reason":"tool_calls"}]}`)
	f.Add(`{"choices":[{"delta":{"tool_calls":[{"index":-5},{"index":3,"id":""},{}]}}]}` + "\n" + `{"choices":[],"usage":{"prompt_tokens":3,"prompt_tokens_details":null}}`)
	f.Add(`{"choices":[{"delta":{"reasoning":"r","reasoning_content":{"x":1},"content":["a"]}}]}`)
	f.Add("not json\n{}")
	f.Fuzz(func(t *testing.T, input string) {
		const limit = 200
		acc := newStreamAccumulator(limit)
		streamed := 0
		for line := range strings.SplitSeq(input, "\n") {
			if err := acc.add([]byte(line), func(d Delta) { streamed += len(d.Text) }); errors.Is(err, errOutputLimit) {
				break
			}
		}
		kept := acc.text.Len() + acc.reasoning.Len()
		for i, c := range acc.calls.calls {
			kept += len(c.ID) + len(c.Name) + len(acc.calls.args[i])
		}
		if streamed > limit || kept > limit {
			t.Fatalf("streamed %d and kept %d bytes with a cap of %d", streamed, kept, limit)
		}
		resp, err := acc.response()
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range resp.ToolCalls {
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("tool call ids %+v", resp.ToolCalls)
			}
			seen[c.ID] = true
		}
	})
}

package agentcore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
)

// The request body is encoded by hand (provider_request.go); these tests
// hold it to what openai-go itself sends for the same request, built from
// the SDK's parameter types the way the provider built it before.

// recordBody is a transport that keeps the body of the request it is
// given and fails it.
type recordBody struct{ body []byte }

func (r *recordBody) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	r.body = b
	if err != nil {
		return nil, err
	}
	return nil, errors.New("recorded")
}

// sdkBody is the body openai-go sends for req.
func sdkBody(t *testing.T, opts OpenAIOptions, req Request) []byte {
	t.Helper()
	rec := &recordBody{}
	opts.BaseURL, opts.MaxRetries, opts.HTTPClient = "http://model.invalid/v1", -1, &http.Client{Transport: rec}
	p := NewOpenAI(opts)
	params, err := p.sdkParams(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = p.client.Post(context.Background(), "chat/completions", params, nil, option.WithJSONSet("stream", true))
	return bytes.TrimSpace(rec.body)
}

func TestRequestBodyIsTheSDKs(t *testing.T) {
	var ascii strings.Builder
	for c := range 128 {
		ascii.WriteByte(byte(c))
	}
	bash := ToolSpec{Name: "Bash", Description: "Run a <command> & wait.",
		Parameters: json.RawMessage(`{"type":"object", "properties":{"command":{"type":"string","description":"a \u003cshell\u003e line"}},"required":["command"]}`)}
	read := ToolSpec{Name: "Read", Parameters: json.RawMessage(`not json`)}
	conv := []Message{
		{Role: RoleUser, Parts: []Part{
			{Type: PartText, Text: "look at this"},
			{Type: PartImage, MIME: "image/png", Data: []byte{1, 2, 3}},
			{Type: PartReminder, Text: "<system-reminder>time: noon</system-reminder>"},
		}},
		{Role: RoleUser, Parts: []Part{{Type: PartImage, MIME: "image/jpeg", Data: []byte("JPEG")}}},
		{Role: RoleUser, Parts: []Part{{Type: PartText, Text: "one part"}}},
		{Role: RoleUser},
		{Role: RoleAssistant, Parts: []Part{{Type: PartText, Text: "Running."}}, ToolCalls: []ToolCall{
			{ID: "call_1", Name: "Bash", Arguments: `{"command":"ls"}`},
			{ID: "call_2", Name: "Bash", Arguments: `{"command": "ls`},
			{ID: "call_3", Name: "Bash", Arguments: " \n{\"a\": [1, {\"b\": null}]} "},
			{ID: "call_4", Name: "Bash", Arguments: `null`},
			{ID: "call_5", Name: "Bash", Arguments: `[1,2]`},
			{ID: "call_6", Name: "Bash", Arguments: ``},
			{ID: "call_7", Name: "Bash", Arguments: `{} {}`},
		}},
		{Role: RoleTool, ToolCallID: "call_1", ToolName: "Bash", Parts: []Part{{Type: PartText, Text: "a.go"}, {Type: PartReminder, Text: "memory changed"}}},
		{Role: RoleTool, ToolCallID: "call_2", IsError: true, Parts: []Part{{Type: PartText, Text: "arguments are not valid JSON"}}},
		{Role: RoleAssistant},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_8", Name: "Read", Arguments: `{}`}}},
		{Role: RoleAssistant, Parts: []Part{{Type: PartReminder, Text: "noted"}, {Type: PartText, Text: "a"}, {Type: PartText, Text: "b"}}},
		{Role: RoleUser, Parts: []Part{{Type: PartSummary, Text: "summary of earlier work"}}},
		{Role: RoleUser, Parts: []Part{{Type: PartText, Text: ascii.String() + "\u2028\u2029 é ☃ 𝄞 \xff\xc3 end"}}},
	}
	for _, c := range []struct {
		name string
		opts OpenAIOptions
		req  Request
	}{
		{"everything", OpenAIOptions{Model: "fallback", MaxOutputTokens: 512},
			Request{Model: "qwen3:8b", System: "You are <switchboard> & \u2028 \xff.", Tools: []ToolSpec{bash, read}, Messages: conv}},
		{"vision, the options' model, the request's max tokens", OpenAIOptions{Model: "fallback", Vision: true},
			Request{System: ascii.String(), Messages: conv, MaxOutputTokens: 7}},
		{"no system, no tools, no messages", OpenAIOptions{Model: "m"}, Request{}},
		{"a plain turn", OpenAIOptions{Model: "m", MaxOutputTokens: 1024},
			Request{System: "You are a benchmark agent.", Tools: []ToolSpec{bash}, Messages: conv[2:3]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := sdkBody(t, c.opts, c.req)
			c.opts.BaseURL = "http://model.invalid/v1"
			p := NewOpenAI(c.opts)
			for range 2 { // the second time with the tools cached
				got, _, err := p.requestBody(c.req)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("body differs from openai-go's:\n got %s\nwant %s", got, want)
				}
			}
		})
	}
}

func TestAppendJSONStringIsEncodingJSONs(t *testing.T) {
	for _, s := range []string{"", "plain", "\x00\x1f\x7f\"\\/", "<>&", "\u2028\u2029\u2027", "\xff", "a\xe2\x82", "é☃𝄞", "\ufffd"} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q: got %s, want %s", s, got, want.String())
		}
	}
}

func TestToolSpecCacheSeesChangedSpecs(t *testing.T) {
	p := NewOpenAI(OpenAIOptions{BaseURL: "http://model.invalid/v1", Model: "m"})
	spec := ToolSpec{Name: "Bash", Description: "one", Parameters: json.RawMessage(`{"type":"object"}`)}
	for _, change := range []func(*ToolSpec){
		func(*ToolSpec) {},
		func(s *ToolSpec) { s.Description = "two" },
		func(s *ToolSpec) { s.Parameters = json.RawMessage(`{"type":"object","properties":{}}`) },
	} {
		change(&spec)
		got, _, err := p.requestBody(Request{Tools: []ToolSpec{spec}})
		if err != nil {
			t.Fatal(err)
		}
		if want := sdkBody(t, OpenAIOptions{Model: "m"}, Request{Tools: []ToolSpec{spec}}); !bytes.Equal(got, want) {
			t.Fatalf("after a change of the spec:\n got %s\nwant %s", got, want)
		}
	}
}

func (p *OpenAI) sdkParams(req Request) (openai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.opts.Model
	}
	if model == "" {
		return openai.ChatCompletionNewParams{}, &ProviderError{
			Kind:    ProviderModelNotFound,
			Message: "no model configured",
			Hint:    "set SWITCHBOARD_MODEL or model in [providers]",
		}
	}
	params := openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      p.sdkMessages(req),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = p.opts.MaxOutputTokens
	}
	if maxTokens > 0 {
		// max_tokens, not max_completion_tokens: Ollama, vLLM and llama.cpp
		// read this one.
		params.MaxTokens = openai.Int(int64(maxTokens))
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, sdkEncodedTool(t))
	}
	return params, nil
}

// sdkEncodedTool is the tool's parameter with its JSON encoded once: openai-go
// sends an overridden param as its raw JSON.
func sdkEncodedTool(t ToolSpec) openai.ChatCompletionToolUnionParam {
	tool := openai.ChatCompletionFunctionTool(functionDefinition(t))
	raw, err := json.Marshal(tool.OfFunction)
	if err != nil {
		return tool
	}
	fn := param.Override[openai.ChatCompletionFunctionToolParam](json.RawMessage(raw))
	return openai.ChatCompletionToolUnionParam{OfFunction: &fn}
}

func (p *OpenAI) sdkMessages(req Request) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleAssistant:
			out = append(out, sdkAssistantMessage(m))
		case RoleTool:
			out = append(out, openai.ToolMessage(m.ModelText(), m.ToolCallID))
		default:
			out = append(out, p.sdkUserMessage(m))
		}
	}
	return out
}

// sdkUserMessage sends a single text part as a plain string (what every
// compatible server accepts) and anything else as content parts in order.
func (p *OpenAI) sdkUserMessage(m Message) openai.ChatCompletionMessageParamUnion {
	if len(m.Parts) == 0 {
		return openai.UserMessage("")
	}
	if len(m.Parts) == 1 && m.Parts[0].Type != PartImage {
		return openai.UserMessage(m.Parts[0].Text)
	}
	parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(m.Parts))
	for _, part := range m.Parts {
		switch {
		case part.Type != PartImage:
			parts = append(parts, openai.TextContentPart(part.Text))
		case p.opts.Vision:
			u := "data:" + part.MIME + ";base64," + base64.StdEncoding.EncodeToString(part.Data)
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
		default:
			parts = append(parts, openai.TextContentPart(imageOmitted))
		}
	}
	return openai.UserMessage(parts)
}

func sdkAssistantMessage(m Message) openai.ChatCompletionMessageParamUnion {
	var a openai.ChatCompletionAssistantMessageParam
	if text := m.Text(); text != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(text)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: sdkHistoryArguments(tc.Arguments),
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// sdkHistoryArguments is historyArguments as it was: what json.Unmarshal
// into a map accepts.
func sdkHistoryArguments(args string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return "{}"
	}
	return args
}

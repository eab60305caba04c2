package agentcore

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
)

// The chat-completions request body, encoded by hand. It is byte for byte
// what openai-go sends for the same request built from its parameter
// types (ChatCompletionNewParams.MarshalJSON, then "stream": true set on
// it; provider_request_test.go checks that against the SDK itself), but
// without the SDK's reflection, which was a tenth of a plain turn's CPU:
// the system prompt and the tool schemas, the same on every step, were
// escaped and compacted again each time.

// requestBody returns the JSON body of req's streamed request and the
// model it names.
func (p *OpenAI) requestBody(req Request) ([]byte, string, error) {
	model := req.Model
	if model == "" {
		model = p.opts.Model
	}
	if model == "" {
		return nil, "", &ProviderError{
			Kind:    ProviderModelNotFound,
			Message: "no model configured",
			Hint:    "set SWITCHBOARD_MODEL or model in [providers]",
		}
	}
	tools := make([][]byte, len(req.Tools))
	size := 128 + len(model) + len(req.System)
	for i, t := range req.Tools {
		b, err := p.toolJSON(t)
		if err != nil {
			return nil, "", fmt.Errorf("encode tool %s: %w", t.Name, err)
		}
		tools[i] = b
		size += len(b) + 1
	}
	for _, m := range req.Messages {
		size += 64 + len(m.ToolCallID)
		for _, part := range m.Parts {
			size += 32 + len(part.Text) + len(part.Data)*4/3
		}
		for _, c := range m.ToolCalls {
			size += 96 + len(c.ID) + len(c.Name) + len(c.Arguments)*5/4
		}
	}
	b := make([]byte, 0, size)

	b = append(b, '{')
	if req.System != "" || len(req.Messages) > 0 { // the SDK omits an empty list
		b = append(b, `"messages":[`...)
		n := 0
		next := func() {
			if n > 0 {
				b = append(b, ',')
			}
			n++
		}
		if req.System != "" {
			next()
			b = append(b, `{"content":`...)
			b = appendJSONString(b, req.System)
			b = append(b, `,"role":"system"}`...)
		}
		for _, m := range req.Messages {
			next()
			switch m.Role {
			case RoleAssistant:
				b = appendAssistantMessage(b, m)
			case RoleTool:
				b = append(b, `{"content":`...)
				b = appendJSONString(b, m.ModelText())
				b = append(b, `,"tool_call_id":`...)
				b = appendJSONString(b, m.ToolCallID)
				b = append(b, `,"role":"tool"}`...)
			default:
				b = p.appendUserMessage(b, m)
			}
		}
		b = append(b, `],`...)
	}
	b = append(b, `"model":`...)
	b = appendJSONString(b, model)
	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = p.opts.MaxOutputTokens
	}
	if maxTokens > 0 {
		// max_tokens, not max_completion_tokens: Ollama, vLLM and llama.cpp
		// read this one.
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(maxTokens), 10)
	}
	b = append(b, `,"stream_options":{"include_usage":true}`...)
	if len(tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"stream":true}`...)
	return b, model, nil
}

// appendUserMessage sends a single text part as a plain string (what
// every compatible server accepts) and anything else as content parts in
// order.
func (p *OpenAI) appendUserMessage(b []byte, m Message) []byte {
	b = append(b, `{"content":`...)
	switch {
	case len(m.Parts) == 0:
		b = append(b, `""`...)
	case len(m.Parts) == 1 && m.Parts[0].Type != PartImage:
		b = appendJSONString(b, m.Parts[0].Text)
	default:
		b = append(b, '[')
		for i, part := range m.Parts {
			if i > 0 {
				b = append(b, ',')
			}
			switch {
			case part.Type != PartImage:
				b = appendTextPart(b, part.Text)
			case p.opts.Vision:
				b = append(b, `{"image_url":{"url":"data:`...)
				b = appendJSONStringBody(b, part.MIME)
				b = append(b, ";base64,"...)
				b = base64.StdEncoding.AppendEncode(b, part.Data)
				b = append(b, `"},"type":"image_url"}`...)
			default:
				b = appendTextPart(b, imageOmitted)
			}
		}
		b = append(b, ']')
	}
	return append(b, `,"role":"user"}`...)
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"text":`...)
	b = appendJSONString(b, text)
	return append(b, `,"type":"text"}`...)
}

func appendAssistantMessage(b []byte, m Message) []byte {
	b = append(b, '{')
	if text := m.Text(); text != "" || len(m.ToolCalls) == 0 {
		b = append(b, `"content":`...)
		b = appendJSONString(b, text)
		b = append(b, ',')
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, tc.ID)
			b = append(b, `,"function":{"arguments":`...)
			b = appendJSONString(b, historyArguments(tc.Arguments))
			b = append(b, `,"name":`...)
			b = appendJSONString(b, tc.Name)
			b = append(b, `},"type":"function"}`...)
		}
		b = append(b, `],`...)
	}
	return append(b, `"role":"assistant"}`...)
}

// toolJSON returns the tool's spec as sent, encoded once per distinct
// spec (the specs are the same on every step).
func (p *OpenAI) toolJSON(t ToolSpec) ([]byte, error) {
	p.toolsMu.RLock()
	e, ok := p.tools[t.Name]
	p.toolsMu.RUnlock()
	if ok && e.description == t.Description && string(e.parameters) == string(t.Parameters) {
		return e.json, nil
	}
	tool := openai.ChatCompletionFunctionTool(functionDefinition(t))
	b, err := json.Marshal(tool.OfFunction)
	if err != nil {
		return nil, err
	}
	p.toolsMu.Lock()
	defer p.toolsMu.Unlock()
	if p.tools == nil || len(p.tools) >= maxToolSpecs {
		// Specs differ by agent and task type only: this bound is never
		// reached in practice, and forgetting merely costs an encoding.
		p.tools = map[string]toolSpecJSON{}
	}
	p.tools[t.Name] = toolSpecJSON{description: t.Description, parameters: append(json.RawMessage(nil), t.Parameters...), json: b}
	return b, nil
}

// maxToolSpecs bounds the provider's cache of encoded tool specs.
const maxToolSpecs = 1024

// toolSpecJSON is one cached tool spec: the spec it was encoded from and
// the JSON sent for it.
type toolSpecJSON struct {
	description string
	parameters  json.RawMessage
	json        []byte
}

func functionDefinition(t ToolSpec) openai.FunctionDefinitionParam {
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	def := openai.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
	if t.Description != "" {
		def.Description = openai.String(t.Description)
	}
	return def
}

// historyArguments returns stored tool-call arguments fit to send back:
// providers reject histories whose arguments are not a JSON object, and
// the call was already answered with an error result.
func historyArguments(args string) string {
	// What json.Unmarshal into a map accepts: a valid JSON object.
	if strings.HasPrefix(strings.TrimLeft(args, " \t\n\r"), "{") && json.Valid([]byte(args)) {
		return args
	}
	return "{}"
}

// appendJSONString appends s as a JSON string the way encoding/json does
// without HTML escaping (as openai-go encodes): control characters, '"'
// and '\\' escaped, U+2028 and U+2029 escaped, invalid UTF-8 replaced by
// U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendJSONStringBody(b, s)
	return append(b, '"')
}

func appendJSONStringBody(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

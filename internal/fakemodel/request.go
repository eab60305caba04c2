package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Request is one chat-completions request as the fake received it.
type Request struct {
	// Raw is the request body exactly as received.
	Raw    []byte
	Header http.Header
	// Time is when the request arrived (for checks such as "the retry
	// honoured Retry-After").
	Time time.Time

	Model    string
	Messages []Message
	Tools    []json.RawMessage
	Stream   bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// MaxTokens is max_tokens, or max_completion_tokens when that is set
	// instead; 0 when neither is.
	MaxTokens int
	// MaxTokensField names which of the two fields carried MaxTokens.
	MaxTokensField string
}

// Message is one entry of a request's messages array.
type Message struct {
	Role string `json:"role"`
	// Content is the raw content: a JSON string, an array of parts, or
	// null/absent.
	Content    json.RawMessage   `json:"content,omitempty"`
	ToolCalls  []MessageToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	Name       string            `json:"name,omitempty"`
}

// MessageToolCall is a tool call in an assistant message of a request.
type MessageToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ContentPart is one element of an array content.
type ContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
}

// Parts returns the message's content as parts: a string content is one
// text part; null or absent content is none. Content that is neither
// yields a single part of type "invalid".
func (m Message) Parts() []ContentPart {
	c := strings.TrimSpace(string(m.Content))
	if c == "" || c == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return []ContentPart{{Type: "text", Text: s}}
	}
	var parts []ContentPart
	if err := json.Unmarshal(m.Content, &parts); err == nil {
		return parts
	}
	return []ContentPart{{Type: "invalid", Text: c}}
}

// Text joins the text of the message's text parts with newlines.
func (m Message) Text() string {
	var texts []string
	for _, p := range m.Parts() {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// ToolNames returns the name of each function tool of the request, in order.
func (r Request) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		var tool struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(t, &tool) == nil {
			names = append(names, tool.Function.Name)
		}
	}
	return names
}

// LastMessage is the request's last message, or the zero Message.
func (r Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

func parseRequest(raw []byte) (Request, error) {
	req := Request{Raw: raw}
	var body struct {
		Model         string            `json:"model"`
		Messages      []Message         `json:"messages"`
		Tools         []json.RawMessage `json:"tools"`
		Stream        bool              `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		MaxTokens           *int `json:"max_tokens"`
		MaxCompletionTokens *int `json:"max_completion_tokens"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return req, fmt.Errorf("request body is not a chat-completions request: %w", err)
	}
	req.Model = body.Model
	req.Messages = body.Messages
	req.Tools = body.Tools
	req.Stream = body.Stream
	req.IncludeUsage = body.StreamOptions != nil && body.StreamOptions.IncludeUsage
	switch {
	case body.MaxTokens != nil:
		req.MaxTokens, req.MaxTokensField = *body.MaxTokens, "max_tokens"
	case body.MaxCompletionTokens != nil:
		req.MaxTokens, req.MaxTokensField = *body.MaxCompletionTokens, "max_completion_tokens"
	}
	return req, nil
}

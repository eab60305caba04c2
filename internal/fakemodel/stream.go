package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// created is the fixed timestamp of every response, so recorded outputs
// are deterministic.
const created = 1700000000

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type chunkChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usageJSON    `json:"usage,omitempty"`
}

// streamer writes one SSE answer.
type streamer struct {
	w     http.ResponseWriter
	id    string
	model string
	err   error
}

func (st *streamer) raw(line string) {
	if st.err != nil {
		return
	}
	if _, err := io.WriteString(st.w, line); err != nil {
		st.err = err
		return
	}
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (st *streamer) send(c chunk) {
	if ev := st.encode(c); st.err == nil {
		st.raw(ev)
	}
}

func (st *streamer) delta(d map[string]any) {
	st.send(chunk{Choices: []chunkChoice{{Delta: d}}})
}

func (st *streamer) run(ctx context.Context, s *Server, req Request, step Step) {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	st.w.WriteHeader(http.StatusOK)

	st.delta(map[string]any{"role": "assistant", "content": ""})
	if step.Malformed {
		if step.Text != "" {
			st.delta(map[string]any{"content": step.Text})
		}
		st.raw("data: {\"id\":\"" + st.id + "\",\"choices\":[{\"delta\":{\"content\":\"tru\n\n")
		st.raw("data: this is not json\n\n")
		return // the handler returns: the connection closes without [DONE]
	}
	first := true
	hold := func() bool {
		if !first {
			return true
		}
		first = false
		return s.wait(ctx, step.BlockMidStream)
	}
	for _, part := range split(step.Reasoning, 3) {
		st.delta(map[string]any{"reasoning_content": part})
		if !hold() {
			return
		}
	}
	for _, part := range split(step.Text, 3) {
		st.delta(map[string]any{"content": part})
		if !hold() {
			return
		}
	}
	if step.Stall {
		st.delta(map[string]any{"content": ""})
		s.wait(ctx, make(chan struct{}))
		return
	}
	if step.HugeChunk > 0 {
		st.huge(step.HugeChunk)
	}
	if step.Endless != "" {
		st.endless(ctx, s, step.Endless)
		return
	}
	for i, tc := range step.ToolCalls {
		index := i
		if step.ReuseIndex {
			index = 0
		}
		withIndex := func(d map[string]any) map[string]any {
			if !step.OmitIndex {
				d["index"] = index
			}
			return d
		}
		st.delta(map[string]any{"tool_calls": []any{withIndex(map[string]any{
			"id":       tc.ID,
			"type":     "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		})}})
		for _, frag := range split(tc.Arguments, 3) {
			st.delta(map[string]any{"tool_calls": []any{withIndex(map[string]any{
				"function": map[string]any{"arguments": frag},
			})}})
		}
		if !hold() {
			return
		}
	}
	finish := finishReason(step)
	st.send(chunk{Choices: []chunkChoice{{Delta: map[string]any{}, FinishReason: &finish}}})
	if req.IncludeUsage {
		st.send(chunk{Choices: []chunkChoice{}, Usage: usageOf(req, step)})
	}
	st.raw("data: [DONE]\n\n")
}

// endlessPiece is the text each endless delta carries.
const endlessPiece = "All work and no play makes Jack a dull boy. "

// endless streams deltas of kind until the client or the server goes
// away. Every chunk is the same bytes, built once, so the fake's own
// memory stays flat while the client is flooded.
func (st *streamer) endless(ctx context.Context, s *Server, kind Endless) {
	var event string
	switch kind {
	case EndlessEvent:
		st.raw("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\n")
		event = "data: " + strings.Repeat(endlessPiece, 20) + "\n"
	case EndlessArguments:
		st.delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": "call_endless", "type": "function",
			"function": map[string]any{"name": "Bash", "arguments": `{"command":"`},
		}}})
		event = st.encode(chunk{Choices: []chunkChoice{{Delta: map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "function": map[string]any{"arguments": endlessPiece},
		}}}}}})
	case EndlessReasoning:
		event = st.encode(chunk{Choices: []chunkChoice{{Delta: map[string]any{"reasoning_content": endlessPiece}}}})
	default:
		event = st.encode(chunk{Choices: []chunkChoice{{Delta: map[string]any{"content": endlessPiece}}}})
	}
	for st.err == nil {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		default:
		}
		st.raw(event)
	}
}

// huge streams one content delta of n bytes in a single SSE event,
// written in pieces.
func (st *streamer) huge(n int) {
	head := st.encode(chunk{Choices: []chunkChoice{{Delta: map[string]any{"content": "\x00"}}}})
	before, after, _ := strings.Cut(head, `\u0000`)
	st.raw(before)
	piece := strings.Repeat("x", 32<<10)
	for n > 0 && st.err == nil {
		k := min(n, len(piece))
		st.raw(piece[:k])
		n -= k
	}
	st.raw(after)
}

// encode returns c as one SSE event.
func (st *streamer) encode(c chunk) string {
	c.ID, c.Object, c.Created, c.Model = st.id, "chat.completion.chunk", created, st.model
	b, err := json.Marshal(c)
	if err != nil {
		st.err = err
		return ""
	}
	return "data: " + string(b) + "\n\n"
}

func finishReason(step Step) string {
	switch {
	case step.FinishReason != "":
		return step.FinishReason
	case len(step.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

func usageOf(req Request, step Step) *usageJSON {
	var u usageJSON
	if step.Usage != nil {
		u.PromptTokens = step.Usage.PromptTokens
		u.CompletionTokens = step.Usage.CompletionTokens
		u.PromptTokensDetails.CachedTokens = step.Usage.CachedTokens
	} else {
		out := len(step.Text) + len(step.Reasoning)
		for _, tc := range step.ToolCalls {
			out += len(tc.Name) + len(tc.Arguments)
		}
		u.PromptTokens = max(1, len(req.Raw)/4)
		u.CompletionTokens = max(1, out/4)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return &u
}

// writeCompletion answers a request with stream=false.
func writeCompletion(w http.ResponseWriter, id, model string, req Request, step Step) {
	msg := map[string]any{"role": "assistant", "content": step.Text}
	if step.Reasoning != "" {
		msg["reasoning_content"] = step.Reasoning
	}
	if len(step.ToolCalls) > 0 {
		var calls []any
		for _, tc := range step.ToolCalls {
			calls = append(calls, map[string]any{
				"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			})
		}
		msg["tool_calls"] = calls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishReason(step)}},
		"usage":   usageOf(req, step),
	})
}

// split cuts s into at most n non-empty pieces on rune boundaries.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := max(1, (len(s)+n-1)/n)
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// String describes the step for test failure messages.
func (s Step) String() string {
	switch {
	case s.Status != 0:
		return fmt.Sprintf("Step{Status: %d}", s.Status)
	case s.Malformed:
		return "Step{Malformed}"
	default:
		return fmt.Sprintf("Step{Text: %q, ToolCalls: %d}", s.Text, len(s.ToolCalls))
	}
}

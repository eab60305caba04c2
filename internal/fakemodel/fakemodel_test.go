package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// events reads an SSE body into its data payloads.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line without data prefix: %q", line)
		}
		out = append(out, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type testChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role             string `json:"role"`
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

const streamBody = `{"model":"m1","stream":true,"stream_options":{"include_usage":true},"max_tokens":77,
"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{}"}}]},
{"role":"tool","tool_call_id":"c1","content":"out"}],
"tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}]}`

func TestStreamShape(t *testing.T) {
	s := New(t, Step{
		Reasoning: "thinking hard",
		Text:      "hello there, world",
		ToolCalls: []ToolCall{{ID: "call_1", Name: "Bash", Arguments: `{"command":"echo hi"}`}, {ID: "call_2", Name: "Read", Arguments: `{"file_path":"a.go"}`}},
		Usage:     &Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 64},
	})
	res := post(t, t.Context(), s.URL(), streamBody)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	data := events(t, res.Body)
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", data[len(data)-1])
	}
	var reasoning, text string
	var finish []string
	args := map[string]string{}
	names := map[string]string{}
	var order []string
	var usageChunks int
	last := ""
	for i, d := range data[:len(data)-1] {
		var c testChunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("event %d %q: %v", i, d, err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "m1" || c.ID == "" {
			t.Errorf("event %d: object %q model %q id %q", i, c.Object, c.Model, c.ID)
		}
		if i == 0 && (len(c.Choices) != 1 || c.Choices[0].Delta.Role != "assistant") {
			t.Errorf("first chunk has no assistant role: %s", d)
		}
		if c.Usage != nil {
			usageChunks++
			if len(c.Choices) != 0 || c.Usage.PromptTokens != 100 || c.Usage.CompletionTokens != 20 || c.Usage.PromptTokensDetails.CachedTokens != 64 {
				t.Errorf("usage chunk %s", d)
			}
			continue
		}
		for _, ch := range c.Choices {
			reasoning += ch.Delta.ReasoningContent
			text += ch.Delta.Content
			if ch.FinishReason != nil {
				finish = append(finish, *ch.FinishReason)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool call delta without index: %s", d)
				}
				if tc.ID != "" {
					last = tc.ID
					order = append(order, tc.ID)
					names[tc.ID] = tc.Function.Name
				}
				args[last] += tc.Function.Arguments
			}
		}
	}
	if reasoning != "thinking hard" || text != "hello there, world" {
		t.Errorf("reasoning %q text %q", reasoning, text)
	}
	if diff := cmp.Diff([]string{"tool_calls"}, finish); diff != "" {
		t.Errorf("finish reasons (-want +got):\n%s", diff)
	}
	if usageChunks != 1 {
		t.Errorf("%d usage chunks, want 1", usageChunks)
	}
	if diff := cmp.Diff([]string{"call_1", "call_2"}, order); diff != "" {
		t.Errorf("call order (-want +got):\n%s", diff)
	}
	if names["call_1"] != "Bash" || args["call_1"] != `{"command":"echo hi"}` || names["call_2"] != "Read" || args["call_2"] != `{"file_path":"a.go"}` {
		t.Errorf("names %v args %v", names, args)
	}
	if len(data) < 12 {
		t.Errorf("only %d events: text and arguments are not fragmented", len(data))
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if string(r.Raw) != streamBody {
		t.Errorf("raw body not recorded exactly")
	}
	if r.Model != "m1" || !r.Stream || !r.IncludeUsage || r.MaxTokens != 77 || r.MaxTokensField != "max_tokens" {
		t.Errorf("parsed %+v", r)
	}
	if got := r.Messages[1].Text(); got != "a\nb" {
		t.Errorf("user text %q", got)
	}
	if r.Messages[2].ToolCalls[0].Function.Name != "Read" || r.Messages[3].ToolCallID != "c1" || r.Messages[3].Text() != "out" {
		t.Errorf("messages %+v", r.Messages)
	}
	if r.Messages[2].Parts() != nil {
		t.Errorf("null content has parts %v", r.Messages[2].Parts())
	}
	if diff := cmp.Diff([]string{"Read"}, r.ToolNames()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("header not recorded")
	}
}

func TestIndexQuirks(t *testing.T) {
	calls := []ToolCall{{ID: "a", Name: "X", Arguments: `{"n":1}`}, {ID: "b", Name: "Y", Arguments: `{"n":2}`}}
	for _, tc := range []struct {
		name string
		step Step
		want []*int // index per tool-call delta: nil = omitted
	}{
		{"omit", Step{ToolCalls: calls, OmitIndex: true}, nil},
		{"reuse", Step{ToolCalls: calls, ReuseIndex: true}, []*int{new(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t, tc.step)
			res := post(t, t.Context(), s.URL(), `{"stream":true}`)
			n := 0
			for _, d := range events(t, res.Body) {
				var c testChunk
				if d == "[DONE]" || json.Unmarshal([]byte(d), &c) != nil || len(c.Choices) == 0 {
					continue
				}
				for _, call := range c.Choices[0].Delta.ToolCalls {
					n++
					switch {
					case tc.want == nil && call.Index != nil:
						t.Errorf("index present: %s", d)
					case tc.want != nil && (call.Index == nil || *call.Index != 0):
						t.Errorf("index not 0: %s", d)
					}
				}
			}
			if n < 4 {
				t.Errorf("%d tool-call deltas, want at least 4", n)
			}
		})
	}
}

func TestErrorsAndExhaustion(t *testing.T) {
	s := New(t,
		Step{Status: http.StatusTooManyRequests, RetryAfter: "2"},
		ModelNotFoundError("nope"),
		ContextLengthError(),
	)
	type errBody struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	for _, want := range []struct {
		status     int
		code       string
		retryAfter string
		message    string
	}{
		{http.StatusTooManyRequests, "rate_limit_exceeded", "2", ""},
		{http.StatusNotFound, "model_not_found", "", ""},
		{http.StatusBadRequest, "context_length_exceeded", "", ""},
		{http.StatusInternalServerError, "", "", ExhaustedMessage},
	} {
		res := post(t, t.Context(), s.URL(), `{"stream":true,"model":"m"}`)
		var b errBody
		if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
			t.Fatalf("status %d: body: %v", res.StatusCode, err)
		}
		if res.StatusCode != want.status || b.Error.Code != want.code || res.Header.Get("Retry-After") != want.retryAfter {
			t.Errorf("got %d %q %q, want %+v", res.StatusCode, b.Error.Code, res.Header.Get("Retry-After"), want)
		}
		if want.message != "" && b.Error.Message != want.message {
			t.Errorf("message %q, want %q", b.Error.Message, want.message)
		}
	}
	if got := len(s.Requests()); got != 4 {
		t.Errorf("%d requests recorded, want 4", got)
	}
}

func TestMalformed(t *testing.T) {
	s := New(t, Step{Malformed: true, Text: "partial"})
	res := post(t, t.Context(), s.URL(), `{"stream":true}`)
	data := events(t, res.Body)
	bad := 0
	for _, d := range data {
		if d == "[DONE]" {
			t.Fatal("malformed stream ended with [DONE]")
		}
		if !json.Valid([]byte(d)) {
			bad++
		}
	}
	if bad == 0 {
		t.Fatalf("no broken event in %q", data)
	}
}

func TestResponderAndPush(t *testing.T) {
	s := New(t)
	s.SetResponder(func(req Request) Step { return Step{Text: "echo:" + req.LastMessage().Text()} })
	s.Push(Step{Text: "scripted"})
	for _, want := range []string{"scripted", "echo:ping"} {
		res := post(t, t.Context(), s.URL(), `{"messages":[{"role":"user","content":"ping"}]}`)
		var body struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if got := body.Choices[0].Message.Content; got != want || body.Choices[0].FinishReason != "stop" {
			t.Errorf("got %q %q, want %q", got, body.Choices[0].FinishReason, want)
		}
	}
	if s.Remaining() != 0 {
		t.Errorf("remaining %d", s.Remaining())
	}
}

func TestBlockAndWaitRequests(t *testing.T) {
	release := make(chan struct{})
	s := New(t, Step{Text: "late", Block: release})
	done := make(chan string)
	go func() {
		res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(`{}`))
		if err != nil {
			done <- err.Error()
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		done <- string(b)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		t.Fatalf("answered before release: %q", got)
	default:
	}
	close(release)
	if got := <-done; !strings.Contains(got, `"content":"late"`) {
		t.Errorf("body %q", got)
	}

	short, cancel2 := context.WithCancel(t.Context())
	cancel2()
	if err := s.WaitRequests(short, 2); err == nil {
		t.Error("WaitRequests returned nil with one request and a cancelled context")
	}
}

func TestBlockReleasedByClose(t *testing.T) {
	s := NewServer(Step{Block: make(chan struct{})})
	errc := make(chan error, 1)
	go func() {
		res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		errc <- err
	}()
	if err := s.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	s.Close() // must not hang on the held step
	s.Close()
	<-errc
}

func TestBlockMidStream(t *testing.T) {
	release := make(chan struct{})
	s := New(t, Step{Text: "one two three", BlockMidStream: release})
	res := post(t, t.Context(), s.URL(), `{"stream":true}`)
	sc := bufio.NewScanner(res.Body)
	var got []string
	for sc.Scan() && len(got) < 2 {
		if l := sc.Text(); l != "" {
			got = append(got, l)
		}
	}
	if !strings.Contains(got[1], `"content":"one`) {
		t.Fatalf("second event %q is not the first text delta", got[1])
	}
	close(release)
	rest, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Errorf("stream did not finish after release: %q", rest)
	}
}

func TestModels(t *testing.T) {
	s := New(t)
	res, err := http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 1 || list.Data[0].ID != DefaultModel {
		t.Errorf("models %+v", list)
	}
}

func TestSplit(t *testing.T) {
	for _, s := range []string{"", "a", "héllo wörld", "日本語テキスト", strings.Repeat("x", 100)} {
		parts := split(s, 3)
		if strings.Join(parts, "") != s || len(parts) > 3 {
			t.Errorf("split(%q) = %q", s, parts)
		}
		for _, p := range parts {
			if p == "" || !utf8Valid(p) {
				t.Errorf("split(%q) has bad piece %q", s, p)
			}
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestEndless(t *testing.T) {
	for _, tc := range []struct {
		kind Endless
		want string // in the events after the first few
	}{
		{EndlessText, `"content":"All work`},
		{EndlessReasoning, `"reasoning_content":"All work`},
		{EndlessArguments, `"arguments":"All work`},
		{EndlessEvent, `All work`},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			s := New(t, Step{Text: "start", Endless: tc.kind})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			res := post(t, ctx, s.URL(), `{"stream":true}`)
			// Read far more than any scripted step writes: the stream
			// must still be going, and must not have finished.
			r := bufio.NewReader(io.LimitReader(res.Body, 4<<20))
			var n, blank, lines int
			for {
				line, err := r.ReadString('\n')
				n += len(line)
				lines++
				if line == "\n" && lines > 10 {
					blank++
				}
				if strings.Contains(line, "[DONE]") || strings.Contains(line, "finish_reason\":\"") {
					t.Fatalf("endless stream finished: %q", line)
				}
				if err != nil {
					break
				}
				if lines > 10 && !strings.Contains(line, tc.want) && line != "\n" {
					t.Fatalf("line %d %q does not carry %s", lines, line, tc.want)
				}
			}
			if n < 4<<20-1 {
				t.Fatalf("read %d bytes; the stream ended early", n)
			}
			if tc.kind == EndlessEvent && blank > 0 {
				t.Errorf("endless event has %d blank lines after its start", blank)
			}
			cancel() // the handler must return when the client goes away
			s.Close()
		})
	}
}

func TestHugeChunk(t *testing.T) {
	const n = 3<<20 + 17
	s := New(t, Step{Text: "hi", HugeChunk: n})
	res := post(t, t.Context(), s.URL(), `{"stream":true}`)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 8<<20)
	var sizes []int
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c testChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk of %d bytes: %v", len(data), err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			sizes = append(sizes, len(c.Choices[0].Delta.Content))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(sizes) == 0 || sizes[len(sizes)-1] != n {
		t.Errorf("content delta sizes %v; want the last to be one delta of %d bytes", sizes, n)
	}
}

func TestStall(t *testing.T) {
	s := New(t, Step{Text: "one two", Stall: true})
	ctx, cancel := context.WithCancel(t.Context())
	res := post(t, ctx, s.URL(), `{"stream":true}`)
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(res.Body)
		got <- string(b)
	}()
	// The stream holds open; the client going away releases it.
	select {
	case b := <-got:
		t.Fatalf("stalled stream ended by itself: %q", b)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if b := <-got; strings.Contains(b, "[DONE]") || !strings.Contains(b, `"content":"one`) {
		t.Errorf("stalled stream: %q", b)
	}
	s.Close()
}

package agentcore

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// waitIdle fails the test unless every answer of fake has ended: the
// client closed the stream.
func waitIdle(t *testing.T, fake *fakemodel.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := fake.WaitIdle(ctx); err != nil {
		t.Fatalf("the stream was not closed: %v", err)
	}
}

func TestProviderOutputLimit(t *testing.T) {
	const limit = 64 << 10
	for _, tc := range []struct {
		name string
		step fakemodel.Step
	}{
		{"endless text", fakemodel.Step{Text: "Sure.", Endless: fakemodel.EndlessText}},
		{"endless reasoning", fakemodel.Step{Endless: fakemodel.EndlessReasoning}},
		{"endless tool arguments", fakemodel.Step{Endless: fakemodel.EndlessArguments}},
		{"endless event", fakemodel.Step{Endless: fakemodel.EndlessEvent}},
		// One event just under the event bound: the content cap refuses it.
		{"chunk over the cap", fakemodel.Step{HugeChunk: limit + 1000}},
		// One event far over both: the body reader refuses it before the
		// SDK's decoder buffers it.
		{"huge chunk", fakemodel.Step{HugeChunk: 64 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.New(t, tc.step)
			p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
			// Without a bound the step would never end: the deadline
			// turns that into a failure instead of a hang.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			streamed := 0
			_, err := p.Step(ctx, Request{Messages: []Message{userText("go")}, MaxStepOutput: limit},
				func(d Delta) { streamed += len(d.Text) })
			pe := wantProviderError(t, err, ProviderOutputLimit)
			if !strings.Contains(pe.Error(), "max_step_output (64 KiB)") {
				t.Errorf("message %q does not name the limit", pe.Error())
			}
			if streamed > limit {
				t.Errorf("%d bytes of deltas passed on with a cap of %d", streamed, limit)
			}
			waitIdle(t, fake)
			if n := len(fake.Requests()); n != 1 {
				t.Errorf("%d requests: an output limit must not be retried", n)
			}
		})
	}
}

func TestProviderDefaultOutputLimit(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Endless: fakemodel.EndlessText})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	streamed := 0
	_, err := p.Step(t.Context(), Request{Messages: []Message{userText("go")}}, func(d Delta) { streamed += len(d.Text) })
	wantProviderError(t, err, ProviderOutputLimit)
	if streamed > DefaultMaxStepOutput || streamed < DefaultMaxStepOutput/2 {
		t.Errorf("%d bytes streamed before the default cap of %d", streamed, DefaultMaxStepOutput)
	}
}

func TestProviderOutputUnderLimit(t *testing.T) {
	// Output right up to the cap is kept whole.
	text := strings.Repeat("a", 3000)
	fake := fakemodel.New(t, fakemodel.Step{Text: text, ToolCalls: []fakemodel.ToolCall{{ID: "c", Name: "Bash", Arguments: `{"command":"ls"}`}}})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m"})
	resp, err := p.Step(t.Context(), Request{Messages: []Message{userText("go")}, MaxStepOutput: 3000 + 1 + 4 + 16 + callOverhead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != text || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != `{"command":"ls"}` {
		t.Errorf("response %+v", resp)
	}
	fake.Push(fakemodel.Step{Text: text})
	if _, err := p.Step(t.Context(), Request{Messages: []Message{userText("go")}, MaxStepOutput: 2999}, nil); err == nil {
		t.Error("3000 bytes of text passed a cap of 2999")
	}
}

func TestProviderStalledStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		step fakemodel.Step
	}{
		{"mid-stream", fakemodel.Step{Text: "Working on it", Stall: true}},
		{"before headers", fakemodel.Step{Block: make(chan struct{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.New(t, tc.step)
			p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m", StreamIdleTimeout: 100 * time.Millisecond})
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err := p.Step(ctx, Request{Messages: []Message{userText("go")}}, nil)
			pe := wantProviderError(t, err, ProviderStalled)
			if !strings.Contains(pe.Error(), "stream_idle_timeout") || !strings.Contains(pe.Error(), "100ms") {
				t.Errorf("message %q does not name the timeout", pe.Error())
			}
			waitIdle(t, fake)
			if n := len(fake.Requests()); n != 1 {
				t.Errorf("%d requests: a stalled stream must not be retried", n)
			}
		})
	}
}

func TestProviderCancelIsNotStall(t *testing.T) {
	fake := fakemodel.New(t, fakemodel.Step{Text: "Working", Stall: true})
	p := NewOpenAI(OpenAIOptions{BaseURL: fake.URL(), Model: "m", StreamIdleTimeout: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	_, err := p.Step(ctx, Request{Messages: []Message{userText("go")}}, func(Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v; want cancellation", err)
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		t.Errorf("cancellation reported as provider error %v", pe)
	}
}

func TestStreamGuardCheck(t *testing.T) {
	// The timer re-arms while there are signs of life and ends the step
	// only after a quiet window; no real waiting involved.
	ctx, g := newStreamGuard(t.Context(), time.Hour)
	defer g.stop()
	g.last.Store(time.Now().Add(-30 * time.Minute).UnixNano())
	g.check()
	if ctx.Err() != nil {
		t.Fatal("the guard ended a step that was quiet for half its window")
	}
	g.last.Store(time.Now().Add(-2 * time.Hour).UnixNano())
	g.check()
	if !g.idled(ctx) {
		t.Fatalf("cause %v; want errStreamIdle after a quiet window", context.Cause(ctx))
	}

	// A stopped guard never fires.
	ctx2, g2 := newStreamGuard(t.Context(), time.Hour)
	g2.stop()
	g2.last.Store(0)
	g2.check()
	if g2.idled(ctx2) {
		t.Error("a stopped guard ended its step")
	}
}

func TestSSEReader(t *testing.T) {
	const max = 10
	for _, tc := range []struct {
		name  string
		reads []string
		want  []string
		ok    bool
	}{
		{"small events", []string{"data: 1\n\ndata: 2\n\n"}, []string{"1", "2"}, true},
		{"no space after the colon", []string{"data:1\n\n"}, []string{"1"}, true},
		{"crlf events", []string{"data: 1\r\n\r\ndata: 2\r\n\r\n", "data: 3\r\n\r\n"}, []string{"1", "2", "3"}, true},
		{"blank line split across reads", []string{"data: 12\r", "\n\r", "\ndata: 34\n", "\n"}, []string{"12", "34"}, true},
		{"several data lines", []string{"data: a\ndata: b\n\n"}, []string{"a\nb"}, true},
		{"comments and other fields", []string{": ping\n\nevent: x\nid: 7\ndata: 1\n\n: " + strings.Repeat("p", max) + "\n\n"}, []string{"1"}, true},
		{"done ends the stream", []string{"data: 1\n\ndata: [DONE]\n\ndata: 2\n\n"}, []string{"1"}, true},
		{"unterminated event dropped", []string{"data: 1\n\ndata: 2"}, []string{"1"}, true},
		{"many small events in one read", []string{strings.Repeat("data: x\n\n", 100)}, slices.Repeat([]string{"x"}, 100), true},
		{"one long line", []string{"data: 0123456789x"}, nil, false},
		{"one long line in pieces", []string{"data: 01234", "56789", "x\n\n"}, nil, false},
		{"long event of short lines", []string{"data: 1234\n", "data: 5678\n", "data: 9\n"}, nil, false},
		{"event at the limit", []string{"data: 0123456789\n\n"}, []string{"0123456789"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			go func() {
				for _, r := range tc.reads {
					if _, err := pw.Write([]byte(r)); err != nil {
						return
					}
				}
				pw.Close()
			}()
			defer pr.Close()
			r := newSSEReader(pr, max)
			var got []string
			var err error
			for {
				var data []byte
				if data, err = r.next(); err != nil {
					break
				}
				got = append(got, string(data))
			}
			if tc.ok != (err == io.EOF) {
				t.Errorf("error %v; want ok=%v", err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, errEventTooLarge) {
				t.Errorf("error %v; want errEventTooLarge", err)
			}
			if tc.ok && !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzSSEReader feeds arbitrary bytes to the SSE reader: it never panics
// and never returns an event larger than its limit.
func FuzzSSEReader(f *testing.F) {
	f.Add("data: 1\n\ndata: 2\r\n\r\n: c\n\ndata: [DONE]\n\n")
	f.Add("data:a\ndata:b\n\n" + strings.Repeat("d", 40))
	f.Add("\r\r\n\n\ndata\n\ndata: " + strings.Repeat("x", 30) + "\n\n")
	f.Fuzz(func(t *testing.T, input string) {
		const max = 16
		r := newSSEReader(strings.NewReader(input), max)
		for range len(input) + 1 {
			data, err := r.next()
			if err != nil {
				return
			}
			if len(data) > max {
				t.Fatalf("event of %d bytes with a limit of %d", len(data), max)
			}
		}
		t.Fatal("the reader returned more events than the input has bytes")
	})
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int]string{1 << 20: "1 MiB", 3 << 20: "3 MiB", 64 << 10: "64 KiB", 1500: "1500 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

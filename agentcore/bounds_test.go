package agentcore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/agentcoretest"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// deltaBytes counts the text of a turn's streamed deltas.
func deltaBytes(ev *events) int {
	n := 0
	for _, typ := range []agentcore.EventType{agentcore.EventAssistantDelta, agentcore.EventReasoningDelta} {
		for _, e := range ev.ofType(typ) {
			n += len(e.Text)
		}
	}
	return n
}

// wantNextTurn checks that the conversation takes the next message after
// a failed step, and that the transcript stays valid throughout.
func wantNextTurn(t *testing.T, w *world, ag *agentcore.Agent, conv string) {
	t.Helper()
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
	w.model.Push(fakemodel.Step{Text: "back to normal"})
	res := turn(t, ag, conv, userInput("try again"), nil)
	if res.StopReason != agentcore.StopEndTurn || res.Text != "back to normal" {
		t.Fatalf("next turn ended %s with %q (%s)", res.StopReason, res.Text, res.Error)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestTurnOutputLimit(t *testing.T) {
	const limit = 256 << 10
	for _, tc := range []struct {
		name string
		step fakemodel.Step
	}{
		{"endless text", fakemodel.Step{Text: "Here goes.", Endless: fakemodel.EndlessText}},
		{"endless reasoning", fakemodel.Step{Endless: fakemodel.EndlessReasoning}},
		{"endless tool call", fakemodel.Step{Text: "Running it.", Endless: fakemodel.EndlessArguments}},
		{"huge chunk", fakemodel.Step{HugeChunk: 32 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.step)
			ag := w.agent(agentOpts{mode: permission.ModeUnrestricted, maxStepOutput: limit})
			conv := w.conversation(ag)
			var ev events
			res := turn(t, ag, conv, userInput("write forever"), &ev)
			if res.StopReason != agentcore.StopError || !strings.Contains(res.Error, "max_step_output (256 KiB)") {
				t.Fatalf("turn ended %s (%s); want an error naming max_step_output", res.StopReason, res.Error)
			}
			if n := deltaBytes(&ev); n > limit {
				t.Errorf("%d bytes of deltas emitted with a cap of %d", n, limit)
			}
			if n := len(ev.ofType(agentcore.EventToolCall)); n != 0 {
				t.Errorf("%d tool_call events from a step that failed", n)
			}
			// The partial output is not kept: no assistant message, no
			// half-streamed tool call waiting for a result.
			for _, m := range w.messages(conv) {
				if m.Role != agentcore.RoleUser {
					t.Errorf("transcript keeps a %s message of the failed step", m.Role)
				}
			}
			waitStreamsEnded(t, w)
			wantNextTurn(t, w, ag, conv)
		})
	}
}

func waitStreamsEnded(t *testing.T, w *world) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.model.WaitIdle(ctx); err != nil {
		t.Fatalf("the model stream was not closed: %v", err)
	}
}

func TestTurnStalledStream(t *testing.T) {
	w := newWorld(t, fakemodel.Step{Text: "Thinking", Stall: true})
	ag := w.agent(agentOpts{streamIdle: 100 * time.Millisecond})
	conv := w.conversation(ag)
	res := turn(t, ag, conv, userInput("hello"), nil)
	if res.StopReason != agentcore.StopError || !strings.Contains(res.Error, "stream_idle_timeout") {
		t.Fatalf("turn ended %s (%s); want an error naming stream_idle_timeout", res.StopReason, res.Error)
	}
	waitStreamsEnded(t, w)
	wantNextTurn(t, w, ag, conv)
}

func TestTurnTimeoutInModelCall(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	w := newWorld(t, fakemodel.Step{Text: "never", Block: block})
	ag := w.agent(agentOpts{turnTimeout: 300 * time.Millisecond})
	conv := w.conversation(ag)
	res := turn(t, ag, conv, userInput("hello"), nil)
	if res.StopReason != agentcore.StopError || !strings.Contains(res.Error, "turn_timeout (300ms)") {
		t.Fatalf("turn ended %s (%s); want an error naming turn_timeout", res.StopReason, res.Error)
	}
	waitStreamsEnded(t, w)
	wantNextTurn(t, w, ag, conv)
}

func TestTurnTimeoutInToolCall(t *testing.T) {
	// The first step is instant; the command outlives the turn's limit.
	w := newWorld(t, bashCall("call_sleep", "sleep 30"))
	ag := w.agent(agentOpts{mode: permission.ModeUnrestricted, turnTimeout: 2 * time.Second})
	conv := w.conversation(ag)
	res := turn(t, ag, conv, userInput("wait a while"), nil)
	if res.StopReason != agentcore.StopError || !strings.Contains(res.Error, "turn_timeout (2s)") {
		t.Fatalf("turn ended %s (%s); want an error naming turn_timeout", res.StopReason, res.Error)
	}
	msgs := w.messages(conv)
	var results int
	for _, m := range msgs {
		if m.Role == agentcore.RoleTool && m.ToolCallID == "call_sleep" {
			results++
			t.Logf("result of the cut-off call: %q", m.Text())
		}
	}
	if results != 1 {
		t.Fatalf("the cut-off call has %d results, want 1", results)
	}
	wantNextTurn(t, w, ag, conv)
}

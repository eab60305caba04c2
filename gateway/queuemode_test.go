package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func waitRequests(t *testing.T, h *harness, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.model.WaitRequests(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// Steer: a message sent while the agent works is injected at the next
// step boundary of the running turn instead of starting its own turn.
func TestQueueModeSteer(t *testing.T) {
	hold := make(chan struct{})
	step := bashCall("c1", "echo working")
	step.Block = hold
	h := newHarness(t, harnessOpts{queueMode: "steer"}, step, fakemodel.Step{Text: "Did both."})
	h.send(inbound("s1", "alice", "start the job", dm))
	waitRequests(t, h, 1)
	h.send(inbound("s2", "alice", "also update the docs", dm))
	close(hold)
	waitText(t, h.chat, "Did both.")
	reqs := h.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2 (the second message joins the running turn)", len(reqs))
	}
	last := reqs[1].LastMessage()
	if last.Role != "user" || !strings.Contains(last.Text(), "also update the docs") {
		t.Fatalf("second request ends with %s %q, want the steered message", last.Role, last.Text())
	}
	if len(toolResults(reqs[1])) != 1 {
		t.Fatal("the steered message did not come after the tool result")
	}
	// Nothing is left queued: a new message gets a fresh turn.
	h.model.Push(fakemodel.Step{Text: "Next."})
	h.send(inbound("s3", "alice", "thanks", dm))
	waitText(t, h.chat, "Next.")
	if n := len(h.model.Requests()); n != 3 {
		t.Fatalf("model got %d requests, want 3", n)
	}
}

// Collect: messages that arrive while the agent works are merged into one
// next turn.
func TestQueueModeCollect(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, harnessOpts{queueMode: "collect"},
		fakemodel.Step{Text: "First.", Block: hold},
		fakemodel.Step{Text: "Both answered."})
	h.send(inbound("c1", "alice", "one", dm))
	waitRequests(t, h, 1)
	h.send(inbound("c2", "alice", "two", dm))
	h.send(inbound("c3", "alice", "three", dm))
	close(hold)
	waitText(t, h.chat, "Both answered.")
	reqs := h.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	text := reqs[1].LastMessage().Text()
	if !strings.Contains(text, "two") || !strings.Contains(text, "three") {
		t.Fatalf("collected turn got %q", text)
	}
}

// Interrupt: a new message cancels the running turn and runs.
func TestQueueModeInterrupt(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	h := newHarness(t, harnessOpts{queueMode: "interrupt"},
		fakemodel.Step{Text: "never finished", Block: hold},
		fakemodel.Step{Text: "Fresh answer."})
	h.send(inbound("i1", "alice", "slow question", dm))
	waitRequests(t, h, 1)
	h.send(inbound("i2", "alice", "new question", dm))
	waitText(t, h.chat, "Fresh answer.")
	waitText(t, h.chat, "interrupted")
}

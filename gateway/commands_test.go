package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// A platform retry of a command (the same event id) runs it once: /new
// makes one conversation, an immediate /status answers once.
func TestCommandRetryRunsOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for range 3 {
		h.send(inbound("new-1", "alice", "/new", dm))
		h.send(inbound("status-1", "alice", "/status", dm))
	}
	waitText(t, h.chat, "Started a new conversation")
	// A queued command behind them: any second /new would answer first.
	h.send(inbound("memory-1", "alice", "/memory", dm))
	waitText(t, h.chat, "Memory")
	recs := h.chat.Records()
	if n := len(channelstest.Filter(recs, channelstest.Contains("Started a new conversation"))); n != 1 {
		t.Errorf("/new retried three times answered %d times, want 1:%s", n, channelstest.Summary(recs))
	}
	if n := len(channelstest.Filter(recs, channelstest.Contains("Conversation"))); n > 1 {
		t.Errorf("/status retried three times answered %d times, want at most 1", n)
	}
}

// Commands never run on the delivery path: while /compact's model call is
// held by the fake model, another chat's message is answered.
func TestCompactDoesNotStallOtherChats(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	h := newHarness(t, harnessOpts{})
	h.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
		if isSummary(req) {
			return fakemodel.Step{Text: "summary", Block: hold}
		}
		text := req.LastMessage().Text()
		return fakemodel.Step{Text: "answer: " + text[strings.LastIndexByte(text, '\n')+1:]}
	})
	h.send(inbound("a1", "alice", "hello one", dm))
	waitText(t, h.chat, "answer: hello one")
	h.send(inbound("a1b", "alice", "hello two", dm))
	waitText(t, h.chat, "answer: hello two")
	// /compact goes into alice's queue; its model call blocks.
	h.send(inbound("a2", "alice", "/compact", dm))
	eventually(t, "the compaction's model call", func() bool { return heldSummary(h.model.Requests()) })
	bob := channels.Location{Channel: "chat", Account: "bot", ChatID: "dm-bob"}
	h.send(inbound("b1", "bob", "hello from bob", bob))
	waitText(t, h.chat, "answer: hello from bob")
}

func heldSummary(reqs []fakemodel.Request) bool {
	for _, r := range reqs {
		if isSummary(r) {
			return true
		}
	}
	return false
}

// isSummary reports whether a model request is a compaction's summary
// request (its instruction says so).
func isSummary(r fakemodel.Request) bool {
	for _, m := range r.Messages {
		if strings.Contains(m.Text(), "You summarize an earlier part of a conversation") {
			return true
		}
	}
	return false
}

// Commands answered at once without running — an unknown command, an
// admin command from someone else — are deduplicated too: a platform's
// retry, or an adapter's catch-up handing the message over again after a
// restart, gets no second answer.
func TestCommandRefusalRetryAnsweredOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for range 3 {
		h.send(inbound("unknown-1", "alice", "/frobnicate", dm))
		h.send(inbound("mode-1", "alice", "/mode strict", dm))
	}
	h.send(inbound("help-1", "alice", "/help", dm))
	// The outbox keeps a location's order: once /help's answer is there,
	// every earlier answer is too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs, err := h.chat.WaitFor(ctx, channelstest.Count(1, func(r channelstest.Record) bool { return strings.HasPrefix(r.Text(), "Commands") }))
	if err != nil {
		t.Fatalf("waiting for the /help answer: %v", err)
	}
	if n := len(channelstest.Filter(recs, channelstest.Contains("Unknown command /frobnicate"))); n != 1 {
		t.Errorf("an unknown command retried three times was answered %d times, want 1:%s", n, channelstest.Summary(recs))
	}
	if n := len(channelstest.Filter(recs, channelstest.Contains("Only an admin can use /mode"))); n != 1 {
		t.Errorf("a refused admin command retried three times was answered %d times, want 1:%s", n, channelstest.Summary(recs))
	}
}

// /status shows the model an admin set as text: a model name cannot put a
// link into the status everyone in the chat reads.
func TestStatusEscapesTheModel(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.send(inbound("m1", "admin", "/model [x](https://evil.example)", dm))
	waitText(t, h.chat, "is now")
	h.send(inbound("s1", "alice", "/status", dm))
	waitText(t, h.chat, "model [x](https://evil.example) · mode")
}

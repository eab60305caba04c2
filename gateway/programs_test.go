package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// captureAdapter is the harness's "chat" fake that also hands the test the
// Handler the gateway started it with (the abilities programs use).
type captureAdapter struct {
	*channelstest.Adapter
	once sync.Once
	got  chan channels.Handler
}

func (c *captureAdapter) Start(ctx context.Context, h channels.Handler) error {
	c.once.Do(func() { c.got <- h })
	return c.Adapter.Start(ctx, h)
}

func programsHarness(t *testing.T, o harnessOpts, steps ...fakemodel.Step) (*harness, channels.Handler) {
	t.Helper()
	caps := channels.Capabilities{MaxMessageLen: 4000, Edit: true, Buttons: true, Dialect: channels.Plain}
	c := &captureAdapter{Adapter: channelstest.New("chat", caps), got: make(chan channels.Handler, 1)}
	h := newHarnessWith(t, o, c, steps...)
	h.chat = c.Adapter
	select {
	case hd := <-c.got:
		return h, hd
	case <-h.ctx().Done():
		t.Fatal("the chat adapter was not started")
	}
	return nil, nil
}

// Queue names the input a message became, also for a platform retry; the
// transcript shows it under that id, with the answer's message id.
func TestProgramsQueueAndTranscript(t *testing.T) {
	h, hd := programsHarness(t, harnessOpts{}, fakemodel.Step{Reasoning: "hmm", Text: "hello there"})
	q, err := hd.(channels.Queuer).Queue(h.ctx(), inbound("ev-1", "alice", "hi", dm))
	if err != nil || q.InputID == "" || q.Duplicate || !strings.HasPrefix(q.InputID, "in-"+q.ConversationID+"-") {
		t.Fatalf("Queue = %+v, %v", q, err)
	}
	again, err := hd.(channels.Queuer).Queue(h.ctx(), inbound("ev-1", "alice", "hi", dm))
	if err != nil || !again.Duplicate || again.InputID != q.InputID {
		t.Fatalf("Queue of a retry = %+v, %v; want a duplicate naming %s", again, err, q.InputID)
	}
	waitText(t, h.chat, "hello there")
	tr := hd.(channels.TranscriptReader)
	var page channels.TranscriptPage
	eventually(t, "the answer in the transcript", func() bool {
		page, err = tr.Transcript(h.ctx(), dm, channels.TranscriptQuery{})
		return err == nil && len(page.Messages) == 2
	})
	u, a := page.Messages[0], page.Messages[1]
	if u.ID != q.InputID || u.Role != channels.TranscriptUser || u.Text != "hi" {
		t.Errorf("user message %+v", u)
	}
	if a.Role != channels.TranscriptAssistant || a.Text != "hello there" || a.Reasoning != "hmm" || a.RunID == "" {
		t.Errorf("assistant message %+v", a)
	}
	// The queue item is done: a command queues nothing and names nothing.
	if q, err := hd.(channels.Queuer).Queue(h.ctx(), inbound("ev-2", "alice", "/help", dm)); err != nil || q.InputID != "" || q.Ignored {
		t.Errorf("a command: %+v, %v", q, err)
	}
	// What was not for the agent says so: a surface may hand a thread
	// reply over again once its thread is taken.
	thread := channels.Location{Channel: "chat", Account: "bot", ChatID: "room", ThreadID: "t1"}
	plain, stranger := inbound("ev-3", "alice", "no mention", thread), inbound("ev-4", "mallory", "@bot hi", thread)
	plain.DirectMessage, plain.Mentioned, stranger.DirectMessage = false, false, false
	for _, in := range []channels.Inbound{plain, stranger} {
		if q, err := hd.(channels.Queuer).Queue(h.ctx(), in); err != nil || !q.Ignored || q.InputID != "" {
			t.Errorf("%q from %s: %+v, %v; want ignored", in.Text, in.User.ID, q, err)
		}
	}
}

func TestProgramsTranscriptPages(t *testing.T) {
	var steps []fakemodel.Step
	for i := range 6 {
		steps = append(steps, fakemodel.Step{Text: fmt.Sprint("answer ", i)})
	}
	h, hd := programsHarness(t, harnessOpts{}, steps...)
	for i := range 6 {
		h.send(inbound(fmt.Sprint("ev-", i), "alice", fmt.Sprint("question ", i), dm))
		waitText(t, h.chat, fmt.Sprint("answer ", i))
	}
	tr := hd.(channels.TranscriptReader)
	var all []channels.TranscriptMessage
	eventually(t, "12 messages", func() bool {
		p, err := tr.Transcript(h.ctx(), dm, channels.TranscriptQuery{Limit: 100})
		all = p.Messages
		return err == nil && len(all) == 12
	})
	ids := func(ms []channels.TranscriptMessage) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	check := func(name string, q channels.TranscriptQuery, want []channels.TranscriptMessage, more bool) {
		t.Helper()
		p, err := tr.Transcript(h.ctx(), dm, q)
		if err != nil || fmt.Sprint(ids(p.Messages)) != fmt.Sprint(ids(want)) || p.More != more {
			t.Errorf("%s: %v more=%v, %v; want %v more=%v", name, ids(p.Messages), p.More, err, ids(want), more)
		}
	}
	check("first page", channels.TranscriptQuery{Limit: 5}, all[:5], true)
	check("after", channels.TranscriptQuery{After: all[4].ID, Limit: 5}, all[5:10], true)
	check("the last page", channels.TranscriptQuery{After: all[9].ID, Limit: 5}, all[10:], false)
	check("before", channels.TranscriptQuery{Before: all[7].ID, Limit: 3}, all[4:7], true)
	check("before, to the start", channels.TranscriptQuery{Before: all[2].ID, Limit: 5}, all[:2], false)
	check("between", channels.TranscriptQuery{After: all[1].ID, Before: all[5].ID, Limit: 10}, all[2:5], false)
	if _, err := tr.Transcript(h.ctx(), dm, channels.TranscriptQuery{After: "in-nope"}); !errors.Is(err, channels.ErrUnknownMessage) {
		t.Errorf("an unknown cursor: %v", err)
	}
	if _, err := tr.Transcript(h.ctx(), channels.Location{Channel: "chat", Account: "bot", ChatID: "never"}, channels.TranscriptQuery{}); err == nil {
		t.Error("a location without a conversation has a transcript")
	}
}

// StartConversation binds the location before anything was said, under
// the conversation's id; messages there go to it.
func TestProgramsStartConversation(t *testing.T) {
	h, hd := programsHarness(t, harnessOpts{}, fakemodel.Step{Text: "hi back"})
	cs := hd.(channels.ConversationStarter)
	agents, err := cs.Agents(h.ctx())
	if err != nil || len(agents) != 1 || agents[0].Name != "main" || agents[0].Model != "test-model" || !agents[0].Default {
		t.Fatalf("Agents = %+v, %v", agents, err)
	}
	info, err := cs.StartConversation(h.ctx(), channels.Location{Channel: "chat", Account: "bot"}, "", "my title")
	if err != nil || info.ID == "" || info.Location.ChatID != info.ID || info.Agent != "main" || info.Title != "my title" {
		t.Fatalf("StartConversation = %+v, %v", info, err)
	}
	if _, err := cs.StartConversation(h.ctx(), channels.Location{Channel: "chat", Account: "bot"}, "ghost", ""); err == nil {
		t.Error("a conversation of an unknown agent was started")
	}
	if p, err := hd.(channels.TranscriptReader).Transcript(h.ctx(), info.Location, channels.TranscriptQuery{}); err != nil || len(p.Messages) != 0 {
		t.Errorf("the new conversation's transcript: %+v, %v", p, err)
	}
	in := inbound("ev-1", "alice", "hello", info.Location)
	q, err := hd.(channels.Queuer).Queue(h.ctx(), in)
	if err != nil || q.ConversationID != info.ID {
		t.Fatalf("Queue at the new location = %+v, %v; want conversation %s", q, err, info.ID)
	}
	waitText(t, h.chat, "hi back")
}

// PendingApprovals lists what the caller may decide: the requester and
// the admins see the ask, another allowed user does not; Always is offered
// to the admin only.
func TestProgramsPendingApprovals(t *testing.T) {
	h, hd := programsHarness(t, harnessOpts{}, bashCall("call_1", "git push origin main"))
	h.send(inbound("ev-1", "alice", "push it", dm))
	waitText(t, h.chat, "Approval needed")
	al := hd.(channels.ApprovalLister)
	var mine []channels.PendingApproval
	eventually(t, "alice's pending approval", func() bool {
		var err error
		mine, err = al.PendingApprovals(h.ctx(), "chat:alice", 0)
		return err == nil && len(mine) == 1
	})
	p := mine[0]
	if p.ToolCallID != "call_1" || p.Tool != "Bash" || !strings.Contains(p.Summary, "git push") || p.Requester != "chat:alice" ||
		p.Location != dm || p.ConversationID == "" || p.Agent != "main" || p.Always || len(p.Buttons.Rows) != 0 {
		t.Errorf("alice's approval %+v", p)
	}
	if others, err := al.PendingApprovals(h.ctx(), "chat:bob", 0); err != nil || len(others) != 0 {
		t.Errorf("bob sees %+v, %v", others, err)
	}
	admin, err := al.PendingApprovals(h.ctx(), "chat:admin", 0)
	if err != nil || len(admin) != 1 || admin[0].Always != (p.Rule != "") {
		t.Errorf("the admin sees %+v, %v", admin, err)
	}
	// Decided by id through the one decide path, it leaves the list.
	res, err := hd.(channels.Decider).Decide(h.ctx(), channels.Decision{ApprovalID: p.ID, Action: channels.DecideDeny, Reason: "not now", User: channels.User{ID: "alice"}})
	if err != nil || !res.Decided {
		t.Fatalf("Decide = %+v, %v", res, err)
	}
	if left, _ := al.PendingApprovals(h.ctx(), "chat:alice", 0); len(left) != 0 {
		t.Errorf("after the decision: %+v", left)
	}
}

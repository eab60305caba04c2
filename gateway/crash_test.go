package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

// dyingStore is the database of a process that dies at one point: the
// first turn end whose outbox items contain marker never commits — the
// call blocks until release is closed (the test stops the gateway first,
// so nothing of this process runs afterwards) and then fails.
type dyingStore struct {
	*store.DB
	marker  string
	died    chan struct{}
	release chan struct{}
}

func (s *dyingStore) FinishTurn(ctx context.Context, end gateway.TurnEnd) (gateway.Finished, error) {
	for _, it := range end.Outbound {
		if strings.Contains(string(it.Body), s.marker) {
			select {
			case <-s.died:
			default:
				close(s.died)
				<-s.release
				return gateway.Finished{}, errors.New("the process was killed")
			}
		}
	}
	return s.DB.FinishTurn(ctx, end)
}

// The crash campaign's B29 (seed 100): a turn resumed after an approval got
// the model's final answer, and the process was SIGKILLed before the
// transaction that completes the resume item with its final message. The
// next process retries the item and must deliver the answer — an outbox
// item that finalizes the turn's message — exactly once. (Before the turn's
// last records and the item's completion were one write, the answer could
// be stored without the completion, and the retry found "nothing waits for
// a decision" and completed the item silently. Now the write that stores
// the answer is the completion: a death before it stores neither, so the
// retry asks the model again; agentcore's TestRetriedResumeReturnsItsAnswer
// covers hosts whose completion is a write of its own.)
func TestResumeAnsweredJustBeforeCrashIsDelivered(t *testing.T) {
	ask := bashCall("c1", "touch approved-file")
	ask.Text = "Let me make it."
	dying := &dyingStore{marker: "All done.", died: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, harnessOpts{store: func(db *store.DB) gateway.Store { dying.DB = db; return dying }},
		ask, fakemodel.Step{Text: "All done."}, fakemodel.Step{Text: "All done."})
	h.send(inbound("e1", "alice", "make the file", dm))
	waitText(t, h.chat, "Approval needed")
	ref, rows := buttons(t, h.chat, "Approval needed")
	if reply, err := h.chat.Press(h.ctx(), channels.Action{EventID: "p1", Location: dm, User: channels.User{ID: "alice"}, Token: rows[0][0].Token, Message: ref}); err != nil || !strings.Contains(reply.Text, "Approved") {
		t.Fatalf("alice's press: %+v, %v", reply, err)
	}
	select {
	case <-dying.died:
	case <-h.ctx().Done():
		t.Fatal("the resumed turn never reached its completion")
	}
	// The process is gone: nothing it would still do happens.
	h.cancel()
	close(dying.release)
	seen := len(h.chat.Records())
	h.restart()

	ctx := h.ctx()
	convs, err := h.db.ListConversations(ctx, "main", 10)
	if err != nil || len(convs) != 1 {
		t.Fatalf("conversations: %+v, %v", convs, err)
	}
	eventually(t, "the resume item to complete and the outbox to drain", func() bool {
		items, err := h.db.Pending(ctx, convs[0].ID)
		if err != nil || len(items) > 0 {
			return false
		}
		due, err := h.db.DueOutbound(ctx, nil, time.Now().Add(time.Hour), 0)
		return err == nil && len(due) == 0
	})
	if n := len(h.model.Requests()); n != 3 {
		for _, r := range h.model.Requests() {
			t.Logf("request: last %s %q", r.LastMessage().Role, r.LastMessage().Text())
		}
		t.Fatalf("the model got %d requests, want 3 (the ask, the answer that died with its process, the answer again)", n)
	}
	var after []string
	for _, r := range h.chat.Records()[seen:] {
		if r.Err == nil && (r.Op == channelstest.OpSend || r.Op == channelstest.OpEdit) {
			after = append(after, r.Text())
		}
	}
	if !strings.Contains(strings.Join(after, "\n"), "All done.") {
		t.Fatalf("after the restart no message shows the stored answer; the new process sent %q", after)
	}
	// One message shows the turn: its text before the ask, the approved
	// call's outcome and the answer; nothing still says it waits.
	var withAnswer int
	for _, p := range h.chat.Posted(dm) {
		text := strings.Join(channels.RenderMessage(p.Message, h.chat.Capabilities()), "\n")
		if strings.Contains(text, "All done.") {
			withAnswer++
			if !strings.Contains(text, "Let me make it.") || strings.Contains(text, "waiting") || strings.Contains(text, "Waiting for approval") {
				t.Errorf("the turn's message reads %q", text)
			}
		}
	}
	if withAnswer != 1 {
		t.Errorf("%d messages show the answer, want 1", withAnswer)
	}
}

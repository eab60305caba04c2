package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func TestMessageStreamsAnswerInSameThread(t *testing.T) {
	h := newHarness(t, harnessOpts{}, fakemodel.Step{Text: "Hello from the agent."})
	thread := channels.Location{Channel: "chat", Account: "bot", ChatID: "room", ThreadID: "t1"}
	in := inbound("e1", "alice", "hi", thread)
	in.DirectMessage = false
	h.send(in)
	recs := waitText(t, h.chat, "Hello from the agent.")
	for _, r := range recs {
		if (r.Op == channelstest.OpSend || r.Op == channelstest.OpEdit) && r.Location != thread {
			t.Errorf("reply went to %v, want the thread %v", r.Location, thread)
		}
	}
}

func TestGroupMessagesNeedMention(t *testing.T) {
	h := newHarness(t, harnessOpts{}, fakemodel.Step{Text: "answered"})
	group := channels.Location{Channel: "chat", Account: "bot", ChatID: "room"}
	in := inbound("g1", "alice", "just chatting", group)
	in.DirectMessage, in.Mentioned = false, false
	h.send(in)
	stranger := inbound("g2", "mallory", "@bot hi", group)
	stranger.DirectMessage = false
	h.send(stranger)
	mention := inbound("g3", "alice", "@bot hi", group)
	mention.DirectMessage = false
	h.send(mention)
	waitText(t, h.chat, "answered")
	if n := len(h.model.Requests()); n != 1 {
		t.Fatalf("model got %d requests, want 1 (only the mention)", n)
	}
}

func TestApprovalButtons(t *testing.T) {
	h := newHarness(t, harnessOpts{}, bashCall("c1", "touch approved-file"), fakemodel.Step{Text: "All done."})
	h.send(inbound("e1", "alice", "make the file", dm))
	waitText(t, h.chat, "Approval needed")
	ref, rows := buttons(t, h.chat, "Approval needed")
	approve := rows[0][0]
	if approve.Label != "Approve" || len(approve.Token) > 64 || strings.Contains(approve.Token, "touch") {
		t.Fatalf("approve button = %+v", approve)
	}
	// Bob may talk to the bot but did not start this turn and is no admin.
	reply, err := h.chat.Press(h.ctx(), channels.Action{EventID: "p1", Location: dm, User: channels.User{ID: "bob"}, Token: approve.Token, Message: ref})
	if err != nil || !reply.Alert || !strings.Contains(reply.Text, "Only") {
		t.Fatalf("bob's press: %+v, %v", reply, err)
	}
	if _, err := os.Stat(filepath.Join(h.workspace, "approved-file")); err == nil {
		t.Fatal("the tool ran after a refused press")
	}
	reply, err = h.chat.Press(h.ctx(), channels.Action{EventID: "p2", Location: dm, User: channels.User{ID: "alice"}, Token: approve.Token, Message: ref})
	if err != nil || !strings.Contains(reply.Text, "Approved") {
		t.Fatalf("alice's press: %+v, %v", reply, err)
	}
	waitText(t, h.chat, "All done.")
	if _, err := os.Stat(filepath.Join(h.workspace, "approved-file")); err != nil {
		t.Fatal("the approved tool did not run")
	}
	// The turn's message that said "waiting" now shows the outcome: one
	// message, no stale pending activity.
	eventually(t, "the parked message to show the outcome", func() bool {
		var withAnswer, stale int
		for _, p := range h.chat.Posted(dm) {
			text := channels.RenderMessage(p.Message, h.chat.Capabilities())
			joined := strings.Join(text, "\n")
			if strings.Contains(joined, "All done.") {
				withAnswer++
			}
			if strings.Contains(joined, "Waiting for approval") {
				stale++
			}
		}
		return withAnswer == 1 && stale == 0
	})
	waitText(t, h.chat, "Approved: Bash: touch approved-file — by chat:alice")
	reply, _ = h.chat.Press(h.ctx(), channels.Action{EventID: "p3", Location: dm, User: channels.User{ID: "alice"}, Token: rows[0][1].Token, Message: ref})
	if !strings.Contains(reply.Text, "Already decided") {
		t.Fatalf("second press: %+v", reply)
	}
}

// An admin by platform role (Discord admin_roles), whom the configuration
// does not list, may decide someone else's ask by button and choose Always;
// without the role the same person is refused.
func TestRoleAdminDecidesByButton(t *testing.T) {
	h := newHarness(t, harnessOpts{}, bashCall("c1", "touch role-file"), fakemodel.Step{Text: "Done by role."})
	h.send(inbound("e1", "alice", "make the file", dm))
	waitText(t, h.chat, "Approval needed")
	ref, rows := buttons(t, h.chat, "Approval needed")
	var always channels.Button
	for _, row := range rows {
		for _, b := range row {
			if strings.HasPrefix(b.Label, "Always") {
				always = b
			}
		}
	}
	if always.Token == "" {
		t.Fatalf("no Always button in %+v", rows)
	}
	press := func(id string, roleAdmin bool) channels.ActionReply {
		t.Helper()
		reply, err := h.chat.Press(h.ctx(), channels.Action{EventID: id, Location: dm, User: channels.User{ID: "carol"},
			Token: always.Token, Message: ref, RoleAllowed: roleAdmin, RoleAdmin: roleAdmin})
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	if reply := press("p1", false); !reply.Alert || !strings.Contains(reply.Text, "Only") {
		t.Fatalf("carol's press without the role: %+v", reply)
	}
	if reply := press("p2", true); !strings.Contains(reply.Text, "Always") && !strings.Contains(reply.Text, "Approved") {
		t.Fatalf("carol's press as an admin by role: %+v", reply)
	}
	waitText(t, h.chat, "Done by role.")
	if _, err := os.Stat(filepath.Join(h.workspace, "role-file")); err != nil {
		t.Fatal("the tool did not run after the role admin's press")
	}
}

func TestApprovalExpires(t *testing.T) {
	h := newHarness(t, harnessOpts{timeout: time.Hour}, bashCall("c1", "touch late-file"), fakemodel.Step{Text: "ok, it expired"})
	h.send(inbound("e1", "alice", "make the file", dm))
	waitText(t, h.chat, "Approval needed")
	ref, rows := buttons(t, h.chat, "Approval needed")
	h.clock.Advance(2 * time.Hour)
	reply, _ := h.chat.Press(h.ctx(), channels.Action{EventID: "p1", Location: dm, User: channels.User{ID: "alice"}, Token: rows[0][0].Token, Message: ref})
	if !strings.Contains(reply.Text, "expired") {
		t.Fatalf("press after expiry: %+v", reply)
	}
	waitText(t, h.chat, "ok, it expired")
	if _, err := os.Stat(filepath.Join(h.workspace, "late-file")); err == nil {
		t.Fatal("an expired approval ran the tool")
	}
	tm := toolResults(h.model.Requests()[1])
	if len(tm) != 1 || !strings.Contains(tm[0], "expired") {
		t.Fatalf("model was told %q", tm)
	}
	waitText(t, h.chat, "Expired")
}

func TestNewMessageDeniesPendingAsk(t *testing.T) {
	h := newHarness(t, harnessOpts{}, bashCall("c1", "touch never-file"), fakemodel.Step{Text: "Sure, forgetting it."})
	h.send(inbound("e1", "alice", "make the file", dm))
	waitText(t, h.chat, "Approval needed")
	h.send(inbound("e2", "alice", "never mind", dm))
	waitText(t, h.chat, "Sure, forgetting it.")
	waitText(t, h.chat, "user sent a new message instead")
	req := h.model.Requests()[1]
	tm := toolResults(req)
	if len(tm) != 1 || !strings.Contains(tm[0], "new message") {
		t.Fatalf("tool results = %q", tm)
	}
	if _, err := os.Stat(filepath.Join(h.workspace, "never-file")); err == nil {
		t.Fatal("denied tool ran")
	}
}

func TestApprovalRoutedToSecondLocation(t *testing.T) {
	h := newHarness(t, harnessOpts{routes: []string{"phone:owner"}}, bashCall("c1", "touch routed-file"), fakemodel.Step{Text: "Done via phone."})
	h.send(inbound("e1", "alice", "make the file", dm))
	waitText(t, h.phone, "Approval needed")
	ref, rows := buttons(t, h.phone, "Approval needed")
	phoneDM := channels.Location{Channel: "phone", ChatID: "owner"}
	reply, err := h.phone.Press(h.ctx(), channels.Action{EventID: "p1", Location: phoneDM, User: channels.User{ID: "owner"}, Token: rows[0][0].Token, Message: ref})
	if err != nil || !strings.Contains(reply.Text, "Approved") {
		t.Fatalf("owner's press: %+v %v", reply, err)
	}
	waitText(t, h.chat, "Done via phone.")
	waitText(t, h.chat, "Approved: Bash: touch routed-file — by phone:owner")
	waitText(t, h.phone, "Approved: Bash: touch routed-file — by phone:owner")
}

func TestDuplicateInboundRunsOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{}, fakemodel.Step{Text: "once"})
	in := inbound("same-event", "alice", "hello", dm)
	h.send(in)
	h.send(in)
	waitText(t, h.chat, "once")
	h.model.Push(fakemodel.Step{Text: "second"})
	h.send(inbound("other-event", "alice", "again", dm))
	waitText(t, h.chat, "second")
	if n := len(h.model.Requests()); n != 2 {
		t.Fatalf("model got %d requests, want 2", n)
	}
}

func TestPairingUnknownUser(t *testing.T) {
	h := newHarness(t, harnessOpts{}, fakemodel.Step{Text: "welcome aboard"})
	carolDM := channels.Location{Channel: "chat", Account: "bot", ChatID: "dm-carol"}
	h.send(inbound("c1", "carol", "hello?", carolDM))
	recs := waitText(t, h.chat, "pairing code")
	code := ""
	for _, r := range recs {
		if i := strings.Index(r.Text(), "code is "); i >= 0 {
			code = strings.Trim(strings.Fields(r.Text()[i+len("code is "):])[0], "*")
		}
	}
	if len(code) != 8 {
		t.Fatalf("no code in %s", channelstest.Summary(recs))
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Fatal("an unknown user reached the model")
	}
	// A non-admin cannot approve it.
	h.send(inbound("c2", "alice", "/pair approve "+code, dm))
	waitText(t, h.chat, "Only an admin")
	adminDM := channels.Location{Channel: "chat", Account: "bot", ChatID: "dm-admin"}
	h.send(inbound("c3", "admin", "/pair approve "+code, adminDM))
	waitText(t, h.chat, "Paired carol")
	h.send(inbound("c4", "carol", "hello again", carolDM))
	waitText(t, h.chat, "welcome aboard")
}

func TestCommands(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.send(inbound("c1", "alice", "/bogus", dm))
	waitText(t, h.chat, "Unknown command /bogus")
	h.send(inbound("c2", "alice", "/status", dm))
	waitText(t, h.chat, "Agent")
	h.send(inbound("c3", "alice", "/mode unrestricted", dm))
	waitText(t, h.chat, "Only an admin can use /mode")
	if n := len(h.model.Requests()); n != 0 {
		t.Fatalf("commands reached the model (%d requests)", n)
	}
}

func TestModelProblemIsAnswered(t *testing.T) {
	h := newHarness(t, harnessOpts{modelProblem: "No model is configured: set SWITCHBOARD_MODEL."})
	h.send(inbound("m1", "alice", "hello", dm))
	waitText(t, h.chat, "set SWITCHBOARD_MODEL")
}

func TestRateLimitedSendIsRetriedAfterRetryAfter(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.chat.SetCapabilities(channels.Capabilities{MaxMessageLen: 4000, Buttons: true, Dialect: channels.Plain}) // no edits: every reply is an outbox send
	h.chat.FailSends(1, &channels.RateLimitError{RetryAfter: 1500 * time.Millisecond})
	h.model.Push(fakemodel.Step{Text: "patience pays"})
	h.send(inbound("r1", "alice", "hi", dm))
	recs := waitText(t, h.chat, "patience pays")
	var failedAt, sentAt time.Time
	for _, r := range recs {
		if r.Op != channelstest.OpSend {
			continue
		}
		if r.Err != nil && failedAt.IsZero() {
			failedAt = r.At
		}
		if r.Err == nil && strings.Contains(r.Text(), "patience pays") {
			sentAt = r.At
		}
	}
	if failedAt.IsZero() {
		t.Fatal("the first send was not rate limited")
	}
	if sentAt.Sub(failedAt) < 1500*time.Millisecond {
		t.Fatalf("retried %v after the 429, before retry_after (1.5s)", sentAt.Sub(failedAt))
	}
	if n := len(channelstest.Filter(recs, channelstest.Contains("patience pays"))); n != 1 {
		t.Fatalf("delivered %d times, want once", n)
	}
}

// A 429 on the turn's streamed message holds its final message too: the
// outbox sends it no sooner than retry_after after the 429, once.
func TestRateLimitedStreamHoldsTheFinalMessage(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.chat.FailSends(1, &channels.RateLimitError{RetryAfter: 1500 * time.Millisecond})
	h.model.Push(fakemodel.Step{Text: "patience pays"})
	h.send(inbound("r2", "alice", "hi", dm))
	recs := waitText(t, h.chat, "patience pays")
	var failedAt, sentAt time.Time
	for _, r := range recs {
		if r.Op != channelstest.OpSend {
			continue
		}
		if r.Err != nil && failedAt.IsZero() {
			failedAt = r.At
		}
		if r.Err == nil && strings.Contains(r.Text(), "patience pays") {
			sentAt = r.At
		}
	}
	if failedAt.IsZero() {
		t.Fatal("the streamed send was not rate limited")
	}
	if sentAt.Sub(failedAt) < 1500*time.Millisecond {
		t.Fatalf("the final message went out %v after the 429, before retry_after (1.5s)", sentAt.Sub(failedAt))
	}
	if n := len(channelstest.Filter(recs, func(r channelstest.Record) bool {
		return r.Op == channelstest.OpSend && r.Err == nil && strings.Contains(r.Text(), "patience pays")
	})); n != 1 {
		t.Fatalf("sent %d times, want once", n)
	}
}

// The streamed first page and the final message that replaces a failed
// stream send share one idempotency key, derived from the input: a send
// the platform made but whose answer was lost (or a crash inside it) is
// not posted twice where the surface honours keys. Other outbound messages
// get the outbox item's key.
func TestTurnPagesShareTheStreamKey(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.chat.FailSends(1, errors.New("connection reset"))
	h.model.Push(fakemodel.Step{Text: "keyed answer"})
	h.send(inbound("k1", "alice", "hi", dm))
	recs := waitText(t, h.chat, "keyed answer")
	var keys []string
	for _, r := range recs {
		if r.Op == channelstest.OpSend {
			keys = append(keys, r.Message.Key)
		}
	}
	if len(keys) < 2 || keys[0] == "" || keys[len(keys)-1] != keys[0] || !strings.HasPrefix(keys[0], "st-in-") {
		t.Fatalf("send keys %q; want the failed streamed send's st-in-… key on the final send too", keys)
	}
	h.send(inbound("k2", "alice", "/help", dm))
	help := waitText(t, h.chat, "Commands")
	last := help[len(help)-1]
	if !strings.HasPrefix(last.Message.Key, "ob-") {
		t.Fatalf("a command reply has key %q, want the outbox item's ob-…", last.Message.Key)
	}
}

func toolResults(req fakemodel.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role != "tool" {
			continue
		}
		var b strings.Builder
		for _, p := range m.Parts() {
			b.WriteString(p.Text)
		}
		out = append(out, b.String())
	}
	return out
}

var _ = errors.New
var _ = context.Background

// An ask routed to someone's DM has working buttons for that person even
// when they are not an admin.
func TestApprovalRouteRecipientMayDecide(t *testing.T) {
	h := newHarness(t, harnessOpts{routes: []string{"phone:friend"}}, bashCall("c1", "touch friend-file"), fakemodel.Step{Text: "Friend approved."})
	h.send(inbound("e1", "alice", "make the file", dm))
	waitText(t, h.phone, "Approval needed")
	ref, rows := buttons(t, h.phone, "Approval needed")
	friendDM := channels.Location{Channel: "phone", ChatID: "friend"}
	reply, err := h.phone.Press(h.ctx(), channels.Action{EventID: "p1", Location: friendDM, User: channels.User{ID: "friend"}, Token: rows[0][0].Token, Message: ref})
	if err != nil || !strings.Contains(reply.Text, "Approved") {
		t.Fatalf("route recipient's press: %+v %v", reply, err)
	}
	waitText(t, h.chat, "Friend approved.")
}

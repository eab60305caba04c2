package discord

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboard-gw/switchboard/channels"
	dt "github.com/switchboard-gw/switchboard/channels/discord/discordtest"
)

func TestMentionOpensThreadAndAnswerStreamsThere(t *testing.T) {
	e := start(t, nil)
	id := e.srv.Post(dt.TextChannelID, dt.UserID, "fix the build\nplease", dt.Mention())
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	want := channels.Inbound{
		EventID:    id,
		Location:   loc(dt.TextChannelID, id), // the thread opened from the message has its id
		User:       channels.User{ID: dt.UserID, Name: "Ada Lovelace", Username: "ada"},
		Text:       "fix the build\nplease",
		Mentioned:  true,
		ReplyToBot: true,
		MessageID:  id,
	}
	if d := cmp.Diff(want, in, cmpopts.IgnoreFields(channels.Inbound{}, "At")); d != "" {
		t.Errorf("inbound (-want +got):\n%s", d)
	}
	if in.At.IsZero() {
		t.Error("inbound has no time")
	}
	th, ok := e.srv.Channel(id)
	if !ok || th.ParentID != dt.TextChannelID || th.OwnerID != dt.BotID || th.Name != "fix the build" {
		t.Fatalf("thread %+v (exists %v): want one opened from the message, named after its first line", th, ok)
	}

	// The answer streams in the thread by edits.
	ref, err := e.a.Send(e.ctx, in.Location, channels.Message{Parts: []channels.Part{channels.Text{Markdown: "Working…"}}, ReplyTo: in.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Working… found it", "Working… fixed **it**", "Done: the build passes."} {
		if err := e.a.Edit(e.ctx, ref, channels.TextMessage(s)); err != nil {
			t.Fatal(err)
		}
	}
	msgs := e.srv.Messages(id)
	if len(msgs) != 1 || msgs[0].ID != ref.ID || msgs[0].Content != "Done: the build passes." || msgs[0].Edits != 3 {
		t.Fatalf("thread shows %+v; want one message edited three times to the final text", msgs)
	}
	if msgs[0].ReferenceID != "" {
		t.Errorf("the answer in the thread references %s; a thread opened from the question needs no reference", msgs[0].ReferenceID)
	}

	// A message in the thread routes without a mention (the bot's thread),
	// and the bot's own messages, which Discord dispatches back, are not
	// handed over.
	e.srv.Post(id, dt.UserID, "and the tests?")
	next := e.rec.inboundWith(t, e.ctx, "and the tests?")
	if next.Location != in.Location || next.Mentioned || !next.ReplyToBot {
		t.Errorf("thread reply inbound %+v: want the thread's location, not mentioned, ReplyToBot", next)
	}
	if got := e.rec.waitInbound(t, e.ctx, 2); len(got) != 2 {
		t.Errorf("%d inbounds, want 2 (the bot's own messages are ignored)", len(got))
	}
	// A second mention of the same message (a catch-up, a retry) reuses
	// the thread: Discord refuses a second one with 160004.
	threadID, err := e.a.startThread(e.ctx, dt.TextChannelID, id, "again")
	if err != nil || threadID != id {
		t.Errorf("startThread again = %q, %v; want the existing thread %s", threadID, err, id)
	}
}

func TestChannelMentionWithoutAutoThread(t *testing.T) {
	e := start(t, func(o *Options) { o.AutoThread = false })
	e.srv.Post(dt.TextChannelID, dt.UserID, "hello", dt.Mention())
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	if in.Location != loc(dt.TextChannelID, "") || !in.Mentioned {
		t.Errorf("inbound %+v: want the channel itself", in)
	}
	if calls := e.srv.Calls("POST /channels/" + dt.TextChannelID + "/messages/"); len(calls) != 0 {
		t.Errorf("a thread was opened: %+v", calls)
	}
	// The answer replies to the question, pinging only its author.
	if _, err := e.a.Send(e.ctx, in.Location, channels.Message{Parts: []channels.Part{channels.Text{Markdown: "hi @everyone <@123>"}}, ReplyTo: in.MessageID}); err != nil {
		t.Fatal(err)
	}
	var answer dt.Message
	for _, m := range e.srv.Messages(dt.TextChannelID) {
		if m.Author.ID == dt.BotID {
			answer = m
		}
	}
	if answer.ReferenceID != in.MessageID {
		t.Errorf("answer references %q, want the question %s", answer.ReferenceID, in.MessageID)
	}
	if string(answer.AllowedMentions) != `{"parse":[],"replied_user":true}` {
		t.Errorf("allowed_mentions %s: want no parsed mentions", answer.AllowedMentions)
	}
	if strings.Contains(answer.Content, "@everyone") || strings.Contains(answer.Content, "<@123>") {
		t.Errorf("mass mention not neutralized: %q", answer.Content)
	}
}

func TestForumPostAndDM(t *testing.T) {
	e := start(t, nil)
	post := e.srv.NewForumPost(dt.UserID, "Build fails", "why does it fail?", dt.Mention())
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	if in.Location != loc(dt.ForumID, post) || !in.Mentioned {
		t.Errorf("forum post inbound at %+v, want the post's own thread in the forum", in.Location)
	}
	if calls := e.srv.Calls("POST /channels/" + post + "/messages/"); len(calls) != 0 {
		t.Errorf("a thread was opened inside a forum post: %+v", calls)
	}

	dm, err := e.a.DirectLocation(e.ctx, dt.UserID)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Post(dm.ChatID, dt.UserID, "a private question")
	got := e.rec.inboundWith(t, e.ctx, "a private question")
	if !got.DirectMessage || got.Location != dm || got.RoleAllowed {
		t.Errorf("DM inbound %+v: want DirectMessage at %+v", got, dm)
	}
}

func TestDuplicateDispatchHandedOverOnce(t *testing.T) {
	e := start(t, nil)
	id := e.srv.Post(dt.TextChannelID, dt.UserID, "once only", dt.Mention())
	first := e.rec.inboundWith(t, e.ctx, "once only")
	e.srv.Redispatch(id)
	e.srv.Redispatch(id)
	e.srv.Post(dt.TextChannelID, dt.UserID, "sentinel", dt.Mention())
	e.rec.inboundWith(t, e.ctx, "sentinel") // the worker is in order: the duplicates came first
	if n := e.rec.count("once only"); n != 1 {
		t.Errorf("the message was handed over %d times", n)
	}
	if first.EventID != id {
		t.Errorf("EventID %q, want the message id %s (the gateway dedupes on it)", first.EventID, id)
	}
}

func TestHandlerRefusalRetried(t *testing.T) {
	e := start(t, nil)
	e.rec.mu.Lock()
	e.rec.failIn = 2
	e.rec.mu.Unlock()
	e.srv.Post(dt.TextChannelID, dt.UserID, "keep trying", dt.Mention())
	e.rec.inboundWith(t, e.ctx, "keep trying")
	e.rec.mu.Lock()
	attempts := e.rec.attempts
	e.rec.mu.Unlock()
	if attempts != 3 || e.rec.count("keep trying") != 1 {
		t.Errorf("%d attempts, %d accepted; want 3 and 1", attempts, e.rec.count("keep trying"))
	}
	// The thread was opened once; the retries found it.
	if n := len(e.srv.Calls("POST /channels/" + dt.TextChannelID + "/messages/")); n != 3 {
		t.Errorf("%d thread creations, want 3 attempts (two answered 160004)", n)
	}
}

func TestFilters(t *testing.T) {
	const allowRole, adminRole = "600000000000000001", "600000000000000002"
	e := start(t, func(o *Options) {
		o.Guilds = []string{dt.GuildID}
		o.AllowedChannels = []string{dt.TextChannelID, dt.ForumID}
		o.AllowRoles = []string{allowRole}
		o.AdminRoles = []string{adminRole}
	})
	e.srv.Post(dt.OtherGuildCh, dt.UserID, "other guild", dt.Mention())
	e.srv.Post(dt.VoiceID, dt.UserID, "not an allowed channel", dt.Mention())
	e.srv.Post(dt.TextChannelID, dt.OtherBotID, "from a bot", dt.Mention())
	e.srv.Post(dt.TextChannelID, dt.UserID, "plain member")
	e.srv.Post(dt.TextChannelID, dt.UserID, "allowed by role", dt.WithRoles(allowRole))
	e.srv.Post(dt.TextChannelID, dt.OtherUserID, "admin by role", dt.WithRoles("600000000000000009", adminRole))
	got := e.rec.waitInbound(t, e.ctx, 3)
	type facts struct {
		Text                   string
		RoleAllowed, RoleAdmin bool
	}
	var gotFacts []facts
	for _, in := range got {
		gotFacts = append(gotFacts, facts{in.Text, in.RoleAllowed, in.RoleAdmin})
	}
	want := []facts{{"plain member", false, false}, {"allowed by role", true, false}, {"admin by role", true, true}}
	if d := cmp.Diff(want, gotFacts); d != "" {
		t.Errorf("handed over (-want +got):\n%s", d)
	}
	// A thread counts as its parent channel.
	e.srv.Post(dt.TextChannelID, dt.UserID, "start a thread", dt.Mention())
	th := e.rec.inboundWith(t, e.ctx, "start a thread").Location.ThreadID
	e.srv.Post(th, dt.UserID, "in the thread")
	e.rec.inboundWith(t, e.ctx, "in the thread")
	for _, s := range []string{"other guild", "not an allowed channel", "from a bot"} {
		if e.rec.count(s) != 0 {
			t.Errorf("%q was handed over", s)
		}
	}
}

func TestAllowBots(t *testing.T) {
	e := start(t, func(o *Options) { o.AllowBots = true })
	e.srv.Post(dt.TextChannelID, dt.OtherBotID, "bot to bot", dt.Mention())
	in := e.rec.inboundWith(t, e.ctx, "bot to bot")
	if in.User.ID != dt.OtherBotID {
		t.Errorf("inbound user %q", in.User.ID)
	}
	if _, err := e.a.Send(e.ctx, in.Location, channels.TextMessage("reply")); err != nil {
		t.Fatal(err)
	}
	e.srv.Post(in.Location.ThreadID, dt.UserID, "sentinel")
	e.rec.inboundWith(t, e.ctx, "sentinel")
	if n := len(e.rec.waitInbound(t, e.ctx, 2)); n != 2 {
		t.Errorf("%d inbounds: the bot's own reply must never come back, even with allow_bots", n)
	}
}

func TestButtonsApproverAndNonApprover(t *testing.T) {
	e := start(t, nil)
	e.srv.Post(dt.TextChannelID, dt.UserID, "deploy it", dt.Mention())
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	e.rec.mu.Lock()
	e.rec.replyFor = func(a channels.Action) channels.ActionReply {
		if a.User.ID != dt.UserID {
			return channels.ActionReply{Text: "Only Ada or an admin can decide this.", Alert: true}
		}
		return channels.ActionReply{}
	}
	e.rec.mu.Unlock()
	ref, err := e.a.Send(e.ctx, in.Location, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "Run `git push`?"},
		channels.Buttons{Rows: [][]channels.Button{{
			{Label: "Approve", Style: channels.StylePrimary, Token: "tok-approve"},
			{Label: "Deny", Style: channels.StyleDanger, Token: "tok-deny"},
			{Label: "Always: Bash(git push:*)", Token: "tok-always"},
		}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := e.srv.Message(ref.ID)
	if d := cmp.Diff([]string{"tok-approve", "tok-deny", "tok-always"}, m.Tokens); d != "" {
		t.Fatalf("buttons (-want +got):\n%s", d)
	}

	// Grace is no approver: she sees the refusal, only she, and nothing changes.
	pressID := e.srv.PressButton(in.Location.ThreadID, ref.ID, "tok-approve", dt.OtherUserID)
	refusal, err := e.srv.WaitFollowup(e.ctx, pressID)
	if err != nil {
		t.Fatal(err)
	}
	if refusal != "Only Ada or an admin can decide this." {
		t.Errorf("presser saw %q", refusal)
	}
	if pi, _ := e.srv.Interaction(pressID); len(pi.Callbacks) != 1 || pi.Callbacks[0] != respondDeferredUpdate {
		t.Errorf("press answered with %v, want one deferred update", pi.Callbacks)
	}
	if m, _ := e.srv.Message(ref.ID); m.Edits != 0 {
		t.Error("the approval message changed after a refused press")
	}

	// Ada approves; the gateway edits the message, removing the buttons.
	pressID = e.srv.PressButton(in.Location.ThreadID, ref.ID, "tok-approve", dt.UserID)
	e.rec.waitFor(t, e.ctx, "two presses", func() bool { return len(e.rec.actions) == 2 })
	e.rec.mu.Lock()
	a := e.rec.actions[1]
	e.rec.mu.Unlock()
	want := channels.Action{EventID: pressID, Location: in.Location, User: channels.User{ID: dt.UserID, Name: "Ada Lovelace", Username: "ada"},
		Token: "tok-approve", Message: channels.MessageRef{Location: in.Location, ID: ref.ID}}
	if d := cmp.Diff(want, a); d != "" {
		t.Errorf("action (-want +got):\n%s", d)
	}
	if _, err := e.srv.WaitCallback(e.ctx, pressID); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("Run `git push`? — approved by Ada")); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.srv.Message(ref.ID); len(m.Tokens) != 0 || !strings.Contains(m.Content, "approved") {
		t.Errorf("after the decision the message is %+v; want the buttons gone", m)
	}
	if pi, _ := e.srv.Interaction(pressID); len(pi.Followups) != 0 {
		t.Errorf("an empty reply sent a followup: %+v", pi.Followups)
	}
}

func TestCommandInteraction(t *testing.T) {
	e := start(t, func(o *Options) { o.AdminRoles = []string{"600000000000000002"} })
	cmds := []channels.Command{
		{Name: "status", Description: "Show agent, model and pending approvals"},
		{Name: "deny", Args: "[id] [reason]", Description: "Deny a pending tool call"},
		{Name: "Bad Name!", Description: "skipped"},
	}
	if err := e.a.RegisterCommands(e.ctx, cmds); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(e.srv.Commands("global"), &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"name": "status", "type": 1.0, "description": "Show agent, model and pending approvals", "dm_permission": true},
		{"name": "deny", "type": 1.0, "description": "Deny a pending tool call", "dm_permission": true,
			"options": []any{map[string]any{"type": 3.0, "name": "args", "description": "[id] [reason]", "required": false}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("registered commands (-want +got):\n%s", d)
	}

	iid := e.srv.Command(dt.TextChannelID, dt.UserID, "deny", "3 too risky", "600000000000000002")
	in := e.rec.inboundWith(t, e.ctx, "/deny")
	if in.Text != "/deny 3 too risky" || in.MessageID != "i:"+iid || in.EventID != iid || !in.Mentioned || !in.RoleAdmin || in.Location != loc(dt.TextChannelID, "") {
		t.Errorf("command inbound %+v", in)
	}
	inter, err := e.srv.WaitCallback(e.ctx, iid)
	if err != nil {
		t.Fatal(err)
	}
	if inter.Callbacks[0] != respondMessage || inter.Original == nil || inter.Original.Flags&flagEphemeral == 0 {
		t.Fatalf("command acknowledged with %+v; want an ephemeral message at once", inter)
	}
	// The gateway's reply replaces the acknowledgement, and can be edited.
	ref, err := e.a.Send(e.ctx, in.Location, channels.Message{Parts: []channels.Part{channels.Text{Markdown: "Denied approval 3."}}, ReplyTo: in.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("Denied approval 3: too risky.")); err != nil {
		t.Fatal(err)
	}
	inter, _ = e.srv.Interaction(iid)
	if inter.Original.Content != "Denied approval 3: too risky." || ref.ID != inter.Original.ID {
		t.Errorf("interaction response %+v (ref %s); want the reply, edited", inter.Original, ref.ID)
	}
	if n := len(e.srv.Messages(dt.TextChannelID)); n != 0 {
		t.Errorf("%d channel messages; the reply belongs to the interaction", n)
	}
	// The token never reaches a log.
	if strings.Contains(e.logs.String(), inter.Token) {
		t.Error("an interaction token was logged")
	}
}

func TestCommandsPerGuild(t *testing.T) {
	e := start(t, func(o *Options) { o.Guilds = []string{dt.GuildID, dt.OtherGuildID} })
	if err := e.a.RegisterCommands(e.ctx, []channels.Command{{Name: "help", Description: "List commands"}}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{dt.GuildID, dt.OtherGuildID} {
		if !strings.Contains(string(e.srv.Commands(g)), `"help"`) {
			t.Errorf("guild %s commands %s", g, e.srv.Commands(g))
		}
	}
	if e.srv.Commands("global") != nil {
		t.Error("global commands registered although guilds are configured")
	}
	// A command from a server not configured is refused, and not handed over.
	iid := e.srv.Command(dt.TextChannelID, dt.UserID, "help", "")
	if _, err := e.srv.WaitCallback(e.ctx, iid); err != nil {
		t.Fatal(err)
	}
	e.rec.inboundWith(t, e.ctx, "/help")
	e.srv.AddChannel(dt.Channel{ID: "810000000000000077", GuildID: "800000000000000077", Type: dt.TypeText})
	iid = e.srv.Command("810000000000000077", dt.UserID, "help", "")
	inter, err := e.srv.WaitCallback(e.ctx, iid)
	if err != nil {
		t.Fatal(err)
	}
	if inter.Original == nil || inter.Original.Content != notHereText || e.rec.count("/help") != 1 {
		t.Errorf("command from another server answered %+v, handed over %d", inter.Original, e.rec.count("/help"))
	}
}

func TestSendWithKeyPostsOnce(t *testing.T) {
	e := start(t, nil)
	l := loc(dt.TextChannelID, "")
	m := channels.Message{Parts: []channels.Part{channels.Text{Markdown: "the report"}}, Key: "outbox-42"}
	first, err := e.a.Send(e.ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	// The process died after Discord took the message, before the outbox
	// recorded it: the outbox sends it again.
	again, err := e.a.Send(e.ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != again.ID || len(e.srv.Messages(dt.TextChannelID)) != 1 {
		t.Errorf("refs %s and %s, %d messages: a retried send must post once", first.ID, again.ID, len(e.srv.Messages(dt.TextChannelID)))
	}
	other, err := e.a.Send(e.ctx, l, channels.Message{Parts: m.Parts, Key: "outbox-43"})
	if err != nil {
		t.Fatal(err)
	}
	unkeyed, err := e.a.Send(e.ctx, l, channels.TextMessage("the report"))
	if err != nil {
		t.Fatal(err)
	}
	if other.ID == first.ID || unkeyed.ID == first.ID || len(e.srv.Messages(dt.TextChannelID)) != 3 {
		t.Errorf("different keys or no key must post new messages")
	}
	calls := e.srv.Calls("POST /channels/" + dt.TextChannelID + "/messages")
	var bodies []struct {
		Nonce        string `json:"nonce"`
		EnforceNonce bool   `json:"enforce_nonce"`
	}
	for _, c := range calls {
		var b struct {
			Nonce        string `json:"nonce"`
			EnforceNonce bool   `json:"enforce_nonce"`
		}
		json.Unmarshal(c.Body, &b)
		bodies = append(bodies, b)
	}
	if len(bodies) != 4 || bodies[0] != bodies[1] || bodies[0].Nonce == "" || !bodies[0].EnforceNonce || bodies[2].Nonce == bodies[0].Nonce || bodies[3].Nonce != "" {
		t.Errorf("nonces sent %+v", bodies)
	}
}

// A send whose nonce names a message made earlier for the same key, but
// showing an earlier state (a streamed first page, with a Stop button, when
// the process died), leaves that one message showing this send.
func TestSendWithKeyUpdatesTheEarlierMessage(t *testing.T) {
	e := start(t, nil)
	l := loc(dt.TextChannelID, "")
	early := channels.Message{Key: "st-in-c-1/p0", Parts: []channels.Part{channels.Text{Markdown: "An answer i"},
		channels.Buttons{Rows: [][]channels.Button{{{Label: "Stop", Token: "stop-token"}}}}}}
	first, err := e.a.Send(e.ctx, l, early)
	if err != nil {
		t.Fatal(err)
	}
	final := channels.Message{Key: early.Key, Parts: []channels.Part{channels.Text{Markdown: "An answer in full."}}}
	again, err := e.a.Send(e.ctx, l, final)
	if err != nil {
		t.Fatal(err)
	}
	ms := e.srv.Messages(dt.TextChannelID)
	if again.ID != first.ID || len(ms) != 1 || ms[0].Content != "An answer in full." || len(ms[0].Tokens) != 0 {
		t.Fatalf("refs %s, %s; messages %+v: want the one message showing the final text without buttons", first.ID, again.ID, ms)
	}
	// A retry that finds the message as it should be edits nothing.
	edits := ms[0].Edits
	if _, err := e.a.Send(e.ctx, l, final); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.srv.Message(first.ID); m.Edits != edits {
		t.Errorf("a retry of a send Discord shows already edited it (%d edits, want %d)", m.Edits, edits)
	}
}

func TestRateLimits(t *testing.T) {
	e := start(t, nil)
	l := loc(dt.TextChannelID, "")
	e.srv.FailNextRateLimited(1500 * time.Millisecond)
	_, err := e.a.Send(e.ctx, l, channels.TextMessage("limited"))
	if d, ok := channels.RetryAfter(err); !ok || d != 1500*time.Millisecond || channels.IsPermanent(err) {
		t.Fatalf("429 gave %v; want a *channels.RateLimitError of 1.5s", err)
	}
	// A send that empties the bucket for longer than the adapter waits:
	// the next one fails at once, without a request.
	e.srv.ExhaustBucket(time.Minute)
	if _, err := e.a.Send(e.ctx, l, channels.TextMessage("one")); err != nil {
		t.Fatal(err)
	}
	before := len(e.srv.Calls("POST /channels/" + dt.TextChannelID + "/messages"))
	_, err = e.a.Send(e.ctx, l, channels.TextMessage("two"))
	if d, ok := channels.RetryAfter(err); !ok || d < 50*time.Second {
		t.Fatalf("send into an exhausted bucket gave %v; want a RateLimitError of about a minute", err)
	}
	if after := len(e.srv.Calls("POST /channels/" + dt.TextChannelID + "/messages")); after != before {
		t.Error("the adapter sent into a bucket it knew was empty")
	}
	// Edits are another bucket and still work.
	ref, _ := e.a.Send(e.ctx, loc(dt.VoiceID, ""), channels.TextMessage("elsewhere"))
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("edited")); err != nil {
		t.Errorf("edit in another channel: %v", err)
	}
	// A short reset is waited for, then the send goes out.
	e.srv.ExhaustBucket(50 * time.Millisecond)
	if _, err := e.a.Send(e.ctx, loc(dt.ForumID, ""), channels.TextMessage("three")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Send(e.ctx, loc(dt.ForumID, ""), channels.TextMessage("four")); err != nil {
		t.Errorf("send after a short reset: %v", err)
	}
	// Permanent refusals.
	e.srv.FailNextError(403, 50013, "Missing Permissions")
	if _, err := e.a.Send(e.ctx, loc(dt.OtherGuildCh, ""), channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("403 gave %v; want permanent", err)
	}
	if _, err := e.a.Send(e.ctx, channels.Location{Channel: Name, ChatID: "not-an-id"}, channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("bad location gave %v; want permanent", err)
	}
}

func TestFilesBothWays(t *testing.T) {
	e := start(t, nil)
	png := []byte("\x89PNG fake image bytes")
	e.srv.Post(dt.TextChannelID, dt.UserID, "what is this?", dt.Mention(),
		dt.Attach("shot.png", "image/png", png), dt.Attach("notes.txt", "text/plain", []byte("hello")))
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	if len(in.Attachments) != 1 || string(in.Attachments[0].Data) != string(png) || in.Attachments[0].MIME != "image/png" {
		t.Errorf("attachments %+v; want the image", in.Attachments)
	}
	if !strings.Contains(in.Text, `"notes.txt"`) {
		t.Errorf("text %q does not say the text file was not read", in.Text)
	}
	ref, err := e.a.Send(e.ctx, in.Location, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "Here is the log."},
		channels.Attachment{Name: "build.log", MIME: "text/plain", Data: []byte("ok\n")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := e.srv.Message(ref.ID)
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "build.log" || string(m.Attachments[0].Data) != "ok\n" || m.Content != "Here is the log." {
		t.Errorf("sent message %+v; want the text with the file", m)
	}
	if err := e.a.Typing(e.ctx, in.Location); err != nil {
		t.Fatal(err)
	}
	if len(e.srv.Calls("POST /channels/"+in.Location.ThreadID+"/typing")) != 1 {
		t.Error("typing went elsewhere")
	}
	if err := e.a.Delete(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Delete(e.ctx, ref); err != nil {
		t.Errorf("deleting a deleted message: %v", err)
	}
}

func TestBadTokenStopsStart(t *testing.T) {
	srv := dt.New(t)
	logs := &logBuffer{}
	a := newTestAdapter(t, srv, logs, func(o *Options) { o.Token = "OTAwMDAwMDAwMDAwMDAwMDAx.wrong.token-secret" })
	err := a.Start(t.Context(), newRecorder())
	if err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("Start = %v; want an error about the token", err)
	}
	if strings.Contains(err.Error()+logs.String(), "token-secret") {
		t.Error("the token leaked into the error or the log")
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "channels.discord.token") {
		t.Errorf("New without token: %v", err)
	}
}

package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

func TestMentionStartsThreadStreamedByEdits(t *testing.T) {
	e := start(t, ModeSocket, nil)
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("summarize the log"))
	if len(root.EventIDs) != 2 {
		t.Fatalf("a mention emitted %d events, want app_mention and message", len(root.EventIDs))
	}
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	want := channels.Inbound{
		EventID:   slacktest.General + ":" + root.TS,
		Location:  generalThread(root.TS),
		User:      channels.User{ID: slacktest.Ada, Name: "Ada", Username: "ada"},
		Text:      "summarize the log",
		Mentioned: true,
		MessageID: root.TS,
		At:        in.At,
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("inbound (-want +got):\n%s", diff)
	}
	// The gateway streams its answer: a message, then edits.
	ref, err := e.a.Send(e.ctx, in.Location, channels.TextMessage("Working…"))
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range []string{"The log", "The log shows **3 errors**."} {
		if err := e.a.Edit(e.ctx, ref, channels.TextMessage(md)); err != nil {
			t.Fatal(err)
		}
	}
	// A follow-up in the thread without a mention reaches the gateway as
	// part of the same conversation.
	e.srv.Post(slacktest.General, slacktest.Grace, "and the warnings?", slacktest.InThread(root.TS))
	got := e.rec.waitInbound(t, e.ctx, 2)
	follow := got[1]
	if follow.Location != in.Location || follow.Mentioned || !follow.ReplyToBot || follow.Text != "and the warnings?" {
		t.Errorf("follow-up %+v: want the thread's location, not mentioned, ReplyToBot", follow)
	}
	if len(got) != 2 {
		t.Errorf("%d inbounds; the app_mention+message pair and the bot's own messages must not add any", len(got))
	}
	msgs := e.srv.BotMessages(slacktest.General, root.TS)
	if len(msgs) != 1 || msgs[0].TS != ref.ID || msgs[0].Edits != 2 {
		t.Fatalf("bot messages in the thread %+v; want the one reply, edited twice", msgs)
	}
	if s := msgs[0].Shown(); s != "The log shows *3 errors*." {
		t.Errorf("shown %q", s)
	}
	for _, c := range e.srv.Calls("chat.postMessage") {
		if c.Params["thread_ts"] != root.TS {
			t.Errorf("chat.postMessage went to thread %q, want the root %s", c.Params["thread_ts"], root.TS)
		}
	}
	if err := e.srv.WaitFor(e.ctx, "both events acknowledged", func() bool {
		return e.srv.Acked(root.EventIDs[0]) && e.srv.Acked(root.EventIDs[1])
	}); err != nil {
		t.Fatal(err)
	}
	// A second reply in the thread (from another thread member) is
	// threaded the same way.
	if _, err := e.a.Send(e.ctx, follow.Location, channels.TextMessage("Two warnings.")); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.BotMessages(slacktest.General, root.TS)); n != 2 {
		t.Errorf("%d bot messages in the thread, want 2", n)
	}
}

func TestRefusedEventIsDeliveredAgainThenAcked(t *testing.T) {
	e := setup(t, ModeSocket, nil)
	e.rec.failIn = 1
	e.run(t)
	p := e.srv.Post(e.srv.DM(slacktest.Ada), slacktest.Ada, "hello")
	id := p.EventIDs[0]
	e.rec.waitInbound(t, e.ctx, 1)
	if err := e.srv.WaitFor(e.ctx, "the ack", func() bool { return e.srv.Acked(id) }); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.Attempts(id); n < 2 {
		t.Errorf("the refused event was delivered %d times, want again after the refusal", n)
	}
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	if len(e.rec.attempts) < 2 || len(e.rec.inbound) != 1 || e.rec.attempts[0].EventID != e.rec.attempts[1].EventID {
		t.Errorf("attempts %d, accepted %d; want the same EventID again, accepted once", len(e.rec.attempts), len(e.rec.inbound))
	}
}

func TestDirectMessagesAndBotsIgnored(t *testing.T) {
	e := start(t, ModeSocket, nil)
	dm := e.srv.DM(slacktest.Ada)
	e.srv.Post(dm, slacktest.Ada, "from another app", slacktest.ByBot("B0OTHER"))
	e.srv.Post(slacktest.General, slacktest.Ada, "a bot's", slacktest.ByBot("B0OTHER"))
	p := e.srv.Post(dm, slacktest.Ada, "hello there")
	got := e.rec.waitInbound(t, e.ctx, 1)
	in := got[0]
	if !in.DirectMessage || in.Mentioned || in.Location.ThreadID != "" || in.Location.ChatID != dm || in.Text != "hello there" {
		t.Errorf("DM inbound %+v", in)
	}
	loc, err := e.a.DirectLocation(e.ctx, slacktest.Ada)
	if err != nil {
		t.Fatal(err)
	}
	if loc != in.Location {
		t.Errorf("DirectLocation %+v differs from the DM's location %+v: the gateway would bind two conversations", loc, in.Location)
	}
	if _, err := e.a.Send(e.ctx, loc, channels.TextMessage("hi Ada")); err != nil {
		t.Fatal(err)
	}
	e.srv.Post(dm, slacktest.Ada, "second")
	got = e.rec.waitInbound(t, e.ctx, 2)
	if len(got) != 2 || got[1].Text != "second" {
		t.Errorf("inbounds %+v: bot messages must be skipped", got)
	}
	if err := e.srv.WaitFor(e.ctx, "the DM event acked", func() bool { return e.srv.Acked(p.EventIDs[0]) }); err != nil {
		t.Fatal(err)
	}
	// Names are looked up once.
	if n := len(e.srv.Calls("users.info")); n != 1 {
		t.Errorf("users.info called %d times for one user, want 1 (cached)", n)
	}
}

func TestAllowedChannels(t *testing.T) {
	e := start(t, ModeSocket, func(o *Options) { o.AllowedChannels = []string{"C0OPS"} })
	e.srv.AddChannel("C0OPS")
	skipped := e.srv.Post(slacktest.General, slacktest.Ada, mention("here?"))
	e.srv.Post("C0OPS", slacktest.Ada, mention("and here?"))
	got := e.rec.waitInbound(t, e.ctx, 1)
	if got[0].Location.ChatID != "C0OPS" {
		t.Errorf("inbound from %s; allowed_channels is C0OPS", got[0].Location.ChatID)
	}
	if err := e.srv.WaitFor(e.ctx, "the skipped mention acked", func() bool { return e.srv.Acked(skipped.EventIDs[0]) }); err != nil {
		t.Fatal(err)
	}
	if n := len(e.rec.inbounds()); n != 1 {
		t.Errorf("%d inbounds, want only the allowed channel's", n)
	}
}

func TestButtonsAndPressRepliesToThePresserOnly(t *testing.T) {
	e := start(t, ModeSocket, nil)
	e.rec.reply = channels.ActionReply{Text: "Only approvers may decide (you asked: 1 < 2)."}
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("clean the build"))
	loc := e.rec.waitInbound(t, e.ctx, 1)[0].Location
	ref, err := e.a.Send(e.ctx, loc, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "**Bash** wants to run `rm -rf build`\nin `/work/app` — asked by Ada"},
		channels.Buttons{Rows: [][]channels.Button{
			{{Label: "Approve", Style: channels.StylePrimary, Token: "tok-approve"}, {Label: "Deny", Style: channels.StyleDanger, Token: "tok-deny"}},
			{{Label: "Always: Bash(rm -rf build)", Token: "tok-always"}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := e.srv.Message(slacktest.General, ref.ID)
	if !ok || m.ThreadTS != root.TS {
		t.Fatalf("card %+v not in the thread %s", m, root.TS)
	}
	var kinds []string
	for _, b := range m.Blocks {
		kinds = append(kinds, b.Type+":"+b.BlockID)
	}
	if diff := cmp.Diff([]string{"section:sb-text-0", "actions:sb-actions-0-0", "actions:sb-actions-1-0"}, kinds); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]slacktest.Button{
		{ActionID: "tok-approve", Value: "tok-approve", Text: "Approve", Style: "primary"},
		{ActionID: "tok-deny", Value: "tok-deny", Text: "Deny", Style: "danger"},
		{ActionID: "tok-always", Value: "tok-always", Text: "Always: Bash(rm -rf build)"},
	}, m.Buttons()); diff != "" {
		t.Errorf("buttons (-want +got):\n%s", diff)
	}
	if !strings.Contains(m.Shown(), "`rm -rf build`") || !strings.Contains(m.Shown(), "*Bash*") {
		t.Errorf("the card shows %q", m.Shown())
	}
	shown, err := e.srv.Press(e.ctx, slacktest.General, ref.ID, "tok-deny", slacktest.Grace)
	if err != nil {
		t.Fatal(err)
	}
	a := e.rec.waitAction(t, e.ctx, 1)[0]
	if a.Token != "tok-deny" || a.User.ID != slacktest.Grace || a.Location != loc || a.Message.ID != ref.ID || a.EventID == "" {
		t.Errorf("action %+v", a)
	}
	if shown != "Only approvers may decide (you asked: 1 &lt; 2)." {
		t.Errorf("the presser was shown %q", shown)
	}
	eph := e.srv.Ephemerals()
	if len(eph) != 1 || eph[0].User != slacktest.Grace || eph[0].Via != "response_url" {
		t.Errorf("ephemerals %+v: want one, to Grace only", eph)
	}
	if n := len(e.srv.BotMessages(slacktest.General, root.TS)); n != 1 {
		t.Errorf("%d bot messages in the thread: the reply to a press must not be public", n)
	}
	// A decision edits the card and removes the buttons.
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("Denied by Grace.")); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.srv.Message(slacktest.General, ref.ID); len(m.Buttons()) != 0 || m.Shown() != "Denied by Grace." {
		t.Errorf("after the decision the card is %+v", m)
	}
	// A failing handler still answers the presser.
	e.rec.mu.Lock()
	e.rec.actionErr = errors.New("store down")
	e.rec.mu.Unlock()
	ref2, err := e.a.Send(e.ctx, loc, channels.Message{Parts: []channels.Part{channels.Buttons{Rows: [][]channels.Button{{{Label: "Go", Token: "tok-go"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	shown, err = e.srv.Press(e.ctx, slacktest.General, ref2.ID, "tok-go", slacktest.Ada)
	if err != nil {
		t.Fatal(err)
	}
	if shown != actionFailedText {
		t.Errorf("after a failed press the presser saw %q", shown)
	}
}

func TestTypedErrors(t *testing.T) {
	e := start(t, ModeSocket, nil)
	loc := channels.Location{Channel: Name, ChatID: slacktest.General}
	ref, err := e.a.Send(e.ctx, loc, channels.TextMessage("first"))
	if err != nil {
		t.Fatal(err)
	}
	e.srv.FailNext(slacktest.Failure{RateLimited: 7 * time.Second}, "chat.update")
	err = e.a.Edit(e.ctx, ref, channels.TextMessage("second"))
	if d, ok := channels.RetryAfter(err); !ok || d != 7*time.Second || channels.IsPermanent(err) {
		t.Errorf("429 gave %v (retry after %v, %v); want a *channels.RateLimitError of 7s", err, d, ok)
	}
	for code, permanent := range map[string]bool{"msg_too_long": true, "not_in_channel": true, "invalid_blocks": true, "internal_error": false} {
		e.srv.FailNext(slacktest.Failure{Error: code}, "chat.postMessage")
		_, err := e.a.Send(e.ctx, loc, channels.TextMessage("x"))
		if err == nil || channels.IsPermanent(err) != permanent {
			t.Errorf("%s: err %v, permanent %v; want permanent %v", code, err, channels.IsPermanent(err), permanent)
		}
		if _, limited := channels.RetryAfter(err); limited {
			t.Errorf("%s: reported as a rate limit", code)
		}
	}
	if _, err := e.a.Send(e.ctx, channels.Location{Channel: Name, ChatID: "not a channel"}, channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("a bad location gave %v; want permanent", err)
	}
	if err := e.a.Edit(e.ctx, channels.MessageRef{Location: loc, ID: "F123"}, channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("editing a non-ts id gave %v; want permanent", err)
	}
}

func TestCannotReplyToMessagePostsInChannelWithLink(t *testing.T) {
	e := start(t, ModeSocket, nil)
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("hi"))
	e.rec.waitInbound(t, e.ctx, 1)
	e.srv.RefuseReplies(slacktest.General, root.TS)
	ref, err := e.a.Send(e.ctx, generalThread(root.TS), channels.TextMessage("the answer"))
	if err != nil {
		t.Fatalf("a refused threaded reply was lost: %v", err)
	}
	m, ok := e.srv.Message(slacktest.General, ref.ID)
	if !ok || m.ThreadTS != "" {
		t.Fatalf("fallback message %+v; want it in the channel", m)
	}
	link := "https://fake.slack.com/archives/" + slacktest.General + "/p" + strings.ReplaceAll(root.TS, ".", "")
	if !strings.Contains(m.Shown(), "<"+link+"|this thread>") || !strings.Contains(m.Shown(), "the answer") {
		t.Errorf("fallback shows %q; want the answer and a link to the thread", m.Shown())
	}
}

func TestImagesDownloadedAndAttachmentsUploaded(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...)
	e := start(t, ModeSocket, func(o *Options) { o.MaxDownload = 1000 })
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("what is this?"),
		slacktest.WithFile("shot.png", "image/png", png),
		slacktest.WithFile("huge.png", "image/png", bytes.Repeat([]byte{1}, 2000)),
		slacktest.WithFile("notes.pdf", "application/pdf", []byte("%PDF-1.4")))
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	if len(in.Attachments) != 1 || !bytes.Equal(in.Attachments[0].Data, png) || in.Attachments[0].MIME != "image/png" || in.Attachments[0].Name != "shot.png" {
		t.Errorf("attachments %+v", in.Attachments)
	}
	for _, want := range []string{"what is this?", imageTooBigNote, "notes.pdf (application/pdf, 8 bytes)"} {
		if !strings.Contains(in.Text, want) {
			t.Errorf("text %q lacks %q", in.Text, want)
		}
	}
	// The agent's files go into the thread through the external upload API.
	_, err := e.a.Send(e.ctx, in.Location, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "Here is the report."},
		channels.Attachment{Name: "report.txt", Data: []byte("all good\n"), Caption: "the <report>"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var upload slacktest.Message
	for _, m := range e.srv.BotMessages(slacktest.General, root.TS) {
		if len(m.Files) > 0 {
			upload = m
		}
	}
	if len(upload.Files) != 1 || upload.Text != "the &lt;report&gt;" {
		t.Fatalf("upload message %+v", upload)
	}
	name, data, ok := e.srv.FileData(upload.Files[0])
	if !ok || name != "report.txt" || string(data) != "all good\n" {
		t.Errorf("uploaded %q %q %v", name, data, ok)
	}
	if calls := e.srv.Calls("files.completeUploadExternal"); len(calls) != 1 || calls[0].Params["thread_ts"] != root.TS {
		t.Errorf("completeUploadExternal calls %+v", calls)
	}
}

func TestStartRefusedTokens(t *testing.T) {
	for name, mod := range map[string]func(*Options){
		"bot token": func(o *Options) { o.BotToken = "xoxb-wrong-token-123456" },
		"app token": func(o *Options) { o.AppToken = "xapp-wrong-token-123456" },
	} {
		t.Run(name, func(t *testing.T) {
			e := setup(t, ModeSocket, mod)
			err := e.a.Start(e.ctx, e.rec)
			if err == nil {
				t.Fatal("Start succeeded with a refused token")
			}
			if !strings.Contains(err.Error(), strings.ReplaceAll(name, " ", "_")) {
				t.Errorf("error %q does not name %s", err, name)
			}
			if strings.Contains(err.Error(), "wrong-token") {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
}

func TestNewChecksOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "bot_token is empty"},
		{Options{BotToken: "xoxb-1"}, "app_token"},
		{Options{BotToken: "xoxb-1", Mode: ModeHTTP}, "signing_secret"},
		{Options{BotToken: "xoxb-1", Mode: "rtm"}, "unknown mode"},
		{Options{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "ftp://x/"}, "api_url"},
	} {
		if _, err := New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v; want %q", tc.opts, err, tc.want)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := newRedactor("xoxb-1-secret-token", "signing-secret-value")
	got := r.string("Post https://x/?token=xoxb-1-secret-token and xoxp-98765-unknown, signing-secret-value")
	for _, leak := range []string{"secret-token", "98765-unknown", "signing-secret-value"} {
		if strings.Contains(got, leak) {
			t.Errorf("redacted text %q still has %q", got, leak)
		}
	}
	if err := r.classify("chat.postMessage", errors.New("dial: xoxb-1-secret-token")); strings.Contains(err.Error(), "secret-token") {
		t.Errorf("classified error %q shows the token", err)
	}
}

func TestTrustedResponseURL(t *testing.T) {
	a, err := New(Options{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:9/api/"})
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"https://hooks.slack.com/actions/T/1/x": true,
		"http://127.0.0.1:9/response/1":         true,
		"http://hooks.slack.com/actions/x":      false,
		"https://evil.example/slack.com":        false,
		"https://slack.com.evil.example/x":      false,
		"http://127.0.0.1:10/response/1":        false,
		"":                                      false,
	} {
		if got := a.trustedURL(u); got != want {
			t.Errorf("trustedURL(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestCommandHelpFromTable(t *testing.T) {
	e := start(t, ModeSocket, nil)
	if err := e.a.RegisterCommands(e.ctx, []channels.Command{
		{Name: "status", Description: "Show the agent & model"},
		{Name: "mode", Args: "<mode>", Description: "Set the permission mode", AdminOnly: true},
	}); err != nil {
		t.Fatal(err)
	}
	ack, err := e.srv.Command(e.ctx, slacktest.General, slacktest.Ada, "help")
	if err != nil {
		t.Fatal(err)
	}
	var help struct {
		ResponseType string `json:"response_type"`
		Text         string
	}
	if err := json.Unmarshal([]byte(ack), &help); err != nil || help.ResponseType != "ephemeral" {
		t.Fatalf("help answer %s (%v): want an ephemeral message", ack, err)
	}
	for _, want := range []string{"`status`", "agent &amp; model", "`mode &lt;mode&gt;`", "(admins)"} {
		if !strings.Contains(help.Text, want) {
			t.Errorf("help text %q lacks %q", help.Text, want)
		}
	}
	ack, err = e.srv.Command(e.ctx, slacktest.General, slacktest.Ada, "dr;op table")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ack, "Unknown command") {
		t.Errorf("unknown command answered %s", ack)
	}
	if n := len(e.rec.inbounds()); n != 0 {
		t.Errorf("%d inbounds; help and unknown commands are answered by the adapter", n)
	}
}

func TestSendChecksMessage(t *testing.T) {
	a, err := New(Options{BotToken: "xoxb-1", AppToken: "xapp-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	loc := channels.Location{Channel: Name, ChatID: "C1"}
	if _, err := a.Send(ctx, loc, channels.Message{}); !channels.IsPermanent(err) {
		t.Errorf("empty message: %v", err)
	}
	bad := channels.Message{Parts: []channels.Part{channels.Buttons{Rows: [][]channels.Button{{{Label: "x", Token: strings.Repeat("t", 65)}}}}}}
	if _, err := a.Send(ctx, loc, bad); !channels.IsPermanent(err) {
		t.Errorf("65-byte token: %v", err)
	}
}

// A send the gateway retries after an attempt whose answer was lost finds
// the post that attempt made (its key is in the message metadata) instead
// of posting a second copy; without the hint, or with another key, it
// posts.
func TestRetriedSendReusesTheLostPost(t *testing.T) {
	e := setup(t, ModeSocket, nil)
	e.run(t)
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("hi"))
	loc := generalThread(root.TS)
	msg := channels.Message{Key: "ob-7", Parts: []channels.Part{channels.Text{Markdown: "Approve this?"}}}
	before := time.Now()
	e.srv.FailNext(slacktest.Failure{Error: "internal_error", Taken: true}, "chat.postMessage")
	if _, err := e.a.Send(e.ctx, loc, msg); err == nil {
		t.Fatal("the lost answer did not fail the send")
	}
	if n := len(e.srv.BotMessages(slacktest.General, root.TS)); n != 1 {
		t.Fatalf("%d bot messages after the taken post, want 1", n)
	}
	msg.MaybeSentSince = before
	ref, err := e.a.Send(e.ctx, loc, msg)
	if err != nil {
		t.Fatal(err)
	}
	bot := e.srv.BotMessages(slacktest.General, root.TS)
	if len(bot) != 1 || ref.ID != bot[0].TS {
		t.Fatalf("the retry posted again or named another message: ref %s, %d bot messages", ref.ID, len(bot))
	}
	// Edits reach the one copy.
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("Approved.")); err != nil {
		t.Fatal(err)
	}
	other := channels.Message{Key: "ob-8", MaybeSentSince: before, Parts: []channels.Part{channels.Text{Markdown: "Something else."}}}
	if _, err := e.a.Send(e.ctx, loc, other); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.BotMessages(slacktest.General, root.TS)); n != 2 {
		t.Errorf("%d bot messages after a maybe-sent send with a new key, want 2", n)
	}
}

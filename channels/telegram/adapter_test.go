package telegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

func TestDirectMessageReachesHandler(t *testing.T) {
	e := start(t, nil)
	id := e.srv.AddMessage(7, 7, "hello agent")
	got := e.rec.waitInbound(t, e.ctx, 1)[0]
	want := channels.Inbound{
		EventID:       "1",
		Location:      dmLocation("7"),
		User:          channels.User{ID: "7", Name: "Ada Lovelace", Username: "ada"},
		Text:          "hello agent",
		DirectMessage: true,
		MessageID:     "1", // the fake numbers messages from 1
		At:            got.At,
	}
	if id != 1 {
		t.Fatalf("update id %d", id)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inbound (-want +got):\n%s", diff)
	}
	if err := e.srv.WaitOffset(e.ctx, id+1); err != nil {
		t.Fatal(err)
	}
	// Commands are the gateway's to register (RegisterCommands), not Start's.
	if n := len(e.srv.CallsOf("setMyCommands")); n != 0 {
		t.Errorf("Start called setMyCommands %d times", n)
	}
	// The getUpdates requests ask only for what the adapter handles.
	gu := e.srv.CallsOf("getUpdates")[0]
	if gu.Params["allowed_updates"] != `["message","callback_query"]` || gu.Params["timeout"] != "1" {
		t.Errorf("getUpdates params %v", gu.Params)
	}
}

func TestGroupMentionAndReplyGating(t *testing.T) {
	e := start(t, nil)
	e.srv.AddMessage(-100500, 7, "chatting among ourselves", telegramtest.InGroup())
	e.srv.AddMessage(-100500, 7, "@"+telegramtest.BotUsername+" summarize", telegramtest.InGroup())
	e.srv.AddMessage(-100500, 7, "and this?", telegramtest.InGroup(), telegramtest.ReplyTo(3, botID))
	e.srv.AddMessage(-100500, 99, "spam", telegramtest.InGroup(), telegramtest.From(telegramtest.User{ID: 99, IsBot: true, FirstName: "Bot"}))
	e.srv.AddMessage(-100500, 7, "last")
	got := e.rec.waitInbound(t, e.ctx, 4)
	type gate struct {
		Text                                 string
		Mentioned, ReplyToBot, DirectMessage bool
	}
	var gates []gate
	for _, in := range got {
		gates = append(gates, gate{in.Text, in.Mentioned, in.ReplyToBot, in.DirectMessage})
	}
	want := []gate{
		{"chatting among ourselves", false, false, false},
		{"summarize", true, false, false},
		{"and this?", false, true, false},
		{"last", false, false, true}, // the bot's message was skipped
	}
	if diff := cmp.Diff(want, gates); diff != "" {
		t.Errorf("gating (-want +got):\n%s", diff)
	}
}

func TestForumTopicEveryCallCarriesThread(t *testing.T) {
	e := start(t, nil)
	e.srv.AddMessage(-100500, 7, "deploy please", telegramtest.InTopic(77))
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	loc := in.Location
	if loc.ThreadID != "77" || loc.ChatID != "-100500" || loc.Account != "424242" {
		t.Fatalf("location %+v", loc)
	}
	if err := e.a.Typing(e.ctx, loc); err != nil {
		t.Fatal(err)
	}
	ref, err := e.a.Send(e.ctx, loc, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: strings.Repeat("long text ", 600)}, // two chunks
		channels.Buttons{Rows: [][]channels.Button{{{Label: "Approve", Token: "t1"}}}},
		channels.Attachment{Name: "log.txt", Data: []byte("log"), Caption: "the log"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("decided")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range e.srv.Calls() {
		switch c.Method {
		case "sendMessage", "sendChatAction", "sendDocument":
			n++
			if c.Params["message_thread_id"] != "77" || c.Params["chat_id"] != "-100500" {
				t.Errorf("%s went to chat %q thread %q", c.Method, c.Params["chat_id"], c.Params["message_thread_id"])
			}
		case "editMessageText":
			if c.Params["chat_id"] != "-100500" || c.Params["message_id"] != ref.ID {
				t.Errorf("edit of %v", c.Params)
			}
		}
	}
	if n != 4 { // typing, two chunks, one document
		t.Errorf("%d thread-carrying calls, want 4: %v", n, e.srv.Calls())
	}
	for _, m := range e.srv.Messages() {
		if m.ThreadID != 77 {
			t.Errorf("message %d landed in thread %d", m.ID, m.ThreadID)
		}
	}
}

func TestSendButtonsUseMinimalKeyboard(t *testing.T) {
	e := start(t, nil)
	loc := dmLocation("7")
	ref, err := e.a.Send(e.ctx, loc, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "Run `git push`? <b>&"},
		channels.Buttons{Rows: [][]channels.Button{
			{{Label: "Approve", Token: "tokA", Style: channels.StylePrimary}, {Label: "Deny", Token: "tokD", Style: channels.StyleDanger}},
			{{Label: "Always: Bash(git push:*)", Token: "tokW"}},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := e.srv.CallsOf("sendMessage")[0]
	wantMarkup := `{"inline_keyboard":[[{"text":"Approve","callback_data":"tokA"},{"text":"Deny","callback_data":"tokD"}],[{"text":"Always: Bash(git push:*)","callback_data":"tokW"}]]}`
	if c.Params["reply_markup"] != wantMarkup {
		t.Errorf("reply_markup\n got %s\nwant %s", c.Params["reply_markup"], wantMarkup)
	}
	if c.Params["parse_mode"] != "HTML" || c.Params["text"] != "Run <code>git push</code>? &lt;b&gt;&amp;" {
		t.Errorf("text %q parse_mode %q", c.Params["text"], c.Params["parse_mode"])
	}
	if ref.ID != "1" || ref.Location != loc {
		t.Errorf("ref %+v", ref)
	}

	// The decision edit removes the buttons; an identical edit succeeds.
	decided := channels.TextMessage("Approved by Ada")
	if err := e.a.Edit(e.ctx, ref, decided); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Edit(e.ctx, ref, decided); err != nil {
		t.Fatalf("edit that changes nothing: %v", err)
	}
	edits := e.srv.CallsOf("editMessageText")
	if len(edits) != 2 || edits[0].Params["reply_markup"] != `{"inline_keyboard":[]}` || edits[1].Status != 400 {
		t.Errorf("edits %+v", edits)
	}
	if m := e.srv.Messages()[0]; m.Text != "Approved by Ada" || m.Edits != 1 {
		t.Errorf("message after edits %+v", m)
	}
	// Only buttons: a placeholder text carries them.
	if _, err := e.a.Send(e.ctx, loc, channels.Message{Parts: []channels.Part{
		channels.Buttons{Rows: [][]channels.Button{{{Label: "OK", Token: "ok"}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	// Nothing to show is a permanent error, not a platform call.
	if _, err := e.a.Send(e.ctx, loc, channels.Message{}); !channels.IsPermanent(err) {
		t.Errorf("empty message: %v", err)
	}
	// Editing an unknown message is permanent.
	err = e.a.Edit(e.ctx, channels.MessageRef{Location: loc, ID: "999"}, decided)
	if !channels.IsPermanent(err) || !strings.Contains(err.Error(), "message to edit not found") {
		t.Errorf("edit of unknown message: %v", err)
	}
}

func TestLongTextAndCaptionsAreSplitAndCut(t *testing.T) {
	e := start(t, nil)
	loc := dmLocation("7")
	ref, err := e.a.Send(e.ctx, loc, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: strings.Repeat("word & <tag> ", 1500)},
		channels.Attachment{Name: "a.txt", Data: []byte("x"), Caption: strings.Repeat("é🙂", 700)},
	}})
	if err != nil {
		t.Fatal(err) // the fake refuses text over 4,096 and captions over 1,024
	}
	sends := e.srv.CallsOf("sendMessage")
	if len(sends) < 2 {
		t.Fatalf("%d messages for 19,500 characters", len(sends))
	}
	if ref.ID != "1" {
		t.Errorf("ref %q, want the first message", ref.ID)
	}
	doc := e.srv.CallsOf("sendDocument")[0]
	if f := doc.Files["document"]; f.Name != "a.txt" || string(f.Data) != "x" {
		t.Errorf("document %+v", f)
	}
	if !strings.HasSuffix(doc.Params["caption"], "…") {
		t.Errorf("caption not cut: %d bytes", len(doc.Params["caption"]))
	}
}

func TestCallbackAnsweredWithAlert(t *testing.T) {
	e := start(t, nil)
	e.rec.reply = channels.ActionReply{Text: "Only @alice can approve this.", Alert: true}
	id := e.srv.AddCallback(-100500, 8, 12, "tok-1", telegramtest.CallbackInTopic(77))
	c, err := e.srv.WaitCall(e.ctx, telegramtest.Method("answerCallbackQuery"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Params["callback_query_id"] != "cb1" || c.Params["text"] != "Only @alice can approve this." || c.Params["show_alert"] != "true" {
		t.Errorf("answer %v", c.Params)
	}
	e.rec.mu.Lock()
	got := e.rec.actions
	e.rec.mu.Unlock()
	loc := channels.Location{Channel: Name, Account: "424242", ChatID: "-100500", ThreadID: "77"}
	want := []channels.Action{{EventID: "cb1", Location: loc, User: channels.User{ID: "8", Name: "Ada Lovelace", Username: "ada"},
		Token: "tok-1", Message: channels.MessageRef{Location: loc, ID: "12"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}

	// A failing OnAction still answers, with a generic text, and the press
	// is acknowledged (the user presses again).
	e.rec.mu.Lock()
	e.rec.actionErr = errors.New("db locked")
	e.rec.mu.Unlock()
	id2 := e.srv.AddCallback(7, 7, 13, "tok-2")
	c, err = e.srv.WaitCall(e.ctx, func(c telegramtest.Call) bool {
		return c.Method == "answerCallbackQuery" && c.Params["callback_query_id"] == "cb2"
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Params["text"] != actionFailedText {
		t.Errorf("answer after failure %v", c.Params)
	}
	if err := e.srv.WaitOffset(e.ctx, id2+1); err != nil || id != 1 {
		t.Fatal(err, id)
	}
}

func TestOffsetAdvancesOnlyAfterAccept(t *testing.T) {
	e := start(t, nil)
	e.rec.mu.Lock()
	e.rec.failIn = 1
	e.rec.offsetNow = e.srv.Offset
	e.rec.mu.Unlock()
	id := e.srv.AddMessage(7, 7, "first")
	e.srv.AddMessage(7, 7, "second")
	got := e.rec.waitInbound(t, e.ctx, 2)
	if got[0].Text != "first" || got[1].Text != "second" || got[0].EventID != "1" {
		t.Errorf("accepted %+v", got)
	}
	e.rec.mu.Lock()
	attempts := len(e.rec.attempts)
	first := e.rec.attempts[0]
	e.rec.mu.Unlock()
	if attempts != 3 || first.EventID != "1" {
		t.Errorf("%d attempts (want 3: refused, again, second)", attempts)
	}
	// When the refused update came again, nothing had confirmed it: the
	// server's offset was still at or below its id.
	e.rec.mu.Lock()
	offsets := e.rec.offsets
	e.rec.mu.Unlock()
	if len(offsets) < 2 || offsets[1] > id {
		t.Errorf("offsets seen at each attempt %v: update %d was acknowledged before it was accepted", offsets, id)
	}
	if err := e.srv.WaitOffset(e.ctx, id+2); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(e.logs.String(), "will be delivered again"); n != 1 {
		t.Errorf("%d refusal logs", n)
	}

	// Telegram delivering the same update again (after a restart) reaches
	// the handler again with the same EventID; the gateway dedupes.
	raw, _ := json.Marshal(map[string]any{"update_id": id, "message": map[string]any{
		"message_id": 1, "date": 1, "chat": map[string]any{"id": 7, "type": "private"},
		"from": map[string]any{"id": 7, "first_name": "Ada"}, "text": "first"}})
	e.srv.AddUpdate(raw)
	again := e.rec.waitInbound(t, e.ctx, 3)[2]
	if again.EventID != "1" {
		t.Errorf("redelivery EventID %q", again.EventID)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	e := start(t, nil)
	loc := dmLocation("7")
	msg := channels.TextMessage("hi")

	e.srv.FailNext("sendMessage", 429, 7)
	_, err := e.a.Send(e.ctx, loc, msg)
	var rl *channels.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second || channels.IsPermanent(err) {
		t.Errorf("429: %v", err)
	}
	if d, ok := channels.RetryAfter(err); !ok || d != 7*time.Second {
		t.Errorf("RetryAfter = %v, %v", d, ok)
	}
	e.srv.FailNext("editMessageText", 429, 3)
	if d, _ := channels.RetryAfter(e.a.Edit(e.ctx, channels.MessageRef{Location: loc, ID: "1"}, msg)); d != 3*time.Second {
		t.Errorf("edit 429 retry after %v", d)
	}
	e.srv.FailNext("sendChatAction", 429, 2)
	if d, _ := channels.RetryAfter(e.a.Typing(e.ctx, loc)); d != 2*time.Second {
		t.Errorf("typing 429 retry after %v", d)
	}

	for _, tc := range []struct {
		status    int
		desc      string
		permanent bool
	}{
		{400, "Bad Request: chat not found", true},
		{403, "Forbidden: bot was blocked by the user", true},
		{400, "Bad Request: message is too long", true},
		{500, "Internal Server Error", false},
		{502, "Bad Gateway", false},
	} {
		e.srv.FailNextError("sendMessage", tc.status, tc.desc, 0)
		_, err := e.a.Send(e.ctx, loc, msg)
		if err == nil || channels.IsPermanent(err) != tc.permanent {
			t.Errorf("%d %s: err %v, permanent %v", tc.status, tc.desc, err, channels.IsPermanent(err))
		}
		if _, limited := channels.RetryAfter(err); limited {
			t.Errorf("%d is not a rate limit", tc.status)
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("token in %v", err)
		}
	}
	if _, err := e.a.Send(e.ctx, channels.Location{Channel: Name, ChatID: "7", ThreadID: "general"}, msg); !channels.IsPermanent(err) {
		t.Errorf("bad thread id: %v", err)
	}
}

func TestPhotoBecomesAttachment(t *testing.T) {
	e := start(t, func(o *Options) { o.MaxDownload = 1000 })
	big := bytes.Repeat([]byte{0xff, 0xd8, 0x01}, 300) // 900 bytes
	small := e.srv.AddFile([]byte("thumb"))
	full := e.srv.AddFile(big)
	e.srv.AddMessage(7, 7, "what's this?", telegramtest.WithPhoto(
		telegramtest.PhotoSize{FileID: small, Width: 90, Height: 90, FileSize: 5},
		telegramtest.PhotoSize{FileID: full, Width: 800, Height: 600, FileSize: 900},
		telegramtest.PhotoSize{FileID: "too-big", Width: 2000, Height: 1500, FileSize: 5000},
	))
	// A photo whose download fails still arrives, with a note.
	e.srv.AddMessage(7, 7, "and this", telegramtest.WithPhoto(telegramtest.PhotoSize{FileID: "gone", Width: 1, Height: 1}))
	got := e.rec.waitInbound(t, e.ctx, 2)
	if got[0].Text != "what's this?" || len(got[0].Attachments) != 1 {
		t.Fatalf("inbound %+v", got[0])
	}
	att := got[0].Attachments[0]
	if att.MIME != "image/jpeg" || !bytes.Equal(att.Data, big) || !strings.HasSuffix(att.Name, ".jpg") {
		t.Errorf("attachment %s %s %d bytes", att.Name, att.MIME, len(att.Data))
	}
	if len(got[1].Attachments) != 0 || got[1].Text != "and this\n\n"+imageFailedNote {
		t.Errorf("failed download: %+v", got[1])
	}
	if strings.Contains(e.logs.String(), testToken) {
		t.Error("token in logs")
	}
}

// TestRetriedCardDisarmsTheLostCopy: a card an earlier attempt posted
// before the process died (nothing recorded it) loses its buttons when the
// retry posts the new copy; the gateway's recorded posts, the users'
// messages and everything before the newest recorded post are left alone.
func TestRetriedCardDisarmsTheLostCopy(t *testing.T) {
	e := start(t, nil)
	loc := dmLocation("7")
	card := func(tok string) channels.Message {
		return channels.Message{Parts: []channels.Part{
			channels.Text{Markdown: "Run `git push`?"},
			channels.Buttons{Rows: [][]channels.Button{{{Label: "Approve", Token: tok}}}},
		}}
	}
	send := func(m channels.Message) int64 {
		t.Helper()
		ref, err := e.a.Send(e.ctx, loc, m)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(ref.ID, 10, 64)
		return n
	}
	older := send(card("old"))   // recorded, before the lost attempt
	lost := send(card("ask"))    // the attempt whose process died
	e.srv.AddMessage(7, 7, "hi") // a person's message in between
	other := send(card("other")) // another card, recorded
	retry := card("ask")
	retry.MaybeSentSince = time.Now().Add(-time.Minute)
	retry.PostedBefore = strconv.FormatInt(older, 10)
	retry.PostedSince = []string{strconv.FormatInt(other, 10)}
	fresh := send(retry)
	buttons := map[int64]bool{}
	for _, m := range e.srv.Messages() {
		buttons[m.ID] = m.Markup != "" && m.Markup != `{"inline_keyboard":[]}`
		if (m.ID == lost) != (m.Text == lostCopyText) {
			t.Errorf("message %d reads %q", m.ID, m.Text)
		}
	}
	for id, want := range map[int64]bool{older: true, lost: false, other: true, fresh: true} {
		if buttons[id] != want {
			t.Errorf("message %d has buttons: %v, want %v (older %d, lost %d, other %d, new %d)", id, buttons[id], want, older, lost, other, fresh)
		}
	}
	// Without a record from the gateway, nothing is touched.
	lost2 := send(card("ask2"))
	again := card("ask2")
	again.MaybeSentSince = time.Now()
	send(again)
	for _, m := range e.srv.Messages() {
		if m.ID == lost2 && (m.Markup == "" || m.Markup == `{"inline_keyboard":[]}`) {
			t.Error("a retry without the gateway's record removed buttons")
		}
	}
}

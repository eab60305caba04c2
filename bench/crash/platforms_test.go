package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/discord/discordtest"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

// TestSlackBotMessages: a bot message's place is its thread, its creation
// the postMessage call just before its ts, its last change the latest
// update; people's and deleted messages are not the bot's.
func TestSlackBotMessages(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	ts := "1700000000.500000"
	msgs := []slacktest.Message{
		{Channel: slacktest.General, TS: "1700000000.100000", User: slacktest.Ada, Text: "task S1: plain"},
		{Channel: slacktest.General, TS: ts, ThreadTS: "1700000000.100000", BotID: slacktest.BotID, Text: "ANS S1 · … END S1",
			Blocks: []slacktest.Block{{Type: "section", Text: "ANS S1 · … END S1"}}},
		{Channel: slacktest.General, TS: "1700000001.000000", BotID: slacktest.BotID, Deleted: true},
	}
	calls := []slacktest.Call{
		{Method: "chat.postMessage", Params: map[string]string{"channel": slacktest.General, "thread_ts": "1700000000.100000", "text": "older"}, At: t0.Add(100 * time.Millisecond)},
		{Method: "chat.postMessage", Params: map[string]string{"channel": slacktest.General, "thread_ts": "1700000000.100000", "text": "ANS S1"}, At: t0.Add(499 * time.Millisecond)},
		{Method: "chat.postMessage", Params: map[string]string{"channel": slacktest.General, "text": "top level"}, At: t0.Add(499500 * time.Microsecond)},
		{Method: "chat.postMessage", Params: map[string]string{"channel": slacktest.General, "thread_ts": "1700000000.100000", "text": "later"}, At: t0.Add(600 * time.Millisecond)},
		{Method: "chat.update", Params: map[string]string{"channel": slacktest.General, "ts": ts}, At: t0.Add(2 * time.Second)},
		{Method: "chat.update", Params: map[string]string{"channel": slacktest.General, "ts": ts}, At: t0.Add(3 * time.Second), Error: "msg_too_long"},
	}
	got := slackBotMessages(msgs, calls)
	if len(got) != 1 {
		t.Fatalf("bot messages = %+v, want the one live bot message", got)
	}
	m := got[0]
	if m.place != slackPlace(slacktest.General, "1700000000.100000") || m.key() != "slack#"+ts || !strings.Contains(m.text, "END S1") {
		t.Errorf("message = %+v", m)
	}
	if m.createdText != "ANS S1" || !m.createdAt.Equal(t0.Add(499*time.Millisecond)) || !m.lastSet.Equal(t0.Add(2*time.Second)) {
		t.Errorf("created %q at %v, last set %v; want the call just before its ts and the last successful update", m.createdText, m.createdAt, m.lastSet)
	}
}

// TestDiscordBotMessages: a bot message's creating call is found by its
// nonce, its last change by the edits of its path.
func TestDiscordBotMessages(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	bot := discordtest.User{ID: discordtest.BotID, Bot: true}
	msgs := []discordtest.Message{
		{ID: "11", ChannelID: "5", Author: discordtest.User{ID: discordtest.UserID}, Content: "task G1: plain"},
		{ID: "12", ChannelID: "5", Author: bot, Content: "ANS G1 · … END G1", Nonce: "n-12", Time: t0},
	}
	body := func(v map[string]any) json.RawMessage { b, _ := json.Marshal(v); return b }
	calls := []discordtest.Call{
		{Method: "POST", Path: "/channels/5/messages", Body: body(map[string]any{"content": "other", "nonce": "n-9"}), Status: 200, At: t0},
		{Method: "POST", Path: "/channels/5/messages", Body: body(map[string]any{"content": "ANS G1", "nonce": "n-12"}), Status: 200, At: t0},
		{Method: "PATCH", Path: "/channels/5/messages/12", Status: 200, At: t0.Add(time.Second)},
		{Method: "PATCH", Path: "/channels/5/messages/12", Status: 429, At: t0.Add(2 * time.Second)},
	}
	got := discordBotMessages(msgs, calls)
	if len(got) != 1 || got[0].place != discordPlace("5") || got[0].createdText != "ANS G1" || !got[0].lastSet.Equal(t0.Add(time.Second)) {
		t.Fatalf("bot messages = %+v", got)
	}
	if b := discordButtons(json.RawMessage(`[{"type":1,"components":[{"type":2,"label":"Approve","custom_id":"tokA"},{"type":2,"label":"Deny","custom_id":"tokD"}]}]`)); b["Approve"] != "tokA" || b["Deny"] != "tokD" {
		t.Fatalf("buttons = %v", b)
	}
}

// TestJudgePress: each role's right answer passes, the wrong ones fail.
func TestJudgePress(t *testing.T) {
	tests := []struct {
		role         pressRole
		button, text string
		alert        bool
		ok           bool
	}{
		{pressWrong, "Approve", "Only slack:U0ADA can decide this.", true, true},
		{pressWrong, "Approve", "Only slack:U0ADA can decide this.", false, false},
		{pressWrong, "Deny", "Denied: Bash", true, false},
		{pressDecide, "Approve", "Approved: Bash: ./ask.sh S1 1", true, true},
		{pressDecide, "Approve", "Denied: Bash: ./ask.sh S1 1", true, false},
		{pressDecide, "Deny", "Already decided: denied by slack:U0ADA.", true, true},
		{pressLate, "Deny", "Denied: Bash", true, true},
		{pressAgain, "Approve", "Approved: Bash", true, false},
		{pressOld, "Approve", "Already decided: allowed by discord:7.", true, true},
	}
	for _, tt := range tests {
		if got := judgePress(tt.role, tt.button, tt.text, tt.alert); (got == "") != tt.ok {
			t.Errorf("judgePress(%s, %s, %q, %v) = %q, want ok %v", tt.role, tt.button, tt.text, tt.alert, got, tt.ok)
		}
	}
}

// TestCheckAnswersSlack: against a real fake Slack, an answer in the
// chat's thread put there by the outbox counts, one in the channel's top
// level is misplaced, a message without one is lost; the Slack figures say
// so at the end of the summary line.
func TestCheckAnswersSlack(t *testing.T) {
	sl := slacktest.New(t)
	tg := telegramtest.NewServer(botToken)
	defer tg.Close()
	c := &campaign{log: newEventLog(nil), episodes: map[string]*episode{}, answered: map[string]time.Time{}, shown: map[string][]*shownApproval{}, tg: tg, sl: sl}
	ch := slackChat()
	c.chats = []*chat{ch}
	ch.root = sl.Post(slacktest.General, slacktest.Ada, "<@U0BOT> task S1: plain").TS
	botPost := func(thread, text string) string {
		t.Helper()
		form := url.Values{"token": {slacktest.BotToken}, "channel": {slacktest.General}, "text": {text}}
		if thread != "" {
			form.Set("thread_ts", thread)
		}
		resp, err := http.PostForm(sl.URL()+"chat.postMessage", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			OK bool   `json:"ok"`
			TS string `json:"ts"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || !out.OK {
			t.Fatalf("chat.postMessage: %+v %v", out, err)
		}
		return out.TS
	}
	good := botPost(ch.root, answerText("S1", 0))
	stray := botPost("", answerText("S2", 0))
	for _, tok := range []string{"S1", "S2", "S3"} {
		c.register(&episode{token: tok, chat: ch, kind: "plain"})
	}
	loc := "slack:" + slacktest.TeamID + ":" + slacktest.General + ":" + ch.root
	f := &dbFacts{outbox: []outboxRow{
		{kind: "send", location: loc, messageID: good, body: answerText("S1", 0), sent: true},
		{kind: "send", location: loc, messageID: stray, body: answerText("S2", 0), sent: true},
	}}
	r := &report{transcriptOK: true}
	c.checkAnswers(r, f)
	if r.answered != 1 || r.misplaced != 1 || r.lost != 2 {
		t.Fatalf("answered %d misplaced %d lost %d, want 1, 1, 2; problems %v", r.answered, r.misplaced, r.lost, r.problems)
	}
	failed := map[string]string{}
	for _, p := range r.problems {
		failed[p.token] += p.what + "; "
	}
	if failed["S1"] != "" || !strings.Contains(failed["S2"], "went to slack:C0GENERAL/ instead of slack:C0GENERAL/"+ch.root) ||
		!strings.Contains(failed["S3"], "never answered") {
		t.Fatalf("problems %v", failed)
	}
	line := r.summary()
	if !strings.Contains(line, " slack=(messages 3, while down 0, answered 1, lost 2, dup 0, misplaced 1,") || !strings.Contains(line, " discord=(messages 0,") {
		t.Fatalf("summary line = %s", line)
	}
	if !strings.HasPrefix(line, "crash FAIL seed=0 kills=0 ") {
		t.Fatalf("summary line starts %q", line[:40])
	}
}

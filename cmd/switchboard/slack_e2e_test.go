package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// slackEnv is an env with a fake Slack (Web API, and Socket Mode unless
// mode is "http") and serve configured for it; Ada and Grace may talk,
// neither is an admin.
func slackEnv(t *testing.T, mode string, steps ...fakemodel.Step) (*env, *slacktest.Server) {
	e := newEnv(t, steps...)
	sl := slacktest.New(t)
	e.extra = append(e.extra, "SLACK_BOT_TOKEN="+slacktest.BotToken, "SLACK_APP_TOKEN="+slacktest.AppToken,
		"SLACK_SIGNING_SECRET="+slacktest.SigningSecret)
	creds := `app_token = "${SLACK_APP_TOKEN}"`
	if mode == "http" {
		creds = `signing_secret = "${SLACK_SIGNING_SECRET}"`
	}
	e.writeServeConfig(`enabled = false

[channels.slack]
mode = "` + mode + `"
bot_token = "${SLACK_BOT_TOKEN}"
` + creds + `
api_url = "` + sl.URL() + `"
allow_users = ["` + slacktest.Ada + `", "` + slacktest.Grace + `"]
admins = ["U0BOSS"]
edit_interval = "50ms"
`)
	return e, sl
}

func slackMention(text string) string { return "<@" + slacktest.BotUserID + "> " + text }

// waitSlack waits for cond on the fake, failing with the Web API calls
// made.
func waitSlack(t *testing.T, sl *slacktest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := sl.WaitFor(ctx, what, cond); err != nil {
		var b strings.Builder
		for _, c := range sl.Calls() {
			fmt.Fprintf(&b, "\n  %s %s channel=%s thread=%s ts=%s text=%.60q", c.Method, c.Error, c.Params["channel"], c.Params["thread_ts"], c.Params["ts"], c.Params["text"])
		}
		t.Fatalf("%v\nWeb API calls:%s", err, b.String())
	}
}

// botSaid returns the bot's messages in a thread that show s.
func botSaid(sl *slacktest.Server, channel, thread, s string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range sl.BotMessages(channel, thread) {
		if strings.Contains(m.Shown(), s) {
			out = append(out, m)
		}
	}
	return out
}

// waitBotSaid waits until the bot shows s in a thread and returns that
// message.
func waitBotSaid(t *testing.T, sl *slacktest.Server, channel, thread, s string) slacktest.Message {
	t.Helper()
	var m slacktest.Message
	waitSlack(t, sl, "the bot to say "+s, func() bool {
		ms := botSaid(sl, channel, thread, s)
		if len(ms) > 0 {
			m = ms[0]
		}
		return len(ms) > 0
	})
	return m
}

// waitBotFinal waits until the bot shows s in a thread in a message
// without buttons: a turn's final message (the live one carries a Stop
// button), enqueued in the transaction that completed the turn's item.
func waitBotFinal(t *testing.T, sl *slacktest.Server, channel, thread, s string) {
	t.Helper()
	waitSlack(t, sl, "the final message "+s, func() bool {
		for _, m := range botSaid(sl, channel, thread, s) {
			if len(m.Buttons()) == 0 {
				return true
			}
		}
		return false
	})
}

// buttonValue returns the value of the labelled button of m.
func buttonValue(t *testing.T, m slacktest.Message, label string) string {
	t.Helper()
	for _, b := range m.Buttons() {
		if b.Text == label {
			if len(b.Value) > 64 || strings.Contains(b.Value, "touch") {
				t.Fatalf("button value %q is not an opaque token", b.Value)
			}
			return b.Value
		}
	}
	t.Fatalf("no %q button on %+v", label, m)
	return ""
}

func pressCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// noSlackSecrets fails when serve's output shows a Slack credential.
func noSlackSecrets(t *testing.T, procs ...*serveProc) {
	t.Helper()
	for _, p := range procs {
		out := p.stderr.String()
		for _, s := range []string{slacktest.BotToken, slacktest.AppToken, slacktest.SigningSecret} {
			if strings.Contains(out, s) {
				t.Errorf("serve's output shows a Slack secret:\n%s", out)
			}
		}
	}
}

// TestSlackEndToEnd drives the real binary through a fake Slack in Socket
// Mode: a mention is answered in a thread under it, streamed by editing
// one message, every post in that root thread; the app_mention+message
// pair is one turn; a reply in the thread without a mention continues the
// same conversation; a tool ask becomes Block Kit buttons; a press by
// someone who is not an approver gets an ephemeral refusal and nothing
// runs; serve is SIGKILLed and restarted between the buttons and the
// press; the requester's press then runs the tool (whose environment holds
// none of the Slack secrets), the ask is edited to show the decision and
// the answer arrives, with a secret the model repeated redacted.
func TestSlackEndToEnd(t *testing.T) {
	hold := make(chan struct{})
	e, sl := slackEnv(t, "socket",
		fakemodel.Step{Text: "Hello from the agent, streamed in several pieces.", BlockMidStream: hold},
		bashStep("call_sl", "env > seen-env.txt && touch pressed-in-slack"),
	)
	p := e.startServe()
	waitSlack(t, sl, "the Socket Mode connection", sl.Connected)

	root := sl.Post(slacktest.General, slacktest.Ada, slackMention("hello"))
	// While the model holds the stream the thread shows the start of the
	// answer; after it, the same message shows all of it.
	var live slacktest.Message
	waitSlack(t, sl, "the live message in the thread", func() bool {
		for _, m := range sl.BotMessages(slacktest.General, root.TS) {
			if strings.Contains(m.Shown(), "Hello") {
				live = m
				return true
			}
		}
		return false
	})
	if strings.Contains(live.Shown(), "several pieces.") {
		t.Fatalf("the live message showed the whole answer while the model still streamed it: %q", live.Shown())
	}
	close(hold)
	final := waitBotSaid(t, sl, slacktest.General, root.TS, "several pieces.")
	if final.TS != live.TS || final.Edits == 0 {
		t.Errorf("the answer is message %s with %d edits; want the live message %s edited", final.TS, final.Edits, live.TS)
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Errorf("the mention (app_mention and message) made %d model calls, want 1", n)
	}

	// A reply in the thread, without a mention: the same conversation.
	sl.Post(slacktest.General, slacktest.Ada, "make the file", slacktest.InThread(root.TS))
	ask := waitBotSaid(t, sl, slacktest.General, root.TS, "Approval needed")
	if reqs := e.model.Requests(); len(reqs) != 2 || !strings.Contains(reqs[1].LastMessage().Text(), "make the file") ||
		!requestMentions(reqs[1], "hello") {
		t.Fatalf("the thread reply did not continue the mention's conversation (%d requests)", len(reqs))
	}
	approve := buttonValue(t, ask, "Approve")
	buttonValue(t, ask, "Deny")

	// Grace may talk but is not an approver: an ephemeral refusal.
	reply, err := sl.Press(pressCtx(t), slacktest.General, ask.TS, approve, slacktest.Grace)
	if err != nil || !strings.Contains(reply, "Only") {
		t.Fatalf("Grace's press: %q, %v; want a refusal", reply, err)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "pressed-in-slack")); err == nil {
		t.Fatal("the tool ran after a refused press")
	}
	if m, _ := sl.Message(slacktest.General, ask.TS); len(m.Buttons()) == 0 {
		t.Fatal("the refused press removed the buttons")
	}

	// SIGKILL and restart between the buttons and the press.
	waitOutboxIdle(t, e)
	p.kill()
	// A model that repeats a secret it learned: Slack must not show it.
	e.model.Push(fakemodel.Step{Text: "The file is there now. The app token is " + slacktest.AppToken + "."})
	p2 := e.startServe()
	waitSlack(t, sl, "the reconnect", func() bool { return sl.Connections() >= 2 && sl.Connected() })
	reply, err = sl.Press(pressCtx(t), slacktest.General, ask.TS, approve, slacktest.Ada)
	if err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("Ada's press after the restart: %q, %v", reply, err)
	}
	waitBotSaid(t, sl, slacktest.General, root.TS, "The file is there now.")
	if _, err := os.Stat(filepath.Join(e.workspace, "pressed-in-slack")); err != nil {
		t.Fatal("the approved tool did not run")
	}
	seen, err := os.ReadFile(filepath.Join(e.workspace, "seen-env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{slacktest.BotToken, slacktest.AppToken, slacktest.SigningSecret} {
		if strings.Contains(string(seen), secret) {
			t.Errorf("the tool process saw a Slack secret in its environment")
		}
		for _, m := range sl.Messages(slacktest.General) {
			if strings.Contains(m.Text+m.Shown(), secret) {
				t.Errorf("a Slack message shows a Slack secret: %q", m.Shown())
			}
		}
	}
	waitSlack(t, sl, "the ask edited to show the decision", func() bool {
		m, _ := sl.Message(slacktest.General, ask.TS)
		return strings.Contains(m.Shown(), "Approved") && len(m.Buttons()) == 0
	})

	// Everything went into the root thread.
	for _, c := range sl.Calls("chat.postMessage") {
		if c.Params["channel"] == slacktest.General && c.Params["thread_ts"] != root.TS {
			t.Errorf("a post outside the thread: %v", c.Params)
		}
	}
	if top := sl.BotMessages(slacktest.General, ""); len(top) > 0 {
		t.Errorf("the bot posted at the channel's top level: %+v", top)
	}
	noSlackSecrets(t, p, p2)
}

// requestMentions reports whether any message of a model request contains s.
func requestMentions(req fakemodel.Request, s string) bool {
	for _, m := range req.Messages {
		if strings.Contains(m.Text(), s) {
			return true
		}
	}
	return false
}

// slackDuplicates reads serve's count of inbound Slack events dropped as
// already handled (switchboard_inbound_duplicates_total).
func slackDuplicates(t *testing.T, p *serveProc) int {
	t.Helper()
	resp, err := http.Get(p.url() + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `switchboard_inbound_duplicates_total{channel="slack"} `); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return 0
}

// TestSlackCatchUpAfterRestart: a reply posted in a bound thread while
// serve was down (Slack delivered no event for it) is answered after the
// restart, once; a command typed in the thread before the restart, which
// the gateway acted on at once, is not run again; a second restart
// hands the thread's messages over again and none of them runs twice.
func TestSlackCatchUpAfterRestart(t *testing.T) {
	e, sl := slackEnv(t, "socket", fakemodel.Step{Text: "First answer."})
	p := e.startServe()
	waitSlack(t, sl, "the Socket Mode connection", sl.Connected)
	root := sl.Post(slacktest.General, slacktest.Ada, slackMention("hello"))
	waitBotFinal(t, sl, slacktest.General, root.TS, "First answer.")
	sl.Post(slacktest.General, slacktest.Ada, "/status", slacktest.InThread(root.TS))
	waitBotSaid(t, sl, slacktest.General, root.TS, "queue mode")
	waitOutboxIdle(t, e)
	p.kill()

	// Posted while serve is down; Slack drops its events.
	sl.Post(slacktest.General, slacktest.Ada, "are you still there?", slacktest.InThread(root.TS), slacktest.Quietly())
	e.model.Push(fakemodel.Step{Text: "Still here."})
	p = e.startServe()
	// The final message: a kill before the turn's item completed would
	// rightly run the turn again.
	waitBotFinal(t, sl, slacktest.General, root.TS, "Still here.")
	reqs := e.model.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastMessage().Text(), "are you still there?") {
		t.Fatalf("%d model calls after the catch-up, want 2 (the missed reply)", len(reqs))
	}

	// Another restart: catch-up hands the mention, the command and the
	// reply over again, and the gateway drops each.
	waitOutboxIdle(t, e)
	p.kill()
	p = e.startServe()
	eventually(t, 60*time.Second, "the second catch-up to hand the thread over", func() bool { return slackDuplicates(t, p) >= 3 })
	waitOutboxIdle(t, e)
	if n := len(e.model.Requests()); n != 2 {
		t.Errorf("the second restart made %d model calls in all, want still 2", n)
	}
	for text, want := range map[string]int{"First answer.": 1, "queue mode": 1, "Still here.": 1} {
		if n := len(botSaid(sl, slacktest.General, root.TS, text)); n != want {
			t.Errorf("the bot said %q %d times, want %d", text, n, want)
		}
	}
}

// TestSlackReplyBeforeItsMention: Slack does not promise order, so a reply
// in a new thread can arrive before the mention that starts the thread
// (the mention's event was retried after the app was away). The reply,
// ignored at first (no mention, a thread the gateway does not know), is
// answered after the mention, in the same conversation, once — in Socket
// Mode and over HTTP.
func TestSlackReplyBeforeItsMention(t *testing.T) {
	for _, mode := range []string{"socket", "http"} {
		t.Run(mode, func(t *testing.T) { testSlackReplyBeforeItsMention(t, mode) })
	}
}

func testSlackReplyBeforeItsMention(t *testing.T, mode string) {
	e, sl := slackEnv(t, mode, fakemodel.Step{Text: "Answer to the mention."}, fakemodel.Step{Text: "Answer to the reply."})
	p := e.startServe()
	if mode == "http" {
		sl.DeliverHTTP(p.url())
	} else {
		waitSlack(t, sl, "the Socket Mode connection", sl.Connected)
	}
	root := sl.Post(slacktest.General, slacktest.Ada, slackMention("start a thread"), slacktest.Late())
	reply := sl.Post(slacktest.General, slacktest.Ada, "and one more thing", slacktest.InThread(root.TS))
	waitSlack(t, sl, "the reply's event acknowledged", func() bool { return sl.Acked(reply.EventIDs[0]) })
	if n := len(e.model.Requests()); n != 0 {
		t.Fatalf("the reply alone made %d model calls; it mentions nobody in a thread the bot is not in", n)
	}
	sl.Release(root.EventIDs...)
	waitBotFinal(t, sl, slacktest.General, root.TS, "Answer to the reply.")
	reqs := e.model.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].LastMessage().Text(), "start a thread") ||
		!strings.Contains(reqs[1].LastMessage().Text(), "and one more thing") || !requestMentions(reqs[1], "start a thread") {
		t.Fatalf("%d model calls; want the mention, then the reply in the same conversation", len(reqs))
	}
	waitOutboxIdle(t, e)
	if n := len(e.model.Requests()); n != 2 {
		t.Errorf("%d model calls in all, want 2", n)
	}
	noSlackSecrets(t, p)
}

// TestSlackDeafSocketReconnects: the Socket Mode connection stays open but
// Slack stops sending on it (no pings, no events: the message posted
// meanwhile is lost). serve replaces the connection — with the default
// settings, through the client's ping watchdog (30 s) before the adapter's
// own idle timeout (2 min) — and catch-up answers the lost message.
func TestSlackDeafSocketReconnects(t *testing.T) {
	e, sl := slackEnv(t, "socket", fakemodel.Step{Text: "First answer."}, fakemodel.Step{Text: "Heard you after all."})
	p := e.startServe()
	waitSlack(t, sl, "the Socket Mode connection", sl.Connected)
	root := sl.Post(slacktest.General, slacktest.Ada, slackMention("hello"))
	waitBotSaid(t, sl, slacktest.General, root.TS, "First answer.")

	sl.Silence()
	lost := sl.Post(slacktest.General, slacktest.Ada, "did you hear this?", slacktest.InThread(root.TS))
	if len(lost.EventIDs) == 0 || !sl.Lost(lost.EventIDs[0]) {
		t.Fatalf("the fake delivered the event on the silent socket: %+v", lost)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if err := sl.WaitFor(ctx, "a new connection", func() bool { return sl.Connections() >= 2 && sl.Connected() }); err != nil {
		t.Fatalf("serve did not replace the deaf connection: %v\n%s", err, p.stderr.String())
	}
	waitBotSaid(t, sl, slacktest.General, root.TS, "Heard you after all.")
	if n := len(e.model.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

// slackEvent is a message event as Slack posts it in HTTP mode.
func slackEvent(eventID, channel, user, text, ts string) []byte {
	b, _ := json.Marshal(map[string]any{
		"token": "fake-verification-token", "team_id": slacktest.TeamID, "api_app_id": slacktest.AppID, "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "message", "channel": channel, "channel_type": "im", "user": user, "text": text, "ts": ts, "event_ts": ts},
	})
	return b
}

// postSlack posts body to serve's Slack route with headers h.
func postSlack(t *testing.T, p *serveProc, path string, body []byte, h http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url()+path, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSlackHTTPMode drives serve's POST /slack/events and /slack/commands
// on the [http] listener: a missing or wrong signature, or a correct one
// on a timestamp six minutes old, gets 401 and queues nothing; a signed
// event is answered; its retry (X-Slack-Retry-Num) is acknowledged and
// runs no second turn; a slash command is acknowledged while the command
// cannot have run yet (it is queued behind a turn the model holds), and
// its answer follows.
func TestSlackHTTPMode(t *testing.T) {
	hold := make(chan struct{})
	e, sl := slackEnv(t, "http", fakemodel.Step{Text: "Answer over HTTP."}, fakemodel.Step{Text: "Held answer.", Block: hold},
		fakemodel.Step{Text: "The summary."}) // /compact's model call
	p := e.startServe()
	sl.DeliverHTTP(p.url())
	dm := sl.DM(slacktest.Ada)
	msg := sl.Post(dm, slacktest.Ada, "hello over http", slacktest.Quietly())
	body := slackEvent("Ev0HTTP1", dm, slacktest.Ada, "hello over http", msg.TS)

	wrong := slacktest.Sign(body, time.Now())
	wrong.Set("X-Slack-Signature", "v0="+strings.Repeat("0", 64))
	for name, h := range map[string]http.Header{
		"no signature":    {},
		"wrong signature": wrong,
		"stale timestamp": slacktest.Sign(body, time.Now().Add(-6*time.Minute)),
	} {
		if code := postSlack(t, p, "/slack/events", body, h); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, code)
		}
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Fatalf("a refused request reached the model (%d calls)", n)
	}
	if out := e.run("", "conversations", "list", "--json"); strings.Contains(out.stdout, "slack:") {
		t.Fatalf("a refused request made a conversation: %s", out.stdout)
	}

	if code := postSlack(t, p, "/slack/events", body, slacktest.Sign(body, time.Now())); code != http.StatusOK {
		t.Fatalf("signed event: status %d, want 200", code)
	}
	waitBotSaid(t, sl, dm, "", "Answer over HTTP.")
	retry := slacktest.Sign(body, time.Now())
	retry.Set("X-Slack-Retry-Num", "1")
	retry.Set("X-Slack-Retry-Reason", "http_timeout")
	if code := postSlack(t, p, "/slack/events", body, retry); code != http.StatusOK {
		t.Fatalf("retry: status %d, want 200", code)
	}

	// A message whose turn the model holds, then /switchboard compact,
	// queued behind it.
	sl.Post(dm, slacktest.Ada, "think hard")
	eventually(t, 60*time.Second, "the held model call", func() bool { return len(e.model.Requests()) == 2 })
	ack, err := sl.Command(pressCtx(t), dm, slacktest.Ada, "compact")
	if err != nil {
		t.Fatalf("the slash command was not acknowledged while its conversation was busy: %v", err)
	}
	if strings.Contains(ack, "compact") {
		t.Errorf("the acknowledgement is the command's answer already: %q", ack)
	}
	if ms := botSaid(sl, dm, "", "compact"); len(ms) > 0 {
		t.Fatalf("the command was answered before the turn ahead of it ended: %+v", ms)
	}
	close(hold)
	waitBotSaid(t, sl, dm, "", "Held answer.")
	waitBotSaid(t, sl, dm, "", "compacted")
	if n := len(e.model.Requests()); n != 3 {
		t.Errorf("%d model calls, want 3: two turns and the summary (the retry ran no second turn)", n)
	}
	if n := len(botSaid(sl, dm, "", "Answer over HTTP.")); n != 1 {
		t.Errorf("the answer was posted %d times, want once", n)
	}
	noSlackSecrets(t, p)
}

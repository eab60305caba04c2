package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

const tgToken = "4242:e2e-telegram-secret-token"

// telegramEnv is an env with a fake Bot API and serve configured for it.
func telegramEnv(t *testing.T, steps ...fakemodel.Step) (*env, *telegramtest.Server) {
	e := newEnv(t, steps...)
	tg := telegramtest.New(t, tgToken)
	e.extra = append(e.extra, "TELEGRAM_BOT_TOKEN="+tgToken)
	e.writeServeConfig(`enabled = false

[channels.telegram]
token = "${TELEGRAM_BOT_TOKEN}"
api_url = "` + tg.URL() + `"
allow_users = ["100", "200"]
admins = ["300"]
edit_interval = "50ms"
`)
	return e, tg
}

func waitTG(t *testing.T, tg *telegramtest.Server, what string, pred func(telegramtest.Call) bool) telegramtest.Call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := tg.WaitCall(ctx, pred)
	if err != nil {
		var b strings.Builder
		for _, c := range tg.Calls() {
			if c.Method != "getUpdates" {
				fmt.Fprintf(&b, "\n  %s %d chat=%s msg=%s text=%.80q", c.Method, c.Status, c.Params["chat_id"], c.Params["message_id"], c.Params["text"])
			}
		}
		t.Fatalf("waiting for %s: %v\nBot API calls:%s", what, err, b.String())
	}
	return c
}

// waitOutboxIdle waits until serve has recorded every queued outbound
// message as sent, so a SIGKILL lands between deliveries, not inside one
// (the at-least-once window DESIGN §2 describes).
func waitOutboxIdle(t *testing.T, e *env) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eventually(t, 60*time.Second, "the outbox to drain", func() bool {
		due, err := db.DueOutbound(context.Background(), nil, time.Now().Add(24*time.Hour), 1)
		return err == nil && len(due) == 0
	})
}

func textContains(method, s string) func(telegramtest.Call) bool {
	return func(c telegramtest.Call) bool {
		return (method == "" || c.Method == method) && c.Status == 200 && strings.Contains(c.Params["text"], s)
	}
}

// callbackData returns the callback_data of the button labelled label in a
// sendMessage call's inline keyboard.
func callbackData(t *testing.T, c telegramtest.Call, label string) string {
	t.Helper()
	var markup struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(c.Params["reply_markup"]), &markup); err != nil {
		t.Fatalf("reply_markup %q: %v", c.Params["reply_markup"], err)
	}
	for _, row := range markup.InlineKeyboard {
		for _, b := range row {
			if b.Text == label {
				if len(b.CallbackData) > 64 || strings.Contains(b.CallbackData, "touch") {
					t.Fatalf("callback_data %q is not an opaque token", b.CallbackData)
				}
				return b.CallbackData
			}
		}
	}
	t.Fatalf("no %q button in %s", label, c.Params["reply_markup"])
	return ""
}

// TestTelegramEndToEnd drives the real binary through a fake Bot API:
// DM → streamed answer; a forum topic keeps its thread; a tool ask becomes
// an inline keyboard; another user's press is refused with an alert;
// SIGKILL and restart between keyboard and press; the requester's press
// runs the tool, the ask is edited and the answer arrives; a redelivered
// update runs once.
func TestTelegramEndToEnd(t *testing.T) {
	e, tg := telegramEnv(t,
		fakemodel.Step{Text: "Hello from the agent."},
		fakemodel.Step{Text: "Topic answer."},
		bashStep("call_tg", "touch pressed-in-telegram"),
	)
	p := e.startServe()

	// DM → streamed answer.
	dmUpdate := tg.AddMessage(100, 100, "hello")
	waitTG(t, tg, "the DM answer", textContains("", "Hello from the agent."))
	// The answer is threaded to the question.
	first := waitTG(t, tg, "the first send of the answer", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && c.Params["chat_id"] == "100"
	})
	if !strings.Contains(first.Params["reply_parameters"], `"message_id"`) {
		t.Errorf("the answer is not a reply to the question: reply_parameters = %q", first.Params["reply_parameters"])
	}

	// Forum topic: every call to the topic carries its thread id.
	tg.AddMessage(-1001, 100, "@"+telegramtest.BotUsername+" hi topic", telegramtest.InGroup(), telegramtest.InTopic(77))
	waitTG(t, tg, "the topic answer", func(c telegramtest.Call) bool {
		return strings.Contains(c.Params["text"], "Topic answer.")
	})
	for _, c := range tg.Calls() {
		if c.Params["chat_id"] == "-1001" && c.Method != "getUpdates" && c.Method != "editMessageText" {
			if c.Params["message_thread_id"] != "77" {
				t.Errorf("%s to the topic without message_thread_id=77: %v", c.Method, c.Params)
			}
		}
	}

	// The same update delivered again: no second turn.
	before := len(e.model.Requests())
	tg.AddUpdate(json.RawMessage(`{"update_id": ` + itoa(dmUpdate) + `, "message": {"message_id": 1, "date": 1, "chat": {"id": 100, "type": "private"}, "from": {"id": 100, "is_bot": false, "first_name": "Ada"}, "text": "hello"}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tg.WaitOffset(ctx, dmUpdate+1); err != nil {
		t.Fatal(err)
	}

	// A tool ask → inline keyboard.
	tg.AddMessage(100, 100, "make the file")
	ask := waitTG(t, tg, "the approval keyboard", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && strings.Contains(c.Params["text"], "Approval needed") && c.Has("reply_markup")
	})
	if n := len(e.model.Requests()); n != before+1 {
		t.Fatalf("the redelivered update started a turn (%d requests, want %d)", n, before+1)
	}
	token := callbackData(t, ask, "Approve")
	var askID int64
	for _, m := range tg.Messages() {
		if strings.Contains(m.Text, "Approval needed") {
			askID = m.ID
		}
	}

	// Another user's press: alert, nothing runs.
	bobPress := tg.AddCallback(100, 200, askID, token)
	waitTG(t, tg, "the refusal", func(c telegramtest.Call) bool {
		return c.Method == "answerCallbackQuery" && c.Params["callback_query_id"] == "cb"+itoa(bobPress)
	})
	ans, _ := tg.AnswerFor(bobPress)
	if ans.Params["show_alert"] != "true" || !strings.Contains(ans.Params["text"], "Only") {
		t.Fatalf("refusal answer = %v", ans.Params)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "pressed-in-telegram")); err == nil {
		t.Fatal("the tool ran after a refused press")
	}

	// SIGKILL and restart between the keyboard and the press.
	waitOutboxIdle(t, e)
	p.kill()
	e.model.Push(fakemodel.Step{Text: "The file is there now."})
	e.startServe()
	press := tg.AddCallback(100, 100, askID, token)
	waitTG(t, tg, "the answer after the press", textContains("", "The file is there now."))
	if a, ok := tg.AnswerFor(press); !ok || !strings.Contains(a.Params["text"], "Approved") {
		t.Fatalf("press answer = %v", a.Params)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "pressed-in-telegram")); err != nil {
		t.Fatal("the approved tool did not run")
	}
	waitTG(t, tg, "the ask edited to show the decision", func(c telegramtest.Call) bool {
		return c.Method == "editMessageText" && c.Int("message_id") == askID && strings.Contains(c.Params["text"], "Approved")
	})
}

// TestTelegramRateLimitAndCrashInOutbox: a 429 with retry_after is
// honoured (retried after it, not before) and a reply waiting in the
// outbox when serve is killed is delivered once after the restart.
func TestTelegramRateLimitAndCrashInOutbox(t *testing.T) {
	e, tg := telegramEnv(t, fakemodel.Step{Text: "Patience pays."})
	p := e.startServe()
	// Every way the reply could go out is rate limited for 4 s.
	for range 3 {
		tg.FailNext("sendMessage", 429, 4)
	}
	tg.AddMessage(100, 100, "hi")
	first := waitTG(t, tg, "the rate-limited send", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && c.Status == 429
	})
	// Kill serve once the reply waits in the outbox after a 429, before
	// its retry_after ends.
	waitOutboxRetrying(t, e, "Patience pays.")
	p.kill()
	e.startServe()
	ok := waitTG(t, tg, "the delivery after restart", textContains("sendMessage", "Patience pays."))
	if gap := ok.At.Sub(first.At); gap < 4*time.Second {
		t.Fatalf("retried %v after the 429, before retry_after (4s)", gap)
	}
	// Delivered once, not lost and not twice.
	n := 0
	for _, m := range tg.Messages() {
		if strings.Contains(m.Text, "Patience pays.") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the reply was posted %d times, want once", n)
	}
}

// waitOutboxRetrying waits until an unsent outbox item containing text has
// failed at least once (it waits for its retry).
func waitOutboxRetrying(t *testing.T, e *env, text string) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eventually(t, 60*time.Second, "the reply to wait in the outbox", func() bool {
		due, err := db.DueOutbound(context.Background(), nil, time.Now().Add(24*time.Hour), 100)
		if err != nil {
			return false
		}
		for _, it := range due {
			if it.Attempts >= 1 && strings.Contains(string(it.Body), text) {
				return true
			}
		}
		return false
	})
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestTelegramWebhookMode: serve registers the webhook with its secret and
// answers POST /telegram/webhook only with the right secret header.
func TestTelegramWebhookMode(t *testing.T) {
	e := newEnv(t, fakemodel.Step{Text: "Webhook answer."})
	tg := telegramtest.New(t, tgToken)
	e.extra = append(e.extra, "TELEGRAM_BOT_TOKEN="+tgToken)
	e.writeServeConfig(`enabled = false

[channels.telegram]
token = "${TELEGRAM_BOT_TOKEN}"
api_url = "` + tg.URL() + `"
mode = "webhook"
webhook_url = "https://bot.example.com/telegram/webhook"
webhook_secret = "hook-secret-123"
allow_users = ["100"]
`)
	p := e.startServe()
	eventually(t, 30*time.Second, "setWebhook", func() bool {
		url, secret := tg.Webhook()
		return url == "https://bot.example.com/telegram/webhook" && secret == "hook-secret-123"
	})
	update := `{"update_id": 7001, "message": {"message_id": 5, "date": 1, "chat": {"id": 100, "type": "private"}, "from": {"id": 100, "is_bot": false, "first_name": "Ada"}, "text": "hello over the webhook"}}`
	post := func(secret string) int {
		req, _ := http.NewRequest("POST", p.url()+"/telegram/webhook", strings.NewReader(update))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, bad := range []string{"", "wrong-secret"} {
		if code := post(bad); code != http.StatusUnauthorized {
			t.Fatalf("secret %q: status %d, want 401", bad, code)
		}
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Fatalf("a refused webhook call reached the model (%d requests)", n)
	}
	if code := post("hook-secret-123"); code != http.StatusOK {
		t.Fatalf("right secret: status %d, want 200", code)
	}
	waitTG(t, tg, "the webhook answer", textContains("", "Webhook answer."))
}

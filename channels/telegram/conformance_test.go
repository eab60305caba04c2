package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

// platform is the conformance Platform of the Telegram adapter: the fake Bot
// API server, in polling mode (updates wait for a getUpdates offset past
// them) or webhook mode (the server posts them to the adapter's
// WebhookHandler until it answers 2xx).
type platform struct {
	srv *telegramtest.Server
	bot int64 // the bot's user id, the Account of its locations
}

var (
	_ channelstest.Platform      = (*platform)(nil)
	_ channelstest.Failer        = (*platform)(nil)
	_ channelstest.CommandLister = (*platform)(nil)
)

// The suite's people and group.
const (
	confUser  = 7
	confOther = 8
	confGroup = -100500
)

func (p *platform) Chat() channels.Location {
	return channels.Location{Channel: Name, Account: strconv.FormatInt(p.bot, 10), ChatID: strconv.Itoa(confGroup)}
}

func (p *platform) Users() (string, string) { return strconv.Itoa(confUser), strconv.Itoa(confOther) }

// chatOf parses a location of the suite into chat, thread and whether it
// is a private chat (positive chat ids are users).
func chatOf(loc channels.Location) (chat, thread int64, err error) {
	chat, err = strconv.ParseInt(loc.ChatID, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("telegram platform: chat id %q: %w", loc.ChatID, err)
	}
	if loc.ThreadID != "" {
		if thread, err = strconv.ParseInt(loc.ThreadID, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("telegram platform: thread id %q: %w", loc.ThreadID, err)
		}
	}
	return chat, thread, nil
}

// Deliver queues a message update: in a group it mentions the bot, in a
// private chat (the user's own id) it is plain.
func (p *platform) Deliver(ctx context.Context, loc channels.Location, user, text string) (string, error) {
	chat, thread, err := chatOf(loc)
	if err != nil {
		return "", err
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return "", fmt.Errorf("telegram platform: user %q: %w", user, err)
	}
	var opts []telegramtest.MessageOption
	switch {
	case thread != 0:
		opts = append(opts, telegramtest.InTopic(thread))
	case chat < 0:
		opts = append(opts, telegramtest.InGroup())
	}
	if chat < 0 {
		text = "@" + telegramtest.BotUsername + " " + text
	} else if chat != uid {
		return "", fmt.Errorf("telegram platform: user %d cannot write in the private chat of %d", uid, chat)
	}
	return strconv.FormatInt(p.srv.AddMessage(chat, uid, text, opts...), 10), nil
}

func (p *platform) AcksEvents() bool { return true }

func (p *platform) Acked(id string) bool {
	n, err := strconv.ParseInt(id, 10, 64)
	return err == nil && p.srv.Acked(n)
}

// Shown returns the bot's messages in the chat (and topic) of loc with the
// callback_data of their inline keyboards.
func (p *platform) Shown(loc channels.Location) []channelstest.Shown {
	chat, thread, err := chatOf(loc)
	if err != nil {
		return nil
	}
	var out []channelstest.Shown
	for _, m := range p.srv.Messages() {
		if m.ChatID != chat || m.ThreadID != thread {
			continue
		}
		sh := channelstest.Shown{ID: strconv.FormatInt(m.ID, 10), Text: m.Text}
		if m.Document != nil {
			sh.Text = m.Caption
		}
		var kb struct {
			InlineKeyboard [][]struct {
				CallbackData string `json:"callback_data"`
			} `json:"inline_keyboard"`
		}
		if m.Markup != "" && json.Unmarshal([]byte(m.Markup), &kb) == nil {
			for _, row := range kb.InlineKeyboard {
				for _, b := range row {
					sh.Tokens = append(sh.Tokens, b.CallbackData)
				}
			}
		}
		out = append(out, sh)
	}
	return out
}

// Press queues a callback_query update and returns the text
// answerCallbackQuery gave the presser.
func (p *platform) Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error) {
	chat, thread, err := chatOf(loc)
	if err != nil {
		return "", err
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return "", fmt.Errorf("telegram platform: user %q: %w", user, err)
	}
	mid, err := strconv.ParseInt(msgID, 10, 64)
	if err != nil {
		return "", fmt.Errorf("telegram platform: message id %q: %w", msgID, err)
	}
	var opts []telegramtest.CallbackOption
	if thread != 0 {
		opts = append(opts, telegramtest.CallbackInTopic(thread))
	}
	id := p.srv.AddCallback(chat, uid, mid, token, opts...)
	want := "cb" + strconv.FormatInt(id, 10)
	c, err := p.srv.WaitCall(ctx, func(c telegramtest.Call) bool {
		return c.Method == "answerCallbackQuery" && c.Params["callback_query_id"] == want
	})
	if err != nil {
		return "", fmt.Errorf("telegram platform: the press was not answered: %w", err)
	}
	return c.Params["text"], nil
}

// FailNext makes the next sendMessage fail: 429 with retry_after in whole
// seconds, or 400 "chat not found".
func (p *platform) FailNext(retryAfter time.Duration) {
	if retryAfter < 0 {
		p.srv.FailNextError("sendMessage", http.StatusBadRequest, "Bad Request: chat not found", 0)
		return
	}
	p.srv.FailNext("sendMessage", http.StatusTooManyRequests, int(retryAfter/time.Second))
}

func (p *platform) Commands() []string {
	var names []string
	for _, c := range p.srv.CommandList() {
		names = append(names, c.Command)
	}
	return names
}

func TestConformancePolling(t *testing.T) {
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		srv := telegramtest.New(t, testToken)
		a := newAdapter(t, srv, newLogSink(), nil)
		return channelstest.Subject{Adapter: a, Platform: &platform{srv: srv, bot: srv.BotID()}}
	})
}

func TestConformanceWebhook(t *testing.T) {
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		srv := telegramtest.New(t, testToken)
		// The webhook's server exists before the adapter, whose URL option
		// names it; the handler is set before Start can call setWebhook.
		var hook atomic.Pointer[http.Handler]
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := hook.Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			http.Error(w, "no adapter yet", http.StatusServiceUnavailable)
		}))
		t.Cleanup(hs.Close)
		a := newAdapter(t, srv, newLogSink(), func(o *Options) {
			o.Mode, o.WebhookURL, o.WebhookSecret = ModeWebhook, hs.URL+"/telegram/webhook", "conformance-secret"
		})
		h := a.WebhookHandler()
		hook.Store(&h)
		srv.DeliverWebhooks()
		return channelstest.Subject{Adapter: a, Platform: &platform{srv: srv, bot: srv.BotID()}}
	})
}

package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// TestServeRefusesForeignHosts runs serve with a Telegram webhook, a public
// URL and a metrics token: a request naming another host gets 421 and
// reaches nothing (the webhook update is never queued), /metrics needs the
// token, and requests naming the listener or the public URL's host work.
func TestServeRefusesForeignHosts(t *testing.T) {
	e := newEnv(t, fakemodel.Step{Text: "Answer to the second update."})
	tg := telegramtest.New(t, tgToken)
	e.extra = append(e.extra, "TELEGRAM_BOT_TOKEN="+tgToken)
	e.writeConfig(fmt.Sprintf(`[providers.default]
base_url = %q
model = "test-model"

[http]
listen = "127.0.0.1:0"
public_url = "https://bot.example.com"
metrics_token = "metrics-token-0123"

[channels.web]
token = %q

[channels.telegram]
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
mode = "webhook"
webhook_url = "https://bot.example.com/telegram/webhook"
webhook_secret = "hook-secret-123"
allow_users = ["100"]
edit_interval = "50ms"
`, e.model.URL(), webToken, tg.URL()))
	p := e.startServe()
	eventually(t, 30*time.Second, "setWebhook", func() bool { url, _ := tg.Webhook(); return url != "" })

	send := func(method, path, host, body string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, p.url()+path, strings.NewReader(body))
		req.Host = host
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	update := func(id int, text string) string {
		return fmt.Sprintf(`{"update_id": %d, "message": {"message_id": %d, "date": 1, "chat": {"id": 100, "type": "private"}, "from": {"id": 100, "is_bot": false, "first_name": "Ada"}, "text": %q}}`, id, id, text)
	}
	hook := map[string]string{"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": "hook-secret-123"}

	for _, req := range []struct{ method, path, host, body string }{
		{"POST", "/telegram/webhook", "rebind.attacker.example", update(9001, "first, through a rebound name")},
		{"GET", "/metrics", "rebind.attacker.example", ""},
		{"GET", "/?token=" + webToken, "rebind.attacker.example", ""},
		{"GET", "/healthz", "bot.example.com.attacker.example", ""},
	} {
		code, body := send(req.method, req.path, req.host, req.body, hook)
		if code != http.StatusMisdirectedRequest || strings.Contains(body, "ok") || len(body) > 100 {
			t.Errorf("%s %s with Host %s: %d %q; want 421 and a short line", req.method, req.path, req.host, code, body)
		}
	}

	// Through the public URL's host the webhook works; the refused update
	// was never queued, so the model sees only the second message.
	if code, _ := send("POST", "/telegram/webhook", "bot.example.com", update(9002, "second, through the public name"), hook); code != http.StatusOK {
		t.Fatalf("webhook through the public host: %d", code)
	}
	waitTG(t, tg, "the answer", textContains("", "Answer to the second update."))
	reqs := e.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the model got %d requests, want 1", len(reqs))
	}
	for _, m := range reqs[0].Messages {
		if strings.Contains(contentText(m), "rebound name") {
			t.Fatalf("the refused update reached the model: %q", contentText(m))
		}
	}

	// Metrics need the token, on an accepted host.
	if code, _ := send("GET", "/metrics", p.addr, "", nil); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	code, body := send("GET", "/metrics", "localhost", "", map[string]string{"Authorization": "Bearer metrics-token-0123"})
	if code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics with the token: %d %.200q", code, body)
	}
	if strings.Contains(p.stderr.String(), "metrics-token-0123") {
		t.Error("serve printed the metrics token")
	}
}

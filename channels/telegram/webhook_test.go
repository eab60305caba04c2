package telegram

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

const dmUpdate = `{"update_id":500,"message":{"message_id":1,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7,"first_name":"Ada"},"text":"via webhook"}}`

func TestWebhookChecksSecret(t *testing.T) {
	e := start(t, func(o *Options) {
		o.Mode = ModeWebhook
		o.WebhookURL = "https://gw.example/telegram/webhook"
		o.WebhookSecret = "s3cret-value"
	})
	if url, secret := e.srv.Webhook(); url != "https://gw.example/telegram/webhook" || secret != "s3cret-value" {
		t.Errorf("setWebhook(%q, %q)", url, secret)
	}
	if c := e.srv.CallsOf("setWebhook")[0]; c.Params["allowed_updates"] != `["message","callback_query"]` {
		t.Errorf("setWebhook params %v", c.Params)
	}
	hs := httptest.NewServer(e.a.WebhookHandler())
	t.Cleanup(hs.Close)
	post := func(secret string, set bool) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(e.ctx, http.MethodPost, hs.URL+"/telegram/webhook", strings.NewReader(dmUpdate))
		req.Header.Set("Content-Type", "application/json")
		if set {
			req.Header.Set(SecretHeader, secret)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("", false); got != http.StatusUnauthorized {
		t.Errorf("no secret: %d", got)
	}
	if got := post("s3cret-valuX", true); got != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d", got)
	}
	if got := post("s3cret-value-and-more", true); got != http.StatusUnauthorized {
		t.Errorf("longer secret: %d", got)
	}
	e.rec.mu.Lock()
	n := len(e.rec.attempts)
	e.rec.failIn = 1
	e.rec.mu.Unlock()
	if n != 0 {
		t.Fatalf("OnInbound called %d times for unauthenticated requests", n)
	}
	// Not accepted → 500, so Telegram delivers again; then 200.
	if got := post("s3cret-value", true); got != http.StatusInternalServerError {
		t.Errorf("refused update: %d", got)
	}
	if got := post("s3cret-value", true); got != http.StatusOK {
		t.Errorf("right secret: %d", got)
	}
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	if in.EventID != "500" || in.Text != "via webhook" || !in.DirectMessage {
		t.Errorf("inbound %+v", in)
	}
	// Webhook mode never polls.
	if n := len(e.srv.CallsOf("getUpdates")); n != 0 {
		t.Errorf("%d getUpdates calls in webhook mode", n)
	}
	rec := httptest.NewRecorder()
	e.a.WebhookHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/telegram/webhook", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
}

func TestWebhookBeforeStartIsUnavailable(t *testing.T) {
	srv := telegramtest.New(t, testToken)
	a := newAdapter(t, srv, newLogSink(), func(o *Options) {
		o.Mode, o.WebhookURL, o.WebhookSecret = ModeWebhook, "https://gw.example/hook", "sec"
	})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/telegram/webhook", strings.NewReader(dmUpdate))
	req.Header.Set(SecretHeader, "sec")
	a.WebhookHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("before Start: %d", rec.Code)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{},
		{Token: "1:x", Mode: "push"},
		{Token: "1:x", Mode: ModeWebhook, WebhookURL: "https://x"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// closedURL is a URL nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

func TestTokenNeverInErrorsOrLogs(t *testing.T) {
	ctx := testCtx(t)
	logs := newLogSink()
	srv := telegramtest.New(t, testToken)
	a := newAdapter(t, srv, logs, func(o *Options) { o.APIURL = closedURL(t) })
	loc := dmLocation("7")
	var errs []error
	_, err := a.Send(ctx, loc, channels.TextMessage("hi"))
	errs = append(errs, err)
	errs = append(errs, a.Edit(ctx, channels.MessageRef{Location: loc, ID: "1"}, channels.TextMessage("hi")))
	errs = append(errs, a.Typing(ctx, loc))
	_, err = a.download(ctx, "f")
	errs = append(errs, err)
	_, err = a.getUpdates(ctx, 0)
	errs = append(errs, a.red.classify("getUpdates", err))
	for i, err := range errs {
		if err == nil {
			t.Fatalf("call %d succeeded against a closed port", i)
		}
		if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), "AAH-secret") {
			t.Errorf("call %d: token in %q", i, err)
		}
		if channels.IsPermanent(err) {
			t.Errorf("call %d: a network error is transient: %v", i, err)
		}
	}

	// Our own getUpdates request names the URL, token redacted.
	if msg := errs[len(errs)-1].Error(); !strings.Contains(msg, "/bot<redacted>/getUpdates") {
		t.Errorf("getUpdates error %q", msg)
	}

	// Start keeps retrying getMe while the network is down, logging
	// without the token, and returns nil when its context ends.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Start(runCtx, newRecorder()) }()
	logs.waitFor(t, ctx, "retrying")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start after cancel: %v", err)
	}
	if out := logs.String(); strings.Contains(out, testToken) || strings.Contains(out, "AAH-secret") {
		t.Errorf("token in logs:\n%s", out)
	}

}

func TestStartFailsOnBadToken(t *testing.T) {
	ctx := testCtx(t)
	srv := telegramtest.New(t, "999:other-token") // our token is unknown here
	logs := newLogSink()
	a := newAdapter(t, srv, logs, nil)
	err := a.Start(ctx, newRecorder())
	if err == nil || strings.Contains(err.Error(), testToken) {
		t.Fatalf("Start with a bad token: %v", err)
	}
	if !channels.IsPermanent(err) {
		t.Errorf("bad token should be permanent: %v", err)
	}
}

func TestPollingOutageLoggedOnce(t *testing.T) {
	e := start(t, nil)
	for range 4 {
		e.srv.FailNext("getUpdates", http.StatusBadGateway, 0)
	}
	// Wake the waiting long poll so the failures are used.
	e.srv.AddMessage(7, 7, "during the outage")
	e.rec.waitInbound(t, e.ctx, 1)
	e.logs.waitFor(t, e.ctx, "polling recovered")
	out := e.logs.String()
	if n := strings.Count(out, "polling failed"); n != 1 {
		t.Errorf("%d outage warnings, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "polling recovered"); n != 1 || !strings.Contains(out, "attempts=4") {
		t.Errorf("recovery logged %d times:\n%s", n, out)
	}
}

func TestPollingHonoursRetryAfter(t *testing.T) {
	e := start(t, nil)
	e.srv.FailNext("getUpdates", http.StatusTooManyRequests, 1)
	e.srv.AddMessage(7, 7, "wakes the waiting poll")
	if _, err := e.srv.WaitCall(e.ctx, func(c telegramtest.Call) bool { return c.Status == http.StatusTooManyRequests }); err != nil {
		t.Fatal(err)
	}
	e.srv.AddMessage(7, 7, "after the limit")
	e.rec.waitInbound(t, e.ctx, 2)
	var failedAt, nextAt time.Time
	for _, c := range e.srv.CallsOf("getUpdates") {
		if c.Status == http.StatusTooManyRequests {
			failedAt = c.At
		} else if !failedAt.IsZero() && nextAt.IsZero() {
			nextAt = c.At
		}
	}
	// Calls are recorded when answered; the next poll answered at once
	// with the update, so its time bounds when it was made.
	if failedAt.IsZero() || nextAt.Sub(failedAt) < time.Second {
		t.Errorf("polled again %v after a 429 with retry_after=1", nextAt.Sub(failedAt))
	}
	if errors.Is(e.ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}

package slack

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// postSigned posts body to the adapter's route with headers h.
func postSigned(t *testing.T, e *env, path string, body []byte, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, e.web.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func dmEvent(t *testing.T, eventID, ts, text string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": "event_callback", "team_id": slacktest.TeamID, "event_id": eventID,
		"event": map[string]any{"type": "message", "channel": "D0ADA", "channel_type": "im", "user": slacktest.Ada, "text": text, "ts": ts}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHTTPSignatureChecked(t *testing.T) {
	e := start(t, ModeHTTP, nil)
	body := dmEvent(t, "Ev100", "1700000000.000100", "hello")
	now := time.Now()
	wrongSecret := func() http.Header {
		h := slacktest.Sign(body, now)
		h.Set("X-Slack-Signature", "v0="+strings.Repeat("ab", 32))
		return h
	}
	tampered := slacktest.Sign(body, now)
	for name, h := range map[string]http.Header{
		"no signature":          {},
		"wrong signature":       wrongSecret(),
		"signature of another":  tampered,
		"stale timestamp":       slacktest.Sign(body, now.Add(-6*time.Minute)),
		"timestamp from future": slacktest.Sign(body, now.Add(6*time.Minute)),
	} {
		b := body
		if name == "signature of another" {
			b = dmEvent(t, "Ev100", "1700000000.000100", "hello, tampered")
		}
		for _, path := range []string{EventsPath, InteractionsPath, CommandsPath} {
			if status, _ := postSigned(t, e, path, b, h); status != http.StatusUnauthorized {
				t.Errorf("%s to %s: status %d, want 401", name, path, status)
			}
		}
	}
	e.rec.mu.Lock()
	n := len(e.rec.attempts)
	e.rec.mu.Unlock()
	if n != 0 {
		t.Errorf("%d inbounds reached the gateway from unsigned or stale requests", n)
	}
	// The same body, properly signed and fresh, is accepted.
	if status, _ := postSigned(t, e, EventsPath, body, slacktest.Sign(body, time.Now())); status != http.StatusOK {
		t.Errorf("a valid request got %d", status)
	}
	if got := e.rec.waitInbound(t, e.ctx, 1); got[0].Text != "hello" {
		t.Errorf("inbound %q", got[0].Text)
	}
}

func TestHTTPURLVerification(t *testing.T) {
	e := start(t, ModeHTTP, nil)
	body := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	status, resp := postSigned(t, e, EventsPath, body, slacktest.Sign(body, time.Now()))
	if status != http.StatusOK || resp != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("url_verification answered %d %q", status, resp)
	}
	if status, _ := postSigned(t, e, EventsPath, body, http.Header{}); status != http.StatusUnauthorized {
		t.Errorf("an unsigned url_verification answered %d", status)
	}
}

func TestHTTPRetryAckedAndDeduped(t *testing.T) {
	e := setup(t, ModeHTTP, nil)
	e.rec.failIn = 1
	e.run(t)
	body := dmEvent(t, "Ev200", "1700000000.000200", "do it once")
	if status, _ := postSigned(t, e, EventsPath, body, slacktest.Sign(body, time.Now())); status != http.StatusInternalServerError {
		t.Errorf("a refused event answered %d; want 500 so that Slack delivers it again", status)
	}
	for n := 1; n <= 2; n++ {
		h := slacktest.Sign(body, time.Now())
		h.Set("X-Slack-Retry-Num", string(rune('0'+n)))
		h.Set("X-Slack-Retry-Reason", "http_error")
		if status, _ := postSigned(t, e, EventsPath, body, h); status != http.StatusOK {
			t.Errorf("retry %d answered %d", n, status)
		}
	}
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	if len(e.rec.inbound) != 1 || len(e.rec.attempts) != 2 {
		t.Errorf("accepted %d of %d attempts; want the refused one retried once, the second retry deduped", len(e.rec.inbound), len(e.rec.attempts))
	}
}

func TestHTTPNotReadyAndSocketMode(t *testing.T) {
	e := setup(t, ModeHTTP, nil)
	body := dmEvent(t, "Ev300", "1700000000.000300", "early")
	if status, _ := postSigned(t, e, EventsPath, body, slacktest.Sign(body, time.Now())); status != http.StatusServiceUnavailable {
		t.Errorf("before Start an event answered %d; want 503", status)
	}
	sock := setup(t, ModeSocket, nil)
	srv := httptest.NewServer(sock.a.EventsHandler())
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("in Socket Mode the events route answered %d; want 404", resp.StatusCode)
	}
}

// TestCommandAcknowledgedBeforeItRuns: the gateway's OnInbound is held
// until Slack got its answer, in both modes.
func TestCommandAcknowledgedBeforeItRuns(t *testing.T) {
	for _, mode := range []string{ModeSocket, ModeHTTP} {
		t.Run(mode, func(t *testing.T) {
			e := setup(t, mode, nil)
			hold := make(chan struct{})
			e.rec.hold = hold
			e.run(t)
			ack, err := e.srv.Command(e.ctx, slacktest.General, slacktest.Ada, "status  now")
			if err != nil {
				t.Fatalf("the command was not acknowledged while the gateway had not answered: %v", err)
			}
			if ack != "" {
				t.Errorf("ack %q; want an empty acknowledgement (the gateway answers in the channel)", ack)
			}
			e.rec.wait(t, e.ctx, "the command to reach the gateway", func() bool { return len(e.rec.attempts) == 1 })
			close(hold)
			in := e.rec.waitInbound(t, e.ctx, 1)[0]
			if in.Text != "/status now" || !in.Mentioned || in.Location.ChatID != slacktest.General || in.Location.ThreadID != "" || in.User.Name != "Ada" {
				t.Errorf("command inbound %+v", in)
			}
		})
	}
}

func TestHTTPCommandRefusedIsToldToUser(t *testing.T) {
	e := setup(t, ModeHTTP, nil)
	e.rec.failIn = 1
	e.run(t)
	if _, err := e.srv.Command(e.ctx, slacktest.General, slacktest.Ada, "new"); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.WaitFor(e.ctx, "the apology", func() bool {
		eph := e.srv.Ephemerals()
		return len(eph) == 1 && eph[0].User == slacktest.Ada && strings.Contains(eph[0].Text, "try again")
	}); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPInteractionForm(t *testing.T) {
	e := start(t, ModeHTTP, nil)
	for name, body := range map[string][]byte{
		"no payload":  []byte("x=1"),
		"not a form":  []byte("%zz"),
		"empty value": []byte(url.Values{"payload": {""}}.Encode()),
	} {
		if status, _ := postSigned(t, e, InteractionsPath, body, slacktest.Sign(body, time.Now())); status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, status)
		}
	}
}

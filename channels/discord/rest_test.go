package discord

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/switchboard-gw/switchboard/channels"
)

func TestRouteKey(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{"POST", "/api/v9/channels/123/messages", "POST /api/v9/channels/123/messages"},
		{"PATCH", "/api/v9/channels/123/messages/456", "PATCH /api/v9/channels/123/messages/:id"},
		{"PATCH", "/api/v9/channels/124/messages/457", "PATCH /api/v9/channels/124/messages/:id"},
		{"POST", "/api/v9/interactions/55/secret-token/callback", "POST /api/v9/interactions/55/:token/callback"},
		{"PATCH", "/api/v9/webhooks/9/secret/messages/@original", "PATCH /api/v9/webhooks/9/:token/messages/@original"},
		{"GET", "/api/v9/guilds/8/members/7", "GET /api/v9/guilds/8/members/:id"},
	} {
		if got := routeKey(c.method, c.path); got != c.want {
			t.Errorf("routeKey(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

func TestNonce(t *testing.T) {
	a, b := nonce("outbox-42", 0), nonce("outbox-42", 1)
	if a == "" || len(a) > maxNonce || a != nonce("outbox-42", 0) || a == b || a == nonce("outbox-43", 0) {
		t.Errorf("nonces %q %q: want stable, distinct per key and index, at most 25 characters", a, b)
	}
	if nonce("", 0) != "" {
		t.Error("no key must give no nonce")
	}
}

func TestRedactAndClassify(t *testing.T) {
	const token = "OTAw.bot-secret.sig"
	r := redactor{token: token}
	ue := &url.Error{Op: "Post", URL: "https://discord.com/api/v9/interactions/55/aW50ZXJhY3Rpb24tdG9rZW4/callback", Err: errors.New("connection reset by " + token)}
	err := r.classify("interaction response", ue)
	if s := err.Error(); strings.Contains(s, "aW50ZXJhY3Rpb24tdG9rZW4") || strings.Contains(s, token) {
		t.Errorf("secret in %q", s)
	}
	if channels.IsPermanent(err) {
		t.Error("a network error is permanent")
	}
	rest := func(status, code int) error {
		return &discordgo.RESTError{Response: &http.Response{StatusCode: status, Status: fmt.Sprint(status)},
			Message: &discordgo.APIErrorMessage{Code: code, Message: "m"}}
	}
	for _, c := range []struct {
		err       error
		permanent bool
		retry     time.Duration
	}{
		{rest(404, codeUnknownChannel), true, -1},
		{rest(403, 50013), true, -1},
		{rest(400, 50035), true, -1},
		{rest(502, 0), false, -1},
		{rest(500, 0), false, -1},
		{&discordgo.RateLimitError{RateLimit: &discordgo.RateLimit{TooManyRequests: &discordgo.TooManyRequests{RetryAfter: 2500 * time.Millisecond}, URL: "https://discord.com/api/v9/webhooks/1/tok/x"}}, false, 2500 * time.Millisecond},
		{&url.Error{Op: "Post", URL: "u", Err: &channels.RateLimitError{RetryAfter: time.Minute}}, false, time.Minute},
	} {
		got := r.classify("op", c.err)
		if channels.IsPermanent(got) != c.permanent {
			t.Errorf("classify(%v): permanent %v, want %v", c.err, channels.IsPermanent(got), c.permanent)
		}
		d, ok := channels.RetryAfter(got)
		if ok != (c.retry >= 0) || (ok && d != c.retry) {
			t.Errorf("classify(%v): retry after %v %v, want %v", c.err, d, ok, c.retry)
		}
		if strings.Contains(got.Error(), "/tok/") {
			t.Errorf("webhook token in %q", got)
		}
	}
	if apiCode(r.classify("op", rest(400, codeThreadAlreadyExists))) != codeThreadAlreadyExists {
		t.Error("the API code is lost by classify")
	}
}

func TestFatalGatewayErrors(t *testing.T) {
	for code, fatal := range map[int]string{4004: "token", 4014: "Message Content intent", 4013: "Message Content intent", 4000: "", 4009: ""} {
		got := fatalGatewayError(fmt.Errorf("read: %w", &websocket.CloseError{Code: code}))
		if (got != nil) != (fatal != "") || got != nil && !strings.Contains(got.Error(), fatal) {
			t.Errorf("close %d: %v, want fatal mentioning %q", code, got, fatal)
		}
	}
}

func TestTransportRewritesToAPIURL(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Host+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("X-RateLimit-Remaining", "3")
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	tr, err := newTransport(nil, srv.URL+"/proxy/", time.Second, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	resp, err := c.Get("https://discord.com/api/v9/channels/1/messages?after=5")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-RateLimit-Remaining") != "" {
		t.Error("rate-limit headers reach discordgo, whose limiter would sleep")
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if len(got) != 1 || got[0] != host+" /proxy/api/v9/channels/1/messages?after=5" {
		t.Errorf("requests %q", got)
	}
	// Other hosts (attachment URLs) are left alone.
	if _, err := c.Get(srv.URL + "/files/x"); err != nil || got[1] != host+" /files/x?" {
		t.Errorf("other host rewritten: %q %v", got, err)
	}
	if _, err := newTransport(nil, "ftp://x", time.Second, time.Now); err == nil {
		t.Error("a non-http api_url was accepted")
	}
}

func TestBotIDFromToken(t *testing.T) {
	if got := botIDFromToken("OTAwMDAwMDAwMDAwMDAwMDAx.GfakeT.sig"); got != "900000000000000001" {
		t.Errorf("got %q", got)
	}
	if got := botIDFromToken("not-a-token"); got != "" {
		t.Errorf("got %q", got)
	}
}

func TestInviteURL(t *testing.T) {
	u, err := url.Parse(InviteURL("123456789012345678"))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	// View Channels, Send Messages, Attach Files, Read Message History,
	// Create Public Threads, Send Messages in Threads.
	const want = 1<<10 | 1<<11 | 1<<15 | 1<<16 | 1<<35 | 1<<38
	if u.Host != "discord.com" || u.Path != "/oauth2/authorize" || q.Get("client_id") != "123456789012345678" ||
		q.Get("scope") != "bot applications.commands" || q.Get("permissions") != fmt.Sprint(want) {
		t.Errorf("invite URL %s", u)
	}
}

package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboard-gw/switchboard/channels"
)

func checkSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "", // checked below
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	}
	for k, v := range want {
		got := h.Get(k)
		if got == "" || v != "" && got != v {
			t.Errorf("%s: header %s = %q, want %q", what, k, got, v)
		}
	}
	if csp := h.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("%s: CSP %q must allow only this origin's scripts", what, csp)
	}
}

func TestLogin(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	form := func(token string) io.Reader { return strings.NewReader(url.Values{"token": {token}}.Encode()) }
	tests := []struct {
		name       string
		method     string
		path       string
		body       io.Reader
		origin     string
		wantStatus int
		wantCookie bool
		wantBody   string
	}{
		{"page without session shows login", "GET", "/", nil, "", 200, false, `name="token"`},
		{"good token", "POST", "/login", form(testToken), "", 303, true, ""},
		{"good token from this origin", "POST", "/login", form(testToken), "SELF", 303, true, ""},
		{"bad token", "POST", "/login", form("nope"), "", 401, false, "Wrong token"},
		{"token prefix", "POST", "/login", form(testToken[:5]), "", 401, false, "Wrong token"},
		{"empty token", "POST", "/login", form(""), "", 401, false, "Wrong token"},
		{"login from another origin", "POST", "/login", form(testToken), "http://evil.example", 403, false, ""},
		{"link with good token", "GET", "/?token=" + testToken, nil, "", 303, true, ""},
		{"link with bad token", "GET", "/?token=x", nil, "", 401, false, "Wrong token"},
		{"unknown path", "GET", "/nope", nil, "", 404, false, ""},
		{"static script without session", "GET", "/static/app.js", nil, "", 200, false, "textContent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := s.client(t)
			req, err := http.NewRequest(tc.method, s.srv.URL+tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.method == "POST" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if tc.origin == "SELF" {
				req.Header.Set("Origin", s.srv.URL)
			} else if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.wantStatus, body)
			}
			checkSecurityHeaders(t, tc.name, resp.Header)
			if !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("body lacks %q:\n%s", tc.wantBody, body)
			}
			if strings.Contains(string(body), testToken) {
				t.Errorf("response body contains the token")
			}
			cookies := resp.Cookies()
			if !tc.wantCookie {
				if len(cookies) != 0 {
					t.Errorf("set cookies %v, want none", cookies)
				}
				return
			}
			if loc := resp.Header.Get("Location"); loc != "/" {
				t.Errorf("redirect to %q, want / (without the token)", loc)
			}
			if len(cookies) != 1 {
				t.Fatalf("cookies %v, want one", cookies)
			}
			ck := cookies[0]
			if ck.Name != cookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || len(ck.Value) < 32 {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, a long random value", ck)
			}
			if strings.Contains(ck.Value, testToken) {
				t.Error("the cookie carries the token")
			}
			// The session opens the page.
			page, err := c.Get(s.srv.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			pb, _ := io.ReadAll(page.Body)
			page.Body.Close()
			if page.StatusCode != 200 || !strings.Contains(string(pb), `src="/static/app.js"`) {
				t.Errorf("page with session: status %d\n%s", page.StatusCode, pb)
			}
		})
	}
}

func TestAPIGuards(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	anon := s.client(t)
	user := s.login(t)
	jsonBody := `{"id":"a1","text":"hi"}`
	tests := []struct {
		name   string
		c      *http.Client
		method string
		path   string
		header map[string]string
		body   string
		want   int
	}{
		{"list without session", anon, "GET", "/api/chats", nil, "", 401},
		{"events without session", anon, "GET", "/api/chats/abc/events", nil, "", 401},
		{"file without session", anon, "GET", "/api/files/abc", nil, "", 401},
		{"post without session", anon, "POST", "/api/chats/abc/messages",
			map[string]string{"X-Switchboard": "1", "Content-Type": "application/json"}, jsonBody, 401},
		{"forged cookie", anon, "GET", "/api/chats", map[string]string{"Cookie": cookieName + "=forged"}, "", 401},
		{"post without CSRF header", user, "POST", "/api/chats/abc/messages",
			map[string]string{"Content-Type": "application/json"}, jsonBody, 403},
		{"post with wrong CSRF value", user, "POST", "/api/chats",
			map[string]string{"X-Switchboard": "yes"}, "", 403},
		{"post from another origin", user, "POST", "/api/chats/abc/messages",
			map[string]string{"X-Switchboard": "1", "Content-Type": "application/json", "Origin": "http://evil.example"}, jsonBody, 403},
		{"post form body", user, "POST", "/api/chats/abc/messages",
			map[string]string{"X-Switchboard": "1", "Content-Type": "text/plain"}, jsonBody, 415},
		{"bad chat id", user, "POST", "/api/chats/a%20b/messages",
			map[string]string{"X-Switchboard": "1", "Content-Type": "application/json"}, jsonBody, 400},
		{"bad message id", user, "POST", "/api/chats/abc/messages",
			map[string]string{"X-Switchboard": "1", "Content-Type": "application/json"}, `{"id":"a b","text":"hi"}`, 400},
		{"empty message", user, "POST", "/api/chats/abc/messages",
			map[string]string{"X-Switchboard": "1", "Content-Type": "application/json"}, `{"id":"a1","text":" "}`, 400},
		{"unknown route", user, "GET", "/api/nope", nil, "", 404},
		{"list with session", user, "GET", "/api/chats", nil, "", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, s.srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := tc.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.want, body)
			}
			checkSecurityHeaders(t, tc.name, resp.Header)
		})
	}
	if n := len(s.a.handlerOf(t).(*fakeHandler).gotInbound()); n != 0 {
		t.Errorf("refused requests reached the gateway %d times", n)
	}
}

// handlerOf returns the handler Start stored.
func (a *Adapter) handlerOf(t *testing.T) channels.Handler {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handler
}

func TestMessageReachesGateway(t *testing.T) {
	h := &fakeHandler{}
	s := startServer(t, New(Options{Token: testToken, User: "alice"}), h)
	c := s.login(t)
	before := time.Now()
	status, body := s.do(t, c, "POST", "/api/chats/chat1/messages", map[string]string{"id": "m-1", "text": "/status please"})
	if status != http.StatusAccepted {
		t.Fatalf("status %d %v", status, body)
	}
	// A retried POST (same client id) carries the same event id, so the
	// gateway dedupes it.
	if status, body := s.do(t, c, "POST", "/api/chats/chat1/messages", map[string]string{"id": "m-1", "text": "/status please"}); status != http.StatusAccepted {
		t.Fatalf("retry: status %d %v", status, body)
	}
	want := channels.Inbound{
		EventID:  "web:m-1",
		Location: webLoc("chat1"),
		User:     channels.User{ID: "alice", Name: "alice"},
		Text:     "/status please", DirectMessage: true, Mentioned: true,
	}
	got := h.gotInbound()
	if len(got) != 2 {
		t.Fatalf("OnInbound called %d times, want 2", len(got))
	}
	for _, in := range got {
		if in.At.Before(before) || time.Since(in.At) > time.Minute {
			t.Errorf("At = %v, want about now", in.At)
		}
		if d := cmp.Diff(want, in, cmpopts.IgnoreFields(channels.Inbound{}, "At")); d != "" {
			t.Errorf("inbound (-want +got):\n%s", d)
		}
	}
	// The page shows the message once, accepted.
	st := s.openStream(t, c, "chat1", "")
	v := st.message()
	if v.ID != "u-m-1" || v.Role != channels.RoleUser || v.Pending || v.User != "alice" {
		t.Errorf("user message %+v", v)
	}
	if n := len(s.a.chats["chat1"].msgs); n != 1 {
		t.Errorf("chat keeps %d messages, want 1", n)
	}
}

func TestMessageNotAccepted(t *testing.T) {
	h := &fakeHandler{onIn: func(context.Context, channels.Inbound) error { return errors.New("store is down") }}
	s := startServer(t, newTestAdapter(), h)
	c := s.login(t)
	st := s.openStream(t, c, "chat1", "")
	st.nextNamed("reset")
	status, body := s.do(t, c, "POST", "/api/chats/chat1/messages", map[string]string{"id": "x1", "text": "hello"})
	if status != http.StatusServiceUnavailable || body["error"] != "store is down" {
		t.Fatalf("status %d %v, want 503 with the gateway's error", status, body)
	}
	// The page saw the message (pending, if the stream was fast enough to
	// see it before the failure; changes coalesce), then its removal.
	for {
		ev := st.next()
		if ev.Name == "delete" {
			if !strings.Contains(string(ev.Data), `"u-x1"`) {
				t.Errorf("delete event %s", ev.Data)
			}
			break
		}
		if ev.Name == "message" && (!strings.Contains(string(ev.Data), `"u-x1"`) || !strings.Contains(string(ev.Data), `"pending":true`)) {
			t.Errorf("message event %s, want the pending user message", ev.Data)
		}
	}
}

func TestNotStarted(t *testing.T) {
	s := startServer(t, newTestAdapter(), nil)
	c := s.login(t)
	status, body := s.do(t, c, "POST", "/api/chats/chat1/messages", map[string]string{"id": "x1", "text": "hello"})
	if status != http.StatusServiceUnavailable {
		t.Fatalf("status %d %v, want 503 before Start", status, body)
	}
}

func TestStartTwiceAndStop(t *testing.T) {
	a := newTestAdapter()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Start(ctx, &fakeHandler{}) }()
	<-a.ready
	if err := a.Start(context.Background(), &fakeHandler{}); err == nil {
		t.Error("second Start succeeded")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Start = %v, want nil when ctx ends", err)
	}
	if a.handlerOf(t) != nil {
		t.Error("handler kept after Start returned")
	}
}

func TestActionReachesGateway(t *testing.T) {
	h := &fakeHandler{}
	s := startServer(t, newTestAdapter(), h)
	h.onAction = func(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
		return channels.ActionReply{Text: "approved", Alert: true}, nil
	}
	c := s.login(t)
	ref, err := s.a.Send(t.Context(), webLoc("chat1"), channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "Run `git push`?"},
		channels.Buttons{Rows: [][]channels.Button{{
			{Label: "Approve", Style: channels.StylePrimary, Token: "tok-a"},
			{Label: "Deny", Style: channels.StyleDanger, Token: "tok-d"},
		}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := s.openStream(t, c, "chat1", "")
	v := st.message()
	wantRows := [][]viewButton{{{Label: "Approve", Style: "primary", Token: "tok-a"}, {Label: "Deny", Style: "danger", Token: "tok-d"}}}
	if len(v.Parts) != 2 || cmp.Diff(wantRows, v.Parts[1].Rows) != "" || v.Pressed {
		t.Fatalf("message %+v", v)
	}

	status, body := s.do(t, c, "POST", "/api/actions", map[string]string{"token": "tok-a", "chat": "chat1", "message": ref.ID})
	if status != 200 || cmp.Diff(map[string]any{"text": "approved", "alert": true}, body) != "" {
		t.Fatalf("action: %d %v", status, body)
	}
	got := h.gotActions()
	if len(got) != 1 {
		t.Fatalf("OnAction called %d times", len(got))
	}
	want := channels.Action{Location: webLoc("chat1"), User: channels.User{ID: "owner", Name: "owner"}, Token: "tok-a", Message: ref}
	if d := cmp.Diff(want, got[0], cmpopts.IgnoreFields(channels.Action{}, "EventID")); d != "" {
		t.Errorf("action (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(got[0].EventID, "web:") || len(got[0].EventID) < 20 {
		t.Errorf("event id %q is not random", got[0].EventID)
	}
	// The press disables the buttons on every page until the message is
	// edited.
	if v := st.message(); !v.Pressed {
		t.Errorf("after press: %+v, want pressed", v)
	}
	if err := s.a.Edit(t.Context(), ref, channels.TextMessage("Approved by owner")); err != nil {
		t.Fatal(err)
	}
	if v := st.message(); v.Pressed || len(v.Parts) != 1 || v.Parts[0].HTML != "<p>Approved by owner</p>" {
		t.Errorf("after edit: %+v", v)
	}

	// A failed press enables the buttons again.
	h.onAction = func(context.Context, channels.Action) (channels.ActionReply, error) {
		return channels.ActionReply{}, errors.New("lookup failed")
	}
	if status, _ := s.do(t, c, "POST", "/api/actions", map[string]string{"token": "tok-a", "chat": "chat1", "message": ref.ID}); status != http.StatusServiceUnavailable {
		t.Errorf("failed action: status %d", status)
	}
	if status, _ := s.do(t, c, "POST", "/api/actions", map[string]string{"token": "", "chat": "chat1", "message": ref.ID}); status != http.StatusBadRequest {
		t.Errorf("empty token: status %d", status)
	}
}

func TestHistory(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h := &fakeHistory{
		convs: []channels.ConversationInfo{
			{ID: "conv-2", Agent: "main", Title: "Fix the build", UpdatedAt: at.Add(time.Hour)},
			{ID: "conv-1", Agent: "main", Title: "Hello", UpdatedAt: at},
			{ID: "bad id/x", Title: "unusable id"},
		},
		hist: map[string][]channels.HistoryItem{"conv-1": {
			{ID: "1", Role: channels.RoleUser, User: channels.User{ID: "owner", Name: "owner"}, Message: channels.TextMessage("hi <b>"), At: at},
			{ID: "2", Role: channels.RoleAssistant, Message: channels.Message{Parts: []channels.Part{
				channels.Text{Markdown: "Hello!"},
				channels.Attachment{Name: "x.txt", Data: []byte("x")},
			}}, At: at.Add(time.Second)},
		}},
	}
	s := startServer(t, New(Options{Token: testToken, User: "alice"}), h)
	c := s.login(t)
	status, body := s.do(t, c, "GET", "/api/chats", nil)
	if status != 200 {
		t.Fatalf("chats: %d %v", status, body)
	}
	want := []any{
		map[string]any{"id": "conv-2", "agent": "main", "title": "Fix the build", "updated_at": "2025-01-02T04:04:05Z"},
		map[string]any{"id": "conv-1", "agent": "main", "title": "Hello", "updated_at": "2025-01-02T03:04:05Z"},
	}
	if d := cmp.Diff(want, body["chats"]); d != "" {
		t.Errorf("chats (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"web:alice"}, h.who); d != "" {
		t.Errorf("Conversations asked about (-want +got):\n%s", d)
	}

	status, body = s.do(t, c, "GET", "/api/chats/conv-1/history", nil)
	if status != 200 {
		t.Fatalf("history: %d %v", status, body)
	}
	data, _ := json.Marshal(body["items"])
	var items []viewMessage
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatal(err)
	}
	wantItems := []viewMessage{
		{ID: "h-1", Role: channels.RoleUser, User: "owner", At: at, Parts: []viewPart{{Type: "text", HTML: "<p>hi &lt;b&gt;</p>"}}},
		{ID: "h-2", Role: channels.RoleAssistant, At: at.Add(time.Second), Parts: []viewPart{
			{Type: "text", HTML: "<p>Hello!</p>"}, {Type: "notice", Text: "attachment: x.txt"}}},
	}
	if d := cmp.Diff(wantItems, items); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}

	// A chat without a conversation yet answers with an empty history and
	// the handler's error for the page to show if it wants.
	status, body = s.do(t, c, "GET", "/api/chats/newchat/history", nil)
	if status != 200 || body["error"] == nil || len(body["items"].([]any)) != 0 {
		t.Errorf("history of a new chat: %d %v", status, body)
	}
}

func TestChatsWithoutHistory(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	c := s.login(t)
	status, body := s.do(t, c, "POST", "/api/chats", nil)
	if status != http.StatusCreated || !validID(body["id"].(string)) {
		t.Fatalf("new chat: %d %v", status, body)
	}
	id := body["id"].(string)
	if status, _ := s.do(t, c, "POST", "/api/chats/"+id+"/messages", map[string]string{"id": "q1", "text": "What is   the\nweather"}); status != 202 {
		t.Fatalf("message: %d", status)
	}
	status, body = s.do(t, c, "GET", "/api/chats", nil)
	list := body["chats"].([]any)
	if status != 200 || len(list) != 1 {
		t.Fatalf("chats: %d %v", status, body)
	}
	if got := list[0].(map[string]any); got["id"] != id || got["title"] != "What is the weather" {
		t.Errorf("chat %v", got)
	}
	status, body = s.do(t, c, "GET", "/api/state", nil)
	if status != 200 || body["identity"] != "web:owner" || body["history"] != false {
		t.Errorf("state: %d %v", status, body)
	}
}

func TestAttachmentDownload(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	c := s.login(t)
	dir := t.TempDir()
	onDisk := filepath.Join(dir, "report.md")
	if err := os.WriteFile(onDisk, []byte("# report"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := s.a.Send(t.Context(), webLoc("chat1"), channels.Message{Parts: []channels.Part{
		channels.Attachment{Name: "plot.png", MIME: "image/png", Data: []byte("\x89PNG fake"), Caption: "the plot"},
		channels.Attachment{Name: `re"port.md`, MIME: "text/markdown", Path: onDisk},
		channels.Attachment{Name: "x.svg", MIME: "image/svg+xml", Data: []byte("<svg onload=alert(1)>")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := s.openStream(t, c, "chat1", "")
	v := st.message()
	if len(v.Parts) != 3 {
		t.Fatalf("parts %+v", v.Parts)
	}
	png, md, svg := v.Parts[0].File, v.Parts[1].File, v.Parts[2].File
	if !png.Image || png.Caption != "the plot" || png.Size != 9 || md.Image || svg.Image {
		t.Errorf("attachments %+v %+v %+v", png, md, svg)
	}
	get := func(u string) (int, http.Header, string) {
		resp, err := c.Get(s.srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, tc := range []struct {
		url, body, ctype, disp string
	}{
		{png.URL, "\x89PNG fake", "image/png", `attachment; filename=plot.png`},
		{md.URL, "# report", "text/markdown", `attachment; filename="re\"port.md"`},
		{svg.URL, "<svg onload=alert(1)>", "image/svg+xml", `attachment; filename=x.svg`},
	} {
		status, hdr, body := get(tc.url)
		if status != 200 || body != tc.body || hdr.Get("Content-Type") != tc.ctype || hdr.Get("Content-Disposition") != tc.disp {
			t.Errorf("GET %s: %d %q type %q disposition %q", tc.url, status, body, hdr.Get("Content-Type"), hdr.Get("Content-Disposition"))
		}
		if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
			t.Errorf("GET %s: CSP %q, want a sandbox", tc.url, csp)
		}
	}
	// An edit drops the old files; unknown ids are 404.
	if err := s.a.Edit(t.Context(), ref, channels.TextMessage("gone")); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := get(png.URL); status != 404 {
		t.Errorf("file of an edited-away attachment: %d, want 404", status)
	}
	if status, _, _ := get("/api/files/nope"); status != 404 {
		t.Errorf("unknown file: %d", status)
	}
}

func TestUpload(t *testing.T) {
	h := &fakeHandler{}
	s := startServer(t, New(Options{Token: testToken, MaxUpload: 1000}), h)
	c := s.login(t)
	post := func(files map[string][]byte) (int, map[string]any) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("id", "up1")
		_ = mw.WriteField("text", "look")
		for name, data := range files {
			hdr := textproto.MIMEHeader{}
			hdr.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
			hdr.Set("Content-Type", "application/octet-stream")
			w, _ := mw.CreatePart(hdr)
			_, _ = w.Write(data)
		}
		mw.Close()
		req, _ := http.NewRequest("POST", s.srv.URL+"/api/chats/chat1/messages", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("X-Switchboard", "1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	gif := []byte("GIF89a tiny image")
	if status, body := post(map[string][]byte{`..\..\evil/pic.gif`: gif}); status != 202 {
		t.Fatalf("upload: %d %v", status, body)
	}
	got := h.gotInbound()
	if len(got) != 1 {
		t.Fatalf("inbound %d", len(got))
	}
	want := []channels.Attachment{{Name: "pic.gif", MIME: "image/gif", Data: gif}}
	if d := cmp.Diff(want, got[0].Attachments); d != "" || got[0].Text != "look" {
		t.Errorf("attachments (-want +got):\n%s\ntext %q", d, got[0].Text)
	}
	if status, body := post(map[string][]byte{"big.png": bytes.Repeat([]byte("x"), 1001)}); status != http.StatusRequestEntityTooLarge {
		t.Errorf("too large: %d %v", status, body)
	}
	if n := len(h.gotInbound()); n != 1 {
		t.Errorf("a refused upload reached the gateway")
	}
}

// TestModelTextIsEscaped: markup in a model's reply reaches the page as
// text.
func TestModelTextIsEscaped(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	c := s.login(t)
	st := s.openStream(t, c, "chat1", "")
	evil := "Sure! <script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3))\n\n<iframe src=//evil>"
	_, err := s.a.Send(t.Context(), webLoc("chat1"), channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: evil},
		channels.ToolActivity{ID: "t1", Kind: "execute", Status: "done", Title: "Bash `<img src=x onerror=alert(4)>` <b>x</b>"},
		channels.Buttons{Rows: [][]channels.Button{{{Label: "<b>Approve</b>", Token: "t"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ev := st.nextNamed("message")
	var v viewMessage
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{v.Parts[0].HTML, v.Parts[1].TitleHTML} {
		for _, bad := range []string{"<script", "<img", "<iframe", `href="javascript`, "<b>"} {
			if strings.Contains(field, bad) {
				t.Errorf("rendered HTML contains %q: %s", bad, field)
			}
		}
	}
	if !strings.Contains(v.Parts[0].HTML, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(v.Parts[0].HTML, "&lt;img src=x onerror=alert(2)&gt;") {
		t.Errorf("text not shown escaped: %s", v.Parts[0].HTML)
	}
	if v.Parts[1].TitleHTML != "Bash <code>&lt;img src=x onerror=alert(4)&gt;</code> &lt;b&gt;x&lt;/b&gt;" {
		t.Errorf("tool title %q", v.Parts[1].TitleHTML)
	}
	// Button labels are plain text for textContent.
	if v.Parts[2].Rows[0][0].Label != "<b>Approve</b>" {
		t.Errorf("label %q", v.Parts[2].Rows[0][0].Label)
	}
}

func TestCapabilities(t *testing.T) {
	a := newTestAdapter()
	want := channels.Capabilities{MaxMessageLen: 100000, Edit: true, Buttons: true, Ephemeral: true,
		Upload: true, Typing: true, TypingEvery: 6 * time.Second, RichParts: true, Dialect: channels.HTML}
	if d := cmp.Diff(want, a.Capabilities()); d != "" || a.Name() != "web" {
		t.Errorf("capabilities (-want +got):\n%s", d)
	}
}

func TestSessionsBounded(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	first := s.login(t)
	for range maxSessions {
		s.login(t)
	}
	if status, _ := s.do(t, first, "GET", "/api/chats", nil); status != http.StatusUnauthorized {
		t.Errorf("oldest session still valid after %d newer logins: %d", maxSessions, status)
	}
	s.a.mu.Lock()
	n := len(s.a.sessions)
	s.a.mu.Unlock()
	if n != maxSessions {
		t.Errorf("%d sessions kept, want %d", n, maxSessions)
	}
	// Logging out ends the session on the server, not only in the browser.
	c := s.login(t)
	u, _ := url.Parse(s.srv.URL)
	old := c.Jar.Cookies(u)
	if status, _ := s.do(t, c, "POST", "/api/logout", nil); status != http.StatusNoContent {
		t.Errorf("logout: %d", status)
	}
	c.Jar.SetCookies(u, old)
	if status, _ := s.do(t, c, "GET", "/api/chats", nil); status != http.StatusUnauthorized {
		t.Errorf("old cookie after logout: %d, want 401", status)
	}
}

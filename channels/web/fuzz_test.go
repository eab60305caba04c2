package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAPIBodies: whatever a browser (or anyone with the session) posts to
// the message and action endpoints, the page answers without a server
// error and never crashes; accepted messages reach the gateway as valid UTF-8.
func FuzzAPIBodies(f *testing.F) {
	for _, seed := range []struct{ chat, body string }{
		{"chat1", `{"id":"m1","text":"hello"}`},
		{"chat1", `{"id":"m2","text":"/status"}`},
		{"chat1", `{"token":"tok","chat":"chat1","message":"m1"}`},
		{"../etc", `{"id":"x","text":"y"}`},
		{"c", `{"id":"","text":""}`},
		{"c", `{"id":"` + strings.Repeat("a", 300) + `","text":"\u0000"}`},
		{"c", `not json`},
		{"c", `{"text": 5}`},
	} {
		f.Add(seed.chat, seed.body)
	}
	a := newTestAdapter()
	h := &fakeHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	go func() { _ = a.Start(ctx, h) }()
	<-a.ready
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/?token="+testToken, nil))
	cookies := rec.Result().Cookies()
	if len(cookies) == 0 {
		f.Fatal("login set no cookie")
	}
	f.Fuzz(func(t *testing.T, chat, body string) {
		for _, path := range []string{"/api/chats/" + chat + "/messages", "/api/actions"} {
			req := httptest.NewRequest("POST", "/", strings.NewReader(body))
			req.URL.Path = path
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Switchboard", "1")
			for _, c := range cookies {
				req.AddCookie(c)
			}
			rec := httptest.NewRecorder()
			a.Handler().ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("POST %q %q: status %d %s", path, body, rec.Code, rec.Body.String())
			}
			if rec.Code == http.StatusAccepted && path != "/api/actions" && len(h.gotInbound()) == 0 {
				t.Fatalf("POST %q accepted but nothing reached the gateway", path)
			}
		}
		for _, in := range h.gotInbound() {
			if !utf8.ValidString(in.Text) || !utf8.ValidString(in.EventID) {
				t.Fatalf("invalid UTF-8 reached the gateway: %+v", in)
			}
		}
	})
}

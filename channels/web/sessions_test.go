package web

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// memSessions is an in-memory SessionStore (the real one is the store's).
type memSessions struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (s *memSessions) CreateWebSession(_ context.Context, id string, exp time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = exp
	return nil
}

func (s *memSessions) WebSession(_ context.Context, id string) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.m[id]
	return exp, ok, nil
}

func (s *memSessions) DeleteWebSession(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
	return nil
}

func status(t *testing.T, c *http.Client, u string) int {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A login survives a restart (a new adapter on the same store); the store
// holds only the cookie's hash; logout revokes the session everywhere.
func TestSessionsSurviveRestart(t *testing.T) {
	st := &memSessions{m: map[string]time.Time{}}
	s1 := startServer(t, New(Options{Token: testToken, Sessions: st}), nil)
	c := s1.login(t)
	u, _ := url.Parse(s1.srv.URL)
	var cookie string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == cookieName {
			cookie = ck.Value
		}
	}
	if cookie == "" || len(st.m) != 1 {
		t.Fatalf("cookie %q, stored %d sessions", cookie, len(st.m))
	}
	if _, raw := st.m[cookie]; raw {
		t.Fatal("the store holds the cookie value itself")
	}
	// Restart: a new adapter and server; the old cookie still works.
	s2 := startServer(t, New(Options{Token: testToken, Sessions: st}), nil)
	c2 := s2.client(t)
	u2, _ := url.Parse(s2.srv.URL)
	c2.Jar.SetCookies(u2, []*http.Cookie{{Name: cookieName, Value: cookie, Path: "/"}})
	if code := status(t, c2, s2.srv.URL+"/api/state"); code != http.StatusOK {
		t.Fatalf("the old session after a restart: %d, want 200", code)
	}
	req, _ := http.NewRequest("POST", s2.srv.URL+"/api/logout", nil)
	req.Header.Set(csrfHeader, "1")
	if resp, err := c2.Do(req); err == nil {
		resp.Body.Close()
	}
	if len(st.m) != 0 {
		t.Fatalf("logout left %d stored sessions", len(st.m))
	}
	// Another process (or a restart) no longer accepts it.
	s3 := startServer(t, New(Options{Token: testToken, Sessions: st}), nil)
	c3 := s3.client(t)
	u3, _ := url.Parse(s3.srv.URL)
	c3.Jar.SetCookies(u3, []*http.Cookie{{Name: cookieName, Value: cookie, Path: "/"}})
	if code := status(t, c3, s3.srv.URL+"/api/state"); code != http.StatusUnauthorized {
		t.Fatalf("a revoked session: %d, want 401", code)
	}
}

// A printed login link (no configured token) logs in once.
func TestOneTimeToken(t *testing.T) {
	s := startServer(t, New(Options{Token: testToken, OneTimeToken: true}), nil)
	s.login(t)
	c := s.client(t)
	if code := status(t, c, s.srv.URL+"/?token="+testToken); code != http.StatusUnauthorized {
		t.Fatalf("second use of the login link: %d, want 401", code)
	}
	// A configured token keeps working.
	s2 := startServer(t, New(Options{Token: testToken}), nil)
	s2.login(t)
	s2.login(t)
}

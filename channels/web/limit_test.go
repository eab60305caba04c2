package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// attempt logs in through the form or the link from remote and returns
// the status and the Retry-After header.
func attempt(a *Adapter, remote, token string, link bool) (int, string) {
	var req *http.Request
	if link {
		req = httptest.NewRequest("GET", "/?token="+url.QueryEscape(token), nil)
	} else {
		req = httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Retry-After")
}

func TestLoginRateLimit(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	a := New(Options{Token: testToken, Now: clock.now})
	const attacker, owner = "203.0.113.7:5555", "198.51.100.2:4444"

	for i := range loginFailures {
		if code, _ := attempt(a, attacker, fmt.Sprintf("guess-%d", i), i%2 == 0); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: status %d, want 401", i, code)
		}
	}
	// Form and link share the count; the next attempt is refused, even
	// with the right token.
	for _, tc := range []struct {
		token string
		link  bool
	}{{"guess-x", false}, {"guess-y", true}, {testToken, false}, {testToken, true}} {
		code, retry := attempt(a, attacker, tc.token, tc.link)
		if code != http.StatusTooManyRequests || retry != "60" {
			t.Errorf("blocked attempt (link %v): status %d Retry-After %q, want 429 and 60", tc.link, code, retry)
		}
	}
	// Another address is not affected.
	if code, _ := attempt(a, owner, testToken, false); code != http.StatusSeeOther {
		t.Errorf("another address: status %d, want 303", code)
	}
	// Refused attempts do not extend the block; once the failures leave
	// the window the right token works.
	clock.advance(30 * time.Second)
	if _, retry := attempt(a, attacker, testToken, true); retry != "30" {
		t.Errorf("Retry-After %q half way, want 30", retry)
	}
	clock.advance(30*time.Second + time.Millisecond)
	if code, _ := attempt(a, attacker, testToken, true); code != http.StatusSeeOther {
		t.Fatalf("after the window: status %d, want 303", code)
	}
}

func TestLoginSuccessClearsFailures(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	a := New(Options{Token: testToken, Now: clock.now})
	const who = "192.0.2.1:1000"
	for range 3 {
		for range loginFailures - 1 {
			if code, _ := attempt(a, who, "typo", false); code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", code)
			}
		}
		if code, _ := attempt(a, who, testToken, false); code != http.StatusSeeOther {
			t.Fatalf("right token after %d typos: status %d, want 303", loginFailures-1, code)
		}
	}
}

func TestLoginSlidingWindow(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	a := New(Options{Token: testToken, Now: clock.now})
	const who = "192.0.2.9:1"
	for range loginFailures {
		attempt(a, who, "no", false)
		clock.advance(time.Second)
	}
	if code, retry := attempt(a, who, "no", false); code != http.StatusTooManyRequests || retry != "50" {
		t.Fatalf("status %d Retry-After %q, want 429 and 50", code, retry)
	}
	clock.advance(50 * time.Second)
	// The first failure has left the window: one more attempt, then blocked
	// until the second leaves.
	if code, _ := attempt(a, who, "no", false); code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", code)
	}
	if code, retry := attempt(a, who, "no", false); code != http.StatusTooManyRequests || retry != "1" {
		t.Fatalf("status %d Retry-After %q, want 429 and 1", code, retry)
	}
}

func TestClientKey(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.1:1234":             "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:80":  "2001:db8:1:2::/64",
		"[::ffff:192.0.2.1]:1":       "192.0.2.1",
		"unix-socket":                "unix-socket",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if got := clientKey(r); got != want {
			t.Errorf("clientKey(%s) = %q, want %q", remote, got, want)
		}
	}
}

func TestLoginLimiterBounded(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	l := newLoginLimiter(clock.now)
	for i := range maxLoginClients + 500 {
		l.fail(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
		if i%1000 == 0 {
			clock.advance(time.Millisecond)
		}
	}
	if n := len(l.fails); n > maxLoginClients {
		t.Errorf("%d clients remembered, want at most %d", n, maxLoginClients)
	}
	// The newest client is still remembered.
	last := maxLoginClients + 499
	for range loginFailures - 1 {
		l.fail(fmt.Sprintf("10.%d.%d.%d", last>>16&255, last>>8&255, last&255))
	}
	if l.blocked(fmt.Sprintf("10.%d.%d.%d", last>>16&255, last>>8&255, last&255)) <= 0 {
		t.Error("the newest client's failures were forgotten")
	}
}

package web

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Login attempts are limited per client address: after loginFailures wrong
// tokens within loginWindow, further attempts from that address get 429
// (with Retry-After) until the oldest failure leaves the window — also
// attempts with the right token, or the answer would tell a guesser when
// it guessed right. A successful login clears the address's failures.
const (
	loginFailures = 10
	loginWindow   = time.Minute
	// maxLoginClients bounds the addresses remembered; when full, the
	// address whose last failure is oldest is forgotten first.
	maxLoginClients = 4096
)

// loginLimiter counts failed logins per client. Safe for concurrent use.
type loginLimiter struct {
	now func() time.Time

	mu    sync.Mutex
	fails map[string][]time.Time // client → failure times within the window, oldest first
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	if now == nil {
		now = time.Now
	}
	return &loginLimiter{now: now, fails: map[string][]time.Time{}}
}

// clientKey names the client of r: its IP address, or for IPv6 its /64
// (one host usually holds a whole /64). Forwarded-for headers are not
// trusted: anyone can send them.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// recent returns the client's failures still in the window, dropping the
// others. Called with mu held.
func (l *loginLimiter) recent(key string, now time.Time) []time.Time {
	ts := l.fails[key]
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-loginWindow)) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.fails, key)
		return nil
	}
	l.fails[key] = ts
	return ts
}

// blocked returns how long the client must wait before its next attempt,
// or 0 when it may try now.
func (l *loginLimiter) blocked(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	ts := l.recent(key, now)
	if len(ts) < loginFailures {
		return 0
	}
	return ts[len(ts)-loginFailures].Add(loginWindow).Sub(now)
}

// fail records a failed attempt.
func (l *loginLimiter) fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	ts := l.recent(key, now)
	if ts == nil && len(l.fails) >= maxLoginClients {
		l.evict(now)
	}
	ts = append(ts, now)
	if len(ts) > loginFailures {
		ts = ts[len(ts)-loginFailures:]
	}
	l.fails[key] = ts
}

// evict forgets expired clients, then, if still full, the client whose
// last failure is oldest. Called with mu held.
func (l *loginLimiter) evict(now time.Time) {
	oldest, oldestAt := "", now
	for k := range l.fails {
		ts := l.recent(k, now)
		if len(ts) > 0 && !ts[len(ts)-1].After(oldestAt) {
			oldest, oldestAt = k, ts[len(ts)-1]
		}
	}
	if len(l.fails) >= maxLoginClients {
		delete(l.fails, oldest)
	}
}

// succeed clears the client's failures.
func (l *loginLimiter) succeed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, key)
}

// refuseIfBlocked answers 429 with Retry-After when the client has used up
// its attempts, and reports whether it did.
func (a *Adapter) refuseIfBlocked(w http.ResponseWriter, r *http.Request) bool {
	wait := a.logins.blocked(clientKey(r))
	if wait <= 0 {
		return false
	}
	secs := int((wait + time.Second - 1) / time.Second)
	a.log.Info("web login rate-limited", "remote", r.RemoteAddr, "retry_after_s", secs)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	a.showLogin(w, http.StatusTooManyRequests, "Too many wrong tokens from this address. Wait a minute and try again.")
	return true
}

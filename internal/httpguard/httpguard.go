// Package httpguard hardens the one HTTP listener that serves the web page,
// webhooks, health and metrics:
//
//   - it answers only requests whose Host header names this listener — the
//     loopback names, the configured listen host, the public URL's host and
//     the allowed hosts — so a page on another site cannot reach the
//     listener through DNS rebinding; any other Host gets 421 Misdirected
//     Request and no handler runs;
//   - Metrics guards /metrics with an optional bearer token;
//   - it bounds every request body, and gives the server its timeouts:
//     headers, bodies and idle connections are bounded, while a handler
//     that streams (the page's event stream) or waits is never cut: net/http
//     lifts the read deadline once the request body has been read (checked
//     by TestStreamsAreNotCut), and no write timeout is set.
//
// A Guard is immutable after New and safe for concurrent use.
package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading one request, headers and body;
	// uploads from the web page are at most a few MiB.
	DefaultReadTimeout = 2 * time.Minute
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxBodyBytes bounds any request body; handlers bound theirs
	// tighter (the web page's uploads are 10 MiB by default).
	DefaultMaxBodyBytes = 32 << 20
	// maxHeaderBytes bounds the request line and headers.
	maxHeaderBytes = 64 << 10
)

// misdirected is all a request with a foreign Host gets.
const misdirected = "misdirected request: this server does not answer to that host name\n"

// Options configure a Guard.
type Options struct {
	// Listen is the listen address as configured (host:port); Addr is the
	// address the listener got (its port when Listen asked for port 0).
	// Their host is accepted unless it is a wildcard (0.0.0.0, ::, empty):
	// a listener on every interface needs PublicURL or AllowedHosts.
	Listen, Addr string
	// PublicURL is the URL that reaches the listener from outside; its
	// host is accepted.
	PublicURL string
	// AllowedHosts are more accepted host names or addresses.
	AllowedHosts []string
	// MaxBodyBytes bounds every request body (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout configure Server
	// (0: the defaults).
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// Logger receives a debug line per refused request; nil discards.
	Logger *slog.Logger
}

// Guard checks requests before the listener's handlers see them.
type Guard struct {
	hosts    []string // accepted host names, canonical (lower case, no brackets, no final dot)
	wildcard bool     // the listener is on every interface
	maxBody  int64
	opts     Options
	log      *slog.Logger
}

// New returns a Guard for opts. It fails when PublicURL or an allowed host
// cannot be parsed.
func New(opts Options) (*Guard, error) {
	g := &Guard{opts: opts, maxBody: opts.MaxBodyBytes, log: opts.Logger}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxBodyBytes
	}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if g.opts.ReadHeaderTimeout <= 0 {
		g.opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if g.opts.ReadTimeout <= 0 {
		g.opts.ReadTimeout = DefaultReadTimeout
	}
	if g.opts.IdleTimeout <= 0 {
		g.opts.IdleTimeout = DefaultIdleTimeout
	}
	g.hosts = []string{"localhost", "127.0.0.1", "::1"}
	for _, addr := range []string{opts.Listen, opts.Addr} {
		if addr == "" {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listen address %q: %w", addr, err)
		}
		if h := canonical(host); !wildcard(h) {
			g.add(h)
		} else {
			g.wildcard = true
		}
	}
	if opts.PublicURL != "" {
		u, err := url.Parse(opts.PublicURL)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("public URL %q has no host", opts.PublicURL)
		}
		g.add(canonical(u.Hostname()))
	}
	for _, h := range opts.AllowedHosts {
		c := canonical(h)
		if c == "" || strings.ContainsAny(c, "/:@ ") && net.ParseIP(c) == nil {
			return nil, fmt.Errorf("allowed host %q is not a host name", h)
		}
		g.add(c)
	}
	return g, nil
}

func (g *Guard) add(h string) {
	if !slices.Contains(g.hosts, h) {
		g.hosts = append(g.hosts, h)
	}
}

// Hosts returns the accepted host names (any port).
func (g *Guard) Hosts() []string { return slices.Clone(g.hosts) }

// Hint returns advice for a listener on every interface that names no
// host to answer to (other machines would get 421), or "".
func (g *Guard) Hint() string {
	if !g.wildcard || g.opts.PublicURL != "" || len(g.opts.AllowedHosts) > 0 {
		return ""
	}
	return "listening on every interface, but requests are answered only when they name localhost or 127.0.0.1; " +
		"set [http] public_url, or allowed_hosts to the names other machines use (e.g. [\"switchboard.lan\", \"192.168.1.20\"])"
}

// canonical lower-cases a host, drops IPv6 brackets and a final dot.
func canonical(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return strings.TrimSuffix(h, ".")
}

func wildcard(h string) bool {
	if h == "" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}

// Accepts reports whether a Host header value (host or host:port) names
// this listener. The port is not compared: a rebinding page controls the
// name, not the port, and the listener answers one port anyway.
func (g *Guard) Accepts(hostHeader string) bool {
	h := hostHeader
	if host, _, err := net.SplitHostPort(hostHeader); err == nil {
		h = host
	}
	h = canonical(h)
	return h != "" && slices.Contains(g.hosts, h)
}

// Handler wraps next: a request with a foreign Host gets 421 and a short
// line, nothing else; others get a bounded body and go to next.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Accepts(r.Host) {
			g.log.Debug("refused a request for a foreign host", "host", r.Host, "remote", r.RemoteAddr)
			h := w.Header()
			h.Set("Content-Type", "text/plain; charset=utf-8")
			h.Set("Connection", "close")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = io.WriteString(w, misdirected)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// Metrics wraps the metrics handler: with a token, a request without
// "Authorization: Bearer <token>" gets 401; without one, next is returned
// as it is (open on an accepted Host). Tokens are compared as digests in
// constant time.
func Metrics(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		given, ok := bearer(r.Header.Get("Authorization"))
		sum := sha256.Sum256([]byte(given))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <metrics_token>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns the token of an "Authorization: Bearer <token>" value.
func bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Server returns an http.Server serving h behind the guard, with header,
// read and idle timeouts and no write timeout (streams must not be cut).
func (g *Guard) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           g.Handler(h),
		ReadHeaderTimeout: g.opts.ReadHeaderTimeout,
		ReadTimeout:       g.opts.ReadTimeout,
		IdleTimeout:       g.opts.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
}

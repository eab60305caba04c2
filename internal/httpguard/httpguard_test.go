package httpguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		accept  []string
		refuses []string
	}{
		{
			name:    "loopback listener",
			opts:    Options{Listen: "127.0.0.1:7700", Addr: "127.0.0.1:7700"},
			accept:  []string{"127.0.0.1:7700", "127.0.0.1", "localhost", "LOCALHOST:9", "localhost.", "[::1]:7700", "[::1]"},
			refuses: []string{"", "evil.example", "evil.example:7700", "localhost.evil.example", "127.0.0.1.nip.io", "0.0.0.0:7700", "[::2]:7700", "127.0.0.2", "local host", "localhost:7700:1"},
		},
		{
			name: "public URL and allowed hosts",
			opts: Options{Listen: "127.0.0.1:7700", PublicURL: "https://bot.example.com/base", AllowedHosts: []string{"NAS.lan", "192.168.1.20", "fd00::1"}},
			accept: []string{"bot.example.com", "bot.example.com:443", "BOT.Example.Com.", "nas.lan:7700", "192.168.1.20:7700",
				"[fd00::1]:7700", "localhost:7700"},
			refuses: []string{"example.com", "x.bot.example.com", "nas.lan.evil.example", "192.168.1.21:7700"},
		},
		{
			name:    "every interface: the listen address is not a name",
			opts:    Options{Listen: "0.0.0.0:7700", Addr: "0.0.0.0:7700"},
			accept:  []string{"localhost:7700", "127.0.0.1:7700"},
			refuses: []string{"0.0.0.0:7700", "192.168.1.5:7700", "myhost:7700"},
		},
		{
			name:    "every interface, empty host",
			opts:    Options{Listen: ":7700", Addr: "[::]:7700"},
			refuses: []string{":7700", "[::]:7700", "192.168.1.5:7700"},
		},
		{
			name:    "named listener on port 0",
			opts:    Options{Listen: "myhost.lan:0", Addr: "192.168.1.5:41234"},
			accept:  []string{"myhost.lan:41234", "myhost.lan:0", "192.168.1.5:41234"},
			refuses: []string{"otherhost.lan:41234"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.accept {
				if !g.Accepts(h) {
					t.Errorf("Accepts(%q) = false; hosts %q", h, g.Hosts())
				}
			}
			for _, h := range tc.refuses {
				if g.Accepts(h) {
					t.Errorf("Accepts(%q) = true; hosts %q", h, g.Hosts())
				}
			}
		})
	}
}

func TestHint(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		hint bool
	}{
		{Options{Listen: "127.0.0.1:7700"}, false},
		{Options{Listen: "0.0.0.0:7700"}, true},
		{Options{Listen: ":7700", Addr: "[::]:7700"}, true},
		{Options{Listen: "0.0.0.0:7700", AllowedHosts: []string{"nas.lan"}}, false},
		{Options{Listen: "0.0.0.0:7700", PublicURL: "https://bot.example.com"}, false},
	} {
		g, err := New(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Hint() != ""; got != tc.hint {
			t.Errorf("%+v: hint %q", tc.opts, g.Hint())
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Listen: "no-port"},
		{PublicURL: "https://"},
		{AllowedHosts: []string{"https://x.lan"}},
		{AllowedHosts: []string{""}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// serve runs g's server for mux on 127.0.0.1 and returns its base URL.
func serve(t *testing.T, g *Guard, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := g.Server(h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

func do(t *testing.T, method, url, host, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestForeignHostGets421AndNothingElse(t *testing.T) {
	var calls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /telegram/webhook", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "x"})
		_, _ = io.WriteString(w, "the page")
	})
	g, err := New(Options{Listen: "127.0.0.1:0", PublicURL: "https://bot.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, g, mux)

	for _, tc := range []struct{ method, path, host string }{
		{"POST", "/telegram/webhook", "evil.example"},
		{"GET", "/", "evil.example:" + strings.Split(base, ":")[2]},
		{"GET", "/metrics", "rebind.attacker.example"},
		{"GET", "/?token=x", "bot.example.com.evil.example"},
	} {
		res, body := do(t, tc.method, base+tc.path, tc.host, `{"update_id":1}`, nil)
		if res.StatusCode != http.StatusMisdirectedRequest || body != misdirected {
			t.Errorf("%s %s Host %s: %d %q; want 421 and the short line", tc.method, tc.path, tc.host, res.StatusCode, body)
		}
		for k := range res.Header {
			if !slices.Contains([]string{"Content-Type", "Content-Length", "Connection", "Date"}, k) {
				t.Errorf("%s %s Host %s: header %s: %q", tc.method, tc.path, tc.host, k, res.Header[k])
			}
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("handlers ran %d times for foreign hosts", n)
	}

	// The same requests with accepted names reach the handlers.
	for _, host := range []string{"", "localhost", "bot.example.com"} {
		if res, _ := do(t, "POST", base+"/telegram/webhook", host, "{}", nil); res.StatusCode != http.StatusOK {
			t.Errorf("Host %q: status %d", host, res.StatusCode)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("handlers ran %d times for accepted hosts, want 3", n)
	}
}

func TestMetricsToken(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "up 1\n") })
	g, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /open", Metrics("", metrics))
	mux.Handle("GET /metrics", Metrics("s3cret-token", metrics))
	base := serve(t, g, mux)

	if res, body := do(t, "GET", base+"/open", "", "", nil); res.StatusCode != 200 || body != "up 1\n" {
		t.Errorf("without a token: %d %q", res.StatusCode, body)
	}
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", 401},
		{"Bearer", 401},
		{"Bearer ", 401},
		{"Bearer wrong", 401},
		{"Bearer s3cret-toke", 401},
		{"Bearer s3cret-token2", 401},
		{"Basic s3cret-token", 401},
		{"s3cret-token", 401},
		{"Bearer s3cret-token", 200},
		{"bearer s3cret-token", 200},
	} {
		h := http.Header{}
		if tc.auth != "" {
			h.Set("Authorization", tc.auth)
		}
		res, body := do(t, "GET", base+"/metrics", "", "", h)
		if res.StatusCode != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, res.StatusCode, tc.want)
		}
		if tc.want == 401 && (strings.Contains(body, "up 1") || res.Header.Get("WWW-Authenticate") == "") {
			t.Errorf("Authorization %q: body %q, WWW-Authenticate %q", tc.auth, body, res.Header.Get("WWW-Authenticate"))
		}
	}
}

func TestServerTimeouts(t *testing.T) {
	g, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := g.Server(http.NotFoundHandler())
	if srv.ReadHeaderTimeout != DefaultReadHeaderTimeout || srv.ReadTimeout != DefaultReadTimeout || srv.IdleTimeout != DefaultIdleTimeout {
		t.Errorf("timeouts: header %s read %s idle %s", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
	if srv.WriteTimeout != 0 {
		t.Errorf("WriteTimeout %s would cut event streams", srv.WriteTimeout)
	}
	if srv.MaxHeaderBytes == 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes %d", srv.MaxHeaderBytes)
	}
}

func TestSlowRequestsAreCut(t *testing.T) {
	bodyErr := make(chan error, 1)
	g, err := New(Options{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		bodyErr <- err
	}))
	addr := strings.TrimPrefix(base, "http://")

	// Headers that never end: the server closes the connection.
	c1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	fmt.Fprintf(c1, "GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
	_ = c1.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadAll(c1); err != nil {
		t.Errorf("slow headers: the server did not close the connection: %v", err)
	}

	// A body that stalls: the handler's read fails.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nonly ten b")
	select {
	case err := <-bodyErr:
		if err == nil {
			t.Error("a stalled body was read without error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a stalled body held the handler")
	}
}

func TestStreamsAreNotCut(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	g, err := New(Options{ReadTimeout: readTimeout})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	cut := make(chan string, 2)
	base := serve(t, g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			cut <- r.Method + " body: " + err.Error()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
			cut <- r.Method + ": " + context.Cause(r.Context()).Error()
			return
		case <-release:
		}
		_, _ = io.WriteString(w, "data: last\n\n")
	}))

	type stream struct {
		res *http.Response
		r   *bufio.Reader
	}
	var streams []stream
	for _, m := range []struct{ method, body string }{{"GET", ""}, {"POST", `{"a":1}`}} {
		var body io.Reader
		if m.body != "" {
			body = strings.NewReader(m.body)
		}
		req, _ := http.NewRequest(m.method, base+"/events", body)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		r := bufio.NewReader(res.Body)
		if line, err := r.ReadString('\n'); err != nil || line != "data: first\n" {
			t.Fatalf("%s: first line %q, %v", m.method, line, err)
		}
		streams = append(streams, stream{res, r})
	}
	// Several read timeouts pass while the handlers wait: neither is cut.
	select {
	case why := <-cut:
		t.Fatalf("a waiting handler was cut: %s", why)
	case <-time.After(5 * readTimeout):
	}
	close(release)
	for _, s := range streams {
		rest, err := io.ReadAll(s.r)
		if err != nil || !strings.Contains(string(rest), "data: last") {
			t.Errorf("%s: rest of the stream %q, %v", s.res.Request.Method, rest, err)
		}
	}
}

func TestBodiesAreBounded(t *testing.T) {
	got := make(chan error, 1)
	g, err := New(Options{MaxBodyBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
	}))
	do(t, "POST", base+"/", "", strings.Repeat("x", 1024), nil)
	if err := <-got; err != nil {
		t.Errorf("a body at the limit: %v", err)
	}
	do(t, "POST", base+"/", "", strings.Repeat("x", 1025), nil)
	var mbe *http.MaxBytesError
	if err := <-got; !errors.As(err, &mbe) {
		t.Errorf("a body over the limit: %v, want *http.MaxBytesError", err)
	}
}

// FuzzAccepts feeds arbitrary Host headers: Accepts never panics and
// accepts only what names one of the guard's hosts.
func FuzzAccepts(f *testing.F) {
	for _, s := range []string{"localhost", "localhost:7700", "[::1]:1", "bot.example.com.", "evil.example", "", ":", "[", "]:", "a:b:c", "LOCALHOST"} {
		f.Add(s)
	}
	g, err := New(Options{Listen: "127.0.0.1:7700", PublicURL: "https://bot.example.com", AllowedHosts: []string{"nas.lan"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !g.Accepts(host) {
			return
		}
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		if !slices.Contains(g.Hosts(), canonical(h)) {
			t.Fatalf("Accepts(%q) = true for a host not in %q", host, g.Hosts())
		}
		if strings.ContainsAny(canonical(h), "/@ ") {
			t.Fatalf("Accepts(%q) = true", host)
		}
	})
}

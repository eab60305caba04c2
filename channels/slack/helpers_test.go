package slack

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// recorder is a channels.Handler that records what it gets.
type recorder struct {
	mu       sync.Mutex
	changed  chan struct{}
	inbound  []channels.Inbound
	attempts []channels.Inbound // every OnInbound call, accepted or not
	actions  []channels.Action
	failIn   int // fail this many OnInbound calls
	// hold, when set, is received from before OnInbound answers (only for
	// texts containing holdText, when that is set).
	hold      chan struct{}
	holdText  string
	reply     channels.ActionReply
	actionErr error
	// then, when set, runs after an inbound was accepted (a tiny gateway).
	then func(in channels.Inbound)
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) OnInbound(ctx context.Context, in channels.Inbound) error {
	r.mu.Lock()
	r.attempts = append(r.attempts, in)
	r.notify()
	hold := r.hold
	if r.holdText != "" && !strings.Contains(in.Text, r.holdText) {
		hold = nil
	}
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	if r.failIn > 0 {
		r.failIn--
		r.mu.Unlock()
		return errors.New("store unavailable")
	}
	r.inbound = append(r.inbound, in)
	then := r.then
	r.notify()
	r.mu.Unlock()
	if then != nil {
		then(in)
	}
	return nil
}

func (r *recorder) OnAction(_ context.Context, a channels.Action) (channels.ActionReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify()
	r.actions = append(r.actions, a)
	return r.reply, r.actionErr
}

// wait blocks until cond (called with r.mu held) holds.
func (r *recorder) wait(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-ch:
		}
	}
}

func (r *recorder) waitInbound(t *testing.T, ctx context.Context, n int) []channels.Inbound {
	t.Helper()
	r.wait(t, ctx, "inbound messages", func() bool { return len(r.inbound) >= n })
	return r.inbounds()
}

func (r *recorder) inbounds() []channels.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Inbound(nil), r.inbound...)
}

func (r *recorder) waitAction(t *testing.T, ctx context.Context, n int) []channels.Action {
	t.Helper()
	r.wait(t, ctx, "button presses", func() bool { return len(r.actions) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Action(nil), r.actions...)
}

// logSink collects log output.
type logSink struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// threadList is a Threads hook the test fills, as the gateway's bindings.
// calls counts catch-ups (each lists the threads once).
type threadList struct {
	mu      sync.Mutex
	locs    []channels.Location
	calls   int
	changed chan struct{}
}

func newThreadList() *threadList { return &threadList{changed: make(chan struct{})} }

// waitCalls waits until the adapter listed the threads n times; the catch-up
// that listed them then runs to completion before the next listing.
func (l *threadList) waitCalls(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for {
		l.mu.Lock()
		ok, ch := l.calls >= n, l.changed
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for catch-up %d: %v", n, ctx.Err())
		case <-ch:
		}
	}
}

func (l *threadList) add(loc channels.Location) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.locs = append(l.locs, loc)
}

func (l *threadList) list(context.Context) ([]channels.Location, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	close(l.changed)
	l.changed = make(chan struct{})
	return append([]channels.Location(nil), l.locs...), nil
}

type env struct {
	a       *Adapter
	srv     *slacktest.Server
	rec     *recorder
	logs    *logSink
	threads *threadList
	web     *httptest.Server // the adapter's routes in HTTP mode
	ctx     context.Context  // the test's deadline
	stop    func()           // ends Start and waits for it
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// setup is an environment for mode whose adapter is not started yet.
func setup(t *testing.T, mode string, mod func(*Options), opts ...slacktest.Option) *env {
	t.Helper()
	e := &env{srv: slacktest.New(t, opts...), rec: newRecorder(), logs: &logSink{}, threads: newThreadList(), ctx: testCtx(t)}
	o := Options{
		Mode:          mode,
		BotToken:      slacktest.BotToken,
		AppToken:      slacktest.AppToken,
		SigningSecret: slacktest.SigningSecret,
		APIURL:        e.srv.URL(),
		Threads:       e.threads.list,
		IdleTimeout:   10 * time.Second, // tests of silence shorten it
		Logger:        slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	a.minBackoff = 5 * time.Millisecond
	a.maxBackoff = 50 * time.Millisecond
	a.pingInterval = time.Hour // the library's own ping timeout stays out of the way
	e.a = a
	if mode == ModeHTTP {
		mux := http.NewServeMux()
		for p, h := range a.Routes() {
			mux.Handle(p, h)
		}
		e.web = httptest.NewServer(mux)
		t.Cleanup(e.web.Close)
		e.srv.DeliverHTTP(e.web.URL)
	}
	t.Cleanup(func() {
		for _, secret := range []string{slacktest.BotToken, slacktest.AppToken, slacktest.SigningSecret} {
			if strings.Contains(e.logs.String(), secret) {
				t.Errorf("a secret appears in the logs:\n%s", e.logs.String())
			}
		}
	})
	return e
}

// run starts the adapter until the test ends and waits until it is ready:
// connected in Socket Mode, serving in HTTP mode.
func (e *env) run(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.a.Start(ctx, e.rec) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Start: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("Start did not return within 15s of its context ending")
			}
		})
	}
	t.Cleanup(e.stop)
	if e.a.opts.Mode == ModeHTTP {
		eventually(t, e.ctx, "the adapter serving", func() bool { return e.a.current() != nil })
	} else if err := e.srv.WaitFor(e.ctx, "a Socket Mode connection", e.srv.Connected); err != nil {
		t.Fatal(err)
	}
	// The first catch-up has listed the threads: once it is done (the
	// next listing), events and catch-up do not race in the tests.
	e.threads.waitCalls(t, e.ctx, 1)
	return e
}

func start(t *testing.T, mode string, mod func(*Options), opts ...slacktest.Option) *env {
	t.Helper()
	return setup(t, mode, mod, opts...).run(t)
}

// eventually polls cond until it holds or ctx ends (for state the fake does
// not signal, such as the adapter's own readiness).
func eventually(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

func mention(text string) string { return "<@" + slacktest.BotUserID + "> " + text }

func generalThread(ts string) channels.Location {
	return channels.Location{Channel: Name, Account: slacktest.TeamID, ChatID: slacktest.General, ThreadID: ts}
}

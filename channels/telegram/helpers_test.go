package telegram

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

const (
	testToken = "424242:AAH-secret_TOKEN-value"
	botID     = 424242
)

// recorder is a channels.Handler that records what it gets.
type recorder struct {
	mu        sync.Mutex
	changed   chan struct{}
	inbound   []channels.Inbound
	attempts  []channels.Inbound // every OnInbound call, accepted or not
	actions   []channels.Action
	failIn    int // fail this many OnInbound calls
	reply     channels.ActionReply
	actionErr error
	// offsetNow, when set, is read at every OnInbound call into offsets.
	offsetNow func() int64
	offsets   []int64
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) OnInbound(_ context.Context, in channels.Inbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify()
	r.attempts = append(r.attempts, in)
	if r.offsetNow != nil {
		r.offsets = append(r.offsets, r.offsetNow())
	}
	if r.failIn > 0 {
		r.failIn--
		return errors.New("store unavailable")
	}
	r.inbound = append(r.inbound, in)
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
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Inbound(nil), r.inbound...)
}

// logSink collects log output and lets tests wait for a line.
type logSink struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logSink) waitFor(t *testing.T, ctx context.Context, substr string) {
	t.Helper()
	for {
		l.mu.Lock()
		ok, ch := strings.Contains(l.buf.String(), substr), l.changed
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for log %q: %v\nlogs:\n%s", substr, ctx.Err(), l.String())
		case <-ch:
		}
	}
}

type env struct {
	a    *Adapter
	srv  *telegramtest.Server
	rec  *recorder
	logs *logSink
	ctx  context.Context // the test's deadline
}

// testCtx is the test's context with a deadline.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newAdapter(t *testing.T, srv *telegramtest.Server, logs *logSink, mod func(*Options)) *Adapter {
	t.Helper()
	opts := Options{
		Token:       testToken,
		APIURL:      srv.URL(),
		PollTimeout: time.Second,
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	a.minBackoff = 5 * time.Millisecond
	a.maxBackoff = 50 * time.Millisecond
	return a
}

// start runs an adapter against a fake server until the test ends, and
// waits until it polls (or, in webhook mode, set the webhook).
func start(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	e := &env{srv: telegramtest.New(t, testToken), rec: newRecorder(), logs: newLogSink(), ctx: testCtx(t)}
	e.a = newAdapter(t, e.srv, e.logs, mod)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.a.Start(runCtx, e.rec) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
		if strings.Contains(e.logs.String(), testToken) {
			t.Errorf("the token appears in the logs:\n%s", e.logs.String())
		}
	})
	var err error
	if e.a.opts.Mode == ModeWebhook {
		_, err = e.srv.WaitCall(e.ctx, telegramtest.Method("setWebhook"))
	} else {
		err = e.srv.WaitPolling(e.ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func dmLocation(chatID string) channels.Location {
	return channels.Location{Channel: Name, Account: "424242", ChatID: chatID}
}

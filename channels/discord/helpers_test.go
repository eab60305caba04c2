package discord

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	dt "github.com/switchboard-gw/switchboard/channels/discord/discordtest"
)

// recorder is a channels.Handler that records what it gets.
type recorder struct {
	mu       sync.Mutex
	changed  chan struct{}
	inbound  []channels.Inbound
	attempts int
	actions  []channels.Action
	failIn   int // fail this many OnInbound calls
	// onInbound, when set, runs for each accepted inbound (outside the lock).
	onInbound func(channels.Inbound)
	// reply answers presses; replyFor, when set, decides per action.
	reply    channels.ActionReply
	replyFor func(channels.Action) channels.ActionReply
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) OnInbound(_ context.Context, in channels.Inbound) error {
	r.mu.Lock()
	r.attempts++
	if r.failIn > 0 {
		r.failIn--
		r.notifyLocked()
		r.mu.Unlock()
		return errors.New("store unavailable")
	}
	r.inbound = append(r.inbound, in)
	r.notifyLocked()
	f := r.onInbound
	r.mu.Unlock()
	if f != nil {
		f(in)
	}
	return nil
}

func (r *recorder) OnAction(_ context.Context, a channels.Action) (channels.ActionReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions = append(r.actions, a)
	r.notifyLocked()
	if r.replyFor != nil {
		return r.replyFor(a), nil
	}
	return r.reply, nil
}

// waitFor waits until cond (called under the lock) holds.
func (r *recorder) waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
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
			t.Fatalf("timed out waiting for %s", what)
		case <-ch:
		}
	}
}

// waitInbound waits for n accepted inbounds and returns them.
func (r *recorder) waitInbound(t *testing.T, ctx context.Context, n int) []channels.Inbound {
	t.Helper()
	r.waitFor(t, ctx, "inbound messages", func() bool { return len(r.inbound) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Inbound(nil), r.inbound...)
}

// inboundWith waits for an accepted inbound whose text contains s.
func (r *recorder) inboundWith(t *testing.T, ctx context.Context, s string) channels.Inbound {
	t.Helper()
	var got channels.Inbound
	r.waitFor(t, ctx, "an inbound with "+s, func() bool {
		for _, in := range r.inbound {
			if strings.Contains(in.Text, s) {
				got = in
				return true
			}
		}
		return false
	})
	return got
}

func (r *recorder) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, in := range r.inbound {
		if strings.Contains(in.Text, s) {
			n++
		}
	}
	return n
}

// env is an adapter started against a fake Discord.
type env struct {
	srv  *dt.Server
	a    *Adapter
	rec  *recorder
	ctx  context.Context
	logs *logBuffer
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testOptions are the options tests start from.
func testOptions(srv *dt.Server, logs *logBuffer) Options {
	return Options{
		Token:      dt.Token(),
		APIURL:     srv.URL(),
		AutoThread: true,
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// newTestAdapter builds an adapter for srv with fast backoff; change lets a
// test adjust the options.
func newTestAdapter(t *testing.T, srv *dt.Server, logs *logBuffer, change func(*Options)) *Adapter {
	t.Helper()
	opts := testOptions(srv, logs)
	if change != nil {
		change(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	a.minBackoff = 10 * time.Millisecond
	a.maxBackoff = 200 * time.Millisecond
	return a
}

// start runs an adapter against a new fake until the test ends and waits
// until it is connected.
func start(t *testing.T, change func(*Options), srvOpts ...dt.Option) *env {
	t.Helper()
	srv := dt.New(t, srvOpts...)
	logs := &logBuffer{}
	a := newTestAdapter(t, srv, logs, change)
	e := &env{srv: srv, a: a, rec: newRecorder(), logs: logs}
	e.ctx = runAdapter(t, a, e.rec)
	if err := srv.WaitGateway(e.ctx, "identify", func(s dt.GatewayStats) bool { return s.Identifies > 0 && s.Live }); err != nil {
		t.Fatal(err)
	}
	// READY reached the worker when the application id is known.
	if !eventually(e.ctx, func() bool { return a.identity().AppID != "" }) {
		t.Fatal("the adapter did not process READY")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	})
	return e
}

// runAdapter starts a and stops it when the test ends; the returned context
// is the test's deadline.
func runAdapter(t *testing.T, a *Adapter, h channels.Handler) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(runCtx, h) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v after its context ended", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Start did not return after its context ended")
		}
		cancel()
	})
	return ctx
}

func loc(chat, thread string) channels.Location {
	return channels.Location{Channel: Name, Account: dt.BotID, ChatID: chat, ThreadID: thread}
}

// eventually polls cond until it holds or ctx ends.
func eventually(ctx context.Context, cond func() bool) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
	return true
}

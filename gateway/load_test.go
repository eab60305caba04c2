package gateway_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// echo answers every request with the text of its last user message.
func echo(req fakemodel.Request) fakemodel.Step {
	last := req.LastMessage()
	var text string
	for _, p := range last.Parts() {
		if !strings.HasPrefix(p.Text, "<system-reminder>") {
			text = p.Text
		}
	}
	return fakemodel.Step{Text: "echo: " + text}
}

// counter is a chat adapter that only records reply texts per chat. The
// general fake re-checks every record on every send, which is quadratic at
// this scale.
type counter struct {
	mu      sync.Mutex
	handler channels.Handler
	started chan struct{}
	replies map[string][]string
	total   int
	want    int
	done    chan struct{}
}

func newCounter(want int) *counter {
	return &counter{started: make(chan struct{}), replies: map[string][]string{}, want: want, done: make(chan struct{})}
}

func (c *counter) Name() string { return "chat" }
func (c *counter) Capabilities() channels.Capabilities {
	return channels.Capabilities{MaxMessageLen: 4000, Dialect: channels.Plain}
}
func (c *counter) Start(ctx context.Context, h channels.Handler) error {
	c.mu.Lock()
	c.handler = h
	c.mu.Unlock()
	close(c.started)
	<-ctx.Done()
	return nil
}
func (c *counter) Send(_ context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replies[loc.ChatID] = append(c.replies[loc.ChatID], strings.TrimSpace(m.Markdown()))
	c.total++
	if c.total == c.want {
		close(c.done)
	}
	return channels.MessageRef{Location: loc, ID: fmt.Sprint(c.total)}, nil
}
func (c *counter) Edit(context.Context, channels.MessageRef, channels.Message) error { return nil }

func TestManyConversationsInOrder(t *testing.T) {
	convs, perConv := 1000, 10
	if testing.Short() || raceEnabled {
		convs = 100
	}
	want := convs * perConv
	cnt := newCounter(want)
	h := newHarnessWith(t, harnessOpts{allowAll: true}, cnt)
	h.model.SetResponder(echo)
	<-cnt.started
	ctx := h.longCtx()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, convs)
	for c := range convs {
		wg.Go(func() { errs <- sendConversation(ctx, cnt, c, perConv) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cnt.wait(t, ctx)
	t.Logf("%d turns in %v (%.0f turns/s, intake and work overlapping)", want, time.Since(start), float64(want)/time.Since(start).Seconds())
	cnt.checkInOrder(t, convs, perConv)
}

// TestBacklogBeyondWorkers: more busy conversations than Options.Workers
// are all worked, each in order, and the ones waiting for a turn wait in
// the queue, not on goroutines of their own.
func TestBacklogBeyondWorkers(t *testing.T) {
	const convs, perConv, workers = 200, 2, 3
	want := convs * perConv
	cnt := newCounter(want)
	h := newHarnessWith(t, harnessOpts{allowAll: true, workers: workers}, cnt)
	h.model.SetResponder(echo)
	<-cnt.started
	ctx := h.longCtx()
	// The goroutines running workers, sampled: other goroutines come and
	// go by the hundred (per query, per connection).
	var peak atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		buf := make([]byte, 8<<20)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			n := int64(strings.Count(string(buf[:runtime.Stack(buf, true)]), "gateway.(*workers).work("))
			if n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-cnt.done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	for c := range convs {
		if err := sendConversation(ctx, cnt, c, perConv); err != nil {
			t.Fatal(err)
		}
	}
	cnt.wait(t, ctx)
	<-sampled
	cnt.checkInOrder(t, convs, perConv)
	if n := peak.Load(); n > workers {
		t.Errorf("%d goroutines ran workers at once, for %d conversations and %d workers", n, convs, workers)
	}
}

// sendConversation sends conversation c's perConv messages in order.
func sendConversation(ctx context.Context, cnt *counter, c, perConv int) error {
	loc := channels.Location{Channel: "chat", Account: "bot", ChatID: fmt.Sprintf("user-%d", c)}
	for m := range perConv {
		in := inbound(fmt.Sprintf("ev-%d-%d", c, m), fmt.Sprintf("u%d", c), fmt.Sprintf("c%d m%d", c, m), loc)
		if err := cnt.handler.OnInbound(ctx, in); err != nil {
			return err
		}
	}
	return nil
}

// wait waits until every answer arrived.
func (c *counter) wait(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-c.done:
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("only %d of %d answers arrived", c.total, c.want)
	}
}

// checkInOrder checks that each of convs conversations got its perConv
// echoed answers, in the order they were sent.
func (c *counter) checkInOrder(t *testing.T, convs, perConv int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for conv := range convs {
		answers := c.replies[fmt.Sprintf("user-%d", conv)]
		if len(answers) != perConv {
			t.Fatalf("conversation %d got %d answers, want %d: %q", conv, len(answers), perConv, answers)
		}
		for m, a := range answers {
			if want := fmt.Sprintf("echo: c%d m%d", conv, m); a != want {
				t.Fatalf("conversation %d answer %d = %q, want %q (all: %q)", conv, m, a, want, answers)
			}
		}
	}
}

package gateway_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// The figures of the closing note: how long from an Agent call to the
// child's first model request (letta-code starts a process: seconds), what
// an idle task parked on an approval costs in memory (nothing waits for
// it), and how 100 tasks at once go.

// taskResponder answers parents with one Agent call (n of them for a
// message that says "n=…") and then a line, and children with childStep.
func taskResponder(typ string, childStep func(fakemodel.Request) fakemodel.Step) func(fakemodel.Request) fakemodel.Step {
	return func(req fakemodel.Request) fakemodel.Step {
		if isChild(req) {
			return childStep(req)
		}
		if len(toolResults(req)) > 0 || strings.Contains(lastUserText(req), "<task-notification>\ntask-id:") {
			return fakemodel.Step{Text: "parent ok"}
		}
		n := 1
		fmt.Sscanf(lastUserText(req)[strings.LastIndex(lastUserText(req), "n=")+2:], "%d", &n)
		s := fakemodel.Step{}
		for i := range n {
			c := agentCall(fmt.Sprintf("a%d", i), typ, fmt.Sprintf("job %d", i), nil)
			s.ToolCalls = append(s.ToolCalls, c.ToolCalls...)
		}
		return s
	}
}

func threadN(i int) channels.Location {
	return channels.Location{Channel: "chat", Account: "bot", ChatID: "room", ThreadID: fmt.Sprintf("b%d", i)}
}

func msgIn(loc channels.Location, id, text string) channels.Inbound {
	in := inbound(id, "alice", text, loc)
	in.DirectMessage = false
	return in
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// BenchmarkTaskStartToFirstRequest measures an Agent call (the task's
// creation, in the parent's step) to the child's first model request
// arriving at the model server: the task record, its queue item, the
// worker, the child's prompt and request.
func BenchmarkTaskStartToFirstRequest(b *testing.B) {
	h := newHarness(b, harnessOpts{})
	var mu sync.Mutex
	first := map[string]time.Time{} // brief → arrival of the child's first request
	h.model.SetResponder(taskResponder("explore", func(req fakemodel.Request) fakemodel.Step {
		mu.Lock()
		parts := req.LastMessage().Parts()
		brief := parts[len(parts)-1].Text
		if _, ok := first[brief]; !ok {
			first[brief] = req.Time
		}
		mu.Unlock()
		return fakemodel.Step{Text: "child ok"}
	}))
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		loc := threadN(i)
		if err := h.chat.Inbound(context.Background(), msgIn(loc, fmt.Sprintf("m%d", i), "go n=1")); err != nil {
			b.Fatal(err)
		}
		var task agentcore.Task
		waitFor(b, "the child's first request", func() bool {
			bd, err := h.db.Binding(context.Background(), loc.String())
			if err != nil {
				return false
			}
			ts, _ := h.db.ConversationTasks(context.Background(), bd.ConversationID, 1)
			if len(ts) == 0 {
				return false
			}
			task = ts[0]
			mu.Lock()
			defer mu.Unlock()
			_, ok := first[task.Prompt]
			return ok && task.Status == agentcore.TaskDone
		})
		mu.Lock()
		at := first[task.Prompt]
		delete(first, task.Prompt)
		mu.Unlock()
		lat = append(lat, at.Sub(task.Created))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkIdleParkedTask measures what tasks whose child waits for an
// approval cost while they wait: heap and goroutines per task (nothing of
// a parked task is held in memory, only its rows in the store).
func BenchmarkIdleParkedTask(b *testing.B) {
	const n = 200
	for range b.N {
		b.StopTimer()
		chat := &quietChat{started: make(chan struct{})}
		h := newHarnessWith(b, harnessOpts{}, chat)
		<-chat.started
		h.model.SetResponder(taskResponder("general-purpose", func(req fakemodel.Request) fakemodel.Step {
			return bashCall("c1", "touch child-wants-this")
		}))
		settle := func() (uint64, int) {
			var ms runtime.MemStats
			for range 3 {
				runtime.GC()
			}
			runtime.ReadMemStats(&ms)
			return ms.HeapInuse, runtime.NumGoroutine()
		}
		// Warm up one parked task, so pools and caches are allocated.
		parked := func(want int) func() bool {
			return func() bool {
				ts, err := h.db.ExpiredApprovals(context.Background(), time.Now().Add(100*time.Hour), 10000)
				return err == nil && len(ts) >= want
			}
		}
		if err := chat.h.OnInbound(context.Background(), msgIn(threadN(-1), "warm", "go n=1")); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "the warm-up task to park", parked(1))
		waitIdle(b, h)
		h.model.ForgetRequests()
		heap0, g0 := settle()
		b.StartTimer()
		// In batches of 10, so the model client's connection pool stays
		// small: the figure is what a parked task keeps, not what a burst
		// of concurrent requests costs.
		for i := range n {
			if err := chat.h.OnInbound(context.Background(), msgIn(threadN(i), fmt.Sprintf("m%d", i), "go n=1")); err != nil {
				b.Fatal(err)
			}
			if i%10 == 9 {
				waitFor(b, "the batch to park", parked(i+2))
			}
		}
		waitFor(b, "every task to park", parked(n+1))
		b.StopTimer()
		waitIdle(b, h)
		h.model.ForgetRequests()
		heap1, g1 := settle()
		b.ReportMetric(float64(int64(heap1)-int64(heap0))/n, "heap-B/parked-task")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/parked-task")
		h.stop()
	}
}

// waitIdle waits until no worker runs and the outbox is empty.
func waitIdle(tb testing.TB, h *harness) {
	waitFor(tb, "the gateway to go idle", func() bool {
		busy, err := h.db.Busy(context.Background(), nil)
		due, err2 := h.db.DueOutbound(context.Background(), nil, time.Now().Add(time.Hour), 1)
		return err == nil && err2 == nil && len(busy) == 0 && len(due) == 0
	})
}

// BenchmarkHundredConcurrentTasks: one message starts 100 background
// tasks at once (max_tasks 100); the figure is the wall time until every
// report is posted and the parent has heard of all of them.
func BenchmarkHundredConcurrentTasks(b *testing.B) {
	const n = 100
	for i := range b.N {
		b.StopTimer()
		h := newHarness(b, harnessOpts{maxTasks: n})
		h.model.SetResponder(taskResponder("explore", func(req fakemodel.Request) fakemodel.Step {
			return fakemodel.Step{Text: "done: " + lastUserText(req)}
		}))
		loc := threadN(i)
		b.StartTimer()
		start := time.Now()
		if err := h.chat.Inbound(context.Background(), msgIn(loc, "m", fmt.Sprintf("go n=%d", n))); err != nil {
			b.Fatal(err)
		}
		var conv string
		waitFor(b, "every task to end and notify", func() bool {
			if conv == "" {
				bd, err := h.db.Binding(context.Background(), loc.String())
				if err != nil {
					return false
				}
				conv = bd.ConversationID
			}
			ts, _ := h.db.ConversationTasks(context.Background(), conv, 0)
			done := 0
			for _, t := range ts {
				if t.Status == agentcore.TaskDone {
					done++
				}
			}
			busy, _ := h.db.Busy(context.Background(), nil)
			return done == n && len(busy) == 0
		})
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(elapsed.Seconds()*1000, "ms/100-tasks")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "tasks/s")
		h.stop()
	}
}

// quietChat is a chat adapter that keeps nothing of what it is sent, so
// the heap figure is the gateway's.
type quietChat struct {
	h       channels.Handler
	started chan struct{}
	n       atomic.Int64
}

func (c *quietChat) Name() string { return "chat" }
func (c *quietChat) Capabilities() channels.Capabilities {
	return channels.Capabilities{MaxMessageLen: 4000, Edit: true, Buttons: true, Dialect: channels.Plain}
}
func (c *quietChat) Start(ctx context.Context, h channels.Handler) error {
	c.h = h
	close(c.started)
	<-ctx.Done()
	return nil
}
func (c *quietChat) Send(_ context.Context, loc channels.Location, _ channels.Message) (channels.MessageRef, error) {
	return channels.MessageRef{Location: loc, ID: fmt.Sprintf("q%d", c.n.Add(1))}, nil
}
func (c *quietChat) Edit(context.Context, channels.MessageRef, channels.Message) error { return nil }

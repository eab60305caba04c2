package agentcore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// BenchmarkTurnTwoStep runs one scripted two-step turn per iteration —
// the model calls a tool, then answers — through the whole loop: a new
// conversation, the real sqlite store, the real provider over HTTP/SSE to
// an instant fake model, permissions and the real tool. Read measures the
// loop itself; Bash adds a shell process (and its process group handling).
func BenchmarkTurnTwoStep(b *testing.B) {
	for _, tc := range []struct {
		name, tool string
		args       func(ws string) string
	}{
		{"Read", "Read", func(ws string) string {
			a, _ := json.Marshal(map[string]string{"file_path": filepath.Join(ws, "a.txt")})
			return string(a)
		}},
		{"Bash", "Bash", func(string) string { return `{"command":"echo hi"}` }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := newWorld(b)
			if err := os.WriteFile(filepath.Join(w.ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			args := tc.args(w.ws)
			var n atomic.Int64
			w.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
				if req.LastMessage().Role == "tool" {
					return fakemodel.Step{Text: "done"}
				}
				// Call ids must be unique per conversation (see the report on
				// reused ids); a counter keeps them so.
				id := fmt.Sprintf("call_%d", n.Add(1))
				return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: tc.tool, Arguments: args}}}
			})
			ag := w.agent(agentOpts{mode: permission.ModeUnrestricted})
			ctx := context.Background()
			in := userInput("go")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c, err := ag.NewConversation(ctx)
				if err != nil {
					b.Fatal(err)
				}
				res, err := ag.Turn(ctx, c.ID, in, agentcore.Discard)
				if err != nil {
					b.Fatal(err)
				}
				if res.StopReason != agentcore.StopEndTurn || res.Steps != 2 {
					b.Fatalf("turn ended %s after %d steps (%s)", res.StopReason, res.Steps, res.Error)
				}
			}
		})
	}
}

// BenchmarkStepMemory compares the peak heap of a turn whose model floods
// it (an endless stream, one huge chunk) with an ordinary turn, through
// the real provider and store: the step must end at max_step_output
// (default 1 MiB) without the heap growing with the stream. It reports
// peak-heap-MiB, the largest HeapInuse sampled during any iteration (each
// starts after a GC), peak-live-MiB, the largest live heap a GC found,
// and peak-rss-MiB, the process's VmHWM at the end —
// meaningful when one sub-benchmark runs alone in its process, e.g.
// -bench 'StepMemory/endless-text$'.
func BenchmarkStepMemory(b *testing.B) {
	ordinary := fakemodel.Step{Text: strings.Repeat("An ordinary answer of a few paragraphs. ", 100)}
	for _, tc := range []struct {
		name string
		step fakemodel.Step
		want agentcore.StopReason
	}{
		{"ordinary", ordinary, agentcore.StopEndTurn},
		{"endless-text", fakemodel.Step{Endless: fakemodel.EndlessText}, agentcore.StopError},
		{"endless-arguments", fakemodel.Step{Endless: fakemodel.EndlessArguments}, agentcore.StopError},
		{"endless-event", fakemodel.Step{Endless: fakemodel.EndlessEvent}, agentcore.StopError},
		{"huge-chunk-64MiB", fakemodel.Step{HugeChunk: 64 << 20}, agentcore.StopError},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := newWorld(b)
			w.model.SetResponder(func(fakemodel.Request) fakemodel.Step { return tc.step })
			ag := w.agent(agentOpts{mode: permission.ModeUnrestricted})
			ctx := context.Background()
			in := userInput("go")
			var peak heapPeak
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				c, err := ag.NewConversation(ctx)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				stop := sampleHeap(&peak)
				b.StartTimer()
				res, err := ag.Turn(ctx, c.ID, in, agentcore.Discard)
				b.StopTimer()
				stop()
				b.StartTimer()
				if err != nil {
					b.Fatal(err)
				}
				if res.StopReason != tc.want {
					b.Fatalf("turn ended %s (%s), want %s", res.StopReason, res.Error, tc.want)
				}
			}
			b.ReportMetric(float64(peak.inuse)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peak.live)/(1<<20), "peak-live-MiB")
			if rss, ok := peakRSS(); ok {
				b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
			}
		})
	}
}

// sampleHeap records the largest HeapInuse into peak.inuse and the largest
// live heap (as of each GC) into peak.live until the returned function is
// called (which waits for the sampler to stop).
func sampleHeap(peak *heapPeak) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	read := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak.inuse = max(peak.inuse, ms.HeapInuse)
		metrics.Read(live)
		peak.live = max(peak.live, live[0].Value.Uint64())
	}
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			read()
			select {
			case <-done:
				read()
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// heapPeak is what sampleHeap records.
type heapPeak struct{ inuse, live uint64 }

// peakRSS reads the process's peak resident set size (VmHWM) on Linux.
func peakRSS() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

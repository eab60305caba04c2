// Command gatewayload measures the gateway with the real stack in one
// process: the sqlite store on a temp file, agentcore with the OpenAI
// provider against the in-process scripted model (internal/fakemodel,
// answering instantly), and gateway.New with a light in-memory adapter.
//
// Phase A (saturation) injects -convs conversations × -per messages as
// fast as possible and reports completed turns per second. Phase B
// (offered load) injects -rate turns/s spread over the conversations for
// -duration and reports p50/p99 of the gateway's overhead: inbound to
// provider request, and provider end to outbound send. With -serve it also
// builds the real binary and measures `switchboard serve` start to ready
// and its idle RSS.
//
//	go run ./bench/gatewayload -convs 1000 -per 10 -rate 200 -duration 10s -serve
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	var (
		convs      = flag.Int("convs", 1000, "conversations")
		per        = flag.Int("per", 10, "messages per conversation in phase A")
		rate       = flag.Float64("rate", 200, "offered load of phase B, turns/s")
		duration   = flag.Duration("duration", 10*time.Second, "length of phase B")
		phases     = flag.String("phases", "ab", "phases to run: a (saturation), b (offered load)")
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of phase A to this file")
		serve      = flag.Bool("serve", false, "also build and measure `switchboard serve` (start to ready, idle RSS)")
		serveRuns  = flag.Int("serve-runs", 5, "serve starts to take the median of")
		idle       = flag.Duration("idle", 3*time.Second, "idle time before reading serve's RSS")
		goroutines = flag.String("goroutines", "", "write a goroutine profile, 5s into phase A, to this file")
	)
	flag.Parse()
	tmp, err := os.MkdirTemp("", "gatewayload-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	fmt.Printf("GOMAXPROCS=%d, %s\n", runtime.GOMAXPROCS(0), runtime.Version())

	if containsRune(*phases, 'a') {
		r, err := phaseA(filepath.Join(tmp, "a"), *convs, *per, *cpuprofile, *goroutines)
		if err != nil {
			log.Fatalf("phase A: %v", err)
		}
		fmt.Printf("\nphase A (saturation): %d conversations × %d messages = %d turns in %v\n", *convs, *per, r.turns, r.wall.Round(time.Millisecond))
		fmt.Printf("  throughput          %8.0f turns/s   (target ≥ 1000)\n", float64(r.turns)/r.wall.Seconds())
		fmt.Printf("  intake only         %8.0f msgs/s    (all messages acknowledged after %v)\n", float64(r.turns)/r.intake.Seconds(), r.intake.Round(time.Millisecond))
	}
	if containsRune(*phases, 'b') {
		r, err := phaseB(filepath.Join(tmp, "b"), *convs, *rate, *duration)
		if err != nil {
			log.Fatalf("phase B: %v", err)
		}
		fmt.Printf("\nphase B (offered load): %.0f turns/s for %v over %d conversations, %d turns measured (achieved %.0f turns/s)\n",
			*rate, *duration, *convs, len(r.in), float64(len(r.in))/r.wall.Seconds())
		fmt.Printf("  %-40s %9s %9s %9s\n", "gateway overhead", "p50", "p99", "max")
		row := func(name string, d []time.Duration) {
			fmt.Printf("  %-40s %9s %9s %9s\n", name, fmtDur(pct(d, 50)), fmtDur(pct(d, 99)), fmtDur(pct(d, 100)))
		}
		row("(i)  inbound → provider request", r.in)
		row("(ii) provider end → outbound send", r.out)
		sum := make([]time.Duration, len(r.in))
		for i := range sum {
			sum[i] = r.in[i] + r.out[i]
		}
		row("(i)+(ii) per turn", sum)
		row("end to end (inbound → send)", r.total)
		fmt.Printf("  target: p99 ≤ 5ms for each part\n")
	}
	if *serve {
		r, err := measureServe(filepath.Join(tmp, "serve"), *serveRuns, *idle)
		if err != nil {
			log.Fatalf("serve: %v", err)
		}
		fmt.Printf("\nswitchboard serve (web channel, %d starts): start → /readyz 200 median %s (min %s, max %s), target ≤ 100ms\n",
			len(r.ready), fmtDur(pct(r.ready, 50)), fmtDur(pct(r.ready, 0)), fmtDur(pct(r.ready, 100)))
		fmt.Printf("  idle RSS after %v: median %.1f MiB (min %.1f, max %.1f), target ≤ 30 MiB\n", *idle,
			mib(pctI(r.rss, 50)), mib(pctI(r.rss, 0)), mib(pctI(r.rss, 100)))
	}
}

type resultA struct {
	turns        int
	wall, intake time.Duration
}

// phaseA: every conversation's messages injected by its own goroutine, as
// fast as the gateway acknowledges them; throughput is completed turns
// over the wall time from the first injection to the last reply.
func phaseA(dir string, convs, per int, cpuprofile, goroutineDump string) (resultA, error) {
	want := convs * per
	ad := newAdapter()
	ad.expect(want)
	st, err := newStack(dir, ad, echo, nil)
	if err != nil {
		return resultA{}, err
	}
	defer st.close()
	ctx := context.Background()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return resultA{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return resultA{}, err
		}
		defer pprof.StopCPUProfile()
	}
	if goroutineDump != "" {
		t := time.AfterFunc(5*time.Second, func() {
			if f, err := os.Create(goroutineDump); err == nil {
				_ = pprof.Lookup("goroutine").WriteTo(f, 1)
				f.Close()
			}
		})
		defer t.Stop()
	}
	start := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for c := range convs {
		wg.Go(func() {
			for m := range per {
				if err := ad.inbound(ctx, c, fmt.Sprintf("c%d m%d", c, m)); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	intake := time.Since(start)
	if p := firstErr.Load(); p != nil {
		return resultA{}, *p
	}
	if err := ad.wait(ctx, 10*time.Minute); err != nil {
		return resultA{}, err
	}
	wall := time.Since(start)
	if err := ad.checkOrder(convs, per); err != nil {
		return resultA{}, err
	}
	return resultA{turns: want, wall: wall, intake: intake}, nil
}

type resultB struct {
	in, out, total []time.Duration
	wall           time.Duration
}

// phaseB: after a warm-up turn in every conversation (so that each is
// bound and has its system prompt), messages are injected open-loop at
// rate, round-robin over the conversations, each OnInbound on its own
// goroutine at its scheduled instant.
func phaseB(dir string, convs int, rate float64, duration time.Duration) (resultB, error) {
	ad := newAdapter()
	tr := newTimings()
	ad.onSend = tr.sent
	st, err := newStack(dir, ad, tr.respond, tr.providerEnd)
	if err != nil {
		return resultB{}, err
	}
	defer st.close()
	ctx := context.Background()

	// Warm-up: one turn per conversation, not measured.
	ad.expect(convs)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for c := range convs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := ad.inbound(ctx, c, fmt.Sprintf("warm-up %d", c)); err != nil {
				log.Printf("warm-up: %v", err)
			}
		})
	}
	wg.Wait()
	if err := ad.wait(ctx, 5*time.Minute); err != nil {
		return resultB{}, fmt.Errorf("warm-up: %w", err)
	}

	n := int(rate * duration.Seconds())
	tr.arm(n)
	ad.expect(n)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var errs atomic.Int64
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			tr.inbound(i, time.Now())
			if err := ad.inbound(ctx, i%convs, key(i)); err != nil {
				errs.Add(1)
				log.Printf("inbound %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if errs.Load() > 0 {
		return resultB{}, fmt.Errorf("%d inbound calls failed", errs.Load())
	}
	if err := ad.wait(ctx, 5*time.Minute); err != nil {
		return resultB{}, err
	}
	wall := time.Since(start)
	return tr.result(wall)
}

func containsRune(s string, r rune) bool { return slices.Contains([]rune(s), r) }

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func pctI(v []int64, p float64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p/100)]
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Millisecond).String()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/bench/internal/loadmodel"
	"github.com/switchboard-gw/switchboard/channels"
)

// phaseA: every conversation's messages injected by its own goroutine, as
// fast as the gateway acknowledges them; throughput is completed turns
// over the wall time from the first injection to the last reply.
func phaseA(dir, modelURL string, c config) error {
	want := c.convs * c.per
	ad := newAdapter(false)
	ad.record = true
	st, err := newStack(dir, ad, stackOptions{modelURL: modelURL})
	if err != nil {
		return err
	}
	defer st.close()
	ctx := context.Background()
	before := sampleDB(st.db)
	stop := cpuProfile(c.cpuprofile)
	cpu := startCPU(c.modelPID)
	start := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for conv := range c.convs {
		wg.Go(func() {
			for m := range c.per {
				if err := ad.inbound(ctx, conv, fmt.Sprintf("m%d", m), fmt.Sprintf("c%d m%d", conv, m)); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	intake := time.Since(start)
	if p := firstErr.Load(); p != nil {
		return *p
	}
	if err := ad.waitSent(ctx, want, 10*time.Minute); err != nil {
		return err
	}
	wall := time.Since(start)
	stop()
	if err := ad.checkOrder(c.convs, c.per); err != nil {
		return err
	}
	after := sampleDB(st.db)
	fmt.Printf("\nphase a (saturation): %d conversations × %d messages = %d turns in %v\n", c.convs, c.per, want, wall.Round(time.Millisecond))
	fmt.Printf("  throughput          %8.0f turns/s   (target ≥ 2000 with -model proc)\n", float64(want)/wall.Seconds())
	fmt.Printf("  intake only         %8.0f msgs/s    (all messages acknowledged after %v)\n", float64(want)/intake.Seconds(), intake.Round(time.Millisecond))
	fmt.Printf("  %s\n", cpu.per(want))
	fmt.Printf("  %s\n", perTurn(before, after, want))
	fmt.Printf("      (includes creating the %d conversations: %.1f turns each)\n", c.convs, float64(c.per))
	fmt.Printf("  memory after: %s\n", sampleMem())
	return nil
}

// phaseB: after a warm-up turn in every conversation (so that each is
// bound and has its system prompt), messages are injected open-loop at
// rate, round-robin over the conversations, each OnInbound on its own
// goroutine at its scheduled instant.
func phaseB(dir, modelURL string, c config) error {
	ad := newAdapter(false)
	tr := &timings{}
	ad.onSend = func(_ channels.Location, _ channels.Message, text string, at time.Time) { tr.sent(text, at) }
	st, err := newStack(dir, ad, stackOptions{modelURL: modelURL, onEnd: tr.providerEnd})
	if err != nil {
		return err
	}
	defer st.close()
	ctx := context.Background()

	// Warm-up: one turn per conversation, not measured.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for conv := range c.convs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := ad.inbound(ctx, conv, "warm", fmt.Sprintf("warm-up %d", conv)); err != nil {
				log.Printf("warm-up: %v", err)
			}
		})
	}
	wg.Wait()
	if err := ad.waitSent(ctx, c.convs, 5*time.Minute); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	n := int(c.rate * c.duration.Seconds())
	tr.arm(n)
	before := sampleDB(st.db)
	sent0, _ := ad.counts()
	stop := cpuProfile(suffixed(c.cpuprofile, "b"))
	cpu := startCPU(c.modelPID)
	interval := time.Duration(float64(time.Second) / c.rate)
	start := time.Now()
	var errs atomic.Int64
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			tr.inbound(i, time.Now())
			if err := ad.inbound(ctx, i%c.convs, key(i), key(i)); err != nil {
				errs.Add(1)
				log.Printf("inbound %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if errs.Load() > 0 {
		return fmt.Errorf("%d inbound calls failed", errs.Load())
	}
	if err := ad.waitSent(ctx, sent0+n, 5*time.Minute); err != nil {
		return err
	}
	wall := time.Since(start)
	stop()
	// MarkSent follows the send: let the last ones land before counting.
	time.Sleep(200 * time.Millisecond)
	after := sampleDB(st.db)
	r, err := tr.result()
	if err != nil {
		return err
	}
	fmt.Printf("\nphase b (offered load): %.0f turns/s for %v over %d conversations, %d turns measured (achieved %.0f turns/s)\n",
		c.rate, c.duration, c.convs, len(r.in), float64(len(r.in))/wall.Seconds())
	fmt.Printf("  %-40s %9s %9s %9s\n", "gateway overhead", "p50", "p99", "max")
	row := func(name string, d []time.Duration) {
		fmt.Printf("  %-40s %9s %9s %9s\n", name, fmtDur(pct(d, 50)), fmtDur(pct(d, 99)), fmtDur(pct(d, 100)))
	}
	row("(i)  inbound → model request", r.in)
	row("(ii) model end → outbound send", r.out)
	sum := make([]time.Duration, len(r.in))
	for i := range sum {
		sum[i] = r.in[i] + r.out[i]
	}
	row("(i)+(ii) per turn", sum)
	row("end to end (inbound → send)", r.total)
	fmt.Printf("  target: p99 ≤ 5ms for each part\n")
	fmt.Printf("  %s\n", perTurn(before, after, n))
	fmt.Printf("  %s\n", cpu.per(n))
	fmt.Printf("  memory after: %s\n", sampleMem())
	return nil
}

// timings collects phase B's instants per message key: the request
// instant comes from the answer's stamp (the model's clock: same machine).
type timings struct {
	mu                     sync.Mutex
	armed                  bool
	in, req, end, sendTime []time.Time
}

func (t *timings) arm(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed = true
	t.in, t.req, t.end, t.sendTime = make([]time.Time, n), make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
}

func (t *timings) set(s []time.Time, k int, at time.Time) {
	if t.armed && k >= 0 && k < len(s) && s[k].IsZero() {
		s[k] = at
	}
}

func (t *timings) inbound(k int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set(t.in, k, at)
}

func (t *timings) providerEnd(k int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set(t.end, k, at)
}

func (t *timings) sent(text string, at time.Time) {
	k, ok := keyOf([]byte(text))
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set(t.sendTime, k, at)
	if ns := loadmodel.Stamp(text); ns > 0 {
		t.set(t.req, k, time.Unix(0, ns))
	}
}

type resultB struct{ in, out, total []time.Duration }

func (t *timings) result() (resultB, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r resultB
	for k := range t.in {
		if t.in[k].IsZero() || t.req[k].IsZero() || t.end[k].IsZero() || t.sendTime[k].IsZero() {
			return resultB{}, fmt.Errorf("message %d has incomplete timings (in %v, request %v, end %v, send %v)",
				k, !t.in[k].IsZero(), !t.req[k].IsZero(), !t.end[k].IsZero(), !t.sendTime[k].IsZero())
		}
		r.in = append(r.in, t.req[k].Sub(t.in[k]))
		r.out = append(r.out, t.sendTime[k].Sub(t.end[k]))
		r.total = append(r.total, t.sendTime[k].Sub(t.in[k]))
	}
	return r, nil
}

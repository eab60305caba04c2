package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// soakOptions configure the soak: a constant mixed load on one gateway.
type soakOptions struct {
	Duration time.Duration
	// Rate is the offered load in messages per second (default 40): of
	// them 55% text turns in a pool of active conversations, 15% tool
	// turns (Bash ls) there, 10% asks (each in a new conversation, decided
	// by a button press DecideAfter later, alternately approved and
	// denied) and 20% first messages of new conversations. Every new
	// conversation then stays idle for good.
	Rate        float64
	Active      int           // active conversations (default 200)
	DecideAfter time.Duration // default 3s
	// Every is the sampling interval (default: Duration/60, at least 1s).
	Every time.Duration
	CSV   string    // write the samples here
	Log   io.Writer // progress lines; nil: none
}

// soakSample is one sample of the soak.
type soakSample struct {
	At    time.Duration // since the start
	Mem   memSample
	Turns int64 // messages answered so far
	Idle  int64 // conversations that went idle
	Asks  int64 // asks decided
	DB    int64 // database bytes
}

type soakResult struct {
	opts    soakOptions
	samples []soakSample
	sent    int64
	errs    int64
}

// runSoak runs the mixed load for o.Duration and samples memory and
// goroutines (after a GC) every o.Every.
func runSoak(ctx context.Context, dir, modelURL string, o soakOptions) (soakResult, error) {
	if o.Rate <= 0 {
		o.Rate = 40
	}
	if o.Active <= 0 {
		o.Active = 200
	}
	if o.DecideAfter <= 0 {
		o.DecideAfter = 3 * time.Second
	}
	if o.Every <= 0 {
		o.Every = max(time.Second, o.Duration/60)
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format, args...)
		}
	}
	ad := newAdapter(true)
	var asks soakAsks
	ad.onSend = asks.seen
	st, err := newStack(dir, ad, stackOptions{modelURL: modelURL})
	if err != nil {
		return soakResult{}, err
	}
	defer st.close()

	res := soakResult{opts: o}
	var wg sync.WaitGroup
	var errs, idle, decided, sent atomic.Int64
	start := time.Now()
	deadline := start.Add(o.Duration)
	interval := time.Duration(float64(time.Second) / o.Rate)
	rng := rand.New(rand.NewPCG(1, 2))
	nextIdle := o.Active
	stopSampling := make(chan struct{})
	samplingDone := make(chan struct{})
	// Goroutines come and go with the turns in flight: a sample keeps the
	// fewest seen since the last one (every 20ms), the floor a leak
	// would raise.
	floor := math.MaxInt
	sample := func() soakSample {
		s, _ := ad.counts()
		m := sampleMem()
		m.Goroutines = min(m.Goroutines, floor)
		floor = math.MaxInt
		return soakSample{At: time.Since(start), Mem: m, Turns: int64(s), Idle: idle.Load(), Asks: decided.Load(), DB: sampleDB(st.db).size}
	}
	go func() {
		defer close(samplingDone)
		t := time.NewTicker(o.Every)
		defer t.Stop()
		fast := time.NewTicker(20 * time.Millisecond)
		defer fast.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-fast.C:
				floor = min(floor, runtime.NumGoroutine())
				continue
			case <-t.C:
			}
			s := sample()
			res.samples = append(res.samples, s)
			logf("  %6s  %s, %d sends, %d idle conversations, %d asks decided, db %.1f MiB\n",
				s.At.Round(time.Second), s.Mem, s.Turns, s.Idle, s.Asks, mib(s.DB))
		}
	}()

	for i := 0; time.Now().Before(deadline); i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		// Decisions that are due: press the button, as the requester.
		for _, a := range asks.due(time.Now().Add(-o.DecideAfter)) {
			wg.Go(func() {
				_, err := ad.handler.OnAction(ctx, channels.Action{Token: a.token, User: user(a.conv), Location: location(a.conv)})
				if err != nil {
					errs.Add(1)
				}
				decided.Add(1)
			})
		}
		r := rng.Float64()
		conv, text := rng.IntN(o.Active), "text "+strconv.Itoa(i)
		switch {
		case r < 0.15:
			text = "tool " + strconv.Itoa(i)
		case r < 0.25:
			// In a conversation of its own, so no later message there
			// settles the ask before the button is pressed; it goes idle
			// once answered.
			text = "ask " + strconv.Itoa(i)
			conv = nextIdle
			nextIdle++
			idle.Add(1)
		case r < 0.45:
			conv = nextIdle
			nextIdle++
			idle.Add(1)
		}
		sent.Add(1)
		wg.Go(func() {
			if err := ad.inbound(ctx, conv, strconv.Itoa(i), text); err != nil {
				errs.Add(1)
			}
		})
	}
	close(stopSampling)
	<-samplingDone
	wg.Wait()
	res.sent, res.errs = sent.Load(), errs.Load()
	if o.CSV != "" {
		if err := writeSoakCSV(o.CSV, res.samples); err != nil {
			return res, err
		}
	}
	if res.errs > 0 {
		return res, fmt.Errorf("%d of %d inbound calls or button presses failed", res.errs, res.sent)
	}
	return res, nil
}

// soakAsks remembers the Approve/Deny tokens of the asks posted, until
// they are pressed.
type soakAsks struct {
	mu    sync.Mutex
	n     int
	queue []soakAsk
}

type soakAsk struct {
	conv  int
	token string
	at    time.Time
}

// seen picks the token of an approval message: Approve for even asks,
// Deny for odd ones.
func (s *soakAsks) seen(loc channels.Location, m channels.Message, _ string, at time.Time) {
	conv, err := strconv.Atoi(strings.TrimPrefix(loc.ChatID, "user-"))
	if err != nil {
		return
	}
	for _, p := range m.Parts {
		b, ok := p.(channels.Buttons)
		if !ok || len(b.Rows) == 0 || len(b.Rows[0]) < 2 {
			continue
		}
		s.mu.Lock()
		pick := b.Rows[0][s.n%2] // row 0: Approve, Deny
		s.n++
		s.queue = append(s.queue, soakAsk{conv: conv, token: pick.Token, at: at})
		s.mu.Unlock()
	}
}

// due takes the asks posted before t.
func (s *soakAsks) due(t time.Time) []soakAsk {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.queue) && s.queue[i].at.Before(t) {
		i++
	}
	out := append([]soakAsk(nil), s.queue[:i]...)
	s.queue = s.queue[i:]
	return out
}

func writeSoakCSV(path string, samples []soakSample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"seconds", "rss_mib", "heap_mib", "heap_held_mib", "goroutines_floor", "sends", "idle_conversations", "asks_decided", "db_mib"})
	for _, s := range samples {
		_ = w.Write([]string{
			strconv.FormatFloat(s.At.Seconds(), 'f', 1, 64),
			strconv.FormatFloat(mib(s.Mem.RSS), 'f', 2, 64),
			strconv.FormatFloat(mib(s.Mem.Heap), 'f', 2, 64),
			strconv.FormatFloat(mib(s.Mem.HeapSys), 'f', 2, 64),
			strconv.Itoa(s.Mem.Goroutines),
			strconv.FormatInt(s.Turns, 10),
			strconv.FormatInt(s.Idle, 10),
			strconv.FormatInt(s.Asks, 10),
			strconv.FormatFloat(mib(s.DB), 'f', 2, 64),
		})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// trend fits y = a + b·t over the second half of the samples (least
// squares) and returns the mean and the change the fit predicts over that
// half.
func trend(samples []soakSample, y func(soakSample) float64) (mean, change float64) {
	half := samples[len(samples)/2:]
	n := float64(len(half))
	if n < 2 {
		return 0, 0
	}
	var st, sy, stt, sty float64
	for _, s := range half {
		t, v := s.At.Seconds(), y(s)
		st, sy, stt, sty = st+t, sy+v, stt+t*t, sty+t*v
	}
	mean = sy / n
	den := n*stt - st*st
	if den == 0 {
		return mean, 0
	}
	slope := (n*sty - st*sy) / den
	span := half[len(half)-1].At.Seconds() - half[0].At.Seconds()
	return mean, slope * span
}

// Tolerances of the flatness check over the second half: the growth the
// trend predicts may be at most this share of the mean, or this floor.
const (
	heapTolerance      = 0.10
	heapFloor          = 2 << 20 // bytes
	goroutineTolerance = 0.15
	goroutineFloor     = 15
)

func (r soakResult) heapTrend() (mean, change float64) {
	return trend(r.samples, func(s soakSample) float64 { return float64(s.Mem.Heap) })
}

func (r soakResult) goroutineTrend() (mean, change float64) {
	return trend(r.samples, func(s soakSample) float64 { return float64(s.Mem.Goroutines) })
}

func (r soakResult) rssTrend() (mean, change float64) {
	return trend(r.samples, func(s soakSample) float64 { return float64(s.Mem.RSS) })
}

// flat reports whether heap after GC and goroutines stayed flat over the
// second half, within the tolerances.
func (r soakResult) flat() bool {
	hm, hc := r.heapTrend()
	gm, gc := r.goroutineTrend()
	return len(r.samples) >= 4 && hc <= math.Max(heapTolerance*hm, heapFloor) && gc <= math.Max(goroutineTolerance*gm, goroutineFloor)
}

func (r soakResult) report() string {
	var b strings.Builder
	hm, hc := r.heapTrend()
	gm, gc := r.goroutineTrend()
	rm, rc := r.rssTrend()
	fmt.Fprintf(&b, "\nsoak: %v at %.0f messages/s, %d messages, %d samples\n", r.opts.Duration, r.opts.Rate, r.sent, len(r.samples))
	if n := len(r.samples); n > 0 {
		last := r.samples[n-1]
		fmt.Fprintf(&b, "  at the end: %s, %d idle conversations, %d asks decided, database %.1f MiB\n", last.Mem, last.Idle, last.Asks, mib(last.DB))
	}
	fmt.Fprintf(&b, "  trend over the second half (least squares):\n")
	fmt.Fprintf(&b, "    heap after GC  mean %7.2f MiB  change %+7.2f MiB  (allowed %+.2f)\n", mib(int64(hm)), hc/(1<<20), math.Max(heapTolerance*hm, heapFloor)/(1<<20))
	fmt.Fprintf(&b, "    goroutines     mean %7.1f      change %+7.1f      (allowed %+.1f)\n", gm, gc, math.Max(goroutineTolerance*gm, goroutineFloor))
	fmt.Fprintf(&b, "    RSS            mean %7.2f MiB  change %+7.2f MiB  (reported only)\n", mib(int64(rm)), rc/(1<<20))
	verdict := "flat"
	if !r.flat() {
		verdict = "NOT flat"
	}
	fmt.Fprintf(&b, "  verdict: %s\n", verdict)
	return b.String()
}

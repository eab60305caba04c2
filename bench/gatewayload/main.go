// Command gatewayload measures the gateway with the real stack in one
// process: the sqlite store on a temp file, agentcore with the OpenAI
// provider against the scripted model (bench/internal/loadmodel; with
// -model proc it runs in its own process, bench/fakemodel-server, so its
// CPU and memory are not the gateway's), and gateway.New with a light
// in-memory adapter. Every phase reports write transactions and database
// bytes per turn (store.DB.Stats and Size) and the process's memory (RSS,
// live heap after a GC, goroutines). The machine is shared: figures are
// as good as the load other processes leave.
//
// Phases (-phases, comma-separated; "ab" still means a,b):
//
//	a      saturation: -convs conversations × -per messages as fast as
//	       possible; completed turns per second.
//	b      offered load: -rate turns/s for -duration over the conversations;
//	       p50/p99 of the gateway's overhead (inbound → model request,
//	       model end → send).
//	idle   -idle conversations get one message each and go idle: RSS,
//	       heap and goroutines above a fresh start.
//	park   -park conversations each park one approval: asks parked per
//	       second, memory holding them; then a fresh process (this
//	       command, -phases decide) opens the same data, checks every one
//	       is pending with its message and buttons, and decides -decide of
//	       them (half approved, half denied), waiting for each answer.
//	soak   a constant mixed load for -duration (see soak.go); -csv writes
//	       the samples.
//
//	go run ./bench/gatewayload -model proc -phases a,b -convs 1000 -per 10 -rate 200 -duration 10s
//	go run ./bench/gatewayload -model proc -phases idle,park -idle 10000 -park 100000
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
	"strings"
	"time"
)

type config struct {
	model      string
	convs, per int
	rate       float64
	duration   time.Duration
	idle       int
	park       int
	decide     int
	parallel   int
	idleWait   time.Duration
	data       string
	csv        string
	cpuprofile string
	memprofile string
	modelPID   int // the model's process, for its CPU time (-model proc)
}

func main() {
	var c config
	flag.StringVar(&c.model, "model", "inproc", "where the fake model runs: inproc, or proc (its own process)")
	flag.IntVar(&c.convs, "convs", 1000, "conversations (phases a, b)")
	flag.IntVar(&c.per, "per", 10, "messages per conversation in phase a")
	flag.Float64Var(&c.rate, "rate", 200, "offered load of phase b, turns/s")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of phase b and of the soak")
	flag.IntVar(&c.idle, "idle", 10000, "conversations that go idle (phase idle)")
	flag.IntVar(&c.park, "park", 100000, "conversations that park an approval (phase park)")
	flag.IntVar(&c.decide, "decide", 100, "parked approvals decided after the restart (phase park)")
	flag.IntVar(&c.parallel, "parallel", 128, "messages in flight at once (phases idle, park)")
	flag.DurationVar(&c.idleWait, "idle-for", 30*time.Second, "how long the conversations stay idle before phase idle samples memory")
	flag.StringVar(&c.data, "data", "", "data directory to keep (default: a temporary one, removed)")
	flag.StringVar(&c.csv, "csv", "", "write the soak's samples to this CSV file")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of phase a (or park) to this file, and phase b's to it with -b before the extension")
	flag.StringVar(&c.memprofile, "memprofile", "", "write a heap profile at the end of each phase to this file")
	memRate := flag.Int("memprofilerate", 0, "runtime.MemProfileRate for -memprofile (0: the default, one sample per 512 KiB)")
	phases := flag.String("phases", "ab", "phases to run: a, b, idle, park, decide, soak (comma-separated)")
	serve := flag.Bool("serve", false, "also build and measure `switchboard serve` (start to ready, idle RSS)")
	serveRuns := flag.Int("serve-runs", 5, "serve starts to take the median of")
	idleWait := flag.Duration("idle-wait", 3*time.Second, "idle time before reading serve's RSS")
	flag.Parse()
	if *memRate > 0 {
		runtime.MemProfileRate = *memRate
	}

	tmp := c.data
	if tmp == "" {
		var err error
		if tmp, err = os.MkdirTemp("", "gatewayload-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
	}
	fmt.Printf("GOMAXPROCS=%d, %s, model %s\n", runtime.GOMAXPROCS(0), runtime.Version(), c.model)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average at start: %s", b)
	}

	modelURL := ""
	if c.model == "proc" {
		prof := ""
		if c.cpuprofile != "" {
			prof = c.cpuprofile + "-model"
		}
		m, err := startModel(tmp, prof)
		if err != nil {
			log.Fatal(err)
		}
		defer m.close()
		modelURL = m.url
		c.modelPID = m.cmd.Process.Pid
	} else if c.model != "inproc" && c.model != "proc" {
		log.Fatalf("-model %q: use inproc or proc", c.model)
	}

	for _, p := range splitPhases(*phases) {
		dir := filepath.Join(tmp, p)
		var err error
		switch p {
		case "a":
			err = phaseA(dir, modelURL, c)
		case "b":
			err = phaseB(dir, modelURL, c)
		case "idle":
			err = phaseIdle(dir, modelURL, c)
		case "park":
			err = phasePark(dir, modelURL, c)
		case "decide":
			err = phaseDecide(dir, modelURL, c)
		case "soak":
			var r soakResult
			r, err = runSoak(context.Background(), dir, modelURL, soakOptions{Duration: c.duration, CSV: c.csv, Log: os.Stdout})
			if err == nil {
				fmt.Print(r.report())
				if !r.flat() {
					err = fmt.Errorf("soak: memory or goroutines not flat over the second half")
				}
			}
		default:
			err = fmt.Errorf("unknown phase %q", p)
		}
		if err != nil {
			log.Fatalf("phase %s: %v", p, err)
		}
		writeHeapProfile(c.memprofile, p)
	}
	if *serve {
		r, err := measureServe(filepath.Join(tmp, "serve"), *serveRuns, *idleWait)
		if err != nil {
			log.Fatalf("serve: %v", err)
		}
		fmt.Printf("\nswitchboard serve (web channel, %d starts): start → /readyz 200 median %s (min %s, max %s), target ≤ 100ms\n",
			len(r.ready), fmtDur(pct(r.ready, 50)), fmtDur(pct(r.ready, 0)), fmtDur(pct(r.ready, 100)))
		fmt.Printf("  idle RSS after %v: median %.1f MiB (min %.1f, max %.1f), target ≤ 30 MiB\n", *idleWait,
			mib(pctI(r.rss, 50)), mib(pctI(r.rss, 0)), mib(pctI(r.rss, 100)))
	}
}

func splitPhases(s string) []string {
	if !strings.Contains(s, ",") && strings.Trim(s, "ab") == "" {
		var out []string
		for _, r := range s {
			out = append(out, string(r))
		}
		return out
	}
	return strings.Split(s, ",")
}

func writeHeapProfile(path, phase string) {
	if path == "" {
		return
	}
	f, err := os.Create(suffixed(path, phase))
	if err != nil {
		log.Printf("heap profile: %v", err)
		return
	}
	defer f.Close()
	runtime.GC()
	_ = pprof.WriteHeapProfile(f)
}

// suffixed is path with "-"+s before its extension ("" stays "").
func suffixed(path, s string) string {
	if path == "" {
		return ""
	}
	return strings.TrimSuffix(path, filepath.Ext(path)) + "-" + s + filepath.Ext(path)
}

// cpuProfile starts a CPU profile when path is set; stop ends it.
func cpuProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		log.Printf("cpu profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		log.Printf("cpu profile: %v", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

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

func sortStrings(s []string) { slices.Sort(s) }

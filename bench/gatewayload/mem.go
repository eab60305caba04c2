package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/switchboard-gw/switchboard/store"
)

// memSample is this process's memory at one instant.
type memSample struct {
	RSS        int64 // VmRSS
	Heap       int64 // live heap (HeapAlloc) right after a GC
	HeapSys    int64 // heap memory obtained from the OS (HeapSys - HeapReleased)
	Goroutines int
}

// sampleMem forces a GC (so Heap is what is live, not what awaits
// collection) and reads the process's memory.
func sampleMem() memSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, _ := vmRSS(os.Getpid())
	return memSample{RSS: rss, Heap: int64(ms.HeapAlloc), HeapSys: int64(ms.HeapSys - ms.HeapReleased), Goroutines: runtime.NumGoroutine()}
}

func (m memSample) String() string {
	return fmt.Sprintf("RSS %.1f MiB, heap %.1f MiB live (%.1f MiB held), %d goroutines", mib(m.RSS), mib(m.Heap), mib(m.HeapSys), m.Goroutines)
}

// vmRSS reads the resident set size of a process from /proc (Linux).
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// dbSample is the store's counters and size at one instant.
type dbSample struct {
	st   store.Stats
	size int64
}

func sampleDB(db *store.DB) dbSample {
	size, _ := db.Size(context.Background())
	return dbSample{st: db.Stats(), size: size}
}

// perTurn reports what the store did between two samples, per turn.
func perTurn(from, to dbSample, turns int) string {
	n := float64(turns)
	w := to.st.Writes - from.st.Writes
	c := to.st.Commits - from.st.Commits
	var by []string
	for k, v := range to.st.ByMethod {
		if d := v - from.st.ByMethod[k]; d > 0 {
			by = append(by, fmt.Sprintf("%s %.2f", k, float64(d)/n))
		}
	}
	sortStrings(by)
	return fmt.Sprintf("write transactions %.2f/turn (commits %.2f/turn: group commit), database %.0f B/turn\n      by method: %s",
		float64(w)/n, float64(c)/n, float64(to.size-from.size)/n, strings.Join(by, ", "))
}

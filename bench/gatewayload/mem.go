package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/store"
)

// memSample is this process's memory at one instant.
type memSample struct {
	RSS        int64 // VmRSS
	Anon, File int64 // RssAnon; RssFile + RssShmem (the program's pages, sqlite's shared WAL index)
	Heap       int64 // live heap (HeapAlloc) right after a GC
	HeapSys    int64 // heap memory obtained from the OS (HeapSys - HeapReleased)
	GoSys      int64 // everything the Go runtime holds (Sys - HeapReleased): the rest of RSS is sqlite's memory and the program's pages
	Goroutines int
}

// sampleMem forces a GC (so Heap is what is live, not what awaits
// collection) and reads the process's memory.
func sampleMem() memSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, _ := vmRSS(os.Getpid())
	anon, _ := procStatus(os.Getpid(), "RssAnon:")
	file, _ := procStatus(os.Getpid(), "RssFile:")
	shm, _ := procStatus(os.Getpid(), "RssShmem:")
	return memSample{RSS: rss, Anon: anon, File: file + shm, Heap: int64(ms.HeapAlloc), HeapSys: int64(ms.HeapSys - ms.HeapReleased),
		GoSys: int64(ms.Sys - ms.HeapReleased), Goroutines: runtime.NumGoroutine()}
}

func (m memSample) String() string {
	return fmt.Sprintf("RSS %.1f MiB (anonymous %.1f: Go runtime %.1f; file %.1f), heap %.1f MiB live (%.1f MiB held), %d goroutines", mib(m.RSS), mib(m.Anon), mib(m.GoSys), mib(m.File), mib(m.Heap), mib(m.HeapSys), m.Goroutines)
}

// vmRSS reads the resident set size of a process from /proc (Linux).
func vmRSS(pid int) (int64, error) { return procStatus(pid, "VmRSS:") }

// procStatus reads one "kB" field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
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

// cpuTime is the CPU time (user + system) a process used so far, from
// /proc/PID/stat; 0 when it cannot be read.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks
}

// cpuMeter measures the CPU this process and the model's used.
type cpuMeter struct {
	modelPID         int
	startSelf, start time.Duration
}

func startCPU(modelPID int) *cpuMeter {
	m := &cpuMeter{modelPID: modelPID}
	m.startSelf = cpuTime(os.Getpid())
	if modelPID > 0 {
		m.start = cpuTime(modelPID)
	}
	return m
}

// per reports the CPU per turn since start, and the turns per second two
// idle cores would allow at that cost (the machine is shared: the
// measured throughput is what other processes left).
func (m *cpuMeter) per(turns int) string {
	self := cpuTime(os.Getpid()) - m.startSelf
	model := time.Duration(0)
	if m.modelPID > 0 {
		model = cpuTime(m.modelPID) - m.start
	}
	n := float64(turns)
	per := float64(self+model) / n
	s := fmt.Sprintf("CPU per turn: gateway %.2f ms", float64(self)/n/1e6)
	if m.modelPID > 0 {
		s += fmt.Sprintf(", model fake %.2f ms", float64(model)/n/1e6)
	}
	if per > 0 {
		s += fmt.Sprintf(" (two idle cores: about %.0f turns/s at this cost)", 2*float64(time.Second)/per)
	}
	return s
}

// totalAlloc is the bytes the Go heap has allocated since the start.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

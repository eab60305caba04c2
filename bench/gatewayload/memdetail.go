package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"unsafe"

	"modernc.org/libc"
)

// memDetail says where the anonymous memory is: the Go runtime's classes
// (runtime/metrics, mapped, not all resident) and the resident anonymous
// memory inside and outside the Go heap's arena (outside: sqlite's heap,
// modernc.org/libc's allocator, which keeps freed regions for reuse, and
// the runtime's off-heap metadata).
func memDetail() string {
	names := []string{
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/heap/unused:bytes",
		"/memory/classes/heap/free:bytes",
		"/memory/classes/heap/stacks:bytes",
		"/memory/classes/os-stacks:bytes",
		"/memory/classes/metadata/other:bytes",
		"/memory/classes/metadata/mspan/inuse:bytes",
		"/memory/classes/metadata/mcache/inuse:bytes",
		"/memory/classes/other:bytes",
		"/memory/classes/profiling/buckets:bytes",
		"/sched/goroutines:goroutines",
	}
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	var b strings.Builder
	for _, x := range s {
		short := strings.TrimPrefix(strings.TrimPrefix(x.Name, "/memory/classes/"), "/sched/")
		short = short[:strings.IndexByte(short, ':')]
		if x.Value.Kind() == metrics.KindUint64 {
			v := x.Value.Uint64()
			if strings.HasSuffix(x.Name, ":bytes") {
				fmt.Fprintf(&b, "%s %.2f, ", short, float64(v)/(1<<20))
			} else {
				fmt.Fprintf(&b, "%s %d, ", short, v)
			}
		}
	}
	in, out := anonSplit()
	fmt.Fprintf(&b, "anon in Go arenas %.2f MiB, outside %.2f MiB", float64(in)/(1<<20), float64(out)/(1<<20))
	// Zero unless built with -tags memory.counters.
	if st := libc.MemStat(); st.Mmaps > 0 {
		fmt.Fprintf(&b, ", libc allocator: %.2f MiB mapped in %d regions, %d allocations", float64(st.Bytes)/(1<<20), st.Mmaps, st.Allocs)
	}
	return b.String()
}

// heapProbe is an object on the Go heap (too large for a stack or the
// data segment): the mapping that holds it is the heap's arena.
var heapProbe = make([]byte, 64<<10)

// anonSplit sums the resident anonymous memory of the mappings in and
// outside the Go heap's arena (/proc/self/smaps).
func anonSplit() (in, out int64) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	probe := uint64(uintptr(unsafe.Pointer(&heapProbe[0])))
	sc := bufio.NewScanner(f)
	var goArena bool
	for sc.Scan() {
		line := sc.Text()
		if fs := strings.Fields(line); len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			lohi := strings.SplitN(fs[0], "-", 2)
			lo, _ := strconv.ParseUint(lohi[0], 16, 64)
			hi, _ := strconv.ParseUint(lohi[1], 16, 64)
			goArena = probe >= lo && probe < hi
			continue
		}
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if goArena {
				in += kb << 10
			} else {
				out += kb << 10
			}
		}
	}
	return in, out
}

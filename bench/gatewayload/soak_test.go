package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestSoak runs the soak for $SWITCHBOARD_SOAK (e.g. 2m; unset: skipped,
// so `make test` does not run it) with the model in its own process, and
// fails when the live heap after GC or the goroutine count grows over the
// second half beyond the tolerances; RSS is reported only.
// $SWITCHBOARD_SOAK_CSV, when set, receives the samples. Run it without
// the race detector: it measures memory.
func TestSoak(t *testing.T) {
	d := os.Getenv("SWITCHBOARD_SOAK")
	if d == "" {
		t.Skip("set SWITCHBOARD_SOAK=2m to run the soak")
	}
	dur, err := time.ParseDuration(d)
	if err != nil || dur < 20*time.Second {
		t.Fatalf("SWITCHBOARD_SOAK=%q: want a duration of at least 20s (e.g. 2m)", d)
	}
	m, err := startModel(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	res, err := runSoak(t.Context(), t.TempDir(), m.url, soakOptions{Duration: dur, CSV: os.Getenv("SWITCHBOARD_SOAK_CSV"), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.report())
	if !res.flat() {
		t.Fatal("heap after GC or goroutines grew over the second half of the soak (see the trend above)")
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSoakVerdict checks the flatness analysis on made-up samples: noise
// around a level is flat; a steady rise, or a jump in the second half, is
// not.
func TestSoakVerdict(t *testing.T) {
	series := func(f func(i int) (heap int64, goroutines int)) soakResult {
		var r soakResult
		for i := range 60 {
			h, g := f(i)
			r.samples = append(r.samples, soakSample{At: time.Duration(i) * time.Second, Mem: memSample{Heap: h, Goroutines: g}})
		}
		return r
	}
	const mb = 1 << 20
	tests := []struct {
		name string
		r    soakResult
		flat bool
	}{
		{"noise", series(func(i int) (int64, int) { return 30*mb + int64(i%3)*mb, 100 + i%7 }), true},
		{"rise in the first half only", series(func(i int) (int64, int) { return int64(min(i, 30)) * mb, 100 }), true},
		{"heap leak", series(func(i int) (int64, int) { return 30*mb + int64(i)*mb/4, 100 }), false},
		{"goroutine leak", series(func(i int) (int64, int) { return 30 * mb, 100 + i }), false},
		{"jump late", series(func(i int) (int64, int) {
			if i > 45 {
				return 40 * mb, 100
			}
			return 30 * mb, 100
		}), false},
	}
	for _, tc := range tests {
		if got := tc.r.flat(); got != tc.flat {
			t.Errorf("%s: flat = %v, want %v\n%s", tc.name, got, tc.flat, tc.r.report())
		}
	}
}

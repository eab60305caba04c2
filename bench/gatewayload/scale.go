package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

// settle waits for the gateway to go quiet after a load (workers done,
// outbox delivered: the goroutine count stops falling) and returns the
// memory then.
func settle(base int) memSample {
	var m memSample
	for range 50 {
		m = sampleMem()
		if m.Goroutines <= base+2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the runtime returns freed memory in the background
	return sampleMem()
}

// inject sends n messages, one each to conversations from..from+n-1, with
// parallel in flight, and returns the wall time until the last was
// acknowledged.
func inject(ctx context.Context, ad *adapter, from, n, parallel int, text func(c int) string) (time.Duration, error) {
	start := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	next := atomic.Int64{}
	next.Store(int64(from))
	for range parallel {
		wg.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= from+n || firstErr.Load() != nil {
					return
				}
				if err := ad.inbound(ctx, c, "1", text(c)); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return 0, *p
	}
	return time.Since(start), nil
}

// phaseIdle: a fresh gateway (one warm-up conversation, so the code paths
// are paged in), then -idle conversations one message each, twice; memory
// once they went idle, above the fresh start, and what the second batch
// added to the first (the cost per idle conversation, if any).
func phaseIdle(dir, modelURL string, c config) error {
	ad := newAdapter(false)
	st, err := newStack(dir, ad, stackOptions{modelURL: modelURL})
	if err != nil {
		return err
	}
	defer st.close()
	ctx := context.Background()
	if _, err := inject(ctx, ad, 0, 1, 1, func(int) string { return "warm-up" }); err != nil {
		return err
	}
	if err := ad.waitSent(ctx, 1, time.Minute); err != nil {
		return err
	}
	fresh := settle(0)
	fmt.Printf("\nphase idle: conversations that get one message each and go idle (%d in flight)\n", c.parallel)
	fmt.Printf("  fresh start:        %s\n", fresh)
	fmt.Printf("      %s\n", memDetail())
	// The baseline for the idle-held profile (go tool pprof -base); after
	// the detail above, whose figures its GC would otherwise change.
	writeHeapProfile(c.memprofile, "idle-fresh")
	// Warm: a few hundred turns grow the pools that stay (sqlite's page
	// caches and statements per connection, the runtime's stacks and GC
	// metadata) to their working size.
	const warm = 500
	if _, err := inject(ctx, ad, 1, warm, c.parallel, func(c int) string { return "warm " + strconv.Itoa(c) }); err != nil {
		return err
	}
	if err := ad.waitSent(ctx, 1+warm, 5*time.Minute); err != nil {
		return err
	}
	time.Sleep(c.idleWait)
	st.transport.CloseIdleConnections()
	settle(fresh.Goroutines)
	debug.FreeOSMemory()
	warmed := sampleMem()
	fmt.Printf("  after %d turns:     %s   (idle %v, after debug.FreeOSMemory)\n", warm, warmed, c.idleWait)
	fmt.Printf("      %s\n", memDetail())
	var idle [2]memSample
	for round := range 2 {
		db0 := sampleDB(st.db)
		cpu := startCPU(c.modelPID)
		start := time.Now()
		from := 1 + warm + round*c.idle
		if _, err := inject(ctx, ad, from, c.idle, c.parallel, func(c int) string { return "hello " + strconv.Itoa(c) }); err != nil {
			return err
		}
		if err := ad.waitSent(ctx, from+c.idle, 10*time.Minute); err != nil {
			return err
		}
		wall := time.Since(start)
		db1 := sampleDB(st.db)
		settle(fresh.Goroutines)
		// Idle for a while. The model's idle connections would close
		// after 90s; they are closed now, so every sample is alike.
		alloc0 := totalAlloc()
		time.Sleep(c.idleWait)
		idleAlloc := totalAlloc() - alloc0
		st.transport.CloseIdleConnections()
		idle[round] = settle(fresh.Goroutines)
		if round == 0 {
			// What the idle conversations hold, while the stack still runs.
			writeHeapProfile(c.memprofile, "idle-held")
		}
		debug.FreeOSMemory()
		freed := sampleMem()
		n := (round + 1) * c.idle
		fmt.Printf("  %6d idle, %v later: %s\n", n, c.idleWait, idle[round])
		fmt.Printf("                  allocated while idle: %.1f KiB/s (the idle gateway's churn)\n", float64(idleAlloc)/1024/c.idleWait.Seconds())
		fmt.Printf("                  freed: %s   (after debug.FreeOSMemory: what the runtime returns in time)\n", freed)
		fmt.Printf("      %s\n", memDetail())
		fmt.Printf("    %d turns in %v (%.0f turns/s); %s\n", c.idle, wall.Round(time.Millisecond), float64(c.idle)/wall.Seconds(), cpu.per(c.idle))
		fmt.Printf("    %s\n", perTurn(db0, db1, c.idle))
		fmt.Printf("      (first turns: each creates and binds its conversation)\n")
		idle[round] = freed
	}
	fmt.Printf("  cost of %d idle conversations above the fresh start: RSS %+.1f MiB (target ≤ 5 MiB), live heap %+.1f MiB, goroutines %+d\n",
		c.idle, mib(idle[0].RSS-fresh.RSS), mib(idle[0].Heap-fresh.Heap), idle[0].Goroutines-fresh.Goroutines)
	fmt.Printf("    of which the pools' growth in the first %d turns: RSS %+.1f MiB; the %d conversations after them: RSS %+.1f MiB\n",
		warm, mib(warmed.RSS-fresh.RSS), c.idle, mib(idle[0].RSS-warmed.RSS))
	fmt.Printf("  what %d more added: RSS %+.1f MiB (%+.0f B each), live heap %+.2f MiB (%+.0f B each)\n", c.idle,
		mib(idle[1].RSS-idle[0].RSS), float64(idle[1].RSS-idle[0].RSS)/float64(c.idle),
		mib(idle[1].Heap-idle[0].Heap), float64(idle[1].Heap-idle[0].Heap)/float64(c.idle))
	return nil
}

// phasePark: -park conversations each send "ask N", whose turn parks on an
// approval (a Bash touch, not read-only). Asks parked per second is the
// count over the time until the last approval message was sent. Then the
// data is handed to a fresh process (-phases decide).
func phasePark(dir, modelURL string, c config) error {
	ad := newAdapter(true)
	st, err := newStack(dir, ad, stackOptions{modelURL: modelURL})
	if err != nil {
		return err
	}
	ctx := context.Background()
	fresh := settle(0)
	db0 := sampleDB(st.db)
	stop := cpuProfile(c.cpuprofile)
	cpu := startCPU(c.modelPID)
	start := time.Now()
	intake, err := inject(ctx, ad, 0, c.park, c.parallel, func(c int) string { return "ask " + strconv.Itoa(c) })
	if err != nil {
		st.close()
		return err
	}
	err = ad.waitFor(ctx, 30*time.Minute, fmt.Sprintf("%d approval messages", c.park), func(a *adapter) bool { return a.approvals >= c.park })
	wall := time.Since(start)
	stop()
	if err != nil {
		st.close()
		return err
	}
	// Each ask is followed by the turn's "waiting for approval" reply.
	if err := ad.waitSent(ctx, 2*c.park, 5*time.Minute); err != nil {
		st.close()
		return err
	}
	held := settle(fresh.Goroutines)
	db1 := sampleDB(st.db)
	fmt.Printf("\nphase park: %d conversations each parked one approval in %v (intake acknowledged after %v, %d in flight)\n",
		c.park, wall.Round(time.Millisecond), intake.Round(time.Millisecond), c.parallel)
	fmt.Printf("  asks parked         %8.0f /s   (target ≥ 1000)\n", float64(c.park)/wall.Seconds())
	fmt.Printf("  fresh start:  %s\n", fresh)
	fmt.Printf("  all parked:   %s   (target RSS ≤ 100 MiB)\n", held)
	fmt.Printf("  %s\n", perTurn(db0, db1, c.park))
	fmt.Printf("      (each: a new conversation, its turn, the approval, its buttons and message)\n")
	fmt.Printf("  %s (per ask)\n", cpu.per(c.park))
	st.close()

	// A restart: a fresh process opens the data and decides a sample.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-phases", "decide", "-data", filepath.Dir(dir), "-park", strconv.Itoa(c.park), "-decide", strconv.Itoa(c.decide), "-model", c.model}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the restarted process: %w", err)
	}
	return nil
}

// phaseDecide is the restart of phasePark: it checks that every parked
// approval is still pending with its posted message and buttons, reports
// the memory of a process holding them, and decides a sample through the
// one decide path (half approved: the tool runs; half denied), waiting for
// each turn's answer.
func phaseDecide(dir, modelURL string, c config) error {
	dir = filepath.Join(filepath.Dir(dir), "park")
	ad := newAdapter(true)
	start := time.Now()
	st, err := newStack(dir, ad, stackOptions{modelURL: modelURL})
	if err != nil {
		return err
	}
	defer st.close()
	opened := time.Since(start)
	ctx := context.Background()
	held := settle(0)

	// Read the parked approvals straight from the file.
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "sb.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer raw.Close()
	var pending, withPost, withButtons int
	err = raw.QueryRowContext(ctx, `SELECT COUNT(*),
		COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM approval_posts p WHERE p.approval_id = a.id)),
		COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM buttons b WHERE b.approval_id = a.id AND b.action = 'approve')
			AND EXISTS (SELECT 1 FROM buttons b WHERE b.approval_id = a.id AND b.action = 'deny'))
		FROM approvals a WHERE a.state = 'pending'`).Scan(&pending, &withPost, &withButtons)
	if err != nil {
		return err
	}
	fmt.Printf("\nphase decide (a fresh process on the parked data, opened in %v):\n", opened.Round(time.Millisecond))
	fmt.Printf("  pending approvals %d (want %d), with a posted message %d, with buttons %d\n", pending, c.park, withPost, withButtons)
	fmt.Printf("  holding them: %s\n", held)
	if pending != c.park || withPost != c.park || withButtons != c.park {
		return fmt.Errorf("%d of %d approvals pending (%d posted, %d with buttons)", pending, c.park, withPost, withButtons)
	}
	rows, err := raw.QueryContext(ctx, `SELECT id FROM approvals WHERE state = 'pending' ORDER BY random() LIMIT ?`, c.decide)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()

	sent0, _ := ad.counts()
	var lat []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	begin := time.Now()
	for i, id := range ids {
		action := gateway.ButtonApprove
		if i%2 == 1 {
			action = gateway.ButtonDeny
		}
		wg.Go(func() {
			t := time.Now()
			res, err := st.gw.Decide(ctx, gateway.DecideRequest{ApprovalID: id, Action: action, By: "local:bench", Operator: true})
			if err != nil || !res.Decided || !res.Resumed {
				fmt.Printf("  decide %s: decided %v resumed %v err %v\n", id, res.Decided, res.Resumed, err)
				return
			}
			mu.Lock()
			lat = append(lat, time.Since(t))
			mu.Unlock()
		})
	}
	wg.Wait()
	// Each decision edits the posted message and the resumed turn answers.
	if err := ad.waitSent(ctx, sent0+2*len(ids), 5*time.Minute); err != nil {
		return err
	}
	fmt.Printf("  decided %d of %d sampled (half approve, half deny): every resumed turn answered, in %v (decide call p50 %s, p99 %s)\n",
		len(lat), len(ids), time.Since(begin).Round(time.Millisecond), fmtDur(pct(lat, 50)), fmtDur(pct(lat, 99)))
	if len(lat) != len(ids) {
		return fmt.Errorf("%d of %d decisions did not resume", len(ids)-len(lat), len(ids))
	}
	var left int
	if err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM approvals WHERE state = 'pending'`).Scan(&left); err != nil {
		return err
	}
	fmt.Printf("  pending after: %d\n", left)
	return nil
}

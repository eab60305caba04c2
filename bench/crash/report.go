package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// pct returns the p-th percentile (nearest rank) of ds; 0 for none.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func fmtMS(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

func fmtS(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// summary is the campaign's one line.
func (r *report) summary() string {
	verdict := "PASS"
	if !r.ok() {
		verdict = "FAIL"
	}
	transcript := "valid"
	if !r.transcriptOK {
		transcript = "INVALID"
	}
	return fmt.Sprintf("crash %s seed=%d kills=%d (start-up %d, before ready %d) wall=%s messages=%d (superseded %d) answered=%d lost=%d "+
		"dup=%d (send-then-crash %d, streaming %d, other %d) misplaced=%d "+
		"asks=%d (shown %d, shown twice %d, decided %d, pending %d, old buttons %d/%d, wrong presses refused %d/%d) "+
		"denied-ran=%d ran-twice=%d transcript=%s queue-left=%d outbox-left=%d leftovers=%d "+
		"restart p50/p90/p99/max=%s/%s/%s/%s (n=%d) resume-after-restart p50/max=%s/%s (n=%d) answer p50/p90/max=%s/%s/%s",
		verdict, r.seed, r.kills, r.startupKills, r.beforeReadyKills, r.wall.Round(time.Second), r.messages, r.superseded, r.answered, r.lost,
		r.dupSendCrash+r.dupStream+r.dupOther, r.dupSendCrash, r.dupStream, r.dupOther, r.misplaced,
		r.asks, r.askPosts, r.askDupPosts, r.decided, r.pending, r.oldOK, r.oldTotal, r.wrongRefused, r.wrongTotal,
		r.deniedRan, r.ranTwice, transcript, r.queueLeft, r.outboxLeft, r.leftovers,
		fmtMS(pct(r.restarts, 50)), fmtMS(pct(r.restarts, 90)), fmtMS(pct(r.restarts, 99)), fmtMS(pct(r.restarts, 100)), len(r.restarts),
		fmtS(pct(r.resumes, 50)), fmtS(pct(r.resumes, 100)), len(r.resumes),
		fmtS(pct(r.latencies, 50)), fmtS(pct(r.latencies, 90)), fmtS(pct(r.latencies, 100))) + r.platformSummary()
}

// platformSummary is the Slack and Discord share of the figures, at the
// end of the summary line: " slack=(messages 12, ...) discord=(...)".
func (r *report) platformSummary() string {
	var b strings.Builder
	for _, name := range []string{platformSlack, platformDiscord} {
		f := r.platforms[name]
		if f == nil {
			f = &platformFigures{}
		}
		fmt.Fprintf(&b, " %s=(messages %d, while down %d, answered %d, lost %d, dup %d, misplaced %d, asks %d, decided %d, presses answered %d/%d, pressed again %d, buttons gone %d)",
			name, f.messages, f.down, f.answered, f.lost, f.dup, f.misplaced, f.asks, f.decided, f.pressAnswered, f.pressed, f.repressed, f.gone)
	}
	return b.String()
}

// details prints every problem, and for each message concerned the events
// that led to it: what was sent and pressed, each model step, every start
// and kill in between.
func (r *report) details(w io.Writer, evs []event, maxStories int, related func(token string) []string) {
	if r.ok() {
		return
	}
	fmt.Fprintf(w, "\n%d problems (seed %d reproduces the schedule: go run ./bench/crash -seed %d ...):\n", len(r.problems), r.seed, r.seed)
	var tokens []string
	for _, p := range r.problems {
		tok := p.token
		if tok == "" {
			tok = "-"
		}
		fmt.Fprintf(w, "  %-4s %s\n", tok, p.what)
		if p.token != "" && !slices.Contains(tokens, p.token) {
			tokens = append(tokens, p.token)
		}
	}
	for i, tok := range tokens {
		if i == maxStories {
			fmt.Fprintf(w, "\n(%d more messages with problems; -v prints every event)\n", len(tokens)-i)
			break
		}
		fmt.Fprintf(w, "\nwhat happened to %s:\n", tok)
		for _, e := range story(evs, tok, related(tok)...) {
			fmt.Fprintln(w, "  "+e.String())
		}
	}
}

// lostCauses counts the causes of the lost answers, for the figures.
func (r *report) lostCauses() map[string]int {
	out := map[string]int{}
	for _, p := range r.problems {
		if cause, ok := strings.CutPrefix(p.what, "never answered: "); ok {
			if i := strings.Index(cause, " ("); i > 0 {
				cause = cause[:i] + cause[strings.Index(cause, ")")+1:]
			}
			out[cause]++
		}
	}
	return out
}

// resumeDelays measures how long a turn cut by a kill waited, once the
// next run was ready, before its next model call (the lease the killed run
// held must expire first). It counts a token's model step when the
// token's previous step came before the latest kill and no person was
// expected to act in between (an approval shown and not yet pressed).
func resumeDelays(evs []event) []time.Duration {
	var out []time.Duration
	lastModel := map[string]int{}
	waiting := map[string]bool{} // approval shown, decider not pressed yet
	pressedAfterReady := map[string]bool{}
	lastKill, lastReady := -1, -1
	for i, e := range evs {
		switch e.Kind {
		case "kill":
			lastKill = i
		case "ready":
			lastReady = i
			clear(pressedAfterReady)
		case "approval":
			waiting[e.Token] = true
		case "press":
			if strings.Contains(e.Text, "(decide,") || strings.Contains(e.Text, "(late,") {
				waiting[e.Token] = false
				pressedAfterReady[e.Token] = true
			}
		case "model":
			p, seen := lastModel[e.Token]
			if seen && p < lastKill && lastReady > lastKill && !waiting[e.Token] && !pressedAfterReady[e.Token] {
				out = append(out, e.At-evs[lastReady].At)
			}
			lastModel[e.Token] = i
		}
	}
	return out
}

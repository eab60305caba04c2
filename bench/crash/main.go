// Command crash is a randomized crash campaign against the real
// switchboard binary: it starts `switchboard serve` on a fresh data
// directory against the wire fakes (the scripted model of
// internal/fakemodel, the Bot API of channels/telegram/telegramtest, Slack's
// Web API and Socket Mode of channels/slack/slacktest and Discord's REST
// and gateway of channels/discord/discordtest, all running in this process
// so they outlive every kill), feeds a seeded workload — three private
// Telegram chats, a group and a forum topic, a Slack channel thread and a
// Discord thread; plain answers, allowed tools, tools in flight for
// seconds, asks approved or denied by the right person after a while with
// the wrong person pressing first, messages arriving while turns run, and
// on Slack and Discord messages posted while the server is down — and
// SIGKILLs the server at seeded random instants (a fifth of them during
// start-up), restarting it on the same data each time.
//
// At the end it checks every promise and prints one summary line with the
// seed: every delivered message answered exactly once in its own chat,
// topic or thread (extra copies counted by cause: the documented
// send-then-crash window, a message a killed turn was streaming, other),
// none lost; every shown approval decided once by its decider or still
// decidable, every copy edited, old buttons still answering; no denied
// tool ran and no tool ran twice (marker logs); every transcript valid
// (each tool call has exactly one result); nothing left in the queue or
// outbox; no tool process of a killed run alive after the next start;
// restart times (start → /readyz) as percentiles; the Slack and Discord
// figures end the line. On failure it prints each problem and the events
// that led to it (messages, model steps, presses, starts and kills) and
// exits 1.
//
//	go run ./bench/crash -seed 7 -kills 100 -duration 15m
//
// The seed fixes the workload and the kill schedule; the interleaving with
// the real process still varies from run to run, so a failure found with a
// seed is likely, not certain, to recur with it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		seed     = flag.Uint64("seed", 0, "seed of the workload and the kill schedule (0: a random one, printed)")
		kills    = flag.Int("kills", 20, "SIGKILLs to deliver")
		duration = flag.Duration("duration", 3*time.Minute, "how long the workload runs; the kills are spread over it")
		bin      = flag.String("bin", "", "the switchboard binary (default: go build ./cmd/switchboard)")
		dir      = flag.String("dir", "", "the campaign's directory (default: a new temporary one)")
		keep     = flag.Bool("keep", false, "keep the campaign's directory (data, logs of every run)")
		verbose  = flag.Bool("v", false, "print every event as it happens")
		plats    = flag.String("platforms", "telegram,slack,discord", "the platforms whose chats the workload drives (comma-separated)")
	)
	flag.Parse()
	if *seed == 0 {
		*seed = rand.Uint64() % 1_000_000
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := options{seed: *seed, kills: *kills, duration: *duration, bin: *bin, dir: *dir, keep: *keep, platforms: strings.Split(*plats, ",")}
	if *verbose {
		opts.verbose = os.Stderr
	}
	ok, err := runCampaign(ctx, opts, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crash campaign (seed %d): %v\n", *seed, err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// runCampaign runs one campaign, prints its summary line (and on failure
// the problems and their events) to w, and reports whether it passed.
func runCampaign(ctx context.Context, opts options, w io.Writer) (bool, error) {
	if opts.askWait == 0 {
		opts.askWait = 4 * time.Minute
	}
	if opts.idle == 0 {
		opts.idle = 30 * time.Second
	}
	fmt.Fprintf(w, "crash campaign: seed %d, %d kills over %v\n", opts.seed, opts.kills, opts.duration)
	c, err := newCampaign(opts)
	if err != nil {
		return false, err
	}
	if !opts.keep && opts.dir == "" {
		defer os.RemoveAll(c.root)
	} else {
		fmt.Fprintf(w, "campaign directory: %s\n", c.root)
	}
	r, err := c.run(ctx)
	if err != nil {
		return false, err
	}
	fmt.Fprintln(w, r.summary())
	if causes := r.lostCauses(); len(causes) > 0 {
		for cause, n := range causes {
			fmt.Fprintf(w, "  lost %d: %s\n", n, cause)
		}
	}
	r.details(w, c.log.all(), 8, c.related)
	return r.ok(), nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels/discord/discordtest"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// options configure one campaign.
type options struct {
	seed     uint64
	kills    int
	duration time.Duration // the workload runs this long; the kills are spread over it
	bin      string        // the switchboard binary; built from the module when empty
	dir      string        // the campaign's directory; a temporary one when empty
	keep     bool          // keep the directory afterwards
	verbose  io.Writer     // every event as it happens; nil for none
	askWait  time.Duration // how long an approval keyboard may take to appear
	// platforms, when not empty, are the platforms whose chats the
	// workload drives (telegram, slack, discord); empty: all of them.
	platforms []string
	idle      time.Duration // the final phase ends after this long without activity
}

type pressRole string

const (
	pressWrong  pressRole = "wrong"  // someone who may not decide
	pressDecide pressRole = "decide" // the decider's first press
	pressAgain  pressRole = "again"  // the decider pressing again
	pressLate   pressRole = "late"   // deciding an ask that waited through the restarts
	pressOld    pressRole = "old"    // an old button pressed after everything was decided
)

// press is one button press the campaign made.
type press struct {
	ep       *episode
	who      int64
	button   string
	role     pressRole
	updateID int64
	msgID    int64 // the approval message pressed
	at       time.Time

	// Slack and Discord presses: what the presser was shown (guarded by
	// campaign.mu), after how many presses.
	ref      string // the approval message pressed
	attempts int
	reply    string
	answered bool
	gone     bool // Slack: the button was no longer there to press
}

// shownApproval is an approval message the bot posted with its buttons.
type shownApproval struct {
	token   string
	msgID   int64
	chatID  int64
	thread  int64
	buttons map[string]string // label → callback data (Slack: value, Discord: custom id)
	at      time.Time
	ref     string // the Slack ts or Discord id of the message
}

// procRecord is what the campaign noted about one server run.
type procRecord struct {
	n           int
	start       time.Time
	ready       time.Duration // start → /readyz 200; 0 when never ready
	startup     bool          // killed on purpose during start-up
	beforeReady bool          // … before /readyz answered 200
	killed      time.Time     // when the campaign sent SIGKILL
	gone        time.Time     // when it saw the process gone: every call it made arrived before
	exited      string        // set when the process exited on its own
	leftovers   []workspaceProc
	readyError  string
}

// campaign is one run: the fakes, the data directory, the processes and
// everything the workload sent and saw.
type campaign struct {
	opts options
	root string
	home string
	ws   string
	log  *eventLog

	ctx   context.Context // the campaign's, for the Slack and Discord presses
	model *fakemodel.Server
	tg    *telegramtest.Server
	tb    *fakeTB
	sl    *slacktest.Server
	dc    *discordtest.Server
	chats []*chat

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when an answer or approval shows up
	episodes  map[string]*episode
	order     []*episode
	presses   []*press
	shown     map[string][]*shownApproval // by token
	answered  map[string]time.Time        // first complete answer seen, by token
	lastTouch time.Time                   // last call or model request (not polling)
	procs     []*procRecord
	final     *proc
	cleanStop bool
	endProcs  []workspaceProc
}

func newCampaign(opts options) (*campaign, error) {
	root := opts.dir
	if root == "" {
		d, err := os.MkdirTemp("", "switchboard-crash-")
		if err != nil {
			return nil, err
		}
		root = d
	}
	c := &campaign{
		opts:     opts,
		root:     root,
		home:     filepath.Join(root, "home"),
		ws:       filepath.Join(root, "ws"),
		log:      newEventLog(opts.verbose),
		changed:  make(chan struct{}),
		episodes: map[string]*episode{},
		shown:    map[string][]*shownApproval{},
		answered: map[string]time.Time{},
	}
	for _, d := range []string{c.home, c.ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	scripts := map[string]string{
		// An allowed tool with a side effect and time in flight: it logs
		// its start and end, so a second run of one call shows.
		"mark.sh": "#!/bin/sh\necho \"start $1\" >> ran.log\nsleep \"$2\"\necho \"end $1\" >> ran.log\necho \"marked $1\"\n",
		// The tool that asks: a denied one must never log.
		"ask.sh": "#!/bin/sh\necho \"start $1\" >> asked.log\nsleep \"$2\"\necho \"end $1\" >> asked.log\necho \"asked $1\"\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(c.ws, name), []byte(body), 0o755); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *campaign) config() string {
	return fmt.Sprintf(`[providers.default]
base_url = %q
model = "fake-model"

[http]
listen = "127.0.0.1:0"

[agents.main]
workspace = %q
allow = ["Bash(./mark.sh:*)", "Bash(echo:*)"]

[approvals]
timeout = "12h"

[channels.web]
enabled = false

[channels.telegram]
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
allow_users = ["101", "102", "103", %q]
admins = [%q]
edit_interval = "100ms"
`, c.model.URL(), c.ws, c.tg.URL(), strconv.Itoa(strayID), strconv.Itoa(adminID)) + c.platformConfig()
}

func (c *campaign) env() []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + c.root,
		"SWITCHBOARD_HOME=" + c.home,
		"TELEGRAM_BOT_TOKEN=" + botToken,
	}, platformEnv()...)
}

// build compiles the switchboard binary of the module around the working
// directory.
func build(dir string) (string, error) {
	bin := filepath.Join(dir, "switchboard")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/switchboard-gw/switchboard/cmd/switchboard")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/switchboard (run inside the module): %w\n%s", err, out)
	}
	return bin, nil
}

// run is the whole campaign: the workload and the kills, the final phase,
// then the checks.
func (c *campaign) run(ctx context.Context) (*report, error) {
	if c.opts.bin == "" {
		bin, err := build(c.root)
		if err != nil {
			return nil, err
		}
		c.opts.bin = bin
	}
	c.log = newEventLog(c.opts.verbose) // times count from here, not from the build
	c.model = fakemodel.NewServer()
	defer c.model.Close()
	c.model.SetResponder(c.respond)
	c.tg = telegramtest.NewServer(botToken)
	defer c.tg.Close()
	c.startPlatformFakes()
	defer c.tb.close()
	if err := os.WriteFile(filepath.Join(c.home, "switchboard.toml"), []byte(c.config()), 0o600); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.ctx = ctx
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	bg.Add(3)
	go func() { defer bg.Done(); c.watch(ctx) }()
	go func() { defer bg.Done(); c.watchSlack(ctx) }()
	go func() { defer bg.Done(); c.watchDiscord(ctx) }()

	stop := make(chan struct{})
	var drivers sync.WaitGroup
	for i, ch := range campaignChats() {
		if len(c.opts.platforms) > 0 && !slices.Contains(c.opts.platforms, ch.platform) {
			continue
		}
		c.chats = append(c.chats, ch)
		// Seeded by the chat's place in the full list: leaving a platform
		// out does not change the other chats' workloads.
		rng := rand.New(rand.NewPCG(c.opts.seed, uint64(i+1)))
		drivers.Add(1)
		go func() { defer drivers.Done(); c.drive(ctx, ch, rng, stop) }()
	}
	err := c.processes(ctx)
	if err != nil {
		cancel() // drivers waiting for a keyboard must not wait for it
	}
	close(stop)
	drivers.Wait()
	if err != nil {
		if c.final != nil {
			_ = c.final.kill()
		}
		return nil, err
	}
	c.finalPhase(ctx)
	cancel()
	bg.Wait()
	if err := c.writeCallLog(filepath.Join(c.root, "botapi.log")); err != nil {
		return nil, err
	}
	return c.check()
}

// startProc starts server run n.
func (c *campaign) startProc(n int) (*proc, *procRecord, error) {
	p, err := startProc(n, c.opts.bin, c.ws, filepath.Join(c.root, fmt.Sprintf("serve-%03d.log", n)), c.env())
	if err != nil {
		return nil, nil, err
	}
	rec := &procRecord{n: n, start: p.start}
	c.mu.Lock()
	c.procs = append(c.procs, rec)
	c.mu.Unlock()
	c.log.setIncarnation(n)
	c.log.add("start", "", "pid %d", p.pid())
	return p, rec, nil
}

// becameReady waits for /readyz and checks that no tool process of an
// earlier run survived the start.
func (c *campaign) becameReady(ctx context.Context, p *proc, rec *procRecord) bool {
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	at, err := p.waitReady(rctx)
	if err != nil {
		rec.readyError = err.Error()
		c.log.add("exit", "", "not ready: %v", err)
		return false
	}
	rec.ready = at.Sub(p.start)
	c.log.add("ready", "", "after %v", rec.ready.Round(time.Millisecond))
	if left := leftovers(c.ws, p); len(left) > 0 {
		rec.leftovers = left
		for _, l := range left {
			c.log.add("leftover", "", "pid %d (group %d) from an earlier run: %s", l.pid, l.pgid, l.cmdline)
		}
	}
	return true
}

// processes runs the kill schedule: each run is killed either during its
// start-up or at a random instant after it is ready; then a last run is
// started and left running.
func (c *campaign) processes(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(c.opts.seed, 1000))
	downRng := rand.New(rand.NewPCG(c.opts.seed, 2000))
	// Start-up kills take no time: the others share the duration.
	mean := time.Duration(float64(c.opts.duration) / (0.8 * float64(max(c.opts.kills, 1))))
	for k := 1; k <= c.opts.kills; k++ {
		// A fifth of the kills land in start-up: half of those before the
		// server answers /readyz (store, migrations, leftover kill), half
		// while its channel connects and its workers recover.
		startup := rng.IntN(100) < 20
		early := ms(rng, 0, 25)
		if rng.IntN(2) == 0 {
			early = ms(rng, 25, 700)
		}
		gap := time.Duration(float64(mean) * (0.25 + 1.5*rng.Float64()))
		p, rec, err := c.startProc(k)
		if err != nil {
			return err
		}
		wait := early
		var readyAt chan time.Time
		stopPoll := func() {}
		if startup {
			readyAt = make(chan time.Time, 1)
			pctx, cancel := context.WithCancel(ctx)
			polled := make(chan struct{})
			go func() {
				defer close(polled)
				if at, err := p.waitReady(pctx); err == nil {
					readyAt <- at
				}
			}()
			stopPoll = func() { cancel(); <-polled }
		} else {
			if !c.becameReady(ctx, p, rec) && !p.done() {
				_ = p.kill()
				continue
			}
			wait = gap
		}
		select {
		case <-time.After(wait):
		case <-p.exited:
		case <-ctx.Done():
			stopPoll()
			_ = p.kill()
			return ctx.Err()
		}
		stopPoll()
		if startup {
			select {
			case at := <-readyAt:
				rec.ready = at.Sub(p.start)
			default:
				rec.beforeReady = true
			}
		}
		if p.done() {
			rec.exited = fmt.Sprintf("%v; last lines:\n%s", p.err, p.logTail(15))
			c.log.add("exit", "", "exited on its own: %v", p.err)
			continue
		}
		rec.startup = startup
		rec.killed = time.Now()
		if err := p.kill(); err != nil {
			return err
		}
		rec.gone = time.Now()
		when := "after " + time.Since(p.start).Round(time.Millisecond).String()
		switch {
		case rec.beforeReady:
			when += " (during start-up, before /readyz answered)"
		case startup:
			when += " (during start-up)"
		}
		c.log.setIncarnation(0)
		c.log.add("kill", "", "SIGKILL %d of %d, %s", k, c.opts.kills, when)
		c.postWhileDown(downRng, c.chats)
	}
	p, rec, err := c.startProc(c.opts.kills + 1)
	if err != nil {
		return err
	}
	c.final = p
	if !c.becameReady(ctx, p, rec) {
		return fmt.Errorf("the last run did not become ready: %s\n%s", rec.readyError, p.logTail(20))
	}
	return nil
}

// finalPhase lets the last run finish everything: the asks left pending
// are decided, every answer gets time to arrive, every old button is
// pressed once more; then the server is stopped with SIGTERM and the
// workspace is checked for processes.
func (c *campaign) finalPhase(ctx context.Context) {
	c.log.add("final", "", "workload over; deciding the asks left pending")
	for _, ep := range c.episodeList() {
		if ep.late {
			c.press(ep, ep.decider, decisionButton(ep), pressLate)
		}
	}
	c.waitQuiet(ctx, 6*time.Minute, true)
	c.log.add("final", "", "pressing every approval's old buttons again")
	var old []*press
	for _, ep := range c.episodeList() {
		if ep.chat.platform == platformSlack {
			continue // Slack shows no buttons once they are removed
		}
		for _, s := range c.shownOf(ep.token) {
			if p := c.pressOn(ep, s, ep.decider, "Approve", pressOld); p != nil {
				old = append(old, p)
			}
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range old {
		if p.ep.chat.platform != platformTelegram {
			continue // answered, or pressed again, already
		}
		for time.Now().Before(deadline) {
			if _, ok := c.tg.AnswerFor(p.updateID); ok {
				break
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
	}
	// Anything an old button wrongly started shows up by now.
	c.waitQuiet(ctx, 20*time.Second, false)
	c.log.add("stop", "", "SIGTERM to the last run")
	c.cleanStop = c.final.stop(30 * time.Second)
	c.endProcs = workspaceProcs(c.ws)
}

// waitQuiet waits until nothing happened for a moment (with all, only once
// every message has its complete answer), or nothing happened for
// opts.idle, or maxWait passed.
func (c *campaign) waitQuiet(ctx context.Context, maxWait time.Duration, all bool) {
	deadline := time.Now().Add(maxWait)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		c.mu.Lock()
		want := 0
		for _, ep := range c.order {
			if ep.wantsAnswer() {
				want++
			}
		}
		done := !all || len(c.answered) >= want
		idle := time.Since(c.lastTouch)
		c.mu.Unlock()
		if (done && idle > 3*time.Second) || idle > c.opts.idle {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (c *campaign) touch() {
	c.mu.Lock()
	c.lastTouch = time.Now()
	c.mu.Unlock()
}

func (c *campaign) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *campaign) register(ep *episode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.episodes[ep.token] = ep
	c.order = append(c.order, ep)
	c.lastTouch = time.Now()
}

func (c *campaign) episode(token string) *episode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.episodes[token]
}

// related names the messages whose events explain token's: for a
// superseded message, the chat's next one, whose turn denied its ask.
func (c *campaign) related(token string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ep := c.episodes[token]
	if ep == nil || !ep.supersede {
		return nil
	}
	for i, o := range c.order {
		if o == ep {
			for _, next := range c.order[i+1:] {
				if next.chat == ep.chat {
					return []string{next.token}
				}
			}
		}
	}
	return nil
}

func (c *campaign) episodeList() []*episode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*episode(nil), c.order...)
}

func (c *campaign) shownOf(token string) []*shownApproval {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*shownApproval(nil), c.shown[token]...)
}

// waitOutstanding waits until chat ch has fewer than n messages without a
// complete answer (a minute at most: a lost answer must not stop the chat
// for good). It reports false when stop closed first.
func (c *campaign) waitOutstanding(ctx context.Context, ch *chat, n int, stop <-chan struct{}) bool {
	giveUp := time.After(time.Minute)
	for {
		c.mu.Lock()
		open := 0
		for _, ep := range c.order {
			if ep.chat == ch && ep.wantsAnswer() {
				if _, ok := c.answered[ep.token]; !ok {
					open++
				}
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if open < n {
			return true
		}
		select {
		case <-changed:
		case <-giveUp:
			return true
		case <-stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// press presses a button of the episode's first approval message.
func (c *campaign) press(ep *episode, who int64, button string, role pressRole) {
	if s := c.shownOf(ep.token); len(s) > 0 {
		c.pressOn(ep, s[0], who, button, role)
	}
}

func (c *campaign) pressOn(ep *episode, s *shownApproval, who int64, button string, role pressRole) *press {
	data, ok := s.buttons[button]
	if !ok {
		c.log.add("press", ep.token, "no %q button on message %d", button, s.msgID)
		return nil
	}
	p := &press{ep: ep, who: who, button: button, role: role, msgID: s.msgID, ref: s.ref, at: time.Now()}
	kind := "press"
	if role == pressOld {
		kind = "old-press"
	}
	if ep.chat.platform != platformTelegram {
		c.mu.Lock()
		c.presses = append(c.presses, p)
		c.lastTouch = time.Now()
		c.mu.Unlock()
		c.log.add(kind, ep.token, "%s presses %s on message %s (%s, %s)", c.userName(ep.chat, who), button, s.ref, role, ep.chat.platform)
		c.pressOther(p, s, data)
		return p
	}
	p.updateID = c.tg.AddCallback(s.chatID, who, s.msgID, data, ep.chat.callbackOpts()...)
	c.mu.Lock()
	c.presses = append(c.presses, p)
	c.lastTouch = time.Now()
	c.mu.Unlock()
	c.log.add(kind, ep.token, "%s presses %s on message %d (%s, update %d)", userName(who), button, s.msgID, role, p.updateID)
	return p
}

func userName(id int64) string { return "telegram:" + strconv.FormatInt(id, 10) }

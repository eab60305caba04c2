package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// Queue modes: what happens to a message that arrives while its
// conversation is busy.
const (
	QueueFollowup  = "followup"  // queue it; it runs as the next turn
	QueueCollect   = "collect"   // merge everything waiting into the next turn
	QueueSteer     = "steer"     // injected into the running turn at its next step boundary
	QueueInterrupt = "interrupt" // cancel the running turn, then run it
)

// ChannelOptions are one channel's rules (DESIGN §6).
type ChannelOptions struct {
	Agent          string   // the agent new conversations of this channel talk to
	AllowUsers     []string // bare platform ids
	Admins         []string // bare platform ids
	RequireMention bool     // in groups, answer only mentions and bound threads
	// AllowAll lets every user of the channel talk (the web page, whose
	// only user has logged in with the token; the local terminal).
	AllowAll     bool
	QueueMode    string
	EditInterval time.Duration // streaming edit throttle, default 1s
	// BrowseByConversation: the surface reopens listed conversations by
	// using their id as the chat id (the web page), so an unbound location
	// whose chat id names a conversation of the agent binds to it.
	BrowseByConversation bool
	// DenyAsks, when set, turns every permission ask of this channel's
	// turns into a denial with this reason (hosts where nobody can answer:
	// `run` with text input).
	DenyAsks string
}

// AgentOptions are the gateway's settings for one agent.
type AgentOptions struct {
	Approvers      []string // qualified ids; empty: requester plus admins
	ApprovalRoutes []string // qualified ids whose DMs also get each ask
	Vision         bool     // the model accepts images
	// MaxTasks is how many of the agent's sub-agent tasks run at once (a
	// task waiting for approval does not count); more wait in the queue.
	// 0: DefaultMaxTasks.
	MaxTasks int
}

// AgentStore is what the gateway reads of the agents' storage.
type AgentStore interface {
	Conversation(ctx context.Context, id string) (agentcore.Conversation, error)
	ListConversations(ctx context.Context, agentID string, limit int) ([]agentcore.Conversation, error)
	Messages(ctx context.Context, conversationID string, afterSeq int64, limit int) ([]agentcore.Message, error)
	Approval(ctx context.Context, id string) (agentcore.Approval, error)
	PendingApprovals(ctx context.Context, conversationID string) ([]agentcore.Approval, error)
	RecentRuns(ctx context.Context, conversationID string, n int) ([]agentcore.Run, error)
	TaskReader
}

// Pruner is implemented by stores that can delete finished work (done
// queue items, delivered outbox items, expired dedupe keys) older than a
// time, so a long-lived gateway's database does not grow without end.
type Pruner interface {
	PruneDelivered(ctx context.Context, before time.Time) (int64, error)
}

// retention is how long finished queue and outbox records are kept.
const retention = 7 * 24 * time.Hour

// ExpiredApprovals is implemented by stores that can list pending
// approvals past their expiry, for the expiry sweeper.
type ExpiredApprovals interface {
	ExpiredApprovals(ctx context.Context, now time.Time, limit int) ([]agentcore.Approval, error)
}

// Options configure a Gateway.
type Options struct {
	Store           Store
	Agents          map[string]*agentcore.Agent
	AgentStore      AgentStore
	AgentOptions    map[string]AgentOptions
	Channels        map[string]ChannelOptions // by adapter name
	ApprovalTimeout time.Duration             // default 12h
	DedupeTTL       time.Duration             // default 48h
	Workers         int                       // max turns running at once, default 256
	Logger          *slog.Logger
	Metrics         *Metrics
	Now             func() time.Time
	// ModelProblem, when set, is the advice sent instead of running a turn
	// (serve started without a usable model).
	ModelProblem string
	// Conversations, when set, limits the conversations this process works
	// (a `run` works only its own); nil: every conversation with items of
	// the channels of its adapters.
	Conversations func(conversationID string) bool
	// Claim, when set, says whether this process takes an item of its
	// channels (several local processes share the channel "local"); false
	// means another process owns it: the worker looks again later, so the
	// conversation's order holds.
	Claim func(ctx context.Context, it Item) bool
	// PollInterval is how often the gateway looks for items other
	// processes sharing the data directory queued (default 500ms).
	PollInterval time.Duration
	// Prune deletes finished work older than 7 days, at start and hourly
	// (serve; short-lived hosts leave it to serve).
	Prune bool
	// ChannelState, when set, is told when a channel goes down (its Start
	// failed: err) and when it runs again (nil), e.g. for a banner.
	ChannelState func(channel string, err error)
	// AgentFor, when set, names the agent that works a conversation before
	// Agents is asked (hosts that build an agent per session: each ACP
	// session works in the editor's directory); nil from it falls back to
	// Agents by the conversation's agent id.
	AgentFor func(conversationID string) *agentcore.Agent
}

// Gateway routes chat events to agents and their replies back. It owns
// its parts — intake (auth, pairing, dedupe, binding, enqueue), the
// conversation workers, approvals (the one decide path), the outbox — and
// wires them; no part holds a pointer back to the Gateway.
type Gateway struct {
	env       *env
	intake    *intake
	workers   *workers
	approvals *approvals
	outbox    *outbox
	tasks     *tasks
	notice    atomic.Pointer[string]

	mu   sync.Mutex
	down map[string]string // channel → why it is down
}

// env is what every part may read: options, logger, adapters, clock. It is
// immutable after New.
type env struct {
	opts     Options
	log      *slog.Logger
	metrics  *Metrics
	adapters map[string]channels.Adapter
	channels []string // the names of the adapters, sorted: the channels this process works
	now      func() time.Time
	// editsOnDecide: the store edits an approval's copies in the decision's
	// transaction (DecisionEditor), so turns need not.
	editsOnDecide bool
}

func (e *env) adapter(loc channels.Location) (channels.Adapter, bool) {
	a, ok := e.adapters[loc.Channel]
	return a, ok
}

func (e *env) channel(name string) ChannelOptions { return e.opts.Channels[name] }

// agentOf is the agent that works a conversation of agentID: the host's
// own for the conversation (Options.AgentFor), else the configured one.
func (e *env) agentOf(conversationID, agentID string) (*agentcore.Agent, bool) {
	if f := e.opts.AgentFor; f != nil && conversationID != "" {
		if ag := f(conversationID); ag != nil && ag.ID() == agentID {
			return ag, true
		}
	}
	ag, ok := e.opts.Agents[agentID]
	return ag, ok
}

// New returns a Gateway for the given adapters.
func New(opts Options, adapters ...channels.Adapter) (*Gateway, error) {
	if opts.Store == nil || opts.AgentStore == nil || len(opts.Agents) == 0 {
		return nil, errors.New("gateway: Store, AgentStore and at least one agent are required")
	}
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = 12 * time.Hour
	}
	if opts.DedupeTTL <= 0 {
		opts.DedupeTTL = 48 * time.Hour
	}
	if opts.Workers <= 0 {
		opts.Workers = 256
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	chOpts := map[string]ChannelOptions{}
	for k, v := range opts.Channels {
		chOpts[k] = v
	}
	e := &env{log: opts.Logger, metrics: opts.Metrics, adapters: map[string]channels.Adapter{}, now: opts.Now}
	for _, a := range adapters {
		name := a.Name()
		if _, dup := e.adapters[name]; dup {
			return nil, fmt.Errorf("gateway: two adapters named %q", name)
		}
		co := chOpts[name]
		if co.Agent == "" {
			co.Agent = firstAgent(opts.Agents)
		}
		if _, ok := opts.Agents[co.Agent]; !ok {
			return nil, fmt.Errorf("gateway: channel %s uses unknown agent %q", name, co.Agent)
		}
		if co.EditInterval <= 0 {
			co.EditInterval = time.Second
		}
		if co.QueueMode == "" {
			co.QueueMode = QueueFollowup
		}
		chOpts[name] = co
		e.adapters[name] = a
		e.channels = append(e.channels, name)
	}
	slices.Sort(e.channels)
	opts.Channels = chOpts
	e.opts = opts

	if de, ok := opts.Store.(DecisionEditor); ok {
		// Every decision edits its posted copies in its own transaction.
		de.SetDecisionEdit(decisionBody)
		e.editsOnDecide = true
	}
	g := &Gateway{env: e}
	g.outbox = newOutbox(e)
	g.approvals = newApprovals(e, g.outbox)
	g.workers = newWorkers(e)
	g.tasks = newTasks(e, g.outbox, g.approvals, g.workers)
	proc := &processor{env: e, outbox: g.outbox, approvals: g.approvals, workers: g.workers, tasks: g.tasks, notice: g.modelNotice}
	g.workers.process = proc.process
	g.intake = &intake{env: e, workers: g.workers, approvals: g.approvals, outbox: g.outbox, tasks: g.tasks, notice: g.modelNotice}
	return g, nil
}

func firstAgent(agents map[string]*agentcore.Agent) string {
	if _, ok := agents["main"]; ok {
		return "main"
	}
	best := ""
	for id := range agents {
		if best == "" || id < best {
			best = id
		}
	}
	return best
}

// Run starts the adapters, the workers of conversations with queued work,
// the outbox, the approval expiry sweeper and the poll for items other
// processes queued, and blocks until ctx ends. A channel whose Start fails
// is reported and retried with backoff; the other channels keep working.
// Run returns after every goroutine it started has stopped; running turns
// get grace to reach a step boundary before they are cancelled, and their
// queue items stay queued.
func (g *Gateway) Run(ctx context.Context, grace time.Duration) error {
	e := g.env
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	g.workers.start(runCtx)

	adapterCtx, stopAdapters := context.WithCancel(ctx)
	defer stopAdapters()
	var adapters sync.WaitGroup
	for _, name := range e.channels {
		a := e.adapters[name]
		adapters.Add(1)
		go func() {
			defer adapters.Done()
			g.runAdapter(adapterCtx, name, a)
		}()
	}
	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); g.outbox.run(runCtx) }()
	go func() { defer loops.Done(); g.approvals.expiryLoop(runCtx) }()
	go func() { defer loops.Done(); g.workers.pollLoop(runCtx, g.outbox.noticed) }()
	if e.opts.Prune {
		loops.Add(1)
		go func() { defer loops.Done(); g.pruneLoop(runCtx) }()
	}
	if err := g.workers.recover(runCtx); err != nil {
		e.log.Error("recover queued work", "err", err)
	}
	g.outbox.kick()

	<-ctx.Done()
	// Stop intake first, then let turns reach a boundary.
	stopAdapters()
	adapters.Wait()
	g.workers.drain(grace)
	cancelRun()
	g.workers.wait()
	loops.Wait()
	return nil
}

// runAdapter runs one adapter until ctx ends; when its Start fails (a
// refused token, a listener in use) it is reported and retried with
// backoff, so the other channels keep working.
func (g *Gateway) runAdapter(ctx context.Context, name string, a channels.Adapter) {
	e := g.env
	h := &handler{in: g.intake, channel: name}
	wait := time.Duration(0)
	for ctx.Err() == nil {
		e.log.Info("channel starting", "channel", name)
		started := e.now()
		reg := g.registerCommands(ctx, name, a)
		// A channel that keeps running for a while is up again.
		up := time.AfterFunc(20*time.Second, func() { g.setDown(name, nil) })
		err := a.Start(ctx, h)
		up.Stop()
		reg()
		if ctx.Err() != nil {
			e.log.Info("channel stopped", "channel", name)
			return
		}
		if e.now().Sub(started) > time.Minute {
			wait = 0
		}
		wait = backoff(wait)
		g.setDown(name, err)
		e.log.Error("channel down; retrying", "channel", name, "err", err, "retry_in", wait)
		if !sleepCtx(ctx, wait) {
			return
		}
	}
}

// registerCommands registers the command table with an adapter that can
// show it natively, in the background while the adapter starts, retrying
// with backoff. The returned function waits for it to stop.
func (g *Gateway) registerCommands(ctx context.Context, name string, a channels.Adapter) func() {
	r, ok := a.(channels.CommandRegistrar)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := time.Duration(0)
		for {
			err := r.RegisterCommands(ctx, nativeCommands())
			if err == nil || ctx.Err() != nil {
				return
			}
			if channels.IsPermanent(err) {
				g.env.log.Warn("register commands: the platform refused part of the table", "channel", name, "err", err)
				return
			}
			wait = backoff(wait)
			g.env.log.Warn("register commands", "channel", name, "err", err, "retry_in", wait)
			if !sleepCtx(ctx, wait) {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// pruneLoop deletes finished work older than the retention, at start and
// then hourly.
func (g *Gateway) pruneLoop(ctx context.Context) {
	p, ok := g.env.opts.Store.(Pruner)
	if !ok {
		return
	}
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		if n, err := p.PruneDelivered(ctx, g.env.now().Add(-retention)); err != nil && ctx.Err() == nil {
			g.env.log.Warn("prune finished work", "err", err)
		} else if n > 0 {
			g.env.log.Debug("pruned finished work", "records", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// setDown records that a channel's Start failed (err) or that it runs
// again (nil).
func (g *Gateway) setDown(name string, err error) {
	g.mu.Lock()
	if g.down == nil {
		g.down = map[string]string{}
	}
	_, was := g.down[name]
	if err == nil {
		delete(g.down, name)
	} else {
		g.down[name] = err.Error()
	}
	g.mu.Unlock()
	if cb := g.env.opts.ChannelState; cb != nil && (err != nil || was) {
		cb(name, err)
	}
}

// Down returns the channels whose Start failed and has not run since, with
// the reason (for /readyz and the web page's banner).
func (g *Gateway) Down() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]string, len(g.down))
	for k, v := range g.down {
		out[k] = v
	}
	return out
}

// SetModelNotice sets (or, with "", clears) a line /status shows about the
// model endpoint, e.g. that it cannot be reached.
func (g *Gateway) SetModelNotice(s string) { g.notice.Store(&s) }

func (g *Gateway) modelNotice() string {
	if p := g.notice.Load(); p != nil {
		return *p
	}
	return ""
}

// Adapters returns the gateway's adapters by name.
func (g *Gateway) Adapters() map[string]channels.Adapter { return g.env.adapters }

// Decide is the one decide path for hosts that decide by approval id
// rather than by button (stream-json, ACP, the CLI): see Decider.
func (g *Gateway) Decide(ctx context.Context, req DecideRequest) (DecideResult, error) {
	return g.approvals.decide(ctx, req)
}

func backoff(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return 100 * time.Millisecond
	case d >= 10*time.Second:
		return 10 * time.Second
	}
	return d * 2
}

// sleepOrWake is sleepCtx that also ends early when wake fires.
func sleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

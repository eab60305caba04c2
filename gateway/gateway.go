package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// Queue modes: what happens to a message that arrives while its
// conversation is busy.
const (
	QueueFollowup  = "followup"  // queue it; it runs as the next turn
	QueueCollect   = "collect"   // merge everything waiting into the next turn
	QueueSteer     = "steer"     // like collect; injected at the next turn boundary
	QueueInterrupt = "interrupt" // cancel the running turn, then run it
)

// ChannelOptions are one channel's rules (DESIGN §6).
type ChannelOptions struct {
	Agent          string   // the agent new conversations of this channel talk to
	AllowUsers     []string // bare platform ids
	Admins         []string // bare platform ids
	RequireMention bool     // in groups, answer only mentions and bound threads
	// AllowAll lets every user of the channel talk (the web page, whose
	// only user has logged in with the token).
	AllowAll     bool
	QueueMode    string
	EditInterval time.Duration // streaming edit throttle, default 1s
	// BrowseByConversation: the surface reopens listed conversations by
	// using their id as the chat id (the web page), so an unbound location
	// whose chat id names a conversation of the agent binds to it.
	BrowseByConversation bool
}

// AgentOptions are the gateway's settings for one agent.
type AgentOptions struct {
	Approvers      []string // qualified ids; empty: requester plus admins
	ApprovalRoutes []string // qualified ids whose DMs also get each ask
	Vision         bool     // the model accepts images
}

// AgentStore is what the gateway reads of the agents' storage.
type AgentStore interface {
	Conversation(ctx context.Context, id string) (agentcore.Conversation, error)
	ListConversations(ctx context.Context, agentID string, limit int) ([]agentcore.Conversation, error)
	Messages(ctx context.Context, conversationID string, afterSeq int64, limit int) ([]agentcore.Message, error)
	Approval(ctx context.Context, id string) (agentcore.Approval, error)
	PendingApprovals(ctx context.Context, conversationID string) ([]agentcore.Approval, error)
	RecentRuns(ctx context.Context, conversationID string, n int) ([]agentcore.Run, error)
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
}

// Gateway routes chat events to agents and their replies back.
type Gateway struct {
	opts     Options
	log      *slog.Logger
	adapters map[string]channels.Adapter

	mu       sync.Mutex
	running  map[string]*worker    // by conversation id
	queueMod map[string]string     // location → queue mode set with /queue
	parked   map[string]parkedTurn // conversation → message of its turn waiting for approval
	slots    chan struct{}

	kickOutbox  chan struct{}
	modelNotice string // set by SetModelNotice, shown by /status
	wg          sync.WaitGroup
	ctx         context.Context // set by Run
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
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	g := &Gateway{
		opts:       opts,
		log:        opts.Logger,
		adapters:   map[string]channels.Adapter{},
		running:    map[string]*worker{},
		queueMod:   map[string]string{},
		parked:     map[string]parkedTurn{},
		slots:      make(chan struct{}, opts.Workers),
		kickOutbox: make(chan struct{}, 1),
	}
	for _, a := range adapters {
		name := a.Name()
		if _, dup := g.adapters[name]; dup {
			return nil, fmt.Errorf("gateway: two adapters named %q", name)
		}
		co := opts.Channels[name]
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
		if g.opts.Channels == nil {
			g.opts.Channels = map[string]ChannelOptions{}
		}
		g.opts.Channels[name] = co
		g.adapters[name] = a
	}
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
// the outbox and the approval expiry sweeper, and blocks until ctx ends.
// It returns after every goroutine it started has stopped; running turns
// get grace to reach a step boundary before they are cancelled, and their
// queue items stay queued.
func (g *Gateway) Run(ctx context.Context, grace time.Duration) error {
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	g.mu.Lock()
	g.ctx = runCtx
	g.mu.Unlock()

	adapterCtx, stopAdapters := context.WithCancel(ctx)
	defer stopAdapters()
	errs := make(chan error, len(g.adapters))
	var adapters sync.WaitGroup
	for name, a := range g.adapters {
		adapters.Add(1)
		go func() {
			defer adapters.Done()
			if err := a.Start(adapterCtx, &handler{g: g, channel: name}); err != nil && adapterCtx.Err() == nil {
				g.log.Error("channel stopped", "channel", name, "err", err)
				errs <- fmt.Errorf("channel %s: %w", name, err)
			}
		}()
	}
	g.wg.Add(3)
	go func() { defer g.wg.Done(); g.outboxLoop(runCtx) }()
	go func() { defer g.wg.Done(); g.expiryLoop(runCtx) }()
	go func() { defer g.wg.Done(); g.pruneLoop(runCtx) }()
	if err := g.recover(runCtx); err != nil {
		g.log.Error("recover queued work", "err", err)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
	}
	// Stop intake first, then let turns reach a boundary.
	stopAdapters()
	adapters.Wait()
	g.drain(grace)
	cancelRun()
	g.wg.Wait()
	return runErr
}

// drain waits up to grace for running turns, then cancels them.
func (g *Gateway) drain(grace time.Duration) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		n := len(g.running)
		var ws []*worker
		for _, w := range g.running {
			ws = append(ws, w)
			w.stopping = true
		}
		g.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-deadline.C:
			for _, w := range ws {
				w.cancel(errShutdown)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var errShutdown = errors.New("switchboard is shutting down")

// pruneLoop deletes finished work older than the retention, at start and
// then hourly.
func (g *Gateway) pruneLoop(ctx context.Context) {
	p, ok := g.opts.Store.(Pruner)
	if !ok {
		return
	}
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		if n, err := p.PruneDelivered(ctx, g.opts.Now().Add(-retention)); err != nil && ctx.Err() == nil {
			g.log.Warn("prune finished work", "err", err)
		} else if n > 0 {
			g.log.Debug("pruned finished work", "records", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// recover starts workers for conversations that have queued items (after
// a restart).
func (g *Gateway) recover(ctx context.Context) error {
	busy, err := g.opts.Store.Busy(ctx)
	if err != nil {
		return err
	}
	for _, conv := range busy {
		g.kick(conv)
	}
	g.kickOut()
	return nil
}

// adapterFor returns the adapter of a location's channel.
func (g *Gateway) adapterFor(loc channels.Location) (channels.Adapter, bool) {
	a, ok := g.adapters[loc.Channel]
	return a, ok
}

// SetModelNotice sets (or, with "", clears) a line /status shows about the
// model endpoint, e.g. that it cannot be reached.
func (g *Gateway) SetModelNotice(s string) {
	g.mu.Lock()
	g.modelNotice = s
	g.mu.Unlock()
}

// Adapters returns the gateway's adapters by name.
func (g *Gateway) Adapters() map[string]channels.Adapter { return g.adapters }

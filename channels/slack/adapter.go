package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/switchboard-gw/switchboard/channels"
)

// Name is the channel name of this adapter in locations and identities.
const Name = "slack"

// Modes of receiving events.
const (
	ModeSocket = "socket" // Socket Mode: a websocket the adapter opens (app_token)
	ModeHTTP   = "http"   // the Events API: Slack posts to our [http] listener (signing_secret)
)

// The request paths of HTTP mode. They are a contract: the app manifest
// names them (Manifest) and the gateway's HTTP listener mounts Routes.
const (
	EventsPath       = "/slack/events"
	InteractionsPath = "/slack/interactions"
	CommandsPath     = "/slack/commands"
	// SlashCommand is the one slash command of the app; "/switchboard
	// status" reaches the gateway as the command "/status".
	SlashCommand = "/switchboard"
)

// Defaults for Options, and what the gateway should use for Slack.
const (
	DefaultAPIURL            = "https://slack.com/api/"
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultCatchUpWindow     = time.Hour
	DefaultMaxCatchUpThreads = 100
	DefaultMaxDownload       = 5 << 20
	// DefaultEditInterval is the edit_interval to stream replies with:
	// chat.update is in Slack's rate tier 3 (about 50 calls a minute per
	// method and workspace), so one stream at 1.5 s uses 40 of them.
	DefaultEditInterval = 1500 * time.Millisecond
	// MaxMessageLen is the longest message the adapter posts: one section
	// block holds at most 3,000 characters, and keeping every message to
	// one section means an edit can always replace it whole (and add or
	// remove buttons) without ever meeting a block limit. It is also under
	// the 4,000 characters Slack advises for a message's text, which doubles
	// as the notification text.
	MaxMessageLen = 3000
)

// Timeouts of single requests; the caller's context may end them sooner.
const (
	callTimeout   = 30 * time.Second
	uploadTimeout = 5 * time.Minute
)

// Options configure an Adapter. They mirror [channels.slack] (config.Slack);
// the common chat keys other than allowed_channels are the gateway's.
type Options struct {
	// Mode is ModeSocket (default) or ModeHTTP.
	Mode string
	// BotToken is the Bot User OAuth Token (xoxb-…). Required.
	BotToken string
	// AppToken is the app-level token (xapp-…, scope connections:write).
	// Required in Socket Mode.
	AppToken string
	// SigningSecret verifies the requests Slack posts. Required in HTTP mode.
	SigningSecret string
	// APIURL is the Web API base (DefaultAPIURL, or a fake in tests).
	APIURL string
	// AllowedChannels are the channel ids the bot answers in; empty means
	// every channel it is in. Direct messages are always read (the gateway
	// decides who may talk).
	AllowedChannels []string
	// Threads, when set, names the thread locations bound to a conversation
	// (the gateway's bindings of channel "slack"), most recently active
	// first. After connecting (at start and after every reconnect) the
	// adapter fetches the replies posted in them since the last one it saw,
	// within CatchUpWindow, and hands over those it never handed over.
	Threads func(ctx context.Context) ([]channels.Location, error)
	Logger  *slog.Logger
	// HTTPClient makes the Web API requests; requests carry their own
	// deadlines.
	HTTPClient *http.Client
	// IdleTimeout is how long Socket Mode may stay without any traffic
	// (Slack's pings, hellos, envelopes) before the adapter reconnects
	// (default 2 minutes). Liveness is judged by bytes arriving, not by the
	// socket's state: a connection that stays open but goes silent is
	// replaced.
	IdleTimeout time.Duration
	// CatchUpWindow bounds catch-up to replies this recent (default 1 hour).
	CatchUpWindow time.Duration
	// MaxCatchUpThreads is how many of Threads are checked (default 100).
	MaxCatchUpThreads int
	// MaxDownload is the largest image a user posts that is downloaded for
	// the model (default 5 MiB); larger ones become a note in the text.
	MaxDownload int64
	// Now is the clock for catch-up windows and cache expiry (default
	// time.Now).
	Now func() time.Time
}

// Adapter is the Slack channels.Adapter. Create it with New.
type Adapter struct {
	opts   Options
	log    *slog.Logger
	red    redactor
	api    *slack.Client
	client *http.Client
	apiURL *url.URL

	me      atomic.Pointer[identity]
	meMu    sync.Mutex // serializes a lazy auth.test
	started atomic.Bool

	mu   sync.Mutex
	live *run // set while Start runs

	names      *channels.Cache[string, userName] // user id → display name
	accepted   *channels.Cache[string, struct{}] // event ids and message ids handed over
	botThreads *channels.Cache[string, struct{}] // channel+thread where the bot posted
	lastSeen   *channels.Cache[string, string]   // channel+thread → newest ts seen
	orphans    *orphans                          // thread replies ignored before their thread was taken
	commands   atomic.Pointer[[]channels.Command]

	// Tunables tests shorten.
	minBackoff, maxBackoff time.Duration
	pingInterval           time.Duration // the library's ping timeout; 0 = its default
}

// run is what one Start call owns.
type run struct {
	ctx     context.Context
	h       channels.Handler
	events  chan socketJob             // Socket Mode events, handled in order
	work    chan func(context.Context) // presses and commands, acknowledged already
	catchUp chan struct{}
	behind  behind // orders live events after their conversation's catch-up
	wg      sync.WaitGroup
}

var (
	_ channels.Adapter          = (*Adapter)(nil)
	_ channels.EphemeralSender  = (*Adapter)(nil)
	_ channels.DirectMessenger  = (*Adapter)(nil)
	_ channels.CommandRegistrar = (*Adapter)(nil)
	_ channels.Deleter          = (*Adapter)(nil)
)

// New checks the options and builds an adapter. It makes no request; Start
// connects.
func New(opts Options) (*Adapter, error) {
	if strings.TrimSpace(opts.BotToken) == "" {
		return nil, errors.New("slack: bot_token is empty: set channels.slack.bot_token (OAuth & Permissions → Bot User OAuth Token, xoxb-…)")
	}
	switch opts.Mode {
	case "":
		opts.Mode = ModeSocket
		fallthrough
	case ModeSocket:
		if strings.TrimSpace(opts.AppToken) == "" {
			return nil, errors.New(`slack: Socket Mode needs app_token (Basic Information → App-Level Tokens, scope connections:write), or use mode = "http"`)
		}
	case ModeHTTP:
		if strings.TrimSpace(opts.SigningSecret) == "" {
			return nil, errors.New("slack: http mode needs signing_secret (Basic Information → App Credentials → Signing Secret)")
		}
	default:
		return nil, fmt.Errorf("slack: unknown mode %q: use socket or http", opts.Mode)
	}
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(opts.APIURL, "/") {
		opts.APIURL += "/"
	}
	apiURL, err := url.Parse(opts.APIURL)
	if err != nil || apiURL.Host == "" || (apiURL.Scheme != "https" && apiURL.Scheme != "http") {
		return nil, fmt.Errorf("slack: api_url %q is not an http(s) URL", opts.APIURL)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.CatchUpWindow <= 0 {
		opts.CatchUpWindow = DefaultCatchUpWindow
	}
	if opts.MaxCatchUpThreads <= 0 {
		opts.MaxCatchUpThreads = DefaultMaxCatchUpThreads
	}
	if opts.MaxDownload <= 0 {
		opts.MaxDownload = DefaultMaxDownload
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Adapter{
		opts:       opts,
		log:        opts.Logger.With("channel", Name),
		red:        newRedactor(opts.BotToken, opts.AppToken, opts.SigningSecret),
		client:     opts.HTTPClient,
		apiURL:     apiURL,
		names:      channels.NewCache[string, userName](2000, time.Hour, opts.Now),
		accepted:   channels.NewCache[string, struct{}](20000, 2*time.Hour, opts.Now),
		botThreads: channels.NewCache[string, struct{}](5000, 7*24*time.Hour, opts.Now),
		lastSeen:   channels.NewCache[string, string](5000, 2*time.Hour, opts.Now),
		orphans:    newOrphans(opts.Now),
		minBackoff: time.Second,
		maxBackoff: 2 * time.Minute,
	}
	a.api = slack.New(opts.BotToken,
		slack.OptionAPIURL(opts.APIURL),
		slack.OptionHTTPClient(opts.HTTPClient),
		slack.OptionAppLevelToken(opts.AppToken),
		slack.OptionLog(libLogger{a}),
	)
	return a, nil
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements channels.Adapter. Slack has no typing indicator
// for bots outside assistant threads; the streamed message shows progress.
func (a *Adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{
		MaxMessageLen: MaxMessageLen,
		Edit:          true,
		Buttons:       true,
		Ephemeral:     true,
		Upload:        true,
		Dialect:       channels.SlackMrkdwn,
	}
}

// Account is the workspace id used in locations ("" before Start learnt
// it).
func (a *Adapter) Account() string { return a.identity().TeamID }

func (a *Adapter) identity() identity {
	if me := a.me.Load(); me != nil {
		return *me
	}
	return identity{}
}

// whoAmI returns the bot's identity, asking auth.test once if Start has not.
func (a *Adapter) whoAmI(ctx context.Context) (identity, error) {
	if me := a.me.Load(); me != nil {
		return *me, nil
	}
	a.meMu.Lock()
	defer a.meMu.Unlock()
	if me := a.me.Load(); me != nil {
		return *me, nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	r, err := a.api.AuthTestContext(ctx)
	if err != nil {
		return identity{}, a.red.classify("auth.test", err)
	}
	me := &identity{UserID: r.UserID, BotID: r.BotID, TeamID: r.TeamID}
	a.me.Store(me)
	return *me, nil
}

// Start implements channels.Adapter: auth.test, then the Socket Mode loop
// (reconnecting, with catch-up after every connection) or, in HTTP mode,
// one catch-up and waiting while the handlers of Routes deliver. It returns
// nil when ctx ends and an error when Slack refuses the bot or app token.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("slack: Start needs a handler")
	}
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("slack: adapter already started")
	}
	me, err := a.authenticate(ctx)
	if err != nil {
		return fmt.Errorf("slack: check bot_token: %w", err)
	}
	if ctx.Err() != nil {
		return nil
	}
	a.log.Info("slack bot connected", "bot_user", me.UserID, "team", me.TeamID, "mode", a.opts.Mode)

	rctx, cancel := context.WithCancel(ctx)
	r := &run{
		ctx:     rctx,
		h:       h,
		events:  make(chan socketJob, 256),
		work:    make(chan func(context.Context), 64),
		catchUp: make(chan struct{}, 1),
	}
	for range 4 {
		r.wg.Go(func() { r.worker() })
	}
	r.wg.Go(func() { a.catchUpLoop(r) })
	a.mu.Lock()
	a.live = r
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.live = nil
		a.mu.Unlock()
		cancel()
		r.wg.Wait()
	}()
	if a.opts.Mode == ModeHTTP {
		r.requestCatchUp()
		<-ctx.Done()
		return nil
	}
	r.wg.Go(func() { a.eventWorker(r) })
	return a.runSocket(rctx, r)
}

// authenticate calls auth.test until it succeeds, is refused (returned) or
// ctx ends (zero identity, nil error).
func (a *Adapter) authenticate(ctx context.Context) (identity, error) {
	bo := backoff{min: a.minBackoff, max: a.maxBackoff}
	for {
		me, err := a.whoAmI(ctx)
		if err == nil {
			return me, nil
		}
		if ctx.Err() != nil {
			return identity{}, nil
		}
		if channels.IsPermanent(err) {
			return identity{}, err
		}
		wait := bo.next()
		if d, ok := channels.RetryAfter(err); ok && d > wait {
			wait = d
		}
		a.log.Warn("slack auth.test failed; retrying", "err", err, "wait", wait)
		if !sleep(ctx, wait) {
			return identity{}, nil
		}
	}
}

func (a *Adapter) current() *run {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.live
}

// worker runs acknowledged presses and commands until the run ends.
func (r *run) worker() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case f := <-r.work:
			f(r.ctx)
		}
	}
}

// submit queues f for a worker; it reports false when the queue is full.
func (r *run) submit(f func(context.Context)) bool {
	select {
	case r.work <- f:
		return true
	default:
		return false
	}
}

func (r *run) requestCatchUp() {
	r.behind.begin()
	select {
	case r.catchUp <- struct{}{}:
	default: // one is pending already; it will see everything
	}
}

// channelAllowed applies allowed_channels (direct messages always pass).
func (a *Adapter) channelAllowed(chatID string, dm bool) bool {
	return dm || len(a.opts.AllowedChannels) == 0 || slices.Contains(a.opts.AllowedChannels, chatID)
}

// RegisterCommands implements channels.CommandRegistrar. Slack apps cannot
// register slash commands programmatically: the app has the one command
// /switchboard (see Manifest), and the table is kept to answer
// "/switchboard help" at once.
func (a *Adapter) RegisterCommands(_ context.Context, cmds []channels.Command) error {
	c := slices.Clone(cmds)
	a.commands.Store(&c)
	return nil
}

// backoff doubles from min to max.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }

// sleep waits for d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// libLogger sends the SDK's own (debug-only) log lines to our logger,
// redacted.
type libLogger struct{ a *Adapter }

func (l libLogger) Output(_ int, s string) error {
	l.a.log.Debug("slack-go: " + l.a.red.string(strings.TrimSpace(s)))
	return nil
}

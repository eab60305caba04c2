package discord

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-gw/switchboard/channels"
)

// Name is the channel name of this adapter in locations and identities.
const Name = "discord"

// Defaults for Options.
const (
	DefaultMaxDownload   = 8 << 20
	DefaultRateLimitWait = 2 * time.Second
	DefaultStaleAfter    = 90 * time.Second
	DefaultCatchUp       = time.Hour
)

// Limits and timeouts.
const (
	maxMessageLen = 2000
	maxImages     = 4
	callTimeout   = 60 * time.Second
	openTimeout   = 30 * time.Second
	// interactionTTL is how long an interaction token can answer (Discord:
	// 15 minutes), with a margin.
	interactionTTL = 14 * time.Minute
	// Gateway intents: guild messages, DMs, message content (privileged:
	// enable it in the Developer Portal), and guilds (thread and channel
	// updates).
	intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent
)

// Options configure an Adapter. They mirror [channels.discord] of the
// config; the common keys allow_users, admins, require_mention, queue_mode
// and edit_interval are applied by the gateway.
type Options struct {
	// Token is the bot token (Developer Portal → Bot), without "Bot ".
	// Required.
	Token string
	// ApplicationID registers slash commands; when empty it is learned from
	// the gateway's READY.
	ApplicationID string
	// APIURL, when set, receives every REST request meant for discord.com
	// (and so the GET /gateway lookup that names the websocket): a proxy,
	// or a fake in tests.
	APIURL string
	// AutoThread: a mention in a text channel opens a thread from that
	// message, and the conversation lives there.
	AutoThread bool
	// AllowBots: hand over messages of other bots too (never the bot's own).
	AllowBots bool
	// Guilds limits the servers answered (empty: all). AllowedChannels
	// limits the channels (empty: all it can see); a thread counts as its
	// parent channel.
	Guilds, AllowedChannels []string
	// AllowRoles and AdminRoles are role ids; a member with one of them is
	// marked Inbound.RoleAllowed / RoleAdmin.
	AllowRoles, AdminRoles []string
	// Locations returns the chat locations bound to conversations (the
	// gateway's bindings of this channel). After a fresh IDENTIFY (at start,
	// and after a reconnect that could not resume) the adapter fetches what
	// was posted there meanwhile, within CatchUp. Nil: no catch-up.
	Locations func(ctx context.Context) ([]channels.Location, error)
	// CatchUp bounds how far back catch-up reads (default 1h).
	CatchUp time.Duration
	Logger  *slog.Logger
	// HTTPClient makes REST requests and downloads; its Transport is
	// wrapped (rewriting, rate limits). Nil: a default client.
	HTTPClient *http.Client
	// MaxDownload is the largest image downloaded for the model (default
	// 8 MiB); larger ones become a note in the text.
	MaxDownload int64
	// RateLimitWait is the longest a request waits for an exhausted
	// rate-limit bucket before failing with *channels.RateLimitError
	// (default 2s).
	RateLimitWait time.Duration
	// StaleAfter: when neither a heartbeat ack nor any event arrived for
	// this long, the connection is taken as dead and reopened (resuming).
	// Default 90s (Discord's heartbeat interval is about 41 s).
	StaleAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Adapter is the Discord channels.Adapter. Create it with New.
type Adapter struct {
	opts    Options
	log     *slog.Logger
	red     redactor
	client  *http.Client
	sess    *discordgo.Session
	filters filters
	now     func() time.Time

	me      atomic.Pointer[identity]
	started atomic.Bool
	// identified is closed at the first READY (the application id is known
	// from then on, when the config did not give it).
	identified     chan struct{}
	identifiedOnce sync.Once

	// Gateway plumbing (see gateway.go).
	events       chan gwEvent     // READY, RESUMED, MESSAGE_CREATE, in order
	interactions chan interaction // INTERACTION_CREATE
	stop         chan struct{}    // closed when Start ends: handlers stop queueing
	disconnected chan struct{}    // a Disconnect happened (buffered 1)
	lastTraffic  atomic.Int64     // unix nanos of the last gateway event
	connected    atomic.Bool
	rawConn      atomic.Pointer[connBox]

	chans    channelCache
	inter    interactionBook
	dms      *channels.Cache[string, string] // user id → DM channel id
	received receivedLog                     // worker goroutine only

	minBackoff, maxBackoff time.Duration
	workers                int // interaction workers
}

var (
	_ channels.Adapter          = (*Adapter)(nil)
	_ channels.Typer            = (*Adapter)(nil)
	_ channels.Deleter          = (*Adapter)(nil)
	_ channels.DirectMessenger  = (*Adapter)(nil)
	_ channels.CommandRegistrar = (*Adapter)(nil)
)

// New checks the options and builds an adapter. It makes no request; Start
// connects.
func New(opts Options) (*Adapter, error) {
	opts.Token = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(opts.Token), "Bot "))
	if opts.Token == "" {
		return nil, errors.New("discord: token is empty: set channels.discord.token (Developer Portal → your application → Bot → Reset Token)")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxDownload <= 0 {
		opts.MaxDownload = DefaultMaxDownload
	}
	if opts.RateLimitWait <= 0 {
		opts.RateLimitWait = DefaultRateLimitWait
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.CatchUp <= 0 {
		opts.CatchUp = DefaultCatchUp
	}
	base := http.DefaultTransport
	client := &http.Client{Timeout: 5 * time.Minute}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		client = &c
		if c.Transport != nil {
			base = c.Transport
		}
	}
	tr, err := newTransport(base, opts.APIURL, opts.RateLimitWait, opts.Now)
	if err != nil {
		return nil, err
	}
	client.Transport = tr

	sess, err := discordgo.New("Bot " + opts.Token)
	if err != nil {
		return nil, errors.New("discord: cannot create a session")
	}
	sess.Client = client
	sess.ShouldReconnectOnError = false // Start owns reconnecting
	sess.ShouldRetryOnRateLimit = false
	sess.StateEnabled = false
	sess.SyncEvents = true // the handler only queues; order is kept
	sess.LogLevel = -1     // discordgo logs to the process-wide log; we log ourselves
	sess.Identify.Intents = intents

	a := &Adapter{
		opts:   opts,
		log:    opts.Logger.With("channel", Name),
		red:    redactor{token: opts.Token},
		client: client,
		sess:   sess,
		now:    opts.Now,
		filters: filters{
			guilds:      set(opts.Guilds),
			channels:    set(opts.AllowedChannels),
			allowRoles:  set(opts.AllowRoles),
			adminRds:    set(opts.AdminRoles),
			allowBots:   opts.AllowBots,
			autoThread:  opts.AutoThread,
			maxImages:   maxImages,
			maxDownload: opts.MaxDownload,
		},
		identified:   make(chan struct{}),
		events:       make(chan gwEvent, 1024),
		interactions: make(chan interaction, 64),
		stop:         make(chan struct{}),
		disconnected: make(chan struct{}, 1),
		received:     newReceivedLog(20000),
		minBackoff:   time.Second,
		maxBackoff:   2 * time.Minute,
		workers:      4,
	}
	a.chans.init(4096, a.now)
	a.dms = channels.NewCache[string, string](10000, dmTTL, a.now)
	a.inter.init()
	if id := botIDFromToken(opts.Token); id != "" {
		a.me.Store(&identity{ID: id, AppID: opts.ApplicationID})
	}
	sess.Dialer = a.dialer()
	sess.AddHandler(a.onGatewayEvent)
	sess.AddHandler(a.onDisconnect)
	return a, nil
}

// botIDFromToken reads the bot's user id from the token's first part (the
// id in base64), or "".
func botIDFromToken(token string) string {
	first, _, _ := strings.Cut(token, ".")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding, base64.StdEncoding} {
		b, err := enc.DecodeString(first)
		if err != nil {
			continue
		}
		if _, err := strconv.ParseUint(string(b), 10, 64); err == nil {
			return string(b)
		}
	}
	return ""
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements channels.Adapter. There are no ephemeral messages
// outside interactions, so EphemeralSender is not offered.
func (a *Adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{
		MaxMessageLen: maxMessageLen,
		Edit:          true,
		Buttons:       true,
		Typing:        true,
		TypingEvery:   8 * time.Second, // one typing call lasts 10 s
		Upload:        true,
		Dialect:       channels.DiscordMarkdown,
	}
}

// Account is the bot's user id as used in locations ("" before it is
// known: read from the token, confirmed by READY).
func (a *Adapter) Account() string { return a.identity().ID }

func (a *Adapter) identity() identity {
	if me := a.me.Load(); me != nil {
		return *me
	}
	return identity{AppID: a.opts.ApplicationID}
}

// appID is the application id for commands and interaction responses.
func (a *Adapter) appID() string {
	if a.opts.ApplicationID != "" {
		return a.opts.ApplicationID
	}
	return a.identity().AppID
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

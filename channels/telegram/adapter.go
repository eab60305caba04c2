package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-gw/switchboard/channels"
)

// Name is the channel name of this adapter in locations and identities.
const Name = "telegram"

// Modes of receiving updates.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// Defaults for Options.
const (
	DefaultAPIURL      = "https://api.telegram.org"
	DefaultPollTimeout = 30 * time.Second
	DefaultMaxDownload = 5 << 20
)

// Timeouts of single requests; the caller's context may end them sooner.
const (
	callTimeout   = 60 * time.Second
	uploadTimeout = 5 * time.Minute
)

// Options configure an Adapter.
type Options struct {
	// Token is the bot token from BotFather. Required.
	Token string
	// APIURL is the Bot API server: DefaultAPIURL, a self-hosted Bot API
	// server, or a fake in tests.
	APIURL string
	// Mode is ModePolling (default) or ModeWebhook.
	Mode string
	// WebhookURL is the public HTTPS URL Telegram posts updates to, which
	// must reach WebhookHandler. Required in webhook mode.
	WebhookURL string
	// WebhookSecret is sent by Telegram in X-Telegram-Bot-Api-Secret-Token
	// and checked by WebhookHandler. Required in webhook mode.
	WebhookSecret string
	Logger        *slog.Logger
	// HTTPClient makes the requests; it should have no overall Timeout
	// shorter than PollTimeout (requests carry their own deadlines).
	HTTPClient *http.Client
	// PollTimeout is the getUpdates long-poll timeout (default 30s).
	PollTimeout time.Duration
	// MaxDownload is the largest image downloaded for the model (default
	// 5 MiB); larger ones become a note in the text.
	MaxDownload int64
}

// Adapter is the Telegram channels.Adapter. Create it with New.
type Adapter struct {
	opts   Options
	log    *slog.Logger
	red    redactor
	client *http.Client
	bot    *bot.Bot

	me      atomic.Pointer[identity] // set by Start after getMe
	handler atomic.Pointer[handlerBox]
	started atomic.Bool

	// minBackoff is the first wait after a failure; tests shorten it.
	minBackoff time.Duration
	maxBackoff time.Duration
}

type handlerBox struct{ h channels.Handler }

var (
	_ channels.Adapter = (*Adapter)(nil)
	_ channels.Typer   = (*Adapter)(nil)
)

// New checks the options and builds an adapter. It makes no request; Start
// connects.
func New(opts Options) (*Adapter, error) {
	if strings.TrimSpace(opts.Token) == "" {
		return nil, errors.New("telegram: token is empty: set channels.telegram.token (from BotFather)")
	}
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	opts.APIURL = strings.TrimRight(opts.APIURL, "/")
	switch opts.Mode {
	case "":
		opts.Mode = ModePolling
	case ModePolling:
	case ModeWebhook:
		if opts.WebhookURL == "" || opts.WebhookSecret == "" {
			return nil, errors.New("telegram: webhook mode needs webhook_url and webhook_secret")
		}
	default:
		return nil, fmt.Errorf("telegram: unknown mode %q: use polling or webhook", opts.Mode)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = DefaultPollTimeout
	}
	if opts.MaxDownload <= 0 {
		opts.MaxDownload = DefaultMaxDownload
	}
	a := &Adapter{
		opts:       opts,
		log:        opts.Logger.With("channel", Name),
		red:        newRedactor(opts.Token),
		client:     opts.HTTPClient,
		minBackoff: 250 * time.Millisecond,
		maxBackoff: 30 * time.Second,
	}
	b, err := bot.New(opts.Token,
		bot.WithSkipGetMe(),
		bot.WithServerURL(opts.APIURL),
		bot.WithHTTPClient(opts.PollTimeout, opts.HTTPClient),
		bot.WithErrorsHandler(func(err error) {
			a.log.Warn("telegram client error", "err", a.red.string(err.Error()))
		}),
		bot.WithDebugHandler(func(string, ...any) {}),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %s", a.red.string(err.Error()))
	}
	a.bot = b
	// The bot id is the token's prefix; getMe confirms it at Start.
	if id, err := strconv.ParseInt(strings.SplitN(opts.Token, ":", 2)[0], 10, 64); err == nil {
		a.me.Store(&identity{ID: id})
	}
	return a, nil
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements channels.Adapter.
func (a *Adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{
		MaxMessageLen: 4096,
		Edit:          true,
		Buttons:       true,
		TypingEvery:   4 * time.Second,
		Typing:        true,
		Upload:        true,
		Dialect:       channels.TelegramHTML,
	}
}

// Account is the bot's user id as used in locations ("" before it is
// known).
func (a *Adapter) Account() string {
	if me := a.me.Load(); me != nil {
		return accountOf(*me)
	}
	return ""
}

func (a *Adapter) identity() identity {
	if me := a.me.Load(); me != nil {
		return *me
	}
	return identity{}
}

// Start implements channels.Adapter: getMe, then either the getUpdates loop
// (polling) or setWebhook and waiting for ctx while WebhookHandler delivers.
// It does not register commands: the gateway calls RegisterCommands. It
// returns nil when ctx ends and an error when Telegram refuses the token or
// the webhook.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("telegram: Start needs a handler")
	}
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("telegram: adapter already started")
	}
	me, err := retry(ctx, a, "getMe", func(ctx context.Context) (*models.User, error) {
		return a.bot.GetMe(ctx)
	})
	if err != nil {
		return fmt.Errorf("telegram: check the bot token: %w", err)
	}
	if ctx.Err() != nil {
		return nil
	}
	a.me.Store(&identity{ID: me.ID, Username: me.Username})
	a.log.Info("telegram bot connected", "bot", "@"+me.Username, "id", me.ID, "mode", a.opts.Mode)

	if a.opts.Mode == ModeWebhook {
		// Ready before Telegram learns the URL: it may post at once.
		a.handler.Store(&handlerBox{h: h})
		defer a.handler.Store(nil)
		_, err := retry(ctx, a, "setWebhook", func(ctx context.Context) (bool, error) {
			return a.bot.SetWebhook(ctx, &bot.SetWebhookParams{
				URL:            a.opts.WebhookURL,
				SecretToken:    a.opts.WebhookSecret,
				AllowedUpdates: allowedUpdates(),
			})
		})
		if err != nil {
			return fmt.Errorf("telegram: set webhook %s: %w", a.opts.WebhookURL, err)
		}
		<-ctx.Done()
		return nil
	}
	// A webhook left from webhook mode makes getUpdates fail with 409.
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	if _, err := a.bot.DeleteWebhook(cctx, &bot.DeleteWebhookParams{}); err != nil && ctx.Err() == nil {
		a.log.Warn("telegram deleteWebhook failed", "err", a.red.wrap("deleteWebhook", err))
	}
	cancel()
	a.poll(ctx, h)
	return nil
}

// retry calls f until it succeeds, fails permanently (returned) or ctx
// ends (zero value and nil error).
func retry[T any](ctx context.Context, a *Adapter, op string, f func(context.Context) (T, error)) (T, error) {
	var zero T
	bo := backoff{min: a.minBackoff, max: a.maxBackoff}
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		v, err := f(cctx)
		cancel()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return zero, nil
		}
		err = a.red.classify(op, err)
		if channels.IsPermanent(err) {
			return zero, err
		}
		wait := bo.next()
		if d, ok := channels.RetryAfter(err); ok && d > wait {
			wait = d
		}
		a.log.Warn("telegram request failed; retrying", "op", op, "err", err, "wait", wait)
		if !sleep(ctx, wait) {
			return zero, nil
		}
	}
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

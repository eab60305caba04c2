package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// Name is the channel name of the HTTP API.
const Name = "api"

// Defaults of Options.
const (
	DefaultRetention = 24 * time.Hour
	DefaultMaxBody   = 16 << 20
	DefaultKeepAlive = 15 * time.Second
)

// Token is one bearer token: whoever presents Secret is the caller
// "api:<Name>".
type Token struct {
	Name   string // [a-z0-9_-]; the caller's id on the channel
	Secret string
	Admin  bool
}

// Options configure the API channel.
type Options struct {
	// Tokens are who may call the API; at least one is required (no token,
	// no API).
	Tokens []Token
	// Store keeps the conversations callers started and the event log.
	Store Store
	// Retention is how long events stay resumable (default 24h).
	Retention time.Duration
	// MaxBody bounds a request body (default 16 MiB; images are base64).
	MaxBody int64
	// KeepAlive is how often an idle event stream sends a comment (default
	// 15s), so proxies keep it open and dead clients are noticed.
	KeepAlive time.Duration
	// Logger receives diagnostics; nil discards them. Tokens are never
	// logged.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Adapter is the API channel. Create it with New, mount Handler under
// "/v1/" on the HTTP listener and run Start.
type Adapter struct {
	tokens    []tokenDigest
	store     Store
	retention time.Duration
	maxBody   int64
	keepAlive time.Duration
	log       *slog.Logger
	now       func() time.Time
	mux       http.Handler
	hub       *hub
	locks     convLocks

	mu      sync.Mutex
	handler channels.Handler
	started bool
	done    chan struct{}     // closed when Start returns: every stream ends
	turns   map[string]string // conversation → run id of the turn running here
	// pending holds the turn_start of a turn that has not emitted an
	// event yet (see turnStart).
	pending map[string]channels.LiveEvent
}

// tokenDigest is a token as the adapter keeps it: the secret's digest, so
// comparisons take the same time whatever the input.
type tokenDigest struct {
	name   string
	admin  bool
	digest [sha256.Size]byte
}

var (
	_ channels.Adapter     = (*Adapter)(nil)
	_ channels.LiveSurface = (*Adapter)(nil)
)

// New returns the API channel.
func New(opts Options) (*Adapter, error) {
	if len(opts.Tokens) == 0 {
		return nil, errors.New("api: at least one token is required (no token, no API)")
	}
	if opts.Store == nil {
		return nil, errors.New("api: Options.Store is required")
	}
	a := &Adapter{store: opts.Store, retention: opts.Retention, maxBody: opts.MaxBody, keepAlive: opts.KeepAlive,
		log: opts.Logger, now: opts.Now, hub: newHub(), done: make(chan struct{}),
		turns: map[string]string{}, pending: map[string]channels.LiveEvent{}}
	seen := map[string]bool{}
	for _, t := range opts.Tokens {
		if !validName(t.Name) {
			return nil, fmt.Errorf("api: token name %q: use 1..64 of a-z, 0-9, _ and -", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("api: two tokens are named %q", t.Name)
		}
		if len(t.Secret) < 16 {
			return nil, fmt.Errorf("api: the token of %q is shorter than 16 characters", t.Name)
		}
		seen[t.Name] = true
		a.tokens = append(a.tokens, tokenDigest{name: t.Name, admin: t.Admin, digest: sha256.Sum256([]byte(t.Secret))})
	}
	if a.retention <= 0 {
		a.retention = DefaultRetention
	}
	if a.maxBody <= 0 {
		a.maxBody = DefaultMaxBody
	}
	if a.keepAlive <= 0 {
		a.keepAlive = DefaultKeepAlive
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("channel", Name)
	if a.now == nil {
		a.now = time.Now
	}
	a.mux = a.routes()
	return a, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Name returns "api".
func (a *Adapter) Name() string { return Name }

// Capabilities: messages are recorded in the event log as Markdown, edits
// too; no buttons (decide through POST /v1/approvals/{id}), no length
// limit; rich parts, since programs read the typed events.
func (a *Adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: true, RichParts: true, Dialect: channels.Plain}
}

// Handler returns the HTTP handler of the API, to be mounted at "/v1/".
func (a *Adapter) Handler() http.Handler { return a.mux }

// pruneEvery is how often events past the retention are deleted.
const pruneEvery = time.Hour

// Start stores h for the API's requests, closes the turns an earlier
// process left open, prunes old events hourly and returns nil when ctx
// ends; then every open stream ends and the API answers 503. It returns an
// error if called twice.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("api: start: nil handler")
	}
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return errors.New("api: start: already started")
	}
	a.started = true
	a.handler = h
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.handler = nil
		close(a.done)
		a.mu.Unlock()
	}()

	a.sweepOpenTurns(ctx)
	tick := time.NewTicker(pruneEvery)
	defer tick.Stop()
	for {
		if n, err := a.store.PruneEvents(ctx, a.now().Add(-a.retention)); err != nil && ctx.Err() == nil {
			a.log.Warn("prune old API events", "err", err)
		} else if n > 0 {
			a.log.Debug("pruned old API events", "events", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// currentHandler returns the handler Start stored, nil before Start and
// after it returned.
func (a *Adapter) currentHandler() channels.Handler {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handler
}

// Send records m in the log of the conversation at loc as a chat_message
// event (notices, command replies, approval texts, a turn's final reply:
// final is true when m ends a turn).
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	if err := checkLocation(loc); err != nil {
		return channels.MessageRef{}, err
	}
	if err := m.Validate(); err != nil {
		return channels.MessageRef{}, channels.Permanent(fmt.Errorf("api: send to %s: %w", loc, err))
	}
	id := "msg-" + randomID()
	if err := a.chatEvent(ctx, loc, id, TypeChatMessage, m); err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{Location: loc, ID: id}, nil
}

// Edit records a chat_message_edit event for a message Send returned.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	if err := checkLocation(ref.Location); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return channels.Permanent(fmt.Errorf("api: edit %s: %w", ref, err))
	}
	if ref.ID == "" || len(ref.ID) > maxRunIDLen {
		return channels.Permanent(fmt.Errorf("api: edit: bad message id %q", clip(ref.ID)))
	}
	return a.chatEvent(ctx, ref.Location, ref.ID, TypeChatEdit, m)
}

// chatMessage is the data of chat_message and chat_message_edit events.
type chatMessage struct {
	MessageID string   `json:"messageId"`
	Text      string   `json:"text,omitempty"` // Markdown
	Notices   []string `json:"notices,omitempty"`
	Final     bool     `json:"final,omitempty"` // the final reply of a turn
	Turn      string   `json:"turn,omitempty"`
}

func (a *Adapter) chatEvent(ctx context.Context, loc channels.Location, id, typ string, m channels.Message) error {
	cm := chatMessage{MessageID: id, Text: m.Markdown(), Final: m.Turn != "", Turn: m.Turn}
	for _, p := range m.Parts {
		if n, ok := p.(channels.Notice); ok && n.Text != "" {
			cm.Notices = append(cm.Notices, n.Text)
		}
	}
	body, _ := json.Marshal(cm)
	// The message's own run: its edits count up from the send.
	if _, err := a.appendEvent(ctx, Event{ConversationID: loc.ChatID, RunID: id, Type: typ, Data: body}); err != nil {
		return err // transient: the outbox retries
	}
	return nil
}

func checkLocation(loc channels.Location) error {
	if loc.Channel != Name || loc.ChatID == "" || !validName(loc.Account) {
		return channels.Permanent(fmt.Errorf("api: %s is not an API conversation", loc))
	}
	return nil
}

// location is the Location of conversation conv for the caller account:
// the conversation's id names it (the gateway binds it there).
func location(account, conv string) channels.Location {
	return channels.Location{Channel: Name, Account: account, ChatID: conv}
}

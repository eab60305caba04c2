package web

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// Name is the channel name of the web page.
const Name = "web"

// Account is the Location.Account of every web chat: there is one page per
// process.
const Account = "local"

const (
	maxMessages = 200 // kept per chat for reconnecting pages
	maxChats    = 500 // chats kept in memory; the least recent idle one goes first
	// maxKept bounds the messages kept over all chats: past it the least
	// recently changed chats nobody watches go first.
	maxKept = 4000
	// chatIdle: a chat nobody watches that did not change for this long is
	// dropped (its page reloads what it needs from History); chats are
	// swept at most every sweepEvery, when one is created.
	chatIdle          = 15 * time.Minute
	sweepEvery        = time.Minute
	maxSessions       = 64 // logins kept; the oldest goes first
	sessionTTL        = 30 * 24 * time.Hour
	keepaliveInterval = 15 * time.Second
	defaultMaxUpload  = 10 << 20
	maxChatIDLen      = 128
)

// ErrMessageNotFound is returned (as a permanent error) by Edit and Delete
// for a message this process never sent or no longer keeps.
var ErrMessageNotFound = errors.New("web: message not found")

// Options configure the web channel.
type Options struct {
	// Sessions keeps logins across restarts; nil keeps them in memory.
	Sessions SessionStore
	// OneTimeToken: Token is a login link printed once (no token was
	// configured): it logs in once, then only sessions work.
	OneTimeToken bool
	// Token is the login token; required. The caller generates a random one
	// when the configuration has none.
	Token string
	// User is the display name and id of the person who logs in; the
	// identity is "web:" + User. Default "owner".
	User string
	// MaxUpload bounds the files of one message a person sends, in bytes.
	// Default 10 MiB.
	MaxUpload int64
	// Logger receives diagnostics; nil discards them. The token is never
	// logged.
	Logger *slog.Logger
	// Now is the clock of the login rate limit and of chat idleness; nil
	// means time.Now.
	Now func() time.Time
}

// Adapter is the web channel. Create it with New; mount Handler on the HTTP
// listener and run Start.
type Adapter struct {
	token        []byte
	oneTime      bool
	sessionStore SessionStore
	user         string
	maxUpload    int64
	log          *slog.Logger
	epoch        string // distinguishes this process's event ids from an earlier one's
	mux          http.Handler
	logins       *loginLimiter
	now          func() time.Time

	mu        sync.Mutex
	handler   channels.Handler
	started   bool
	ready     chan struct{} // closed when Start has stored the handler
	done      chan struct{} // closed when Start returns; ends every event stream
	seq       uint64        // last change number, across all chats
	notice    string
	noticeSeq uint64
	sessions  map[string]time.Time // session id → expiry (a cache of the store's)
	tokenUsed bool                 // the one-time token logged in once
	chats     map[string]*chat
	files     map[string]storedFile
	subs      map[*subscriber]struct{}
	commands  []viewCommand // the gateway's table, for the page's hints
	kept      int           // messages over all chats
	swept     time.Time     // last sweep of idle chats
}

// chat is the in-memory state of one web location.
type chat struct {
	id        string
	title     string // the first thing the person wrote, shortened
	updated   time.Time
	msgs      []*message // creation order, at most maxMessages
	typingSeq uint64
}

// message is one message of a chat: its current content and the change
// number of its last change.
type message struct {
	view    viewMessage
	seq     uint64
	deleted bool     // a tombstone, so pages that saw it remove it
	files   []string // ids in Adapter.files owned by this message
}

// subscriber is one open event stream. wake has one slot: a pending wake-up
// already covers every later change, since the stream pulls current state.
type subscriber struct {
	chat string
	wake chan struct{}
}

var (
	_ channels.Adapter          = (*Adapter)(nil)
	_ channels.Typer            = (*Adapter)(nil)
	_ channels.Deleter          = (*Adapter)(nil)
	_ channels.EphemeralSender  = (*Adapter)(nil)
	_ channels.CommandRegistrar = (*Adapter)(nil)
)

// New returns a web channel. It panics if opts.Token is empty: serving the
// page without a login would hand the host to anyone who can reach the port.
func New(opts Options) *Adapter {
	if opts.Token == "" {
		panic("web.New: Options.Token is required")
	}
	if opts.User == "" {
		opts.User = "owner"
	}
	if opts.MaxUpload <= 0 {
		opts.MaxUpload = defaultMaxUpload
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Adapter{
		token:     []byte(opts.Token),
		user:      opts.User,
		maxUpload: opts.MaxUpload,
		log:       log.With("channel", Name),
		epoch:     rand.Text()[:8],
		ready:     make(chan struct{}),
		done:      make(chan struct{}),
		sessions:  map[string]time.Time{},
		chats:     map[string]*chat{},
		files:     map[string]storedFile{},
		subs:      map[*subscriber]struct{}{},
		logins:    newLoginLimiter(opts.Now),
		now:       opts.Now,

		sessionStore: opts.Sessions,
		oneTime:      opts.OneTimeToken,
	}
	a.mux = a.routes()
	return a
}

// Name returns "web".
func (a *Adapter) Name() string { return Name }

// typingShown is how long the page shows "typing…" after one Typing call
// (app.js hides it after 8 s); TypingEvery renews it before that.
const typingShown = 8 * time.Second

// Capabilities: edits, buttons, ephemeral messages, uploads, typing and rich
// parts; no threads. Text is HTML.
func (a *Adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{
		MaxMessageLen: 100000,
		Edit:          true, Buttons: true, Ephemeral: true, Upload: true,
		Typing: true, TypingEvery: typingShown - 2*time.Second, RichParts: true,
		Dialect: channels.HTML,
	}
}

// Handler returns the HTTP handler of the page and its API, to be mounted at
// "/" on the caller's listener.
func (a *Adapter) Handler() http.Handler { return a.mux }

// Start stores h for the page's requests and returns nil when ctx ends; then
// every open event stream ends and the API answers 503. It returns an error
// if called twice.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("web: start: nil handler")
	}
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return errors.New("web: start: already started")
	}
	a.started = true
	a.handler = h
	close(a.ready)
	a.mu.Unlock()

	<-ctx.Done()

	a.mu.Lock()
	a.handler = nil
	close(a.done)
	a.mu.Unlock()
	return nil
}

// RegisterCommands implements channels.CommandRegistrar: the page offers
// the table as hints when the person starts typing "/" (pages loaded from
// now on; GET /api/state carries it). It never fails.
func (a *Adapter) RegisterCommands(ctx context.Context, cmds []channels.Command) error {
	list := make([]viewCommand, 0, len(cmds))
	for _, c := range cmds {
		list = append(list, viewCommand{Name: c.Name, Args: c.Args, Description: c.Description, Admin: c.AdminOnly})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.commands = list
	return nil
}

// SetNotice shows text as a banner on every open page; "" removes it.
func (a *Adapter) SetNotice(text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.notice == text {
		return
	}
	a.notice = text
	a.seq++
	a.noticeSeq = a.seq
	for s := range a.subs {
		wake(s)
	}
}

// Send posts m in the chat of loc. A message longer than MaxMessageLen
// (which the gateway normally paginates itself) becomes several messages,
// cut by channels.Paginate; Send returns the first.
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	return a.post(loc, m, false)
}

// SendEphemeral shows m in the chat of loc marked as visible only to the
// person; it is not kept in the conversation's history. The page has one
// person, so userID must be Options.User.
func (a *Adapter) SendEphemeral(ctx context.Context, loc channels.Location, userID string, m channels.Message) error {
	if userID != a.user {
		return channels.Permanent(fmt.Errorf("web: ephemeral message for %q: the page's only user is %q", userID, a.user))
	}
	_, err := a.post(loc, m, true)
	return err
}

func (a *Adapter) post(loc channels.Location, m channels.Message, ephemeral bool) (channels.MessageRef, error) {
	if err := a.checkLocation(loc); err != nil {
		return channels.MessageRef{}, err
	}
	if err := m.Validate(); err != nil {
		return channels.MessageRef{}, channels.Permanent(fmt.Errorf("web: send to %s: %w", loc, err))
	}
	pages := channels.Paginate(m, a.Capabilities())
	if len(pages) == 0 {
		pages = []channels.Message{m}
	}
	msgs := make([]*message, 0, len(pages))
	var files []storedFile
	var fileIDs []string
	now := time.Now()
	for _, pg := range pages {
		fs, ids := attachmentFiles(pg)
		files, fileIDs = append(files, fs...), append(fileIDs, ids...)
		v := viewMessage{ID: "m-" + rand.Text()[:16], Role: channels.RoleAssistant, At: now, Parts: renderParts(pg, ids), Ephemeral: ephemeral}
		msgs = append(msgs, &message{view: v, files: ids})
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.chat(loc.ChatID)
	a.addFiles(fileIDs, files)
	for _, msg := range msgs {
		a.appendMessage(c, msg)
	}
	return channels.MessageRef{Location: loc, ID: msgs[0].view.ID}, nil
}

// Edit replaces the content of a message Send returned; its buttons become
// pressable again.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	if err := a.checkLocation(ref.Location); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return channels.Permanent(fmt.Errorf("web: edit %s: %w", ref, err))
	}
	files, ids := attachmentFiles(m)
	parts := renderParts(m, ids)

	a.mu.Lock()
	defer a.mu.Unlock()
	msg := a.find(ref)
	if msg == nil {
		return channels.Permanent(fmt.Errorf("web: edit %s: %w", ref, ErrMessageNotFound))
	}
	a.dropFiles(msg.files)
	a.addFiles(ids, files)
	msg.files = ids
	msg.view.Parts = parts
	msg.view.Pressed = false
	a.touch(ref.Location.ChatID, msg)
	return nil
}

// Delete removes a message from open pages.
func (a *Adapter) Delete(ctx context.Context, ref channels.MessageRef) error {
	if err := a.checkLocation(ref.Location); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	msg := a.find(ref)
	if msg == nil {
		return channels.Permanent(fmt.Errorf("web: delete %s: %w", ref, ErrMessageNotFound))
	}
	a.deleteLocked(ref.Location.ChatID, msg)
	return nil
}

// Typing shows "typing…" in the chat of loc for a few seconds.
func (a *Adapter) Typing(ctx context.Context, loc channels.Location) error {
	if err := a.checkLocation(loc); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.chat(loc.ChatID)
	a.seq++
	c.typingSeq = a.seq
	a.wakeChat(c.id)
	return nil
}

func (a *Adapter) checkLocation(loc channels.Location) error {
	if loc.Channel != Name || !validID(loc.ChatID) {
		return channels.Permanent(fmt.Errorf("web: %s is not a web chat location", loc))
	}
	return nil
}

// location is the Location of the chat with the given id.
func location(chatID string) channels.Location {
	return channels.Location{Channel: Name, Account: Account, ChatID: chatID}
}

// validID accepts the ids the adapter and the store generate (random base32,
// UUIDs) and nothing that needs escaping in a URL path or a log line.
func validID(s string) bool {
	if s == "" || len(s) > maxChatIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// attachmentFiles returns the message's attachments as stored files with
// fresh random ids.
func attachmentFiles(m channels.Message) ([]storedFile, []string) {
	var files []storedFile
	var ids []string
	for _, at := range m.Attachments() {
		files = append(files, storedFile{Name: at.Name, MIME: at.MIME, Data: at.Data, Path: at.Path})
		ids = append(ids, rand.Text())
	}
	return files, ids
}

// The methods below need a.mu held.

// chat returns the chat with id, creating it (and evicting the least
// recently updated chat nobody watches when there are too many).
func (a *Adapter) chat(id string) *chat {
	if c, ok := a.chats[id]; ok {
		return c
	}
	now := a.now()
	if now.Sub(a.swept) >= sweepEvery {
		a.swept = now
		a.dropIdleChats(now)
	}
	c := &chat{id: id, updated: now}
	a.chats[id] = c
	for len(a.chats) > maxChats && a.evictChat(c) {
	}
	return c
}

// watched returns the chats an event stream is open on.
func (a *Adapter) watched() map[string]bool {
	w := map[string]bool{}
	for s := range a.subs {
		w[s.chat] = true
	}
	return w
}

// dropIdleChats drops the chats nobody watches that did not change within
// chatIdle.
func (a *Adapter) dropIdleChats(now time.Time) {
	watched := a.watched()
	for id, c := range a.chats {
		if !watched[id] && now.Sub(c.updated) >= chatIdle {
			a.dropChat(c)
		}
	}
}

// evictChat drops the least recently changed chat nobody watches, other
// than keep; false when there is none.
func (a *Adapter) evictChat(keep *chat) bool {
	watched := a.watched()
	var oldest *chat
	for _, c := range a.chats {
		if c != keep && !watched[c.id] && (oldest == nil || c.updated.Before(oldest.updated)) {
			oldest = c
		}
	}
	if oldest == nil {
		return false
	}
	a.dropChat(oldest)
	return true
}

func (a *Adapter) dropChat(c *chat) {
	for _, m := range c.msgs {
		a.dropFiles(m.files)
	}
	a.kept -= len(c.msgs)
	delete(a.chats, c.id)
}

func (a *Adapter) appendMessage(c *chat, m *message) {
	c.msgs = append(c.msgs, m)
	a.kept++
	if n := len(c.msgs) - maxMessages; n > 0 {
		for _, old := range c.msgs[:n] {
			a.dropFiles(old.files)
		}
		c.msgs = slices.Delete(c.msgs, 0, n)
		a.kept -= n
	}
	a.touch(c.id, m)
	for a.kept > maxKept && a.evictChat(c) {
	}
}

// touch records a change of m in chat id and wakes the chat's streams.
func (a *Adapter) touch(chatID string, m *message) {
	a.seq++
	m.seq = a.seq
	if c, ok := a.chats[chatID]; ok {
		c.updated = a.now()
	}
	a.wakeChat(chatID)
}

func (a *Adapter) deleteLocked(chatID string, m *message) {
	a.dropFiles(m.files)
	m.files = nil
	m.deleted = true
	m.view.Parts = nil
	a.touch(chatID, m)
}

func (a *Adapter) find(ref channels.MessageRef) *message {
	c, ok := a.chats[ref.Location.ChatID]
	if !ok {
		return nil
	}
	for _, m := range c.msgs {
		if m.view.ID == ref.ID && !m.deleted {
			return m
		}
	}
	return nil
}

func (a *Adapter) addFiles(ids []string, files []storedFile) {
	for i, id := range ids {
		a.files[id] = files[i]
	}
}

func (a *Adapter) dropFiles(ids []string) {
	for _, id := range ids {
		delete(a.files, id)
	}
}

func (a *Adapter) wakeChat(chatID string) {
	for s := range a.subs {
		if s.chat == chatID {
			wake(s)
		}
	}
}

func wake(s *subscriber) {
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending; it will see this change too
	}
}

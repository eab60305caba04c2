package slacktest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Credentials and ids of the fake workspace.
const (
	BotToken      = "xoxb-1111-2222-fakebottoken"
	AppToken      = "xapp-1-A0APP-3333-fakeapptoken"
	SigningSecret = "fake-signing-secret-0123456789"
	TeamID        = "T0TEAM"
	AppID         = "A0APP"
	BotUserID     = "U0BOT"
	BotID         = "B0BOT"
	// General is a public channel the bot is a member of.
	General = "C0GENERAL"
	// Ada and Grace are people in the workspace.
	Ada   = "U0ADA"
	Grace = "U0GRACE"
)

// User is a person of the fake workspace.
type User struct {
	ID, Name, RealName, DisplayName string
}

// Message is a message as the fake stores it.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // the root's ts for a reply ("" for a top-level message)
	User     string
	BotID    string // set for the bot's messages
	Text     string
	Blocks   []Block
	Files    []string // ids of shared files
	Edits    int
	Deleted  bool
	// Metadata is the message metadata the app posted (JSON), returned by
	// conversations.replies and .history with include_all_metadata.
	Metadata string
}

// Shown is the text the message shows: its section blocks' text, else its
// text.
func (m Message) Shown() string {
	var parts []string
	for _, b := range m.Blocks {
		if b.Type == "section" {
			parts = append(parts, b.Text)
		}
	}
	if len(parts) == 0 {
		return m.Text
	}
	return strings.Join(parts, "\n")
}

// Buttons returns the message's buttons in order.
func (m Message) Buttons() []Button {
	var out []Button
	for _, b := range m.Blocks {
		out = append(out, b.Buttons...)
	}
	return out
}

// Block is a Block Kit block as far as the fake reads it.
type Block struct {
	Type    string
	BlockID string
	Text    string // a section's text
	Buttons []Button
}

// Button is a button element of an actions block.
type Button struct {
	ActionID, Value, Text, Style string
}

// Ephemeral is a message only one user saw.
type Ephemeral struct {
	Channel, User, Text, ThreadTS string
	Via                           string // "chat.postEphemeral" or "response_url"
}

// Call is one Web API request.
type Call struct {
	Method string
	Params map[string]string
	At     time.Time
	Error  string // the error answered ("" for ok), or "429"
}

// Failure is how the fake refuses a call: with HTTP 429 and a Retry-After
// (RateLimited), or ok:false and an error code.
type Failure struct {
	RateLimited time.Duration
	Error       string
	// Taken: the call takes effect, and then the answer is the failure
	// (the answer was lost on its way, or the caller died waiting for it).
	Taken bool
}

// Option configures a Server.
type Option func(*Server)

// PingEvery sets how often the Socket Mode connection pings (default
// 100 ms; 0 disables pings).
func PingEvery(d time.Duration) Option { return func(s *Server) { s.pingEvery = d } }

// RedeliverAfter sets how long an unacknowledged event waits before it is
// delivered again (default 300 ms), at most three times, as Slack does.
func RedeliverAfter(d time.Duration) Option { return func(s *Server) { s.redeliverAfter = d } }

// DefaultScopes are the bot token's scopes (the X-OAuth-Scopes header of
// every answer): those of an app created from switchboard's manifest.
var DefaultScopes = []string{"app_mentions:read", "channels:history", "groups:history", "im:history", "mpim:history",
	"chat:write", "users:read", "files:read", "files:write", "im:write", "commands"}

// SetScopes replaces the bot token's scopes.
func (s *Server) SetScopes(scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes = strings.Join(scopes, ",")
}

// Server is a fake Slack. See the package documentation.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	pingEvery      time.Duration
	redeliverAfter time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	closed     bool
	changed    chan struct{}
	lastMicro  int64
	seq        int
	users      map[string]User
	channels   map[string]*channel
	calls      []Call
	failures   []pendingFailure
	refuse     map[string]bool // channel/ts roots that refuse replies
	ephemerals []Ephemeral
	files      map[string]*storedFile
	responses  map[string]responseHook
	events     map[string]*event
	order      []string // event ids in creation order
	holding    bool     // emit holds the events it creates (a Late post)
	envelopes  map[string]*envelope
	scopes     string // X-OAuth-Scopes of the bot token
	conn       *conn  // the current Socket Mode connection
	conns      int
	opens      int
	http       *httpTarget
}

type channel struct {
	id   string
	im   bool
	user string // the person of a DM
	msgs []*Message
}

type pendingFailure struct {
	methods []string
	f       Failure
}

type storedFile struct {
	id, name, mime string
	data           []byte
	uploaded       bool
}

type responseHook struct {
	user, channel, thread string
}

// New starts a fake Slack on 127.0.0.1, closed when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	s := &Server{
		t:              t,
		pingEvery:      100 * time.Millisecond,
		redeliverAfter: 300 * time.Millisecond,
		changed:        make(chan struct{}),
		users: map[string]User{
			Ada:       {ID: Ada, Name: "ada", RealName: "Ada Lovelace", DisplayName: "Ada"},
			Grace:     {ID: Grace, Name: "grace", RealName: "Grace Hopper", DisplayName: ""},
			BotUserID: {ID: BotUserID, Name: "switchboard", RealName: "switchboard"},
		},
		channels:  map[string]*channel{General: {id: General}},
		scopes:    strings.Join(DefaultScopes, ","),
		refuse:    map[string]bool{},
		files:     map[string]*storedFile{},
		responses: map[string]responseHook{},
		events:    map[string]*event{},
		envelopes: map[string]*envelope{},
	}
	for _, o := range opts {
		o(s)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("GET /ws", s.websocket)
	mux.HandleFunc("POST /upload/{id}", s.uploadFile)
	mux.HandleFunc("GET /files-pri/{id}/{name}", s.downloadFile)
	mux.HandleFunc("POST /response/{id}", s.response)
	s.srv = httptest.NewServer(mux)
	s.wg.Go(s.redeliverLoop)
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	c := s.conn
	s.mu.Unlock()
	s.cancel()
	if c != nil {
		_ = c.ws.CloseNow()
	}
	s.wg.Wait()
	s.srv.Close()
}

// URL is the Web API base URL, ending in "/api/" (the adapter's api_url).
func (s *Server) URL() string { return s.srv.URL + "/api/" }

// base is the server's root URL.
func (s *Server) base() string { return s.srv.URL }

// spawn runs f on a goroutine the server waits for at close, unless it is
// closing; call with s.mu held.
func (s *Server) spawn(f func()) {
	if !s.closed {
		s.wg.Go(f)
	}
}

// notify wakes WaitFor; call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor blocks until cond holds or ctx ends. cond runs without the
// server's lock and may call its methods; it is checked again after every
// change (a call, an ack, a message, a connection).
func (s *Server) WaitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slacktest: waiting for %s: %w", what, ctx.Err())
		case <-ch:
		}
	}
}

// nextTS returns a fresh message ts from the wall clock, strictly
// increasing; call with s.mu held.
func (s *Server) nextTS() string {
	micro := max(time.Now().UnixMicro(), s.lastMicro+1)
	s.lastMicro = micro
	return fmt.Sprintf("%d.%06d", micro/1_000_000, micro%1_000_000)
}

// nextID returns prefix followed by a fresh number; call with s.mu held.
func (s *Server) nextID(prefix string) string {
	s.seq++
	return prefix + strconv.Itoa(s.seq)
}

// DM returns the id of the direct-message channel between the bot and
// user, creating it.
func (s *Server) DM(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dm(user)
}

func (s *Server) dm(user string) string {
	id := "D" + strings.TrimPrefix(user, "U")
	if _, ok := s.channels[id]; !ok {
		s.channels[id] = &channel{id: id, im: true, user: user}
	}
	return id
}

// AddChannel adds a channel the bot is a member of.
func (s *Server) AddChannel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[id]; !ok {
		s.channels[id] = &channel{id: id}
	}
}

// RefuseReplies makes the message ts in channel refuse threaded replies
// (chat.postMessage answers cannot_reply_to_message).
func (s *Server) RefuseReplies(channel, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[channel+"/"+ts] = true
}

// FailNext makes the next call of any of methods fail with f.
func (s *Server) FailNext(f Failure, methods ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, pendingFailure{methods: methods, f: f})
}

// takeFailure returns and removes the first failure for method; call with
// s.mu held.
func (s *Server) takeFailure(method string) (Failure, bool) {
	for i, pf := range s.failures {
		if slices.Contains(pf.methods, method) {
			s.failures = slices.Delete(s.failures, i, i+1)
			return pf.f, true
		}
	}
	return Failure{}, false
}

// Messages returns the messages of a channel, oldest first.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[channel]
	if c == nil {
		return nil
	}
	out := make([]Message, 0, len(c.msgs))
	for _, m := range c.msgs {
		cp := *m
		cp.Blocks = slices.Clone(m.Blocks)
		out = append(out, cp)
	}
	return out
}

// Message returns one message.
func (s *Server) Message(channel, ts string) (Message, bool) {
	for _, m := range s.Messages(channel) {
		if m.TS == ts {
			return m, true
		}
	}
	return Message{}, false
}

// BotMessages returns the bot's messages at a place: a thread (thread is
// its root ts) or, when thread is "", the channel's top level.
func (s *Server) BotMessages(channel, thread string) []Message {
	var out []Message
	for _, m := range s.Messages(channel) {
		if m.BotID != BotID || m.Deleted || m.ThreadTS != thread {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Ephemerals returns the ephemeral messages shown, oldest first.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ephemerals)
}

// Calls returns the Web API calls made, oldest first; with methods, only
// those.
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// FileData returns an uploaded file's name and content.
func (s *Server) FileData(id string) (name string, data []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[id]
	if f == nil || !f.uploaded {
		return "", nil, false
	}
	return f.name, slices.Clone(f.data), true
}

// AddFile stores a file a person shares (see WithFile); it returns its id.
func (s *Server) addFile(name, mime string, data []byte) string {
	id := s.nextID("F0")
	s.files[id] = &storedFile{id: id, name: name, mime: mime, data: data, uploaded: true}
	return id
}

// Sign returns the headers Slack signs a request body with at time at.
func Sign(body []byte, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(SigningSecret))
	fmt.Fprintf(mac, "v0:%s:", ts)
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

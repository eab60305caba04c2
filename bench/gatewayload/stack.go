package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/agentcore/tools"
	"github.com/switchboard-gw/switchboard/bench/internal/loadmodel"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/sandbox"
	"github.com/switchboard-gw/switchboard/store"
)

// stack is the real gateway in this process: the sqlite store on a file,
// agentcore with the OpenAI provider, and gateway.New with the light
// adapter. The model is the loadmodel script, in this process (modelURL
// "") or in another (a fakemodel-server -mode load URL).
type stack struct {
	dir   string
	db    *store.DB
	gw    *gateway.Gateway
	model *fakemodel.Server // nil when the model runs in another process
	// transport is the provider's, to close its idle connections.
	transport *http.Transport
	stop      context.CancelFunc
	done      chan error
}

// stackOptions say how to build a stack.
type stackOptions struct {
	modelURL string // "": in process
	// onEnd is called when the body of a model response whose request
	// carries a phase B key has been read to its end.
	onEnd func(key int, at time.Time)
}

// newStack builds store, agent and gateway in dir (kept: a later stack on
// the same dir is a restart) around ad.
func newStack(dir string, ad *adapter, o stackOptions) (*stack, error) {
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, err
	}
	db, err := store.Open(context.Background(), filepath.Join(dir, "sb.db"))
	if err != nil {
		return nil, err
	}
	s := &stack{dir: dir, db: db, done: make(chan error, 1)}
	url := o.modelURL
	if url == "" {
		s.model = fakemodel.NewServer()
		s.model.DiscardRequests()
		s.model.SetResponder(new(loadmodel.Responder).Respond)
		url = s.model.URL()
	}
	// The provider's client is agentcore's default (a transport keeping
	// 256 idle connections to the host), wrapped to see when each response
	// ends.
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns, base.MaxIdleConnsPerHost = 512, 256
	s.transport = base
	tr := &endTransport{base: base, onEnd: o.onEnd}
	red := sandbox.NewRedactor()
	ag := agentcore.New(agentcore.Config{
		ID:              "main",
		Model:           "bench-model",
		ContextWindow:   32768,
		MaxOutputTokens: 1024,
		Preset:          "You are a benchmark agent.",
		Policy:          permission.Policy{Mode: permission.Mode("standard"), Workspace: ws},
	}, agentcore.Deps{
		Store:    db,
		Provider: agentcore.NewOpenAI(agentcore.OpenAIOptions{BaseURL: url, Model: "bench-model", HTTPClient: &http.Client{Transport: tr}}),
		Tools:    agentcore.NewTools(tools.Default()...),
		Env:      agentcore.ToolEnv{AgentID: "main", Workspace: ws, Runner: sandbox.NewRunner(sandbox.Options{Redactor: red}), Redactor: red, Env: []string{"PATH=/usr/bin:/bin"}},
	})
	s.gw, err = gateway.New(gateway.Options{
		Store:      db,
		Agents:     map[string]*agentcore.Agent{"main": ag},
		AgentStore: db,
		Channels:   map[string]gateway.ChannelOptions{"chat": {AllowAll: true}},
	}, ad)
	if err != nil {
		s.closeModel()
		db.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.done <- s.gw.Run(ctx, 5*time.Second) }()
	select {
	case <-ad.started:
	case err := <-s.done:
		s.done <- err
		s.close()
		return nil, fmt.Errorf("gateway stopped at start: %v", err)
	}
	return s, nil
}

func (s *stack) closeModel() {
	if s.model != nil {
		s.model.Close()
	}
}

func (s *stack) close() {
	s.stop()
	<-s.done
	s.closeModel()
	s.db.Close()
}

// key is the text of phase B's message i; keyOf finds the last key in a
// text or request body.
func key(i int) string { return "lmk-" + strconv.Itoa(i) + "." }

func keyOf(b []byte) (int, bool) {
	at := bytes.LastIndex(b, []byte("lmk-"))
	if at < 0 {
		return 0, false
	}
	rest := b[at+4:]
	end := bytes.IndexByte(rest, '.')
	if end <= 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest[:end]))
	return n, err == nil
}

// endTransport calls onEnd(key) when the body of the response to a
// request carrying a phase B key has been read to its end or closed: the
// moment the provider is done with the model.
type endTransport struct {
	base  http.RoundTripper
	onEnd func(key int, at time.Time)
}

func (t *endTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.onEnd == nil || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	k, ok := keyOf(body)
	resp, err := t.base.RoundTrip(req)
	if err != nil || !ok {
		return resp, err
	}
	resp.Body = &endBody{ReadCloser: resp.Body, end: func() { t.onEnd(k, time.Now()) }}
	return resp, nil
}

type endBody struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (b *endBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.end)
	}
	return n, err
}

func (b *endBody) Close() error {
	b.once.Do(b.end)
	return b.ReadCloser.Close()
}

// adapter is a light chat adapter ("chat"): it counts what it is sent —
// replies, approval messages (those with buttons) — and keeps per chat
// only what a phase asks it to record, so its own memory stays out of the
// figures.
type adapter struct {
	started chan struct{}
	caps    channels.Capabilities
	handler channels.Handler
	onSend  func(loc channels.Location, m channels.Message, text string, at time.Time)
	record  bool // keep every reply text per chat (phase A's order check)

	mu        sync.Mutex
	replies   map[string][]string
	sent      int // every Send
	approvals int // Sends with buttons
	waiters   []waiter
}

type waiter struct {
	done  func(a *adapter) bool
	ready chan struct{}
}

func newAdapter(buttons bool) *adapter {
	return &adapter{started: make(chan struct{}), replies: map[string][]string{},
		caps: channels.Capabilities{MaxMessageLen: 4000, Buttons: buttons, Dialect: channels.Plain}}
}

func (a *adapter) Name() string                        { return "chat" }
func (a *adapter) Capabilities() channels.Capabilities { return a.caps }

func (a *adapter) Start(ctx context.Context, h channels.Handler) error {
	a.handler = h
	close(a.started)
	<-ctx.Done()
	return nil
}

func (a *adapter) Send(_ context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	at := time.Now()
	text := strings.TrimSpace(m.Markdown())
	if a.onSend != nil {
		a.onSend(loc, m, text, at)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.record {
		a.replies[loc.ChatID] = append(a.replies[loc.ChatID], text)
	}
	a.sent++
	if hasButtons(m) {
		a.approvals++
	}
	a.wake()
	return channels.MessageRef{Location: loc, ID: strconv.Itoa(a.sent)}, nil
}

func (a *adapter) Edit(context.Context, channels.MessageRef, channels.Message) error { return nil }

func hasButtons(m channels.Message) bool {
	for _, p := range m.Parts {
		if _, ok := p.(channels.Buttons); ok {
			return true
		}
	}
	return false
}

// wake releases the waiters whose condition holds; a.mu held.
func (a *adapter) wake() {
	keep := a.waiters[:0]
	for _, w := range a.waiters {
		if w.done(a) {
			close(w.ready)
		} else {
			keep = append(keep, w)
		}
	}
	a.waiters = keep
}

// waitFor waits until done holds (checked under the adapter's lock after
// every Send), at most limit.
func (a *adapter) waitFor(ctx context.Context, limit time.Duration, what string, done func(a *adapter) bool) error {
	a.mu.Lock()
	if done(a) {
		a.mu.Unlock()
		return nil
	}
	w := waiter{done: done, ready: make(chan struct{})}
	a.waiters = append(a.waiters, w)
	a.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-w.ready:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Errorf("waiting for %s: only %d sends (%d approval messages) within %v", what, a.sent, a.approvals, limit)
}

// waitSent waits until n sends in total have happened.
func (a *adapter) waitSent(ctx context.Context, n int, limit time.Duration) error {
	return a.waitFor(ctx, limit, fmt.Sprintf("%d sends", n), func(a *adapter) bool { return a.sent >= n })
}

func (a *adapter) counts() (sent, approvals int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent, a.approvals
}

// location and user of conversation c of the load.
func location(c int) channels.Location {
	return channels.Location{Channel: "chat", Account: "bot", ChatID: "user-" + strconv.Itoa(c)}
}

func user(c int) channels.User {
	id := "u" + strconv.Itoa(c)
	return channels.User{ID: id, Name: id}
}

// inbound hands message text of conversation c to the gateway; id makes
// the platform event id unique.
func (a *adapter) inbound(ctx context.Context, c int, id, text string) error {
	return a.handler.OnInbound(ctx, channels.Inbound{
		EventID: "ev-" + strconv.Itoa(c) + "-" + id, Location: location(c),
		User: user(c), Text: text, DirectMessage: true, Mentioned: true, At: time.Now(),
	})
}

// checkOrder verifies that every conversation got its answers once and in
// order (phase A).
func (a *adapter) checkOrder(convs, per int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range convs {
		got := a.replies["user-"+strconv.Itoa(c)]
		if len(got) != per {
			return fmt.Errorf("conversation %d got %d answers, want %d", c, len(got), per)
		}
		for m, r := range got {
			if want := fmt.Sprintf("echo: c%d m%d", c, m); !strings.HasPrefix(r, want+" req=") {
				return fmt.Errorf("conversation %d answer %d = %q, want %q", c, m, r, want)
			}
		}
	}
	return nil
}

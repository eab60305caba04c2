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
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/sandbox"
	"github.com/switchboard-gw/switchboard/store"
)

// stack is the real gateway in one process.
type stack struct {
	db        *store.DB
	model     *fakemodel.Server
	transport *endTransport
	stop      context.CancelFunc
	done      chan error
}

// newStack builds store, agent and gateway around ad, with the scripted
// model answering every request through respond.
func newStack(dir string, ad *adapter, respond func(fakemodel.Request) fakemodel.Step, onEnd func(key int, at time.Time)) (*stack, error) {
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, err
	}
	db, err := store.Open(context.Background(), filepath.Join(dir, "sb.db"))
	if err != nil {
		return nil, err
	}
	model := fakemodel.NewServer()
	model.SetResponder(respond)
	// The provider's client is the one agentcore uses by default (an
	// http.Client on http.DefaultTransport), wrapped to see when each
	// response ends.
	tr := &endTransport{base: http.DefaultTransport, onEnd: onEnd}
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
		Provider: agentcore.NewOpenAI(agentcore.OpenAIOptions{BaseURL: model.URL(), Model: "bench-model", HTTPClient: &http.Client{Transport: tr}}),
		Tools:    agentcore.NewTools(tools.Default()...),
		Env:      agentcore.ToolEnv{AgentID: "main", Workspace: ws, Runner: sandbox.NewRunner(sandbox.Options{Redactor: red}), Redactor: red, Env: []string{"PATH=/usr/bin:/bin"}},
	})
	gw, err := gateway.New(gateway.Options{
		Store:      db,
		Agents:     map[string]*agentcore.Agent{"main": ag},
		AgentStore: db,
		Channels:   map[string]gateway.ChannelOptions{"chat": {AllowAll: true}},
	}, ad)
	if err != nil {
		model.Close()
		db.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &stack{db: db, model: model, transport: tr, stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- gw.Run(ctx, 5*time.Second) }()
	select {
	case <-ad.started:
	case err := <-s.done:
		s.done <- err
		s.close()
		return nil, fmt.Errorf("gateway stopped at start: %v", err)
	}
	return s, nil
}

func (s *stack) close() {
	s.stop()
	<-s.done
	s.model.Close()
	s.db.Close()
}

// echo answers with the text of the last user message.
func echo(req fakemodel.Request) fakemodel.Step {
	return fakemodel.Step{Text: "echo: " + lastUserText(req)}
}

func lastUserText(req fakemodel.Request) string {
	var text string
	for _, p := range req.LastMessage().Parts() {
		if !strings.HasPrefix(p.Text, "<system-reminder>") {
			text = p.Text
		}
	}
	return text
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

// adapter is a light chat adapter: it records reply texts per chat and
// counts them (like gateway/load_test.go's counter).
type adapter struct {
	started chan struct{}
	handler channels.Handler
	onSend  func(text string, at time.Time)

	mu      sync.Mutex
	replies map[string][]string
	total   int
	target  int
	done    chan struct{}
}

func newAdapter() *adapter {
	return &adapter{started: make(chan struct{}), replies: map[string][]string{}, done: make(chan struct{})}
}

func (a *adapter) Name() string { return "chat" }
func (a *adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{MaxMessageLen: 4000, Dialect: channels.Plain}
}

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
		a.onSend(text, at)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.replies[loc.ChatID] = append(a.replies[loc.ChatID], text)
	a.total++
	if a.total == a.target {
		close(a.done)
	}
	return channels.MessageRef{Location: loc, ID: strconv.Itoa(a.total)}, nil
}

func (a *adapter) Edit(context.Context, channels.MessageRef, channels.Message) error { return nil }

// expect arms wait for n more replies.
func (a *adapter) expect(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.target = a.total + n
	a.done = make(chan struct{})
}

func (a *adapter) wait(ctx context.Context, limit time.Duration) error {
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Errorf("only %d of %d replies arrived within %v", a.total, a.target, limit)
}

func (a *adapter) inbound(ctx context.Context, conv int, text string) error {
	loc := channels.Location{Channel: "chat", Account: "bot", ChatID: "user-" + strconv.Itoa(conv)}
	user := "u" + strconv.Itoa(conv)
	return a.handler.OnInbound(ctx, channels.Inbound{
		EventID: "ev-" + strconv.Itoa(conv) + "-" + text, Location: loc,
		User: channels.User{ID: user, Name: user}, Text: text, DirectMessage: true, Mentioned: true, At: time.Now(),
	})
}

// checkOrder verifies that every conversation got its answers once and in
// order.
func (a *adapter) checkOrder(convs, per int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range convs {
		got := a.replies["user-"+strconv.Itoa(c)]
		if len(got) != per {
			return fmt.Errorf("conversation %d got %d answers, want %d", c, len(got), per)
		}
		for m, r := range got {
			if want := fmt.Sprintf("echo: c%d m%d", c, m); r != want {
				return fmt.Errorf("conversation %d answer %d = %q, want %q", c, m, r, want)
			}
		}
	}
	return nil
}

// timings collects phase B's instants per message key.
type timings struct {
	mu                     sync.Mutex
	armed                  bool
	in, req, end, sendTime []time.Time
}

func newTimings() *timings { return &timings{} }

func (t *timings) arm(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed = true
	t.in, t.req, t.end, t.sendTime = make([]time.Time, n), make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
}

func (t *timings) set(dst func() []time.Time, k int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := dst(); t.armed && k >= 0 && k < len(s) && s[k].IsZero() {
		s[k] = at
	}
}

func (t *timings) inbound(k int, at time.Time) { t.set(func() []time.Time { return t.in }, k, at) }

func (t *timings) respond(req fakemodel.Request) fakemodel.Step {
	text := lastUserText(req)
	if k, ok := keyOf([]byte(text)); ok {
		t.set(func() []time.Time { return t.req }, k, req.Time)
	}
	return fakemodel.Step{Text: "echo: " + text}
}

func (t *timings) providerEnd(k int, at time.Time) {
	t.set(func() []time.Time { return t.end }, k, at)
}

func (t *timings) sent(text string, at time.Time) {
	if k, ok := keyOf([]byte(text)); ok {
		t.set(func() []time.Time { return t.sendTime }, k, at)
	}
}

func (t *timings) result(wall time.Duration) (resultB, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := resultB{wall: wall}
	for k := range t.in {
		if t.in[k].IsZero() || t.req[k].IsZero() || t.end[k].IsZero() || t.sendTime[k].IsZero() {
			return resultB{}, fmt.Errorf("message %d has incomplete timings (in %v, request %v, end %v, send %v)",
				k, !t.in[k].IsZero(), !t.req[k].IsZero(), !t.end[k].IsZero(), !t.sendTime[k].IsZero())
		}
		r.in = append(r.in, t.req[k].Sub(t.in[k]))
		r.out = append(r.out, t.sendTime[k].Sub(t.end[k]))
		r.total = append(r.total, t.sendTime[k].Sub(t.in[k]))
	}
	return r, nil
}

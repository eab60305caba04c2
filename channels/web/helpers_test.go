package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

const testToken = "test-token-0123456789"

// fakeHandler records what the adapter hands the gateway. Hooks, when set,
// decide the answers.
type fakeHandler struct {
	mu       sync.Mutex
	inbound  []channels.Inbound
	actions  []channels.Action
	onIn     func(context.Context, channels.Inbound) error
	onAction func(context.Context, channels.Action) (channels.ActionReply, error)
}

func (f *fakeHandler) OnInbound(ctx context.Context, in channels.Inbound) error {
	f.mu.Lock()
	f.inbound = append(f.inbound, in)
	hook := f.onIn
	f.mu.Unlock()
	if hook != nil {
		return hook(ctx, in)
	}
	return nil
}

func (f *fakeHandler) OnAction(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
	f.mu.Lock()
	f.actions = append(f.actions, a)
	hook := f.onAction
	f.mu.Unlock()
	if hook != nil {
		return hook(ctx, a)
	}
	return channels.ActionReply{}, nil
}

func (f *fakeHandler) gotInbound() []channels.Inbound {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]channels.Inbound(nil), f.inbound...)
}

func (f *fakeHandler) gotActions() []channels.Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]channels.Action(nil), f.actions...)
}

// fakeHistory adds the history a store would have.
type fakeHistory struct {
	fakeHandler
	who   []string // identities Conversations was asked about
	convs []channels.ConversationInfo
	hist  map[string][]channels.HistoryItem
}

func (f *fakeHistory) Conversations(ctx context.Context, who string) ([]channels.ConversationInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.who = append(f.who, who)
	return f.convs, nil
}

func (f *fakeHistory) History(ctx context.Context, loc channels.Location) ([]channels.HistoryItem, error) {
	items, ok := f.hist[loc.ChatID]
	if !ok {
		return nil, errNoConversation
	}
	return items, nil
}

var errNoConversation = io.ErrUnexpectedEOF // any error; the adapter only passes it on

// server is an adapter started with a handler behind httptest on 127.0.0.1.
type server struct {
	a   *Adapter
	srv *httptest.Server
}

// startServer starts a with h (unless h is nil) and serves it. Cleanup stops
// Start, which ends every event stream, and then closes the server, which
// waits for every request: a stream that outlived Start would hang the test.
func startServer(t *testing.T, a *Adapter, h channels.Handler) *server {
	t.Helper()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	if h != nil {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- a.Start(ctx, h) }()
		t.Cleanup(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("Start returned %v", err)
			}
		})
		select {
		case <-a.ready:
		case err := <-errc:
			t.Fatalf("Start returned early: %v", err)
		}
	}
	return &server{a: a, srv: srv}
}

func newTestAdapter() *Adapter { return New(Options{Token: testToken}) }

// client returns an HTTP client that does not follow redirects and keeps
// cookies.
func (s *server) client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// login returns a client with a session.
func (s *server) login(t *testing.T) *http.Client {
	t.Helper()
	c := s.client(t)
	resp, err := c.Get(s.srv.URL + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: status %d", resp.StatusCode)
	}
	return c
}

// do sends an API request with the CSRF header; body is JSON-encoded unless
// it is an io.Reader.
func (s *server) do(t *testing.T, c *http.Client, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		r = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r, ct = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequest(method, s.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("X-Switchboard", "1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if len(data) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: bad JSON %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, out
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	ID, Name string
	Data     json.RawMessage
}

// stream is an open event stream of one chat.
type stream struct {
	t      *testing.T
	r      *bufio.Reader
	body   io.Closer
	events chan sseEvent
	lastID string
}

// openStream subscribes to a chat's events, resuming after lastEventID when
// it is not empty. Events are read by a goroutine that ends when the stream
// does; the test closes the body at cleanup.
func (s *server) openStream(t *testing.T, c *http.Client, chat, lastEventID string) *stream {
	t.Helper()
	req, err := http.NewRequest("GET", s.srv.URL+"/api/chats/"+chat+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("events: status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	st := &stream{t: t, r: bufio.NewReader(resp.Body), body: resp.Body, events: make(chan sseEvent, 1024)}
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(st.events)
		var ev sseEvent
		for {
			line, err := st.r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if ev.Name != "" {
					select {
					case st.events <- ev:
					case <-quit:
						return
					}
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	t.Cleanup(func() {
		close(quit)
		resp.Body.Close()
		<-done
	})
	return st
}

// next returns the next event, failing the test if the stream ends or
// nothing arrives for 10 s.
func (st *stream) next() sseEvent {
	st.t.Helper()
	select {
	case ev, ok := <-st.events:
		if !ok {
			st.t.Fatal("event stream ended")
		}
		if ev.ID != "" {
			st.lastID = ev.ID
		}
		return ev
	case <-time.After(10 * time.Second):
		st.t.Fatal("no event within 10s")
		return sseEvent{}
	}
}

// nextNamed skips events until one named name arrives.
func (st *stream) nextNamed(name string) sseEvent {
	st.t.Helper()
	for {
		if ev := st.next(); ev.Name == name {
			return ev
		}
	}
}

// message decodes the next message event.
func (st *stream) message() viewMessage {
	st.t.Helper()
	ev := st.nextNamed("message")
	var v viewMessage
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		st.t.Fatalf("decode message %s: %v", ev.Data, err)
	}
	return v
}

// webLoc is the location of a test chat.
func webLoc(chat string) channels.Location {
	return channels.Location{Channel: "web", Account: "local", ChatID: chat}
}

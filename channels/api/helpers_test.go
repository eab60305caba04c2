package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/api"
	"github.com/switchboard-gw/switchboard/channels/api/apitest"
)

const (
	ciToken    = "ci-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
)

// fakeGateway is the Handler the adapter is started with: it queues like
// the gateway does (dedupe on EventID, one input id per queued inbound)
// and has every ability programs use.
type fakeGateway struct {
	mu        sync.Mutex
	queued    []channels.Inbound
	byEvent   map[string]string // EventID → input id
	inbounds  []channels.Inbound
	convs     map[string]string // conversation → agent
	decisions []channels.Decision
	approvals []channels.PendingApproval
	history   map[string][]channels.TranscriptMessage
	failQueue error
	// onQueue runs after an input is queued, before Queue returns (a
	// worker that starts the turn at once).
	onQueue func(conv, inputID string)
	next    int
}

func newFakeGateway() *fakeGateway {
	return &fakeGateway{byEvent: map[string]string{}, convs: map[string]string{}, history: map[string][]channels.TranscriptMessage{}}
}

func (g *fakeGateway) OnInbound(ctx context.Context, in channels.Inbound) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inbounds = append(g.inbounds, in)
	return nil
}

func (g *fakeGateway) OnAction(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
	return channels.ActionReply{}, nil
}

func (g *fakeGateway) Queue(ctx context.Context, in channels.Inbound) (channels.Queued, error) {
	g.mu.Lock()
	if g.failQueue != nil {
		g.mu.Unlock()
		return channels.Queued{}, g.failQueue
	}
	conv := in.Location.ChatID
	if id, ok := g.byEvent[in.EventID]; ok {
		g.mu.Unlock()
		return channels.Queued{InputID: id, ConversationID: conv, Duplicate: true}, nil
	}
	g.next++
	id := fmt.Sprintf("in-%s-%d", conv, g.next)
	g.byEvent[in.EventID] = id
	g.queued = append(g.queued, in)
	hook := g.onQueue
	g.mu.Unlock()
	if hook != nil {
		hook(conv, id)
	}
	return channels.Queued{InputID: id, ConversationID: conv}, nil
}

func (g *fakeGateway) Agents(ctx context.Context) ([]channels.AgentInfo, error) {
	return []channels.AgentInfo{{Name: "helper", Model: "m2"}, {Name: "main", Model: "m1", Default: true}}, nil
}

func (g *fakeGateway) StartConversation(ctx context.Context, loc channels.Location, agent, title string) (channels.ConversationInfo, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	id := fmt.Sprintf("conv-%d", g.next)
	g.convs[id] = agent
	loc.ChatID = id
	return channels.ConversationInfo{ID: id, Agent: agent, Title: title, Location: loc}, nil
}

func (g *fakeGateway) Transcript(ctx context.Context, loc channels.Location, q channels.TranscriptQuery) (channels.TranscriptPage, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	msgs := g.history[loc.ChatID]
	start := 0
	if q.After != "" {
		start = -1
		for i, m := range msgs {
			if m.ID == q.After {
				start = i + 1
			}
		}
		if start < 0 {
			return channels.TranscriptPage{}, fmt.Errorf("after %s: %w", q.After, channels.ErrUnknownMessage)
		}
	}
	end := min(len(msgs), start+q.Limit)
	return channels.TranscriptPage{Messages: msgs[start:end], More: end < len(msgs)}, nil
}

func (g *fakeGateway) PendingApprovals(ctx context.Context, who string, limit int) ([]channels.PendingApproval, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []channels.PendingApproval
	for _, p := range g.approvals {
		if p.Requester == who || who == "api:admin" {
			out = append(out, p)
		}
	}
	return out, nil
}

func (g *fakeGateway) Decide(ctx context.Context, d channels.Decision) (channels.DecisionReply, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.decisions = append(g.decisions, d)
	for i, p := range g.approvals {
		if p.ID == d.ApprovalID {
			if channels.QualifiedID("api", d.User.ID) != p.Requester && d.User.ID != "admin" {
				return channels.DecisionReply{Text: "Only " + p.Requester + " can decide this.", Refused: true}, nil
			}
			g.approvals = append(g.approvals[:i], g.approvals[i+1:]...)
			return channels.DecisionReply{Text: "Approved: " + p.Summary, Decided: true, Resumed: true}, nil
		}
	}
	return channels.DecisionReply{Text: "This approval no longer exists.", Refused: true}, nil
}

func (g *fakeGateway) queuedCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queued)
}

// harness is an adapter started with a fake gateway, served over HTTP.
type harness struct {
	t     testing.TB
	ad    *api.Adapter
	gw    *fakeGateway
	store *apitest.MemStore
	srv   *httptest.Server
	stop  func()
}

type harnessOpts struct {
	store   *apitest.MemStore
	maxBody int64
	handler channels.Handler
	now     func() time.Time
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	if o.store == nil {
		o.store = apitest.NewMemStore()
	}
	ad, err := api.New(api.Options{
		Tokens:  []api.Token{{Name: "ci", Secret: ciToken}, {Name: "admin", Secret: adminToken, Admin: true}},
		Store:   o.store,
		MaxBody: o.maxBody,
		Now:     o.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ad: ad, gw: newFakeGateway(), store: o.store}
	var handler channels.Handler = h.gw
	if o.handler != nil {
		handler = o.handler
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ad.Start(ctx, handler) }()
	h.srv = httptest.NewServer(ad.Handler())
	h.stop = func() {
		cancel()
		h.srv.CloseClientConnections()
		h.srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	}
	t.Cleanup(func() { h.stop() })
	// Start stores the handler before anything else; wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := h.do("GET", "/v1/agents", ciToken, nil, nil)
		if resp.status != http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the adapter did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return h
}

// with returns the harness reporting to t (a fuzz target's own T).
func (h *harness) with(t testing.TB) *harness {
	c := *h
	c.t = t
	return &c
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", a.status, err, a.body)
	}
	return m
}

func (a answer) code() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (h *harness) do(method, path, token string, header map[string]string, body any) answer {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// conversation starts a conversation as the ci token.
func (h *harness) conversation() string {
	h.t.Helper()
	a := h.do("POST", "/v1/conversations", ciToken, nil, map[string]string{"title": "t"})
	if a.status != http.StatusCreated {
		h.t.Fatalf("create conversation: %d %s", a.status, a.body)
	}
	return a.json(h.t)["id"].(string)
}

// live hands the adapter one live event of conversation conv.
func (h *harness) live(conv string, ev channels.LiveEvent) {
	ev.Location = channels.Location{Channel: api.Name, Account: "ci", ChatID: conv}
	ev.ConversationID = conv
	h.ad.Live(context.Background(), ev)
}

// wire is an agent core event's stream-json form.
func wire(typ, run string, seq int64, extra map[string]any) []byte {
	m := map[string]any{"type": typ, "runId": run, "seqId": seq}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// sseEvent is one event read off the wire.
type sseEvent struct {
	id, event string
	data      map[string]any
}

// readStream reads the stream until n events arrived (or the stream
// ended), with the given request headers and query.
func (h *harness) readStream(conv, query string, header map[string]string, n int) (int, []sseEvent) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/v1/conversations/"+conv+"/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+ciToken)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	var out []sseEvent
	var cur sseEvent
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for len(out) < n {
		k, err := resp.Body.Read(tmp)
		buf = append(buf, tmp[:k]...)
		for {
			i := bytes.Index(buf, []byte("\n"))
			if i < 0 {
				break
			}
			line := string(buf[:i])
			buf = buf[i+1:]
			switch {
			case line == "":
				if cur.event != "" {
					out = append(out, cur)
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &cur.data); err != nil {
					h.t.Fatalf("data is not JSON: %v: %s", err, line)
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() != nil {
				h.t.Fatalf("read the stream: %v (have %d of %d events)", err, len(out), n)
			}
			break
		}
	}
	return resp.StatusCode, out
}

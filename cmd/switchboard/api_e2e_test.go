package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/client"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

const (
	apiCIToken   = "e2e-ci-token-0123456789"
	apiBossToken = "e2e-boss-token-0123456789"
)

// apiTable is the [channels.api] table of the end-to-end tests: the ci
// token, and boss, an admin.
const apiTable = `
[channels.api]
tokens = [{ name = "ci", token = "` + apiCIToken + `" }, { name = "boss", token = "` + apiBossToken + `", admin = true }]
`

func newAPIClient(t *testing.T, base, token string, hc *http.Client) *client.Client {
	t.Helper()
	c, err := client.New(base, token, client.Options{HTTPClient: hc, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// history reads a conversation's whole history through the API.
func history(t *testing.T, ctx context.Context, c *client.Client, conv string) []client.Message {
	t.Helper()
	var all []client.Message
	after := ""
	for {
		page, err := c.Messages(ctx, conv, client.MessageQuery{After: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Messages...)
		if !page.More {
			return all
		}
		after = page.Messages[len(page.Messages)-1].UUID
	}
}

var ignoreUnexported = cmpopts.IgnoreUnexported(client.Entry{}, client.ToolCall{})

// storedIDs are the ids of the conversation's visible stored messages, in
// order, read from the store itself.
func storedIDs(t *testing.T, e *env, conv string) []string {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msgs, err := db.Messages(context.Background(), conv, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		if m.Role == agentcore.RoleUser && m.Text() == "" {
			continue
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// transcriptIDs are the message uuids a transcript holds, in order, each
// once (a message of several slices is one message).
func transcriptIDs(es []client.Entry) []string {
	var ids []string
	for _, e := range es {
		if len(ids) == 0 || ids[len(ids)-1] != e.UUID {
			ids = append(ids, e.UUID)
		}
		if e.Tool != nil && e.Tool.Result != nil {
			ids = append(ids, e.Tool.Result.UUID)
		}
	}
	// Results follow their calls; a message's calls are adjacent entries.
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

var taskRE = regexp.MustCompile(`task (\d+)`)

// A program using the client queues three messages, streams the answers,
// and its reassembled transcript equals the stored history: the same
// uuids, the same text, each tool call joined to its result; and it can
// tell which answer answers which message.
func TestAPITranscriptEqualsHistory(t *testing.T) {
	e := newEnv(t)
	e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
		last := req.LastMessage()
		if last.Role == "tool" {
			return fakemodel.Step{Reasoning: "the command answered", Text: "done: " + strings.TrimSpace(last.Text())}
		}
		var n string
		for _, m := range req.Messages {
			if m.Role == "user" {
				if s := taskRE.FindStringSubmatch(m.Text()); s != nil {
					n = s[1]
				}
			}
		}
		args, _ := json.Marshal(map[string]string{"command": "echo result-" + n})
		return fakemodel.Step{Reasoning: "let me check task " + n, Text: "Working on task " + n + ".",
			ToolCalls: []fakemodel.ToolCall{{ID: "call_" + n, Name: "Bash", Arguments: string(args)}}}
	})
	e.writeServeConfig(apiTable)
	p := e.startServe()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newAPIClient(t, p.url(), apiCIToken, nil)
	conv, err := c.CreateConversation(ctx, client.NewConversation{Title: "three tasks"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Follow(ctx, conv.ID, client.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var queued []client.Queued
	for i := 1; i <= 3; i++ {
		q, err := c.Send(ctx, conv.ID, client.NewMessage{Text: fmt.Sprintf("please do task %d", i)}, client.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, q)
	}
	acc := f.Accumulator()
	ended := func() bool {
		for _, q := range queued {
			if tr, ok := acc.Turn(q.InputID); !ok || tr.Running {
				return false
			}
		}
		return true
	}
	for !ended() {
		if _, err := f.Next(ctx); err != nil {
			t.Fatalf("stream: %v\nserve stderr:\n%s", err, p.stderr.String())
		}
	}
	for i, q := range queued {
		tr, _ := acc.Turn(q.InputID)
		want := fmt.Sprintf("done: result-%d", i+1)
		if tr.StopReason != "end_turn" || !strings.Contains(acc.Answer(q.InputID), want) {
			t.Errorf("input %s: turn %+v, answer %q; want %q", q.InputID, tr, acc.Answer(q.InputID), want)
		}
	}
	got := f.Transcript()
	hist := history(t, ctx, c, conv.ID)
	if d := cmp.Diff(client.TranscriptOf(hist), got, ignoreUnexported); d != "" {
		t.Errorf("the streamed transcript differs from the history (-history +streamed):\n%s", d)
	}
	if ids, want := transcriptIDs(got), storedIDs(t, e, conv.ID); !slices.Equal(ids, want) {
		t.Errorf("uuids of the transcript %v\nand of the store %v", ids, want)
	}
	var users, calls int
	for _, en := range got {
		switch {
		case en.Streaming:
			t.Errorf("a slice still streaming: %+v", en)
		case en.Kind == client.KindUser:
			if en.UUID != queued[users].InputID {
				t.Errorf("user message %d is %s, want the input %s", users, en.UUID, queued[users].InputID)
			}
			users++
		case en.Kind == client.KindToolCall:
			calls++
			if en.Tool.Result == nil || !strings.Contains(en.Tool.Result.Text, "result-") || en.Tool.Result.Outcome != "ok" || en.Tool.Arguments == nil {
				t.Errorf("tool call %s is not joined to its result: %+v", en.Tool.ID, en.Tool)
			}
		}
	}
	if users != 3 || calls != 3 {
		t.Errorf("%d user messages and %d calls, want 3 and 3", users, calls)
	}
	if acc.Replays() != 0 {
		t.Errorf("%d events were delivered twice", acc.Replays())
	}
}

// cutter is an http.RoundTripper that drops event-stream connections right
// after chosen events (counted over every connection, each event once) —
// sometimes with part of the next event already sent.
type cutter struct {
	mu   sync.Mutex
	seen map[string]bool
	at   map[int]bool // cut after the n-th distinct event
	cuts int
	rng  *rand.Rand
}

func (c *cutter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/stream") || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	resp.Body = &cutBody{c: c, body: resp.Body}
	return resp, nil
}

var errCut = errors.New("cutter: connection dropped")

type cutBody struct {
	c    *cutter
	body io.ReadCloser
	ev   []byte // the event being read
	out  []byte // bytes ready for the reader
	cut  bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.cut {
			return 0, errCut
		}
		buf := make([]byte, 4096)
		n, err := b.body.Read(buf)
		b.take(buf[:n])
		if len(b.out) == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// take moves read bytes to out, event by event, cutting after a chosen one.
func (b *cutBody) take(data []byte) {
	for i := 0; i < len(data); i++ {
		b.ev = append(b.ev, data[i])
		if !bytes.HasSuffix(b.ev, []byte("\n\n")) {
			continue
		}
		b.out = append(b.out, b.ev...)
		id := ""
		for _, l := range strings.Split(string(b.ev), "\n") {
			if s, ok := strings.CutPrefix(l, "id: "); ok {
				id = s
			}
		}
		b.ev = nil
		if id == "" {
			continue
		}
		b.c.mu.Lock()
		cut := false
		if !b.c.seen[id] {
			b.c.seen[id] = true
			if b.c.at[len(b.c.seen)] {
				cut = true
				b.c.cuts++
			}
		}
		half := b.c.rng.IntN(2) == 0
		b.c.mu.Unlock()
		if cut {
			// Sometimes the connection dies in the middle of the next
			// event: half of it gets through (never a whole one).
			rest := data[i+1:]
			if j := bytes.Index(rest, []byte("\n\n")); j >= 0 {
				rest = rest[:j]
			}
			if half && len(rest) > 1 {
				b.out = append(b.out, rest[:len(rest)/2]...)
			}
			b.cut = true
			b.body.Close()
			return
		}
	}
}

func (b *cutBody) Close() error { return b.body.Close() }

// writeAPIServeConfig is writeServeConfig on a fixed address, so a
// restarted serve is found where the client looks.
func (e *env) writeAPIServeConfig(addr, extra string) {
	e.t.Helper()
	e.writeConfig(fmt.Sprintf(`[providers.default]
base_url = %q
model = "test-model"

[http]
listen = %q

[channels.web]
token = %q
edit_interval = "50ms"
%s`, e.model.URL(), addr, webToken, extra))
}

// The stream of a multi-step turn with tools is dropped at 50 random
// points, and once serve is killed (SIGKILL) mid-step and restarted:
// after every reconnect the client's transcript has no duplicate and no
// gap; the events it applied are exactly the stored stream, once each, in
// order; and at the end its transcript equals the stored history.
func TestAPIStreamSurvivesDropsAndRestart(t *testing.T) {
	const steps, killAt, drops = 12, 7, 50
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("API_DROP_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (API_DROP_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, 17))

	e := newEnv(t)
	gates := make([]chan struct{}, steps+2) // gates[i] lets step i answer
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	close(gates[1])
	var mu sync.Mutex
	tries := map[int]int{}
	e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
		step := 1 + len(toolMessages(req))
		mu.Lock()
		tries[step]++
		try := tries[step]
		mu.Unlock()
		if step > steps {
			return fakemodel.Step{Text: fmt.Sprintf("All %d steps are done.", steps), Block: gates[step]}
		}
		args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("echo out-%d", step)})
		st := fakemodel.Step{
			Reasoning: fmt.Sprintf("step %d: what should run next, and why", step),
			Text:      fmt.Sprintf("Step %d runs a command of its own.", step),
			ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("call_%d", step), Name: "Bash", Arguments: string(args)}},
			Block:     gates[step],
		}
		if step == killAt && try == 1 {
			st.BlockMidStream = make(chan struct{}) // held until serve dies
		}
		return st
	})
	addr := freePort(t)
	e.writeAPIServeConfig(addr, apiTable)
	p := e.startServe()

	at := map[int]bool{}
	for len(at) < drops {
		at[2+rng.IntN(100)] = true // the turn has about 120 events
	}
	cut := &cutter{seen: map[string]bool{}, at: at, rng: rng}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newAPIClient(t, "http://"+addr, apiCIToken, &http.Client{Transport: cut})
	conv, err := c.CreateConversation(ctx, client.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Follow(ctx, conv.ID, client.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q, err := c.Send(ctx, conv.ID, client.NewMessage{Text: "a long task"}, client.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var applied []string // ids of the events applied, in order
	var snapshots [][]client.Entry
	reconnects, killed, dead := 0, false, ""
	opened := map[int]bool{}
	acc := f.Accumulator()
	for {
		ev, err := f.Next(ctx)
		if err != nil {
			t.Fatalf("stream: %v\nserve stderr:\n%s", err, p.stderr.String())
		}
		applied = append(applied, ev.ID)
		if n := f.Stream().Reconnects(); n > reconnects {
			reconnects = n
			snap := f.Transcript()
			checkNoDuplicates(t, snap)
			snapshots = append(snapshots, snap)
		}
		switch {
		case ev.Type == client.EventToolResult:
			var n int
			fmt.Sscanf(ev.ToolCallID, "call_%d", &n)
			// A retried turn tells its stored results again (same uuid):
			// each gate opens once.
			if n >= 1 && n <= steps && !opened[n+1] {
				opened[n+1] = true
				close(gates[n+1])
			}
		case ev.Type == client.EventReasoningDelta && !killed && strings.HasPrefix(ev.Text, fmt.Sprintf("step %d", killAt)):
			// Step killAt has begun streaming; its process dies now.
			killed, dead = true, ev.UUID
			p.kill()
			p = e.startServe()
		}
		if tr, ok := acc.Turn(q.InputID); ok && !tr.Running && tr.StopReason == "end_turn" {
			break
		}
	}
	if !killed {
		t.Fatal("serve was never killed")
	}
	if cut.cuts < drops {
		var pts []int
		for n := range at {
			pts = append(pts, n)
		}
		slices.Sort(pts)
		var unseen []string
		for _, id := range applied {
			if !cut.seen[id] {
				unseen = append(unseen, id)
			}
		}
		t.Errorf("the stream was cut %d times, want %d (at %v; %d distinct events seen; %d applied; unseen %v)", cut.cuts, drops, pts, len(cut.seen), len(applied), unseen)
	}
	if reconnects < drops { // the kill may drop a connection the cutter dropped already
		t.Errorf("%d reconnects, want at least %d", reconnects, drops)
	}

	// The transcript equals the stored history, with the slice of the
	// killed step gone (it was never stored).
	final := f.Transcript()
	hist := history(t, ctx, c, conv.ID)
	if d := cmp.Diff(client.TranscriptOf(hist), final, ignoreUnexported); d != "" {
		t.Errorf("the streamed transcript differs from the history (-history +streamed):\n%s", d)
	}
	if ids, want := transcriptIDs(final), storedIDs(t, e, conv.ID); !slices.Equal(ids, want) {
		t.Errorf("uuids of the transcript %v\nand of the store %v", ids, want)
	}
	var calls int
	for _, en := range final {
		if en.Kind == client.KindToolCall {
			calls++
			if en.Tool.Result == nil || en.Tool.Result.Outcome != "ok" {
				t.Errorf("call %s has no result: %+v", en.Tool.ID, en.Tool)
			}
		}
		if en.UUID == dead {
			t.Errorf("the killed step's slice is still there: %+v", en)
		}
	}
	if calls != steps {
		t.Errorf("%d calls, want %d", calls, steps)
	}
	// After every reconnect: no duplicate (checked then), and no gap — each
	// row is the final row or a prefix of it, in the final order (only the
	// killed step's slice, never stored, is not in the final).
	key := func(e client.Entry) string {
		if e.Tool != nil {
			return "call:" + e.Tool.ID
		}
		return e.Kind + ":" + e.OTID + ":" + e.UUID
	}
	finalAt := map[string]int{}
	for i, en := range final {
		finalAt[key(en)] = i
	}
	for n, snap := range snapshots {
		last := -1
		for _, en := range snap {
			i, ok := finalAt[key(en)]
			if !ok {
				if en.UUID != dead || !en.Streaming {
					t.Errorf("after reconnect %d: %s is not in the final transcript", n+1, key(en))
				}
				continue
			}
			if i < last {
				t.Errorf("after reconnect %d: %s is out of order", n+1, key(en))
			}
			last = i
			if !strings.HasPrefix(final[i].Text, en.Text) {
				t.Errorf("after reconnect %d: %s shows %q, not a prefix of %q (a gap or a duplicate)", n+1, key(en), en.Text, final[i].Text)
			}
		}
	}
	// The events applied are the stored stream exactly: once each, in order.
	if acc.Replays() != 0 {
		t.Errorf("%d events were delivered twice", acc.Replays())
	}
	if want := storedStream(t, ctx, "http://"+addr, conv.ID, applied[len(applied)-1]); !slices.Equal(applied, want) {
		t.Errorf("applied %d events, the stream holds %d up to the last one:\n applied %v\n stored  %v", len(applied), len(want), applied, want)
	}
}

// checkNoDuplicates fails when a transcript holds a row twice.
func checkNoDuplicates(t *testing.T, es []client.Entry) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range es {
		k := e.Kind + ":" + e.OTID + ":" + e.UUID
		if e.Tool != nil {
			k = "call:" + e.Tool.ID
		}
		if seen[k] {
			t.Errorf("row %s twice", k)
		}
		seen[k] = true
	}
}

// storedStream reads the conversation's whole retained stream, without
// cuts, up to the event last.
func storedStream(t *testing.T, ctx context.Context, base, conv, last string) []string {
	t.Helper()
	c := newAPIClient(t, base, apiCIToken, nil)
	s := c.Stream(ctx, conv, client.StreamOptions{After: "start"})
	defer s.Close()
	var ids []string
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("read the stored stream: %v (have %d)", err, len(ids))
		}
		ids = append(ids, ev.ID)
		if ev.ID == last {
			return ids
		}
	}
}

// A retried POST with the same Idempotency-Key queues one turn; a missing
// or wrong token gets 401 and nothing is queued.
func TestAPIIdempotencyAndTokens(t *testing.T) {
	e := newEnv(t, fakemodel.Step{Text: "the one answer"})
	e.writeServeConfig(apiTable)
	p := e.startServe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newAPIClient(t, p.url(), apiCIToken, nil)
	conv, err := c.CreateConversation(ctx, client.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Follow(ctx, conv.ID, client.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	post := func(auth, key string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(ctx, "POST", p.url()+"/v1/conversations/"+conv.ID+"/messages", strings.NewReader(`{"text":"only once"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	for _, auth := range []string{"", "Bearer wrong-token-0123456789", "Bearer " + apiCIToken + "x", "Basic " + apiCIToken, apiCIToken} {
		if status, m := post(auth, "k-401"); status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d %v; want 401", auth, status, m)
		}
	}
	// The listener's Host check applies to the API too.
	req, _ := http.NewRequestWithContext(ctx, "POST", p.url()+"/v1/conversations/"+conv.ID+"/messages", strings.NewReader(`{"text":"rebound"}`))
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+apiCIToken)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %v %v; want 421", resp, err)
	} else {
		resp.Body.Close()
	}
	s1, m1 := post("Bearer "+apiCIToken, "retry-1")
	s2, m2 := post("Bearer "+apiCIToken, "retry-1")
	if s1 != http.StatusAccepted || s2 != http.StatusAccepted || m1["inputId"] == nil || m1["inputId"] != m2["inputId"] || m2["duplicate"] != true {
		t.Fatalf("two POSTs with one key: %d %v / %d %v", s1, m1, s2, m2)
	}
	input := m1["inputId"].(string)
	for {
		if _, err := f.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if tr, ok := f.Accumulator().Turn(input); ok && !tr.Running {
			break
		}
	}
	if err := e.model.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
	hist := history(t, ctx, c, conv.ID)
	if len(hist) != 2 || hist[0].UUID != input || hist[0].Text != "only once" || hist[1].Text != "the one answer" {
		t.Errorf("history %+v", hist)
	}
	db, err := store.Open(ctx, filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if pending, err := db.Pending(ctx, conv.ID); err != nil || len(pending) != 0 {
		t.Errorf("queued items left: %+v, %v", pending, err)
	}
}

// A dashboard decides a web page's ask through the API: the admin token
// lists it (the ci token does not, and is refused), allows it, the turn
// resumes, and the page's copy of the ask shows the decision and who made
// it.
func TestAPIApprovalShowsOnTheWebCopy(t *testing.T) {
	e := newEnv(t, bashStep("call_w", "touch from-api && echo made-it"), fakemodel.Step{Text: "made it after the dashboard approved"})
	e.writeServeConfig(apiTable)
	p := e.startServe()
	web := newWebClient(t, p.url())
	chat := web.newChat()
	w := web.watch(chat)
	web.say(chat, "w1", "make the file")
	w.waitFor(t, "Approval needed")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	boss := newAPIClient(t, p.url(), apiBossToken, nil)
	ci := newAPIClient(t, p.url(), apiCIToken, nil)
	var ap client.Approval
	eventually(t, 30*time.Second, "the ask in the dashboard's list", func() bool {
		aps, err := boss.Approvals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range aps {
			if a.ToolCallID == "call_w" {
				ap = a
				return true
			}
		}
		return false
	})
	if !strings.Contains(ap.Summary, "touch from-api") || ap.Requester != "web:owner" || !strings.HasPrefix(ap.Location, "web:") {
		t.Errorf("approval %+v", ap)
	}
	if aps, err := ci.Approvals(ctx); err != nil || len(aps) != 0 {
		t.Errorf("ci may decide %+v, %v", aps, err)
	}
	var ae *client.APIError
	if _, err := ci.Decide(ctx, ap.ID, client.Decision{Decision: client.DecideAllow}); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Errorf("ci's decision: %v, want 409", err)
	}
	res, err := boss.Decide(ctx, ap.ID, client.Decision{Decision: client.DecideAllow, Reason: "looks fine"})
	if err != nil || !res.Decided || !res.Resumed {
		t.Fatalf("Decide = %+v, %v", res, err)
	}
	copyMsg := w.waitFor(t, "by api:boss")
	if !strings.Contains(copyMsg.text(), "Approved") || len(copyMsg.Parts) == 0 {
		t.Errorf("the page's copy: %s", copyMsg.text())
	}
	w.waitFor(t, "made it after the dashboard approved")
	if _, err := os.Stat(filepath.Join(e.workspace, "from-api")); err != nil {
		t.Error("the approved command did not run")
	}
	if _, err := boss.Decide(ctx, ap.ID, client.Decision{Decision: client.DecideDeny}); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Errorf("a second decision: %v, want 409", err)
	}
	validTranscript(t, e.transcript())
}

// The example program sends a message, streams the answer and approves
// the agent's ask.
func TestAPIExampleProgram(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "apiclient")
	build := exec.Command("go", "build", "-o", bin, "../../examples/apiclient")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	e := newEnv(t, bashStep("call_x", "touch example-made && echo example-ran"), fakemodel.Step{Text: "The example's file is made."})
	e.writeServeConfig(apiTable)
	p := e.startServe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-url", p.url(), "make the file, please")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_API_TOKEN="+apiCIToken)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("apiclient: %v\nstdout: %s\nstderr: %s\nserve: %s", err, out.String(), errb.String(), p.stderr.String())
	}
	if !strings.Contains(out.String(), "The example's file is made.") {
		t.Errorf("stdout %q lacks the answer", out.String())
	}
	if !strings.Contains(errb.String(), "Approved") || !strings.Contains(errb.String(), "Bash: ok") {
		t.Errorf("stderr %q does not show the approval and the call", errb.String())
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "example-made")); err != nil {
		t.Error("the approved command did not run")
	}
}

package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/api"
	"github.com/switchboard-gw/switchboard/channels/api/apitest"
)

func TestNewRefusesBadTokens(t *testing.T) {
	st := apitest.NewMemStore()
	for _, o := range []api.Options{
		{Store: st},
		{Store: st, Tokens: []api.Token{{Name: "ci", Secret: "short"}}},
		{Store: st, Tokens: []api.Token{{Name: "Bad Name", Secret: ciToken}}},
		{Store: st, Tokens: []api.Token{{Name: "ci", Secret: ciToken}, {Name: "ci", Secret: adminToken}}},
		{Tokens: []api.Token{{Name: "ci", Secret: ciToken}}},
	} {
		if _, err := api.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// No token, no API: every route answers 401 to a missing, wrong or
// malformed token, and nothing reaches the gateway.
func TestAuthRequired(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	paths := map[string]string{"{id}": conv}
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/agents"}, {"POST", "/v1/conversations"}, {"GET", "/v1/conversations"}, {"GET", "/v1/conversations/{id}"},
		{"GET", "/v1/conversations/{id}/messages"}, {"POST", "/v1/conversations/{id}/messages"}, {"GET", "/v1/conversations/{id}/stream"},
		{"POST", "/v1/conversations/{id}/cancel"}, {"GET", "/v1/approvals"}, {"POST", "/v1/approvals/{id}"}, {"GET", "/v1/openapi.json"},
		{"GET", "/v1/nope"},
	} {
		path := strings.ReplaceAll(rt.path, "{id}", paths["{id}"])
		for _, auth := range []string{"", "Bearer ", "Bearer wrong-token-0123456789", "Basic " + ciToken, "Bearer " + ciToken + "x", "bearer" + ciToken} {
			header := map[string]string{}
			if auth != "" {
				header["Authorization"] = auth
			}
			a := h.do(rt.method, path, "", header, map[string]string{"text": "hi", "decision": "allow"})
			if a.status != http.StatusUnauthorized || a.code() != "unauthorized" || a.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with %q: %d %s; want 401", rt.method, path, auth, a.status, a.body)
			}
		}
	}
	if n := h.gw.queuedCount(); n != 0 {
		t.Errorf("%d inputs queued by unauthenticated requests", n)
	}
	if len(h.gw.inbounds) != 0 || len(h.gw.decisions) != 0 {
		t.Errorf("unauthenticated requests reached the gateway: %d inbounds, %d decisions", len(h.gw.inbounds), len(h.gw.decisions))
	}
	// The right token works, case-insensitive scheme included.
	if a := h.do("GET", "/v1/agents", "", map[string]string{"Authorization": "bearer " + ciToken}, nil); a.status != http.StatusOK {
		t.Errorf("a valid token: %d %s", a.status, a.body)
	}
}

func TestAgentsAndConversations(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.do("GET", "/v1/agents", ciToken, nil, nil)
	if a.status != 200 || !strings.Contains(string(a.body), `{"name":"main","model":"m1","default":true}`) {
		t.Fatalf("agents: %d %s", a.status, a.body)
	}
	// The default agent, a named one, an unknown one.
	c1 := h.do("POST", "/v1/conversations", ciToken, nil, map[string]string{"title": "first"})
	c2 := h.do("POST", "/v1/conversations", ciToken, nil, map[string]string{"agent": "helper"})
	if c1.status != 201 || c1.json(t)["agent"] != "main" || c1.json(t)["title"] != "first" || c2.json(t)["agent"] != "helper" {
		t.Fatalf("create: %s / %s", c1.body, c2.body)
	}
	for _, body := range []string{`{"agent":"ghost"}`, `{"title":"a\u0007b"}`, `{"title":"` + strings.Repeat("x", 201) + `"}`, `{"extra":1}`, `{"agent":"main"} {}`, `[]`} {
		if a := h.do("POST", "/v1/conversations", ciToken, nil, body); a.status != 400 {
			t.Errorf("create with %s: %d %s; want 400", body, a.status, a.body)
		}
	}
	for range 3 {
		h.conversation()
	}
	// Pages, newest first, and only the caller's.
	var ids []string
	cursor := ""
	for {
		q := "?limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		a := h.do("GET", "/v1/conversations"+q, ciToken, nil, nil)
		m := a.json(t)
		for _, c := range m["conversations"].([]any) {
			ids = append(ids, c.(map[string]any)["id"].(string))
		}
		next, _ := m["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(ids) != 5 || ids[4] != c1.json(t)["id"] || ids[3] != c2.json(t)["id"] {
		t.Errorf("listed %v", ids)
	}
	if a := h.do("GET", "/v1/conversations", adminToken, nil, nil); len(a.json(t)["conversations"].([]any)) != 0 {
		t.Errorf("another token sees %s", a.body)
	}
	// Another token's conversation does not exist for it.
	id := ids[0]
	for _, p := range []string{"", "/messages", "/stream"} {
		if a := h.do("GET", "/v1/conversations/"+id+p, adminToken, nil, nil); a.status != 404 {
			t.Errorf("GET %s as another token: %d", p, a.status)
		}
	}
	if a := h.do("POST", "/v1/conversations/"+id+"/messages", adminToken, nil, map[string]string{"text": "hi"}); a.status != 404 {
		t.Errorf("POST as another token: %d", a.status)
	}
	if a := h.do("GET", "/v1/conversations/conv%2F..%2Fx", ciToken, nil, nil); a.status != 400 && a.status != 404 {
		t.Errorf("a bad id: %d", a.status)
	}
	if a := h.do("GET", "/v1/conversations?cursor=abc", ciToken, nil, nil); a.status != 400 {
		t.Errorf("a bad cursor: %d", a.status)
	}
	if a := h.do("GET", "/v1/conversations?limit=0", ciToken, nil, nil); a.status != 400 {
		t.Errorf("limit 0: %d", a.status)
	}
}

// A retried POST with the same Idempotency-Key queues one turn and
// answers with the first input's id; without a key every POST queues.
func TestPostMessageIdempotency(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	path := "/v1/conversations/" + conv + "/messages"
	key := map[string]string{"Idempotency-Key": "job-42/attempt"}
	first := h.do("POST", path, ciToken, key, map[string]string{"text": "triage this"})
	again := h.do("POST", path, ciToken, key, map[string]string{"text": "triage this"})
	if first.status != 202 || again.status != 202 {
		t.Fatalf("POSTs: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	f, g := first.json(t), again.json(t)
	if f["inputId"] == "" || f["inputId"] != g["inputId"] || f["duplicate"] != nil || g["duplicate"] != true || f["conversationId"] != conv {
		t.Errorf("first %v, retry %v: want one input id, the retry a duplicate", f, g)
	}
	if n := h.gw.queuedCount(); n != 1 {
		t.Errorf("%d inputs queued, want 1", n)
	}
	// The inbound as the gateway sees it: the caller, the key in the event
	// id, the conversation's location.
	in := h.gw.queued[0]
	if in.User.ID != "ci" || !strings.Contains(in.EventID, "job-42/attempt") || in.Location != (channels.Location{Channel: "api", Account: "ci", ChatID: conv}) || !in.DirectMessage {
		t.Errorf("inbound %+v", in)
	}
	// The user_message is logged once.
	var users int
	for _, ev := range h.store.Events(conv) {
		if ev.Type == api.TypeUserMessage {
			users++
		}
	}
	if users != 1 {
		t.Errorf("%d user_message events, want 1", users)
	}
	// The same key on another conversation is another request.
	other := h.conversation()
	if a := h.do("POST", "/v1/conversations/"+other+"/messages", ciToken, key, map[string]string{"text": "x"}); a.status != 202 || a.json(t)["duplicate"] != nil {
		t.Errorf("same key elsewhere: %d %s", a.status, a.body)
	}
	for range 2 {
		h.do("POST", path, ciToken, nil, map[string]string{"text": "no key"})
	}
	if n := h.gw.queuedCount(); n != 4 {
		t.Errorf("%d inputs queued, want 4", n)
	}
}

func TestPostMessageRefusals(t *testing.T) {
	h := newHarness(t, harnessOpts{maxBody: 4096})
	conv := h.conversation()
	path := "/v1/conversations/" + conv + "/messages"
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	cases := []struct {
		name   string
		header map[string]string
		body   any
		status int
	}{
		{"empty", nil, map[string]string{"text": "  "}, 400},
		{"a command", nil, map[string]string{"text": "/new"}, 400},
		{"bad base64", nil, map[string]any{"images": []map[string]string{{"mime": "image/png", "data": "!!"}}}, 400},
		{"not an image", nil, map[string]any{"images": []map[string]string{{"mime": "text/plain", "data": png}}}, 400},
		{"too many images", nil, map[string]any{"images": slices.Repeat([]map[string]string{{"mime": "image/png", "data": png}}, 9)}, 400},
		{"unknown field", nil, `{"text":"hi","role":"system"}`, 400},
		{"not JSON", nil, `text=hi`, 400},
		{"trailing data", nil, `{"text":"hi"}{"text":"again"}`, 400},
		{"too large", nil, map[string]string{"text": strings.Repeat("x", 5000)}, 413},
		{"bad key", map[string]string{"Idempotency-Key": "has space"}, map[string]string{"text": "hi"}, 400},
		{"long key", map[string]string{"Idempotency-Key": strings.Repeat("k", 129)}, map[string]string{"text": "hi"}, 400},
	}
	for _, c := range cases {
		a := h.do("POST", path, ciToken, c.header, c.body)
		if a.status != c.status {
			t.Errorf("%s: %d %s; want %d", c.name, a.status, a.body, c.status)
		}
	}
	req := h.do("POST", path, ciToken, map[string]string{"Content-Type": "text/plain"}, map[string]string{"text": "hi"})
	if req.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", req.status)
	}
	if n := h.gw.queuedCount(); n != 0 {
		t.Errorf("%d refused messages were queued", n)
	}
	// Text and images that are fine are queued with their attachments.
	a := h.do("POST", path, ciToken, nil, map[string]any{"text": "look", "images": []map[string]string{{"mime": "image/png", "data": png, "name": "shot.png"}}})
	if a.status != 202 {
		t.Fatalf("an image: %d %s", a.status, a.body)
	}
	if at := h.gw.queued[0].Attachments; len(at) != 1 || at[0].Name != "shot.png" || string(at[0].Data) != "\x89PNG fake" {
		t.Errorf("attachments %+v", at)
	}
}

// When the gateway does not accept the message, the answer says to send it
// again and nothing is logged as queued.
func TestPostMessageNotQueued(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	h.gw.failQueue = errors.New("disk full")
	a := h.do("POST", "/v1/conversations/"+conv+"/messages", ciToken, map[string]string{"Idempotency-Key": "k"}, map[string]string{"text": "hi"})
	if a.status != 503 || a.code() != "not_queued" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if evs := h.store.Events(conv); len(evs) != 0 {
		t.Errorf("events after a refused message: %+v", evs)
	}
	h.gw.failQueue = nil
	if a := h.do("POST", "/v1/conversations/"+conv+"/messages", ciToken, map[string]string{"Idempotency-Key": "k"}, map[string]string{"text": "hi"}); a.status != 202 {
		t.Errorf("the retry: %d %s", a.status, a.body)
	}
}

// An input's user_message is in the log before its turn's turn_start, even
// when the worker starts the turn the instant the input is queued; and the
// turn_start names the input and carries its text.
func TestUserMessageBeforeTurnStart(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	var wg sync.WaitGroup
	h.gw.onQueue = func(conv, input string) {
		started := make(chan struct{})
		wg.Go(func() {
			h.live(conv, channels.LiveEvent{Kind: channels.LiveTurnStart, InputID: input, At: time.Now()})
			h.live(conv, channels.LiveEvent{Kind: channels.LiveTurnEnd, InputID: input, StopReason: "end_turn"})
			close(started)
		})
		// Give the turn every chance to log first: without the ordering
		// it does so within this bound; with it, it waits for the POST
		// (and the bound only delays the test).
		select {
		case <-started:
		case <-time.After(100 * time.Millisecond):
		}
	}
	for i := range 20 {
		if a := h.do("POST", "/v1/conversations/"+conv+"/messages", ciToken, nil, map[string]string{"text": fmt.Sprint("m", i)}); a.status != 202 {
			t.Fatal(a.status, string(a.body))
		}
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ev := range h.store.Events(conv) {
		switch ev.Type {
		case api.TypeUserMessage:
			seen[ev.InputID] = true
		case api.TypeTurnStart:
			if !seen[ev.InputID] {
				t.Errorf("turn_start of %s before its user_message", ev.InputID)
			}
			var d struct{ User struct{ UUID, Text string } }
			_ = json.Unmarshal(ev.Data, &d)
			if d.User.UUID != ev.InputID || !strings.HasPrefix(d.User.Text, "m") {
				t.Errorf("turn_start of %s carries %+v", ev.InputID, d.User)
			}
		}
	}
}

// turn is a scripted turn's live events: deltas, a tool call and its
// result, an approval, then the end.
func turnEvents(input, run string, firstSeq int64) []channels.LiveEvent {
	seq := firstSeq
	next := func(typ string, extra map[string]any) channels.LiveEvent {
		ev := channels.LiveEvent{Kind: channels.LiveKind(typ), InputID: input, RunID: run, SeqID: seq, Wire: wire(typ, run, seq, extra)}
		seq++
		return ev
	}
	return []channels.LiveEvent{
		{Kind: channels.LiveTurnStart, InputID: input},
		next("reasoning_delta", map[string]any{"uuid": "m1", "otid": "m1", "text": "thinking"}),
		next("assistant_delta", map[string]any{"uuid": "m1", "otid": "m1", "text": "Hel"}),
		next("assistant_delta", map[string]any{"uuid": "m1", "otid": "m1", "text": "lo"}),
		next("assistant_message", map[string]any{"uuid": "m1", "otid": "m1", "text": "Hello"}),
		next("tool_call", map[string]any{"uuid": "m1", "toolCallId": "c1", "toolName": "Bash", "arguments": map[string]string{"command": "ls"}}),
		next("tool_result", map[string]any{"uuid": "t1", "toolCallId": "c1", "text": "a\nb", "outcome": "ok"}),
		{Kind: channels.LiveTurnEnd, InputID: input, StopReason: "end_turn", Steps: 2, Usage: channels.Usage{OutputTokens: 7}},
	}
}

// A stream resumed after any event continues exactly after it: no gap, no
// duplicate; and every event has runId and seqId, its SSE id built from
// them.
func TestStreamResumesAfterEveryEvent(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	for _, ev := range turnEvents("in-1", "run-1", 1) {
		h.live(conv, ev)
	}
	_, all := h.readStream(conv, "?after=start", nil, 8)
	if len(all) != 8 {
		t.Fatalf("%d events from the start, want 8", len(all))
	}
	ids := map[string]bool{}
	for _, ev := range all {
		run, seq := ev.data["runId"].(string), ev.data["seqId"].(float64)
		if run == "" || seq < 1 || ev.id != fmt.Sprintf("%s:%d", run, int(seq)) || ev.data["id"] != ev.id {
			t.Errorf("event %s: runId %q seqId %v", ev.id, run, seq)
		}
		if ids[ev.id] {
			t.Errorf("id %s twice", ev.id)
		}
		ids[ev.id] = true
		if ev.data["inputId"] != "in-1" || ev.data["conversationId"] != conv || ev.data["type"] != ev.event {
			t.Errorf("event %s: %v", ev.id, ev.data)
		}
	}
	if all[0].event != "turn_start" || all[7].event != "turn_end" || all[7].data["stopReason"] != "end_turn" {
		t.Errorf("first %s, last %s %v", all[0].event, all[7].event, all[7].data)
	}
	for i := range all {
		_, rest := h.readStream(conv, "", map[string]string{"Last-Event-ID": all[i].id}, len(all)-i-1)
		var got, want []string
		for _, ev := range rest {
			got = append(got, ev.id)
		}
		for _, ev := range all[i+1:] {
			want = append(want, ev.id)
		}
		if !slices.Equal(got, want) {
			t.Errorf("after %s: %v, want %v", all[i].id, got, want)
		}
	}
	// Last-Event-ID wins over ?after.
	_, rest := h.readStream(conv, "?after=start", map[string]string{"Last-Event-ID": all[5].id}, 2)
	if len(rest) != 2 || rest[0].id != all[6].id {
		t.Errorf("Last-Event-ID with ?after: %v", rest)
	}
}

// A later turn that adds events to an earlier run (a resumed tool call:
// the agent core numbers it from 1 again) continues the run's numbering,
// so the ids stay unique and a client's per-run replay threshold keeps
// working; the relayed JSON says the same seqId.
func TestSeqIDsContinueAcrossTurns(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	for _, ev := range turnEvents("in-1", "run-1", 1)[:6] {
		h.live(conv, ev)
	}
	h.live(conv, channels.LiveEvent{Kind: channels.LiveTurnEnd, InputID: "in-1", StopReason: "requires_approval"})
	// The resume: a tool_result of run-1, numbered 1 by its new turn.
	h.live(conv, channels.LiveEvent{Kind: channels.LiveTurnStart, InputID: "in-2"})
	h.live(conv, channels.LiveEvent{Kind: channels.LiveTool, InputID: "in-2", RunID: "run-1", SeqID: 1,
		Wire: wire("tool_result", "run-1", 1, map[string]any{"uuid": "t1", "toolCallId": "c1", "text": "ok"})})
	_, evs := h.readStream(conv, "?after=start", nil, 9)
	var run1 []int
	for _, ev := range evs {
		if ev.data["runId"] == "run-1" {
			run1 = append(run1, int(ev.data["seqId"].(float64)))
		}
	}
	if !slices.Equal(run1, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("run-1's seqIds %v, want 1..6", run1)
	}
	if last := evs[len(evs)-1]; last.id != "run-1:6" || last.event != "tool_result" {
		t.Errorf("the resumed result is %s %s", last.id, last.event)
	}
}

// A cursor the log no longer has gets one reset event; a malformed one is
// a 400; without a cursor the stream starts at the running turn.
func TestStreamCursors(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	evs := turnEvents("in-1", "run-1", 1)
	for _, ev := range evs {
		h.live(conv, ev)
	}
	second := turnEvents("in-2", "run-2", 1)
	for _, ev := range second[:3] {
		h.live(conv, ev)
	}
	_, got := h.readStream(conv, "", map[string]string{"Last-Event-ID": "run-9:1"}, 1)
	if len(got) != 1 || got[0].event != "reset" || got[0].id != "" {
		t.Errorf("an unknown cursor: %+v", got)
	}
	for _, bad := range []string{"nope", "run-1:0", "run-1:01", "run-1:-1", ":1", "run 1:1"} {
		if status, _ := h.readStream(conv, "", map[string]string{"Last-Event-ID": bad}, 1); status != 400 {
			t.Errorf("Last-Event-ID %q: %d, want 400", bad, status)
		}
	}
	// No cursor: from the running turn's turn_start.
	_, got = h.readStream(conv, "", nil, 3)
	if len(got) != 3 || got[0].event != "turn_start" || got[0].data["inputId"] != "in-2" {
		t.Errorf("without a cursor: %+v", got)
	}
	// The history's streamCursor is the event before that turn_start.
	h.gw.history[conv] = []channels.TranscriptMessage{{ID: "in-1", Role: "user", Text: "q"}}
	m := h.do("GET", "/v1/conversations/"+conv+"/messages", ciToken, nil, nil).json(t)
	_, all := h.readStream(conv, "?after=start", nil, 11)
	if want := all[7].id; m["streamCursor"] != want {
		t.Errorf("streamCursor %v, want %s (the end of the first turn)", m["streamCursor"], want)
	}
	// With no turn running, it is the newest event.
	h.live(conv, channels.LiveEvent{Kind: channels.LiveTurnEnd, InputID: "in-2", StopReason: "end_turn"})
	_, all = h.readStream(conv, "?after=start", nil, 12)
	m = h.do("GET", "/v1/conversations/"+conv+"/messages", ciToken, nil, nil).json(t)
	if m["streamCursor"] != all[11].id {
		t.Errorf("streamCursor %v, want the newest %s", m["streamCursor"], all[11].id)
	}
	empty := h.conversation()
	if m := h.do("GET", "/v1/conversations/"+empty+"/messages", ciToken, nil, nil).json(t); m["streamCursor"] != "start" {
		t.Errorf("streamCursor of an empty log %v", m["streamCursor"])
	}
}

// A live stream delivers events as they are logged, and ends when the
// adapter stops.
func TestStreamIsLive(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	got := make(chan []sseEvent, 1)
	go func() { _, evs := h.readStream(conv, "?after=start", nil, 8); got <- evs }()
	for _, ev := range turnEvents("in-1", "run-1", 1) {
		h.live(conv, ev)
	}
	select {
	case evs := <-got:
		if len(evs) != 8 {
			t.Fatalf("%d live events", len(evs))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the live events did not arrive")
	}
	// An open stream (it has read what there is) ends with the adapter.
	req, _ := http.NewRequest("GET", h.srv.URL+"/v1/conversations/"+conv+"/stream?after=start", nil)
	req.Header.Set("Authorization", "Bearer "+ciToken)
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 1<<16)
	read := ""
	for strings.Count(read, "\nid: ") < 7 { // all eight events
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		read += string(buf[:n])
	}
	done := make(chan struct{})
	go func() {
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				close(done)
				return
			}
		}
	}()
	h.stop()
	h.stop = func() {}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when the adapter stopped")
	}
}

// A turn that a stopped process left open is closed, at start, by a
// turn_end "restarted"; a new turn_start closes one too.
func TestOpenTurnsAreClosed(t *testing.T) {
	st := apitest.NewMemStore()
	h := newHarness(t, harnessOpts{store: st})
	conv := h.conversation()
	for _, ev := range turnEvents("in-1", "run-1", 1)[:3] {
		h.live(conv, ev)
	}
	h.stop()
	h.stop = func() {}
	h2 := newHarness(t, harnessOpts{store: st})
	var types []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		types = nil
		for _, ev := range st.Events(conv) {
			types = append(types, ev.Type)
		}
		if len(types) == 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !slices.Equal(types, []string{"turn_start", "reasoning_delta", "assistant_delta", "turn_end"}) {
		t.Fatalf("after a restart: %v", types)
	}
	evs := st.Events(conv)
	var end struct{ StopReason string }
	_ = json.Unmarshal(evs[3].Data, &end)
	if end.StopReason != api.StopRestarted || evs[3].RunID != evs[0].RunID || evs[3].InputID != "in-1" {
		t.Errorf("the closing turn_end: %+v %s", evs[3], evs[3].Data)
	}
	// A turn that did not run (another process held the conversation:
	// no event came) leaves nothing; the one that runs is logged.
	delta := func(run string) channels.LiveEvent {
		return channels.LiveEvent{Kind: channels.LiveText, InputID: "in-2", RunID: run, SeqID: 1, Wire: wire("assistant_delta", run, 1, map[string]any{"uuid": run, "otid": run, "text": "x"})}
	}
	h2.live(conv, channels.LiveEvent{Kind: channels.LiveTurnStart, InputID: "in-2"})
	h2.live(conv, channels.LiveEvent{Kind: channels.LiveTurnStart, InputID: "in-2"})
	h2.live(conv, delta("run-2"))
	// A turn_start while a turn is open closes it (its process stopped).
	h2.live(conv, channels.LiveEvent{Kind: channels.LiveTurnStart, InputID: "in-3"})
	h2.live(conv, delta("run-3"))
	types = nil
	for _, ev := range st.Events(conv)[4:] {
		types = append(types, ev.Type)
	}
	if !slices.Equal(types, []string{"turn_start", "assistant_delta", "turn_end", "turn_start", "assistant_delta"}) {
		t.Errorf("after the restart: %v", types)
	}
	evs = st.Events(conv)
	if evs[6].RunID != evs[4].RunID || evs[6].InputID != "in-2" {
		t.Errorf("the turn_end closing in-2's turn: %+v", evs[6])
	}
}

// What the gateway posts (notices, replies, the final message) is logged
// as chat_message events; edits follow their message's numbering.
func TestSendAndEdit(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	loc := channels.Location{Channel: "api", Account: "ci", ChatID: conv}
	ctx := context.Background()
	ref, err := h.ad.Send(ctx, loc, channels.Message{Parts: []channels.Part{channels.Text{Markdown: "**done**"}, channels.Notice{Text: "stopped"}}, Turn: "turn-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ad.Edit(ctx, ref, channels.TextMessage("edited")); err != nil {
		t.Fatal(err)
	}
	_, evs := h.readStream(conv, "?after=start", nil, 2)
	if len(evs) != 2 || evs[0].event != "chat_message" || evs[0].data["text"] != "**done**" || evs[0].data["final"] != true ||
		evs[1].event != "chat_message_edit" || evs[1].data["text"] != "edited" || evs[1].id != ref.ID+":2" || evs[0].data["messageId"] != ref.ID {
		t.Errorf("%+v", evs)
	}
	if _, err := h.ad.Send(ctx, channels.Location{Channel: "web", ChatID: "x"}, channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("a foreign location: %v", err)
	}
	bad := channels.Message{Parts: []channels.Part{channels.Buttons{Rows: [][]channels.Button{{{Label: "x"}}}}}}
	if _, err := h.ad.Send(ctx, loc, bad); !channels.IsPermanent(err) {
		t.Errorf("an invalid message: %v", err)
	}
	h.store.FailAppends = 5
	if _, err := h.ad.Send(ctx, loc, channels.TextMessage("x")); err == nil || channels.IsPermanent(err) {
		t.Errorf("a failing store: %v, want a transient error", err)
	}
}

func TestHistory(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	h.gw.history[conv] = []channels.TranscriptMessage{
		{ID: "in-1", Seq: 1, Role: "user", Text: "q", Images: 1},
		{ID: "m1", Seq: 2, Role: "assistant", Text: "a", Reasoning: "r", ToolCalls: []channels.TranscriptCall{{ID: "c1", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
		{ID: "t1", Seq: 3, Role: "tool", ToolCallID: "c1", ToolName: "Bash", Text: "out", Outcome: "ok"},
	}
	m := h.do("GET", "/v1/conversations/"+conv+"/messages?limit=2", ciToken, nil, nil).json(t)
	msgs := m["messages"].([]any)
	if len(msgs) != 2 || m["more"] != true {
		t.Fatalf("%v", m)
	}
	asst := msgs[1].(map[string]any)
	if asst["uuid"] != "m1" || asst["otid"] != "m1" || asst["reasoning"] != "r" || asst["toolCalls"].([]any)[0].(map[string]any)["toolCallId"] != "c1" {
		t.Errorf("assistant row %v", asst)
	}
	m = h.do("GET", "/v1/conversations/"+conv+"/messages?after=m1", ciToken, nil, nil).json(t)
	if rows := m["messages"].([]any); len(rows) != 1 || rows[0].(map[string]any)["toolCallId"] != "c1" || m["more"] != false {
		t.Errorf("after m1: %v", m)
	}
	for _, q := range []string{"?after=nope", "?after=a%20b", "?limit=1001"} {
		if a := h.do("GET", "/v1/conversations/"+conv+"/messages"+q, ciToken, nil, nil); a.status != 400 {
			t.Errorf("%s: %d %s", q, a.status, a.body)
		}
	}
}

func TestApprovals(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.gw.approvals = []channels.PendingApproval{{ApprovalCard: channels.ApprovalCard{ID: "ap-1", ToolCallID: "c1", Tool: "Bash", Summary: "git push", Requester: "api:ci", Rule: "Bash(git push:*)"},
		ConversationID: "conv-x", Agent: "main", Location: channels.Location{Channel: "web", Account: "local", ChatID: "c"}, Always: false}}
	list := h.do("GET", "/v1/approvals", ciToken, nil, nil).json(t)["approvals"].([]any)
	if len(list) != 1 {
		t.Fatalf("approvals %v", list)
	}
	ap := list[0].(map[string]any)
	if ap["id"] != "ap-1" || ap["summary"] != "git push" || ap["location"] != "web:local:c" || ap["always"] != false {
		t.Errorf("approval %v", ap)
	}
	for _, body := range []string{`{"decision":"maybe"}`, `{"decision":"allow","reason":"` + strings.Repeat("x", 2001) + `"}`, `{}`, `{"decision":"allow","extra":1}`} {
		if a := h.do("POST", "/v1/approvals/ap-1", ciToken, nil, body); a.status != 400 {
			t.Errorf("%s: %d", body, a.status)
		}
	}
	if len(h.gw.decisions) != 0 {
		t.Fatalf("bad decisions reached the gateway: %+v", h.gw.decisions)
	}
	// Refused: not unknown's to decide; then decided by its requester.
	if a := h.do("POST", "/v1/approvals/ap-9", ciToken, nil, map[string]string{"decision": "allow"}); a.status != 409 || a.code() != "refused" {
		t.Errorf("unknown approval: %d %s", a.status, a.body)
	}
	a := h.do("POST", "/v1/approvals/ap-1", ciToken, nil, map[string]string{"decision": "allow", "reason": "ok by ci"})
	if a.status != 200 || a.json(t)["decided"] != true || a.json(t)["resumed"] != true {
		t.Fatalf("decide: %d %s", a.status, a.body)
	}
	d := h.gw.decisions[len(h.gw.decisions)-1]
	if d.User.ID != "ci" || d.Action != "allow" || d.Reason != "ok by ci" || d.ApprovalID != "ap-1" || d.Location.Channel != "api" {
		t.Errorf("decision %+v", d)
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conv := h.conversation()
	if a := h.do("POST", "/v1/conversations/"+conv+"/cancel", ciToken, nil, nil); a.status != 202 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	in := h.gw.inbounds[0]
	if in.Text != "/stop" || in.User.ID != "ci" || in.Location.ChatID != conv || in.EventID == "" {
		t.Errorf("cancel sent %+v", in)
	}
}

// Old events are pruned at start; a cursor into them resets.
func TestRetention(t *testing.T) {
	st := apitest.NewMemStore()
	conv := "conv-old"
	if _, err := st.AddConversation(context.Background(), api.Conversation{ID: conv, Account: "ci", Agent: "main"}); err != nil {
		t.Fatal(err)
	}
	old, _ := st.AppendEvent(context.Background(), api.Event{ConversationID: conv, RunID: "run-1", Type: "assistant_delta", Data: []byte(`{}`), At: time.Now().Add(-25 * time.Hour)})
	h := newHarness(t, harnessOpts{store: st})
	deadline := time.Now().Add(10 * time.Second)
	for len(st.Events(conv)) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(st.Events(conv)) != 0 {
		t.Fatal("an event older than the retention was kept")
	}
	_, got := h.readStream(conv, "", map[string]string{"Last-Event-ID": api.FormatEventID(old.RunID, old.SeqID)}, 1)
	if len(got) != 1 || got[0].event != "reset" {
		t.Errorf("a pruned cursor: %+v", got)
	}
}

// Without the gateway's abilities the adapter still queues (OnInbound)
// and says what it cannot do.
func TestPlainHandler(t *testing.T) {
	st := apitest.NewMemStore()
	if _, err := st.AddConversation(context.Background(), api.Conversation{ID: "conv-1", Account: "ci", Agent: "main"}); err != nil {
		t.Fatal(err)
	}
	plain := &plainHandler{}
	h := newHarness(t, harnessOpts{store: st, handler: plain})
	if a := h.do("POST", "/v1/conversations/conv-1/messages", ciToken, nil, map[string]string{"text": "hi"}); a.status != 202 {
		t.Errorf("POST: %d %s", a.status, a.body)
	}
	if len(plain.inbounds) != 1 {
		t.Errorf("inbounds %d", len(plain.inbounds))
	}
	if a := h.do("GET", "/v1/approvals", ciToken, nil, nil); a.status != 501 {
		t.Errorf("approvals without the ability: %d", a.status)
	}
}

type plainHandler struct {
	mu       sync.Mutex
	inbounds []channels.Inbound
}

func (p *plainHandler) OnInbound(ctx context.Context, in channels.Inbound) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inbounds = append(p.inbounds, in)
	return nil
}

func (p *plainHandler) OnAction(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
	return channels.ActionReply{}, nil
}

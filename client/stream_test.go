package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStream serves a fixed list of events as the API does, resuming after
// Last-Event-ID, and cuts each connection after a random number of events
// — sometimes in the middle of one.
type fakeStream struct {
	t      *testing.T
	events []string // SSE ids "run-N:seq"
	rng    *rand.Rand

	mu       sync.Mutex
	conns    int
	lastIDs  []string
	failNext int // answer this many connections with 503
	status   int // answer every connection with this status
	reset    bool
}

func newFakeStream(t *testing.T, n int) *fakeStream {
	f := &fakeStream{t: t, rng: rand.New(rand.NewPCG(1, 2))}
	for i := range n {
		f.events = append(f.events, fmt.Sprintf("run-%d:%d", i/7, i%7+1))
	}
	return f
}

func (f *fakeStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.conns++
	last := r.Header.Get("Last-Event-ID")
	f.lastIDs = append(f.lastIDs, last)
	fail, status, reset := f.failNext > 0, f.status, f.reset
	if fail {
		f.failNext--
	}
	cut := 1 + f.rng.IntN(5)
	midEvent := f.rng.IntN(3) == 0
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, `{"error":{"code":"unauthorized","message":"no"}}`, http.StatusUnauthorized)
		return
	}
	if status != 0 {
		http.Error(w, `{"error":{"code":"nope","message":"no"}}`, status)
		return
	}
	if fail {
		http.Error(w, `{"error":{"code":"unavailable","message":"later"}}`, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if reset {
		fmt.Fprint(w, "event: reset\ndata: {\"type\":\"reset\"}\n\n")
		return
	}
	start := 0
	if last != "" {
		start = -1
		for i, id := range f.events {
			if id == last {
				start = i + 1
			}
		}
		if start < 0 {
			f.t.Errorf("resumed after unknown id %q", last)
			return
		}
	}
	fmt.Fprint(w, "retry: 10\n\n: hello\n\n")
	for i := start; i < len(f.events) && i < start+cut; i++ {
		run, seq, _ := strings.Cut(f.events[i], ":")
		fmt.Fprintf(w, "id: %s\nevent: assistant_delta\ndata: {\"type\":\"assistant_delta\",\"runId\":%q,\"seqId\":%s,\"text\":\"%d\"}\n\n", f.events[i], run, seq, i)
	}
	if midEvent && start+cut < len(f.events) {
		fmt.Fprintf(w, "id: %s\nevent: assistant_delta\ndata: {\"type\":", f.events[start+cut])
	}
	w.(http.Flusher).Flush()
	if start+cut >= len(f.events) {
		<-r.Context().Done() // all sent: stay open like the real stream
	}
	// Returning ends the response: the client sees the connection drop.
}

func testClient(t *testing.T, h http.Handler) *Client {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "tok", Options{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every event arrives once and in order across many dropped connections,
// each reconnect resuming after the last event read (also when the drop
// cut an event in half, which is never yielded).
func TestStreamReconnectsAndResumes(t *testing.T) {
	f := newFakeStream(t, 200)
	f.failNext = 0
	c := testClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := c.Stream(ctx, "conv-1", StreamOptions{})
	defer s.Close()
	for i, want := range f.events {
		if i == 100 {
			f.mu.Lock()
			f.failNext = 2 // the server is down for two attempts
			f.mu.Unlock()
		}
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.ID != want || ev.Text != strconv.Itoa(i) || ev.Type != EventAssistantDelta {
			t.Fatalf("event %d = %s %q, want %s", i, ev.ID, ev.Text, want)
		}
		if s.LastEventID() != want {
			t.Fatalf("LastEventID %q after %s", s.LastEventID(), want)
		}
	}
	if s.Reconnects() < 30 {
		t.Errorf("only %d reconnects: the test did not cut the stream often", s.Reconnects())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, id := range f.lastIDs[1:] {
		if id == "" {
			t.Errorf("connection %d did not send Last-Event-ID", i+1)
		}
	}
}

func TestStreamRefusalsAreNotRetried(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusBadRequest} {
		f := newFakeStream(t, 3)
		f.status = status
		c := testClient(t, f)
		s := c.Stream(t.Context(), "conv-1", StreamOptions{})
		_, err := s.Next()
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != status {
			t.Errorf("status %d: Next = %v, want an *APIError", status, err)
		}
		if f.conns != 1 {
			t.Errorf("status %d: %d connections, want 1", status, f.conns)
		}
	}
}

func TestStreamResetWaitsForRestart(t *testing.T) {
	f := newFakeStream(t, 3)
	f.reset = true
	c := testClient(t, f)
	s := c.Stream(t.Context(), "conv-1", StreamOptions{LastEventID: "run-9:1"})
	ev, err := s.Next()
	if err != nil || ev.Type != EventReset {
		t.Fatalf("Next = %+v, %v; want a reset event", ev, err)
	}
	if _, err := s.Next(); !errors.Is(err, ErrNeedsRestart) {
		t.Fatalf("Next after a reset = %v, want ErrNeedsRestart", err)
	}
	f.mu.Lock()
	f.reset = false
	f.mu.Unlock()
	s.Restart("start")
	ev, err = s.Next()
	if err != nil || ev.ID != f.events[0] {
		t.Fatalf("after Restart: %+v, %v", ev, err)
	}
}

func TestStreamEndsWithItsContext(t *testing.T) {
	f := newFakeStream(t, 1)
	c := testClient(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	s := c.Stream(ctx, "conv-1", StreamOptions{})
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Next after cancel = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after its context ended")
	}
}

func TestSendRetriesWithTheSameKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if n < 3 {
			http.Error(w, `{"error":{"code":"not_queued","message":"again"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"inputId":"in-1","conversationId":"conv-1"}`)
	})
	c := testClient(t, h)
	q, err := c.Send(t.Context(), "conv-1", NewMessage{Text: "hi"}, SendOptions{})
	if err != nil || q.InputID != "in-1" {
		t.Fatalf("Send = %+v, %v", q, err)
	}
	if len(keys) != 3 || keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] {
		t.Errorf("keys %q: want three tries with one key", keys)
	}
	// A refusal is not retried.
	keys = nil
	h2 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		http.Error(w, `{"error":{"code":"bad_message","message":"empty"}}`, http.StatusBadRequest)
	})
	c2 := testClient(t, h2)
	if _, err := c2.Send(t.Context(), "conv-1", NewMessage{}, SendOptions{IdempotencyKey: "k1"}); err == nil || len(keys) != 1 || keys[0] != "k1" {
		t.Errorf("a 400: err %v after %d tries with %q", err, len(keys), keys)
	}
}

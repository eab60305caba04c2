package slacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

// maxDeliveries is how often an event is delivered at most: once and three
// retries, as Slack does.
const maxDeliveries = 4

// event is one Events API event and its delivery state.
type event struct {
	id       string
	payload  []byte // the event_callback body
	acked    bool
	lost     bool // Slack gave up: emitted while the socket was silent
	held     bool // not delivered until Release (Late)
	attempts int
	lastSent time.Time
}

// envelope is one Socket Mode envelope sent and not yet acknowledged.
type envelope struct {
	id      string
	eventID string               // for events_api envelopes
	ack     chan json.RawMessage // for interactive and slash_commands envelopes
}

// conn is one Socket Mode connection.
type conn struct {
	ws     *websocket.Conn
	silent bool
	ticket string
}

// httpTarget is where HTTP mode delivers (the adapter's routes).
type httpTarget struct {
	events, interactions, commands string
}

// DeliverHTTP switches the fake to the HTTP Events API: events,
// interactions and slash commands are posted, signed with SigningSecret, to
// base + /slack/events, /slack/interactions and /slack/commands. An event
// answered with anything but 200 is posted again (X-Slack-Retry-Num).
func (s *Server) DeliverHTTP(base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.http = &httpTarget{events: base + "/slack/events", interactions: base + "/slack/interactions", commands: base + "/slack/commands"}
}

// Connections is how many Socket Mode websockets were accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Connected reports whether a Socket Mode websocket is open.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// Silence makes the current connection stop sending anything (no pings, no
// envelopes) while staying open, the way a deaf socket behaves. Events
// emitted meanwhile are lost, as Slack loses them; only catch-up through
// the Web API finds their messages.
func (s *Server) Silence() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.silent = true
	}
}

// Drop closes the current connection abruptly.
func (s *Server) Drop() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.notify()
	s.mu.Unlock()
	if c != nil {
		_ = c.ws.CloseNow()
	}
}

// Refresh sends the disconnect request Slack sends before it rotates a
// connection (the client is expected to reconnect).
func (s *Server) Refresh() {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		_ = s.write(c, map[string]any{"type": "disconnect", "reason": "refresh_requested",
			"debug_info": map[string]any{"host": "fake"}})
	}
}

// Release delivers events held by Late, in the order given, the way Slack
// delivers an event late (a retry after the app was away, or an HTTP
// request that lost the race): later events may have arrived first.
func (s *Server) Release(eventIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range eventIDs {
		e := s.events[id]
		if e == nil || !e.held {
			continue
		}
		e.held = false
		switch {
		case s.http != nil:
			target := s.http.events
			s.spawn(func() { s.postEvent(e, target) })
		case s.conn != nil && !s.conn.silent:
			s.sendEvent(s.conn, e)
		}
	}
	s.notify()
}

// Acked reports whether the event was acknowledged (an envelope ack in
// Socket Mode, a 200 in HTTP mode).
func (s *Server) Acked(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[eventID]
	return e != nil && e.acked
}

// Attempts is how often the event was delivered.
func (s *Server) Attempts(eventID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.events[eventID]; e != nil {
		return e.attempts
	}
	return 0
}

// Lost reports whether the event was lost (emitted while silent).
func (s *Server) Lost(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[eventID]
	return e != nil && e.lost
}

// emit creates an Events API event for inner and delivers it; call with
// s.mu held. It returns the event id.
func (s *Server) emit(inner map[string]any) string {
	id := s.nextID("Ev0")
	body, _ := json.Marshal(map[string]any{
		"token": "fake-verification-token", "team_id": TeamID, "api_app_id": AppID, "event": inner,
		"type": "event_callback", "event_id": id, "event_time": time.Now().Unix(),
		"authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
	})
	e := &event{id: id, payload: body, held: s.holding}
	s.events[id] = e
	s.order = append(s.order, id)
	switch {
	case e.held:
	case s.http != nil:
		target := s.http.events
		s.spawn(func() { s.postEvent(e, target) })
	case s.conn != nil && s.conn.silent:
		e.lost = true
	case s.conn != nil:
		s.sendEvent(s.conn, e)
	}
	s.notify()
	return id
}

// sendEvent sends an events_api envelope for e; call with s.mu held.
func (s *Server) sendEvent(c *conn, e *event) {
	env := s.nextID("env-")
	s.envelopes[env] = &envelope{id: env, eventID: e.id}
	retry := e.attempts
	e.attempts++
	e.lastSent = time.Now()
	msg := map[string]any{"envelope_id": env, "type": "events_api", "accepts_response_payload": false,
		"retry_attempt": retry, "payload": json.RawMessage(e.payload)}
	if retry > 0 {
		msg["retry_reason"] = "timeout"
	}
	s.spawn(func() { _ = s.write(c, msg) })
}

// redeliverLoop sends unacknowledged events again after redeliverAfter, on
// the current connection, and events that waited for a connection.
func (s *Server) redeliverLoop() {
	if s.redeliverAfter <= 0 {
		return
	}
	tick := time.NewTicker(max(s.redeliverAfter/3, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		if s.http == nil && s.conn != nil && !s.conn.silent {
			for _, id := range s.order {
				e := s.events[id]
				if e.acked || e.lost || e.held || e.attempts >= maxDeliveries {
					continue
				}
				if e.attempts == 0 || time.Since(e.lastSent) >= s.redeliverAfter {
					s.sendEvent(s.conn, e)
				}
			}
		}
		s.mu.Unlock()
	}
}

// write sends one JSON frame on c.
func (s *Server) write(c *conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, data)
}

// websocket serves a Socket Mode connection: hello, pings, envelopes, and
// reads acknowledgements.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{"api.slack.com"}})
	if err != nil {
		return
	}
	c := &conn{ws: ws, ticket: r.URL.Query().Get("ticket")}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.CloseNow()
		return
	}
	// The handler's goroutine is no longer the HTTP server's after the
	// hijack: the server waits for it itself.
	s.wg.Add(1)
	defer s.wg.Done()
	if old := s.conn; old != nil {
		_ = old.ws.CloseNow()
	}
	s.conn = c
	s.conns++
	s.notify()
	s.mu.Unlock()
	defer func() {
		_ = ws.CloseNow()
		s.mu.Lock()
		if s.conn == c {
			s.conn = nil
		}
		s.notify()
		s.mu.Unlock()
	}()
	_ = s.write(c, map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "fake", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": AppID}})
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if s.pingEvery > 0 {
		s.wg.Go(func() { s.pinger(ctx, c) })
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		if env := s.envelopes[ack.EnvelopeID]; env != nil {
			delete(s.envelopes, ack.EnvelopeID)
			if e := s.events[env.eventID]; e != nil {
				e.acked = true
			}
			if env.ack != nil {
				env.ack <- ack.Payload
			}
		}
		s.notify()
		s.mu.Unlock()
	}
}

// pinger pings the client until the connection ends, except while silent.
func (s *Server) pinger(ctx context.Context, c *conn) {
	tick := time.NewTicker(s.pingEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		silent := c.silent
		s.mu.Unlock()
		if silent {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := c.ws.Ping(pctx)
		cancel()
		if err != nil {
			return
		}
	}
}

// postEvent delivers an event in HTTP mode, retrying until it gets 200.
func (s *Server) postEvent(e *event, target string) {
	for attempt := 0; attempt < maxDeliveries; attempt++ {
		if attempt > 0 && !s.pause(s.redeliverAfter) {
			return
		}
		h := Sign(e.payload, time.Now())
		h.Set("Content-Type", "application/json")
		if attempt > 0 {
			h.Set("X-Slack-Retry-Num", strconv.Itoa(attempt))
			h.Set("X-Slack-Retry-Reason", "http_error")
		}
		s.mu.Lock()
		e.attempts++
		e.lastSent = time.Now()
		s.notify()
		s.mu.Unlock()
		status, _, err := s.post(target, e.payload, h)
		if err == nil && status == http.StatusOK {
			s.mu.Lock()
			e.acked = true
			s.notify()
			s.mu.Unlock()
			return
		}
	}
}

func (s *Server) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// post makes one signed request to the adapter.
func (s *Server) post(target string, body []byte, h http.Header) (int, string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// deliverRequest delivers an interactive or slash_commands payload and
// returns the acknowledgement: the ack's payload in Socket Mode, the
// response body in HTTP mode. Unlike Slack, it waits (until ctx ends) for
// the adapter to be reachable: a Socket Mode connection, or routes that no
// longer answer 503.
func (s *Server) deliverRequest(ctx context.Context, kind string, payload []byte, form url.Values) (string, error) {
	s.mu.Lock()
	target := s.http
	s.mu.Unlock()
	if target != nil {
		return s.postRequest(ctx, kind, target, form)
	}
	var c *conn
	err := s.WaitFor(ctx, "a Socket Mode connection to deliver the "+kind+" on", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		c = s.conn
		return c != nil && !c.silent
	})
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	env := s.nextID("env-")
	ackCh := make(chan json.RawMessage, 1)
	s.envelopes[env] = &envelope{id: env, ack: ackCh}
	s.mu.Unlock()
	msg := map[string]any{"envelope_id": env, "type": kind, "accepts_response_payload": kind == "slash_commands",
		"payload": json.RawMessage(payload)}
	if err := s.write(c, msg); err != nil {
		return "", err
	}
	select {
	case p := <-ackCh:
		if len(p) == 0 || string(p) == "null" {
			return "", nil
		}
		return string(p), nil
	case <-ctx.Done():
		return "", fmt.Errorf("slacktest: the %s envelope was not acknowledged: %w", kind, ctx.Err())
	}
}

func (s *Server) postRequest(ctx context.Context, kind string, target *httpTarget, form url.Values) (string, error) {
	u := target.interactions
	if kind == "slash_commands" {
		u = target.commands
	}
	body := []byte(form.Encode())
	for {
		h := Sign(body, time.Now())
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		status, resp, err := s.post(u, body, h)
		switch {
		case err != nil:
			return "", err
		case status == http.StatusOK:
			return resp, nil
		case status != http.StatusServiceUnavailable:
			return "", fmt.Errorf("slacktest: %s answered %d: %s", u, status, resp)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("slacktest: %s is not ready: %w", u, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

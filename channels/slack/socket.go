package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/socketmode"
)

// socketJob is one events_api envelope waiting for the event worker; ack
// acknowledges it on the connection it came from.
type socketJob struct {
	raw []byte
	ack func(payload any)
}

// errSilent ends a connection that carried no traffic for IdleTimeout.
var errSilent = errors.New("no traffic on the Socket Mode connection")

// runSocket keeps a Socket Mode connection until ctx ends: each connection
// is a fresh socketmode client watched by traffic; when it ends (Slack
// closed it, it failed, or it went silent) the next one follows after a
// backoff. It returns an error only when Slack refuses the app token.
func (a *Adapter) runSocket(ctx context.Context, r *run) error {
	bo := backoff{min: a.minBackoff, max: a.maxBackoff}
	for {
		healthy, err := a.connection(ctx, r)
		if ctx.Err() != nil {
			return nil
		}
		if isAuthError(err) {
			return fmt.Errorf("slack: Socket Mode refused app_token (Basic Information → App-Level Tokens, scope connections:write): %w", a.red.wrap("apps.connections.open", err))
		}
		if healthy {
			bo.reset()
		}
		wait := bo.next()
		a.log.Warn("slack Socket Mode connection ended; reconnecting", "err", a.red.wrap("socket mode", err), "wait", wait)
		if !sleep(ctx, wait) {
			return nil
		}
	}
}

// connection runs one socketmode client until it ends or goes silent.
// healthy reports that Slack said hello on it.
func (a *Adapter) connection(ctx context.Context, r *run) (healthy bool, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last atomic.Int64
	touch := func() { last.Store(time.Now().UnixNano()) }
	touch()
	dialer := &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 45 * time.Second,
		WriteBufferSize:  32 << 10, // one frame per response: Slack does not reassemble
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &trafficConn{Conn: c, touch: touch}, nil
		},
	}
	opts := []socketmode.Option{socketmode.OptionDialer(dialer), socketmode.OptionLog(libLogger{a})}
	if a.pingInterval > 0 {
		opts = append(opts, socketmode.OptionPingInterval(a.pingInterval))
	}
	sm := socketmode.New(a.api, opts...)
	done := make(chan error, 1)
	go func() { done <- sm.RunContext(cctx) }()
	tick := time.NewTicker(max(a.opts.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return healthy, err
		case ev := <-sm.Events:
			switch ev.Type {
			case socketmode.EventTypeConnecting, socketmode.EventTypeConnectionError, socketmode.EventTypeConnected,
				socketmode.EventTypeInvalidAuth, socketmode.EventTypeErrorWriteFailed, socketmode.EventTypeIncomingError:
				// The client's own events are no sign that Slack talks to us.
			default:
				touch()
			}
			if ev.Type == socketmode.EventTypeHello {
				if !healthy {
					a.log.Debug("slack Socket Mode connected")
				}
				healthy = true
				r.requestCatchUp()
			}
			a.route(cctx, r, sm, ev)
		case <-tick.C:
			if idle := time.Since(time.Unix(0, last.Load())); idle > a.opts.IdleTimeout {
				a.log.Warn("slack Socket Mode connection is silent; replacing it and catching up",
					"silent_for", idle.Round(time.Millisecond))
				cancel()
				<-done
				return healthy, errSilent
			}
		}
	}
}

// route handles one event of the socketmode client. Events API envelopes
// go to the ordered event worker, acknowledged once the gateway accepted
// them; presses and slash commands are acknowledged at once (Slack's 3 s
// limit) and handled by the workers.
func (a *Adapter) route(cctx context.Context, r *run, sm *socketmode.Client, ev socketmode.Event) {
	var req *socketmode.Request
	switch ev.Type {
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		req = ev.Request
	case socketmode.EventTypeErrorBadMessage:
		// The SDK could not type the payload (an event type it does not
		// know, a field of an unexpected type): read the envelope ourselves.
		if bad, ok := ev.Data.(*socketmode.ErrorBadMessage); ok {
			var rq socketmode.Request
			if json.Unmarshal(bad.Message, &rq) == nil {
				req = &rq
			}
		}
	case socketmode.EventTypeInvalidAuth:
		a.log.Error("slack Socket Mode refused the app token")
	case socketmode.EventTypeConnectionError:
		a.log.Debug("slack Socket Mode connection attempt failed", "err", a.red.string(fmt.Sprint(ev.Data)))
	}
	if req == nil || req.EnvelopeID == "" {
		return
	}
	envelope := req.EnvelopeID
	ack := func(payload any) {
		if err := sm.AckCtx(cctx, envelope, payload); err != nil {
			a.log.Debug("slack envelope ack not sent; Slack will deliver it again", "err", a.red.string(err.Error()))
		}
	}
	switch req.Type {
	case socketmode.RequestTypeEventsAPI:
		select {
		case r.events <- socketJob{raw: req.Payload, ack: ack}:
		default:
			a.log.Warn("slack event queue full; not acknowledged, Slack will deliver it again")
		}
	case socketmode.RequestTypeInteractive:
		ack(nil)
		raw := req.Payload
		if !r.submit(func(ctx context.Context) { a.handleInteraction(ctx, r.h, raw) }) {
			a.log.Warn("slack button press dropped: too many presses at once")
		}
	case socketmode.RequestTypeSlashCommands:
		c, err := parseCommandJSON(req.Payload)
		if err != nil {
			ack(nil)
			a.log.Warn("slack slash command ignored", "err", err)
			return
		}
		reply, handOver := a.commandAck(c)
		if reply != nil {
			ack(reply)
		} else {
			ack(nil)
		}
		if handOver && !r.submit(func(ctx context.Context) { a.handleCommand(ctx, r.h, c) }) {
			a.log.Warn("slack slash command dropped: too many at once")
		}
	default:
		ack(nil)
	}
}

// eventWorker hands Socket Mode events to the gateway one at a time, in
// the order they arrived, and acknowledges each only after OnInbound
// accepted it (a refused one is left for Slack to deliver again).
func (a *Adapter) eventWorker(r *run) {
	for {
		select {
		case <-r.ctx.Done():
			return
		case j := <-r.events:
			if err := a.handleEvent(r.ctx, r, j.raw); err != nil {
				if r.ctx.Err() == nil {
					a.log.Warn("slack event not accepted; not acknowledged, Slack will deliver it again", "err", err)
				}
				continue
			}
			j.ack(nil)
		}
	}
}

// trafficConn notes every read of the websocket's connection: any bytes
// from Slack (pings included) are a sign of life.
type trafficConn struct {
	net.Conn
	touch func()
}

func (c *trafficConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/switchboard-gw/switchboard/channels"
)

// gwEvent is a gateway dispatch queued for the worker.
type gwEvent struct {
	typ string
	raw json.RawMessage
}

// Close codes after which reconnecting cannot help.
const (
	closeAuthFailed       = 4004
	closeInvalidShard     = 4010
	closeShardingRequired = 4011
	closeInvalidVersion   = 4012
	closeInvalidIntents   = 4013
	closeDisallowedIntent = 4014
)

// fatalGatewayError explains a gateway refusal that retrying cannot fix, or
// returns nil.
func fatalGatewayError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case closeAuthFailed:
			return errors.New("discord refused the bot token (4004 authentication failed): check channels.discord.token (Developer Portal → Bot → Reset Token)")
		case closeDisallowedIntent, closeInvalidIntents:
			return fmt.Errorf("discord refused the gateway intents (%d): enable the Message Content intent (Developer Portal → your application → Bot → Privileged Gateway Intents)", ce.Code)
		case closeInvalidShard, closeShardingRequired, closeInvalidVersion:
			return fmt.Errorf("discord closed the gateway with %d (%s): this bot needs sharding or a newer client", ce.Code, ce.Text)
		}
	}
	if httpStatus(err) == http.StatusUnauthorized || errors.Is(err, discordgo.ErrUnauthorized) {
		return errors.New("discord refused the bot token (401): check channels.discord.token (Developer Portal → Bot → Reset Token)")
	}
	return nil
}

// Start implements channels.Adapter: it connects to the gateway and keeps
// the connection (resuming when it can, identifying afresh when it cannot,
// catching up after a fresh IDENTIFY), hands messages over in order from
// one worker and interactions from a few more, until ctx ends. It returns
// an error only when Discord refuses the token or the intents.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("discord: Start needs a handler")
	}
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("discord: adapter already started")
	}
	runCtx, cancel := context.WithCancel(ctx)
	// Handlers blocked on a full queue must give up as soon as ctx ends,
	// even while Open (which waits for them) is still running.
	stopHandlers := context.AfterFunc(runCtx, func() { close(a.stop) })
	var wg sync.WaitGroup
	wg.Go(func() { a.work(runCtx, h) })
	for range a.workers {
		wg.Go(func() { a.interact(runCtx, h) })
	}
	wg.Go(func() { a.watch(runCtx) })
	err := a.connect(runCtx)
	cancel()
	if stopHandlers() {
		close(a.stop) // not reached in practice: cancel ran the func
	}
	a.connected.Store(false)
	if cerr := a.sess.Close(); cerr != nil {
		a.log.Debug("discord close", "err", cerr)
	}
	wg.Wait()
	return err
}

// connect opens the gateway and reopens it after each disconnect until ctx
// ends; it returns an error only for refusals retrying cannot fix.
func (a *Adapter) connect(ctx context.Context) error {
	bo := backoff{min: a.minBackoff, max: a.maxBackoff}
	var out outage
	for ctx.Err() == nil {
		select { // a disconnect of an earlier connection is no news
		case <-a.disconnected:
		default:
		}
		err := a.open(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			err = nil // a stale disconnect signal: still connected
		}
		if err != nil {
			if fatal := fatalGatewayError(err); fatal != nil {
				a.log.Error("discord gateway refused", "err", fatal)
				return fatal
			}
			out.fail(a, a.red.classify("gateway", err))
			sleep(ctx, bo.next())
			continue
		}
		out.recovered(a)
		opened := a.now()
		a.connected.Store(true)
		select {
		case <-ctx.Done():
			return nil
		case <-a.disconnected:
		}
		a.connected.Store(false)
		if a.now().Sub(opened) > time.Minute {
			bo.reset()
		}
		a.log.Info("discord gateway disconnected; reconnecting")
		sleep(ctx, bo.next())
	}
	return nil
}

// open calls Session.Open, which resumes when discordgo has a session id
// and a sequence and identifies otherwise. Open has no context and reads
// hello and READY without deadlines, so the raw connection is closed when
// ctx ends or openTimeout passes, which makes it return.
func (a *Adapter) open(ctx context.Context) error {
	stop := context.AfterFunc(ctx, a.closeRaw)
	defer stop()
	t := time.AfterFunc(openTimeout, a.closeRaw)
	defer t.Stop()
	return a.sess.Open()
}

// connBox holds the raw connection of the current websocket.
type connBox struct{ c net.Conn }

func (a *Adapter) closeRaw() {
	if b := a.rawConn.Load(); b != nil {
		b.c.Close()
	}
}

// dialer is discordgo's websocket dialer, keeping the raw connection so
// open can abort a stuck handshake.
func (a *Adapter) dialer() *websocket.Dialer {
	var d net.Dialer
	return &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: openTimeout,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			a.rawConn.Store(&connBox{c: c})
			return c, nil
		},
	}
}

// onGatewayEvent runs on discordgo's reading goroutine (SyncEvents) for
// every dispatch: it records traffic and queues what the adapter handles,
// keeping order. It blocks when the queue is full (back-pressure on the
// socket) until Start ends.
func (a *Adapter) onGatewayEvent(_ *discordgo.Session, e *discordgo.Event) {
	a.lastTraffic.Store(a.now().UnixNano())
	switch e.Type {
	case "READY", "RESUMED", "MESSAGE_CREATE":
		select {
		case a.events <- gwEvent{typ: e.Type, raw: e.RawData}:
		case <-a.stop:
		}
	case "INTERACTION_CREATE":
		var i interaction
		if err := json.Unmarshal(e.RawData, &i); err != nil {
			a.log.Warn("discord interaction ignored", "err", err)
			return
		}
		select {
		case a.interactions <- i:
		case <-a.stop:
		}
	case "THREAD_CREATE", "THREAD_UPDATE", "CHANNEL_CREATE", "CHANNEL_UPDATE":
		var ch channelInfo
		if json.Unmarshal(e.RawData, &ch) == nil && ch.ID != "" {
			a.chans.put(ch)
		}
	case "THREAD_DELETE", "CHANNEL_DELETE":
		var ch channelInfo
		if json.Unmarshal(e.RawData, &ch) == nil {
			a.chans.drop(ch.ID)
		}
	}
}

func (a *Adapter) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	select {
	case a.disconnected <- struct{}{}:
	default:
	}
}

// watch judges the connection's liveness: when neither a heartbeat ack nor
// an event arrived for StaleAfter, the connection is a zombie (Discord
// stopped answering without closing it) and is closed, so connect reopens
// it and resumes. discordgo alone waits five heartbeat intervals.
func (a *Adapter) watch(ctx context.Context) {
	every := min(max(a.opts.StaleAfter/4, 10*time.Millisecond), 5*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !a.connected.Load() {
			continue
		}
		a.sess.RLock()
		alive := a.sess.LastHeartbeatAck
		a.sess.RUnlock()
		if t := time.Unix(0, a.lastTraffic.Load()); t.After(alive) {
			alive = t
		}
		if silent := a.now().Sub(alive); silent > a.opts.StaleAfter {
			a.log.Warn("discord gateway silent (no heartbeat ack, no events); reconnecting", "silent", silent.Round(time.Millisecond))
			a.connected.Store(false)
			if err := a.sess.Close(); err != nil {
				a.log.Debug("discord close", "err", err)
			}
		}
	}
}

// outage logs a connection outage once when it starts and once when it
// ends, not on every failed attempt.
type outage struct {
	since    time.Time
	attempts int
}

func (o *outage) fail(a *Adapter, err error) {
	if o.attempts == 0 {
		o.since = a.now()
		a.log.Warn("discord gateway connection failed; retrying with backoff until it recovers", "err", err)
	} else {
		a.log.Debug("discord gateway still failing", "attempt", o.attempts+1, "err", err)
	}
	o.attempts++
}

func (o *outage) recovered(a *Adapter) {
	if o.attempts > 0 {
		a.log.Info("discord gateway recovered", "after", a.now().Sub(o.since).Round(time.Millisecond), "attempts", o.attempts)
	}
	o.attempts = 0
}

package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/headless"
	"github.com/switchboard-gw/switchboard/gateway"
)

// localUser is the person at the terminal or editor: one identity,
// local:<OS user name>, an admin of the local hosts.
func localUser() channels.User {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = "user"
	}
	name = strings.Map(func(r rune) rune {
		if r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, name)
	return channels.User{ID: name, Name: name}
}

// localSession is one local host process (run, chat, acp) on one
// conversation: its own location local:<host>:<conversation>:<session>, a
// presence lease on that location while the process lives (so another
// process can tell a live session's items from a dead one's), and the
// gateway options that make the process work only its own conversation.
type localSession struct {
	loc      channels.Location
	conv     string
	leases   agentcore.Leases
	tasks    agentcore.Tasks
	bindings gateway.Bindings
	owner    string
	stop     context.CancelFunc
	wg       sync.WaitGroup
	leaseTTL time.Duration

	mu      sync.Mutex
	known   map[string]bool // conversation → is it this session's (its own or a task's child under it)
	closing bool            // the session is over: its own conversation takes no new turns
}

// finish stops new turns of the session's conversation (what its tasks
// queue for it waits for the next session); the tasks' children may still
// end.
func (s *localSession) finish() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
}

func presenceKey(loc string) string { return "host:" + loc }

// newLocalSession binds a fresh session location of host to the
// conversation and holds its presence lease until Close.
func (a *app) newLocalSession(ctx context.Context, host, agentID, convID string) (*localSession, error) {
	s := &localSession{
		loc:      channels.Location{Channel: headless.Name, Account: host, ChatID: convID, ThreadID: rand.Text()[:10]},
		conv:     convID,
		leases:   a.store,
		tasks:    a.store,
		known:    map[string]bool{},
		bindings: a.store,
		owner:    a.owner,
		leaseTTL: 10 * time.Second,
	}
	if err := a.store.Bind(ctx, gateway.Binding{Location: s.loc.String(), AgentID: agentID, ConversationID: convID}); err != nil {
		return nil, fmt.Errorf("bind the session: %w", err)
	}
	if _, err := s.leases.AcquireLease(ctx, presenceKey(s.loc.String()), s.owner, s.leaseTTL); err != nil {
		return nil, fmt.Errorf("hold the session: %w", err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(s.leaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
				_, _ = s.leases.RenewLease(rctx, presenceKey(s.loc.String()), s.owner, s.leaseTTL)
			}
		}
	}()
	return s, nil
}

// Close releases the presence lease.
func (s *localSession) Close() {
	s.stop()
	s.wg.Wait()
	_ = s.leases.ReleaseLease(context.Background(), presenceKey(s.loc.String()), s.owner)
}

// works reports whether the process works the conversation: the one it
// started with, or the one its location is bound to now (after /new), and
// the child conversations of the tasks those started (and of theirs),
// whose items carry this session's location.
func (s *localSession) works(conv string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.Lock()
	closing := s.closing
	v, known := s.known[conv]
	s.mu.Unlock()
	bound := ""
	if b, err := s.bindings.Binding(ctx, s.loc.String()); err == nil {
		bound = b.ConversationID
	}
	if conv == s.conv || conv == bound {
		return !closing
	}
	if known {
		return v
	}
	// A conversation's task is written before any item of it exists, so
	// the answer never changes and may be kept.
	c := conv
	for range agentcore.MaxTaskDepth + 1 {
		t, err := s.tasks.TaskOfConversation(ctx, c)
		if err != nil {
			break
		}
		if t.ParentConversationID == s.conv || t.ParentConversationID == bound {
			v = true
			break
		}
		c = t.ParentConversationID
	}
	s.mu.Lock()
	s.known[conv] = v
	s.mu.Unlock()
	return v
}

// claim takes this session's items and adopts those a local session of the
// same conversation left behind when its process died (its presence lease
// expired); an item of a live session stays with it.
func (s *localSession) claim(ctx context.Context, it gateway.Item) bool {
	if it.Location == s.loc.String() {
		return true
	}
	other, err := channels.ParseLocation(it.Location)
	if err != nil || other.Channel != headless.Name || other.ChatID != s.conv {
		return false
	}
	ok, err := s.leases.AcquireLease(ctx, presenceKey(it.Location), s.owner, s.leaseTTL)
	if err != nil || !ok {
		return false
	}
	return true
}

// localWork says which conversations and queue items a local host
// process works: one session's (run, chat) or several (acp).
type localWork interface {
	works(conv string) bool
	claim(ctx context.Context, it gateway.Item) bool
}

// localSessions are the sessions of a process that has several (acp, one
// per editor session): it works all their conversations.
type localSessions struct {
	mu     sync.Mutex
	byConv map[string]*localSession
}

func newLocalSessions() *localSessions { return &localSessions{byConv: map[string]*localSession{}} }

// add starts working s's conversation; a session of the same
// conversation it replaces is returned for the caller to close.
func (l *localSessions) add(s *localSession) *localSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.byConv[s.conv]
	l.byConv[s.conv] = s
	return old
}

// remove stops working a conversation and returns its session.
func (l *localSessions) remove(conv string) *localSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.byConv[conv]
	delete(l.byConv, conv)
	return s
}

// all returns every session.
func (l *localSessions) all() []*localSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*localSession
	for _, s := range l.byConv {
		out = append(out, s)
	}
	return out
}

func (l *localSessions) works(conv string) bool { return l.sessionOf(conv) != nil }

func (l *localSessions) claim(ctx context.Context, it gateway.Item) bool {
	s := l.sessionOf(it.ConversationID)
	return s != nil && s.claim(ctx, it)
}

// sessionOf is the session that works a conversation: its own, or the
// one whose tasks' child it is.
func (l *localSessions) sessionOf(conv string) *localSession {
	l.mu.Lock()
	s := l.byConv[conv]
	var all []*localSession
	if s == nil {
		for _, o := range l.byConv {
			all = append(all, o)
		}
	}
	l.mu.Unlock()
	if s != nil {
		return s
	}
	for _, o := range all {
		if o.works(conv) {
			return o
		}
	}
	return nil
}

// localGateway builds the gateway of a local host: one agent, the local
// channel (the person is an admin), the conversations w works only.
func (a *app) localGateway(ag *agentcore.Agent, w localWork, ad channels.Adapter, denyAsks string) (*gateway.Gateway, error) {
	return gateway.New(a.localGatewayOptions(ag, w, denyAsks), ad)
}

// localGatewayOptions are localGateway's options, for hosts that add to
// them.
func (a *app) localGatewayOptions(ag *agentcore.Agent, w localWork, denyAsks string) gateway.Options {
	me := localUser()
	ac := a.cfg.Agents[ag.ID()]
	pc := a.cfg.Providers[ac.Provider]
	return gateway.Options{
		Store:        a.store,
		Agents:       map[string]*agentcore.Agent{ag.ID(): ag},
		AgentStore:   a.store,
		AgentOptions: map[string]gateway.AgentOptions{ag.ID(): {Approvers: ac.Approvers, ApprovalRoutes: nil, Vision: pc.Vision, MaxTasks: ac.MaxTasks}},
		Channels: map[string]gateway.ChannelOptions{headless.Name: {
			Agent: ag.ID(), AllowAll: true, Admins: []string{me.ID}, QueueMode: gateway.QueueFollowup,
			EditInterval: 100 * time.Millisecond, DenyAsks: denyAsks,
		}},
		ApprovalTimeout: a.cfg.Approvals.Timeout,
		Logger:          a.log,
		Conversations:   w.works,
		Claim:           w.claim,
		PollInterval:    200 * time.Millisecond,
	}
}

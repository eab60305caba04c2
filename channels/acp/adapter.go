package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchboard-gw/switchboard/channels"
)

// Name is the local channel (see headless.Name): the editor is a local
// host like `run` and `chat`.
const Name = "local"

// Host is what the process running the adapter does for it: conversations,
// locations and agents of sessions (cmd/switchboard implements it with the
// store and the configuration). Calls may come from several goroutines.
type Host interface {
	// NewSession starts a conversation of req.Agent ("" names the
	// default) working in req.Cwd, and binds a fresh location of this
	// process to it.
	NewSession(ctx context.Context, req SessionRequest) (SessionSpec, error)
	// OpenSession binds a fresh location of this process to the existing
	// conversation req.ConversationID, working in req.Cwd (session/load and
	// session/resume). It fails when the conversation does not exist.
	OpenSession(ctx context.Context, req SessionRequest) (SessionSpec, error)
	// CloseSession releases what NewSession or OpenSession took.
	CloseSession(ctx context.Context, conversationID string)
	// Settings are the current durable settings of the conversation's
	// agent (after /mode and /model).
	Settings(ctx context.Context, conversationID string) (Settings, error)
	// Workspace is the directory a conversation works in, for session
	// lists; fromEditor says it was chosen in an editor (else it is the
	// agent's configured workspace: a conversation of a chat).
	Workspace(ctx context.Context, conversationID string) (dir string, fromEditor bool)
}

// SessionRequest asks the Host for a session.
type SessionRequest struct {
	Agent          string // NewSession: the agent; "" for the default
	ConversationID string // OpenSession: the conversation to continue
	Cwd            string // the editor's directory: the session's workspace
}

// SessionSpec is a session the Host made.
type SessionSpec struct {
	ConversationID string
	Agent          string
	Location       channels.Location // local:acp:<conversation>:<random>
	Workspace      string
	Settings       Settings
}

// Settings are an agent's run-time settings as a session offers them.
type Settings struct {
	Mode   string   // permission mode: standard, acceptEdits, unrestricted, strict
	Model  string   // the model in use
	Models []string // models to offer (the configured ones); may be empty
}

// Options configure an Adapter.
type Options struct {
	In  io.Reader // the client's messages (stdin)
	Out io.Writer // protocol bytes only (stdout)
	// User is the person in the editor (the local identity); Admin says
	// they are an admin, so "Allow always" is offered when a card has a
	// rule.
	User  channels.User
	Admin bool
	Host  Host
	// Vision says whether the default agent's model accepts images
	// (initialize advertises image prompts).
	Vision  bool
	Version string // switchboard's version, for agentInfo
	Logger  *slog.Logger
}

// Adapter is the ACP surface. It implements channels.Adapter,
// channels.LiveSurface, channels.CommandRegistrar and channels.ClientTools.
type Adapter struct {
	o    Options
	log  *slog.Logger
	done chan struct{}
	once sync.Once
	next atomic.Int64

	mu       sync.Mutex
	h        channels.Handler
	sessions map[string]*session // by conversation id (= ACP session id)
	commands []channels.Command
	ctx      context.Context // the running Start's; sessions' pumps live as long
	wg       sync.WaitGroup  // session pumps
}

// New returns an Adapter.
func New(o Options) (*Adapter, error) {
	if o.In == nil || o.Out == nil || o.Host == nil {
		return nil, errors.New("acp: In, Out and Host are required")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Adapter{o: o, log: log, done: make(chan struct{}), sessions: map[string]*session{}}, nil
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements channels.Adapter: everything arrives live as
// typed parts; asks are permission requests, so the gateway's cards (with
// buttons) are not shown as text.
func (a *Adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: true, Buttons: true, RichParts: true, Dialect: channels.Plain}
}

// Done is closed when the editor closed the connection.
func (a *Adapter) Done() <-chan struct{} { return a.done }

// Start implements channels.Adapter: it serves the protocol on In/Out
// until ctx ends.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	a.mu.Lock()
	a.h, a.ctx = h, ctx
	a.mu.Unlock()
	conn := serveV1(a, a.o.Out, a.o.In)
	select {
	case <-conn:
		a.once.Do(func() { close(a.done) })
		<-ctx.Done()
	case <-ctx.Done():
	}
	a.mu.Lock()
	var all []*session
	for _, s := range a.sessions {
		all = append(all, s)
	}
	a.sessions = map[string]*session{}
	a.mu.Unlock()
	for _, s := range all {
		s.close()
		a.o.Host.CloseSession(context.WithoutCancel(ctx), s.spec.ConversationID)
	}
	a.wg.Wait()
	return nil
}

// handler is the gateway's handler once Start runs.
func (a *Adapter) handler() (channels.Handler, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.h == nil {
		return nil, errors.New("the gateway is not running yet")
	}
	return a.h, nil
}

// session returns the session with the given id (a conversation id).
func (a *Adapter) session(id string) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return nil, fmt.Errorf("unknown session %s: create it with session/new or reopen it with session/load", id)
	}
	return s, nil
}

// sessionAt returns the session of a location of this process.
func (a *Adapter) sessionAt(loc channels.Location) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[loc.ChatID]
	if !ok || s.spec.Location != loc {
		return nil
	}
	return s
}

// startSession registers a session made by the Host and starts its pump.
// A session the process already had for the conversation is closed first.
func (a *Adapter) startSession(spec SessionSpec, p peer, client channels.ClientAbilities) *session {
	h, _ := a.handler()
	a.mu.Lock()
	ctx := a.ctx
	old := a.sessions[spec.ConversationID]
	s := newSession(a, h, spec, p, client)
	a.sessions[spec.ConversationID] = s
	a.wg.Add(1)
	a.mu.Unlock()
	if old != nil {
		old.close()
	}
	go func() {
		defer a.wg.Done()
		s.run(ctx)
	}()
	return s
}

// newSession starts a new conversation (session/new).
func (a *Adapter) newSession(ctx context.Context, req SessionRequest, mk func(SessionSpec) peer, client channels.ClientAbilities) (*session, error) {
	if _, err := a.handler(); err != nil {
		return nil, err
	}
	spec, err := a.o.Host.NewSession(ctx, req)
	if err != nil {
		return nil, err
	}
	return a.startSession(spec, mk(spec), client), nil
}

// openSession continues a conversation (session/load, session/resume);
// with replay, its history is shown first, before live events.
func (a *Adapter) openSession(ctx context.Context, req SessionRequest, mk func(SessionSpec) peer, client channels.ClientAbilities, replay bool) (*session, error) {
	h, err := a.handler()
	if err != nil {
		return nil, err
	}
	a.closeSession(ctx, req.ConversationID)
	spec, err := a.o.Host.OpenSession(ctx, req)
	if err != nil {
		return nil, err
	}
	p := mk(spec)
	if replay {
		hh, ok := h.(channels.HistoryHandler)
		if !ok {
			a.o.Host.CloseSession(ctx, spec.ConversationID)
			return nil, errors.New("this gateway cannot read history")
		}
		items, err := hh.History(ctx, spec.Location)
		if err != nil {
			a.o.Host.CloseSession(ctx, spec.ConversationID)
			return nil, fmt.Errorf("read the history of %s: %w", spec.ConversationID, err)
		}
		for _, it := range items {
			p.replay(ctx, it)
		}
	}
	return a.startSession(spec, p, client), nil
}

// closeSession ends a session of this process (session/close, or before
// the conversation is reopened).
func (a *Adapter) closeSession(ctx context.Context, id string) bool {
	a.mu.Lock()
	s, ok := a.sessions[id]
	delete(a.sessions, id)
	a.mu.Unlock()
	if !ok {
		return false
	}
	s.close()
	a.o.Host.CloseSession(ctx, id)
	return true
}

// listed is one conversation as session/list shows it.
type listed struct {
	channels.ConversationInfo
	Workspace string
}

// listSessions returns the conversations the person may see (those of
// chat threads too), most recent first; with cwd, those opened in an
// editor in another directory are left out.
func (a *Adapter) listSessions(ctx context.Context, cwd string) ([]listed, error) {
	h, err := a.handler()
	if err != nil {
		return nil, err
	}
	hh, ok := h.(channels.HistoryHandler)
	if !ok {
		return nil, errors.New("this gateway cannot list conversations")
	}
	convs, err := hh.Conversations(ctx, channels.QualifiedID(Name, a.o.User.ID))
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	var out []listed
	for _, c := range convs {
		ws, fromEditor := a.o.Host.Workspace(ctx, c.ID)
		if cwd != "" && fromEditor && ws != cwd {
			continue
		}
		out = append(out, listed{c, ws})
	}
	return out, nil
}

// Send implements channels.Adapter. A turn's content arrived live; a
// command's reply goes to whoever waits for it; other messages (notices)
// are shown as agent text.
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	ref := channels.MessageRef{Location: loc, ID: "a" + strconv.FormatInt(a.next.Add(1), 10)}
	s := a.sessionAt(loc)
	if s == nil {
		return ref, nil // a session that ended: nobody to show it to
	}
	text := strings.TrimSpace(strings.Join(channels.RenderMessage(m, a.Capabilities()), "\n"))
	switch {
	case s.reply(m.ReplyTo, text):
	case m.Turn != "":
	case len(m.ButtonRows()) > 0:
		// An approval card: asked as a permission request instead.
	case text != "":
		s.notice(text)
	}
	return ref, nil
}

// Edit implements channels.Adapter: decisions and outcomes arrive live.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	return nil
}

// Live implements channels.LiveSurface: the event goes to the session of
// its conversation (also a turn of another local location of it that this
// process adopted), whose pump turns it into updates.
func (a *Adapter) Live(ctx context.Context, ev channels.LiveEvent) {
	a.mu.Lock()
	s := a.sessions[ev.ConversationID]
	a.mu.Unlock()
	if s != nil {
		s.enqueue(item{ev: ev})
	}
}

// RegisterCommands implements channels.CommandRegistrar: the gateway's
// command table, offered to editors as slash commands.
func (a *Adapter) RegisterCommands(ctx context.Context, cmds []channels.Command) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.commands = append([]channels.Command(nil), cmds...)
	return nil
}

// commandTable returns the registered commands that make sense in an
// editor (/new would move the session to another conversation).
func (a *Adapter) commandTable() []channels.Command {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []channels.Command
	for _, c := range a.commands {
		if c.Name == "new" || c.Name == "pair" {
			continue
		}
		out = append(out, c)
	}
	return out
}

// ClientAbilities implements channels.ClientTools: what the editor of the
// session at loc offers (from initialize).
func (a *Adapter) ClientAbilities(loc channels.Location) channels.ClientAbilities {
	if s := a.sessionAt(loc); s != nil {
		return s.client
	}
	return channels.ClientAbilities{}
}

func (a *Adapter) clientOf(loc channels.Location, ok func(channels.ClientAbilities) bool) (*session, error) {
	s := a.sessionAt(loc)
	if s == nil || !ok(s.client) {
		return nil, fmt.Errorf("no editor offers this at %s", loc)
	}
	return s, nil
}

// ReadTextFile implements channels.ClientTools (fs/read_text_file).
func (a *Adapter) ReadTextFile(ctx context.Context, loc channels.Location, path string) (string, error) {
	s, err := a.clientOf(loc, func(c channels.ClientAbilities) bool { return c.ReadFiles })
	if err != nil {
		return "", err
	}
	return s.peer.readFile(ctx, path)
}

// WriteTextFile implements channels.ClientTools (fs/write_text_file).
func (a *Adapter) WriteTextFile(ctx context.Context, loc channels.Location, path, content string) error {
	s, err := a.clientOf(loc, func(c channels.ClientAbilities) bool { return c.WriteFiles })
	if err != nil {
		return err
	}
	return s.peer.writeFile(ctx, path, content)
}

// RunCommand implements channels.ClientTools (terminal/*).
func (a *Adapter) RunCommand(ctx context.Context, loc channels.Location, c channels.ClientCommand) (channels.ClientCommandResult, error) {
	s, err := a.clientOf(loc, func(c channels.ClientAbilities) bool { return c.Terminal })
	if err != nil {
		return channels.ClientCommandResult{}, err
	}
	return s.peer.runCommand(ctx, c)
}

package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// peer is one session's side of the protocol: a protocol revision's
// mapping (v1.go) implements it. Calls come from the session's pump (live)
// or from the request being served (ask, replay, commands).
type peer interface {
	// live shows one event of a turn of the session's conversation, or a
	// notice (Kind kindNotice, Text).
	live(ctx context.Context, ev channels.LiveEvent)
	// ask shows an approval card and returns the person's choice
	// (channels.DecideAllow, DecideAlways, DecideDeny), or "" when they
	// dismissed it (the prompt is being cancelled). always says whether
	// "Allow always" may be offered.
	ask(ctx context.Context, card channels.ApprovalCard, always bool) (string, error)
	// replay shows one past message of the conversation (session/load).
	replay(ctx context.Context, it channels.HistoryItem)
	// commands offers the slash commands.
	commands(ctx context.Context, cmds []channels.Command)
	// The client's own tools (channels.ClientTools), when it offers them.
	readFile(ctx context.Context, path string) (string, error)
	writeFile(ctx context.Context, path, content string) error
	runCommand(ctx context.Context, c channels.ClientCommand) (channels.ClientCommandResult, error)
}

// kindNotice is a live-event kind of this package: a message from the
// gateway outside a turn (a notice), shown as agent text.
const kindNotice channels.LiveKind = "acp_notice"

// permission modes a session offers (the gateway's /mode checks them).
var modes = []struct{ id, name, desc string }{
	{"standard", "Standard", "Ask before edits, commands and reads outside the workspace"},
	{"acceptEdits", "Accept edits", "Edits inside the workspace run without asking"},
	{"unrestricted", "Unrestricted", "Everything runs without asking, except always-ask and deny rules"},
	{"strict", "Strict", "Ask for everything that is not allowed by a rule"},
}

func knownMode(m string) bool {
	return slices.ContainsFunc(modes, func(x struct{ id, name, desc string }) bool { return x.id == m })
}

// item is one entry of a session's pump queue.
type item struct {
	ev    channels.LiveEvent
	flush chan struct{} // closed when everything before it was shown
}

// mark is a turn boundary of the session's own location, for the prompt
// that waits on it.
type mark struct {
	start bool
	end   channels.LiveEvent      // turn_end: StopReason, Usage, Error
	cards []channels.ApprovalCard // asks the ended turn waits on
}

// session is one ACP session: one conversation, at one location of this
// process.
type session struct {
	a      *Adapter
	h      channels.Handler
	spec   SessionSpec
	peer   peer
	client channels.ClientAbilities

	mu      sync.Mutex
	queue   []item
	marks   []mark
	replies map[string]chan string // command replies awaited, by message id (nil: dropped)
	closed  bool
	offered bool // slash commands were offered

	wake      chan struct{} // the pump has work
	markc     chan struct{} // a mark arrived
	quit      chan struct{}
	prompting sync.Mutex // one prompt at a time
}

func newSession(a *Adapter, h channels.Handler, spec SessionSpec, p peer, client channels.ClientAbilities) *session {
	return &session{a: a, h: h, spec: spec, peer: p, client: client, replies: map[string]chan string{},
		wake: make(chan struct{}, 1), markc: make(chan struct{}, 1), quit: make(chan struct{})}
}

// close stops the pump (what is queued is dropped).
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
}

func (s *session) enqueue(it item) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if it.flush != nil {
			close(it.flush)
		}
		return
	}
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	signal(s.wake)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// notice shows a message of the gateway (outside a turn) as agent text.
func (s *session) notice(text string) {
	s.enqueue(item{ev: channels.LiveEvent{Kind: kindNotice, Location: s.spec.Location, ConversationID: s.spec.ConversationID, Text: text}})
}

// flush waits until everything queued so far was shown.
func (s *session) flush(ctx context.Context) {
	done := make(chan struct{})
	s.enqueue(item{flush: done})
	select {
	case <-done:
	case <-ctx.Done():
	case <-s.quit:
	}
}

// run is the pump: it shows queued events in order and tells a waiting
// prompt about the turn boundaries of the session's own location, after
// everything before them was shown.
func (s *session) run(ctx context.Context) {
	var cards []channels.ApprovalCard
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, it := range batch {
			if it.flush != nil {
				close(it.flush)
				continue
			}
			ev := it.ev
			s.peer.live(ctx, ev)
			if ev.Location != s.spec.Location {
				continue
			}
			switch ev.Kind {
			case channels.LiveApproval:
				if ev.Approval != nil {
					cards = append(cards, *ev.Approval)
				}
			case channels.LiveTurnStart:
				cards = nil
				s.pushMark(mark{start: true})
			case channels.LiveTurnEnd:
				s.pushMark(mark{end: ev, cards: cards})
				cards = nil
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-s.quit:
			s.mu.Lock()
			rest := s.queue
			s.queue = nil
			s.mu.Unlock()
			for _, it := range rest {
				if it.flush != nil {
					close(it.flush)
				}
			}
			return
		case <-ctx.Done():
			return
		}
	}
}

func (s *session) pushMark(m mark) {
	s.mu.Lock()
	s.marks = append(s.marks, m)
	s.mu.Unlock()
	signal(s.markc)
}

// popMark takes the oldest mark.
func (s *session) popMark() (mark, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.marks) == 0 {
		return mark{}, false
	}
	m := s.marks[0]
	s.marks = s.marks[1:]
	return m, true
}

// startPending reports whether a turn started that the prompt has not
// seen yet (a decision made elsewhere resumed the turn).
func (s *session) startPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.marks, func(m mark) bool { return m.start })
}

// dropMarks forgets turn boundaries nobody waited for (a turn resumed by
// a decision elsewhere between prompts).
func (s *session) dropMarks() {
	s.mu.Lock()
	s.marks = nil
	s.mu.Unlock()
	select {
	case <-s.markc:
	default:
	}
}

// reply hands a command's reply to whoever waits for it; false when
// nobody does.
func (s *session) reply(messageID, text string) bool {
	if messageID == "" {
		return false
	}
	s.mu.Lock()
	ch, ok := s.replies[messageID]
	delete(s.replies, messageID)
	s.mu.Unlock()
	if ok && ch != nil {
		ch <- text
	}
	return ok
}

// newID is a fresh platform event id of the session.
func (s *session) newID() string {
	return s.spec.Location.ThreadID + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(s.a.next.Add(1), 10)
}

// deliver hands one message of the person to the gateway; with reply, the
// gateway's answer to it (a command's) is sent there.
func (s *session) deliver(ctx context.Context, text string, atts []channels.Attachment, reply chan string) error {
	id := s.newID()
	s.mu.Lock()
	if channels.CommandName(text) != "" {
		s.replies[id] = reply // nil: a reply nobody reads is dropped
	}
	s.mu.Unlock()
	in := channels.Inbound{EventID: id, MessageID: id, Location: s.spec.Location, User: s.a.o.User, Text: text,
		Attachments: atts, DirectMessage: true, Mentioned: true, At: time.Now()}
	if err := s.h.OnInbound(ctx, in); err != nil {
		s.mu.Lock()
		delete(s.replies, id)
		s.mu.Unlock()
		return fmt.Errorf("queue the message: %w", err)
	}
	return nil
}

// command runs a /command and returns the gateway's reply.
func (s *session) command(ctx context.Context, text string) (string, error) {
	reply := make(chan string, 1)
	if err := s.deliver(ctx, text, nil, reply); err != nil {
		return "", err
	}
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-s.quit:
		return "", errors.New("the session was closed")
	}
}

// stop stops the running turn of the conversation (the gateway's /stop,
// an immediate command).
func (s *session) stop() {
	_ = s.deliver(context.WithoutCancel(s.a.ctxOrBackground()), "/stop", nil, nil)
}

// promptResult is how a prompt ended.
type promptResult struct {
	Stop  string // a turn stop reason (end_turn, cancelled, max_tokens, max_steps, error, …)
	Usage channels.Usage
	Error string // for StopError: what went wrong, for people
}

// cancelGrace bounds how long a cancelled prompt waits for its turn to
// end before it answers cancelled anyway.
const cancelGrace = 10 * time.Second

// prompt runs one prompt: the message goes to the gateway's queue, and the
// prompt ends with the turn — after its asks were answered here or
// elsewhere and the turn resumed and ended. Cancelling ctx (session/cancel)
// stops the turn; the session stays usable.
func (s *session) prompt(ctx context.Context, text string, atts []channels.Attachment) (promptResult, error) {
	s.prompting.Lock()
	defer s.prompting.Unlock()
	s.offerCommands(ctx)
	if channels.CommandName(text) != "" && len(atts) == 0 {
		return s.promptCommand(ctx, text)
	}
	if strings.TrimSpace(text) == "" && len(atts) == 0 {
		return promptResult{Stop: "end_turn"}, nil
	}
	s.dropMarks()
	if err := s.deliver(ctx, text, atts, nil); err != nil {
		return promptResult{}, err
	}
	var res promptResult
	cancelled := false
	var grace <-chan time.Time
	done := ctx.Done()
	for {
		for m, ok := s.popMark(); ok; m, ok = s.popMark() {
			if m.start {
				if cancelled {
					s.stop() // it started after the first /stop
				}
				continue
			}
			res.Usage.InputTokens += m.end.Usage.InputTokens
			res.Usage.OutputTokens += m.end.Usage.OutputTokens
			res.Usage.CachedTokens += m.end.Usage.CachedTokens
			if cancelled {
				res.Stop = "cancelled"
				return res, nil
			}
			if m.end.StopReason != "requires_approval" {
				res.Stop, res.Error = m.end.StopReason, m.end.Error
				return res, nil
			}
			if !s.askAll(ctx, m.cards) {
				res.Stop = "cancelled"
				return res, nil
			}
		}
		select {
		case <-done:
			done, cancelled = nil, true
			s.stop()
			t := time.NewTimer(cancelGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			res.Stop = "cancelled"
			return res, nil
		case <-s.markc:
		case <-s.quit:
			return res, errors.New("the session was closed")
		}
	}
}

// promptCommand runs a prompt that is a /command: its reply is the
// answer.
func (s *session) promptCommand(ctx context.Context, text string) (promptResult, error) {
	switch channels.CommandName(text) {
	case "new", "reset":
		s.notice("In an editor a new conversation is a new session: start one from the editor's agent panel.")
		s.flush(ctx)
		return promptResult{Stop: "end_turn"}, nil
	}
	reply, err := s.command(ctx, text)
	if err != nil {
		if ctx.Err() != nil {
			return promptResult{Stop: "cancelled"}, nil
		}
		return promptResult{}, err
	}
	if reply != "" {
		s.notice(reply)
	}
	s.flush(ctx)
	return promptResult{Stop: "end_turn"}, nil
}

// offerCommands offers the slash commands once, at the session's first
// prompt (after the client knows the session).
func (s *session) offerCommands(ctx context.Context) {
	cmds := s.a.commandTable()
	if len(cmds) == 0 {
		return // not registered yet: offered at a later prompt
	}
	s.mu.Lock()
	offered := s.offered
	s.offered = true
	s.mu.Unlock()
	if !offered {
		s.peer.commands(ctx, cmds)
	}
}

// errElsewhere: the ask was decided elsewhere (the turn resumed).
var errElsewhere = errors.New("decided elsewhere")

// askAll asks the person about each card of a parked turn and decides
// through the one decide path. It returns false when the prompt was
// cancelled meanwhile; true when the prompt should wait for the turn to
// resume (here, or after a decision elsewhere).
func (s *session) askAll(ctx context.Context, cards []channels.ApprovalCard) bool {
	d, ok := s.h.(channels.Decider)
	if !ok || len(cards) == 0 {
		s.notice("The agent waits for an approval; answer it where it was posted (the web page, a chat), or send /approve.")
		return true
	}
	for _, c := range cards {
		if s.startPending() {
			return true
		}
		action, err := s.askOne(ctx, c)
		switch {
		case errors.Is(err, errElsewhere):
			return true
		case ctx.Err() != nil:
			return false
		case err != nil:
			s.a.log.Warn("permission request failed", "session", s.spec.ConversationID, "approval", c.ID, "err", err)
			s.notice("Could not ask for permission here (" + err.Error() + "); answer approval " + c.ID + " elsewhere, or send /approve " + c.ID + ".")
			return true
		case action == "":
			return false
		}
		rep, err := d.Decide(ctx, channels.Decision{ApprovalID: c.ID, Action: action, User: s.a.o.User, Location: s.spec.Location})
		switch {
		case err != nil:
			s.notice("Could not record the decision (" + err.Error() + "); try /approve " + c.ID + ".")
		case rep.Refused:
			s.notice(rep.Text)
		}
	}
	return true
}

// askOne asks about one card; a turn that resumes meanwhile (decided on
// the web page or a phone) withdraws the request.
func (s *session) askOne(ctx context.Context, c channels.ApprovalCard) (string, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		action string
		err    error
	}
	ch := make(chan answer, 1)
	go func() {
		action, err := s.peer.ask(actx, c, c.Rule != "" && s.a.o.Admin)
		ch <- answer{action, err}
	}()
	for {
		select {
		case ans := <-ch:
			return ans.action, ans.err
		case <-s.markc:
			if s.startPending() {
				cancel()
				<-ch
				return "", errElsewhere
			}
		case <-ctx.Done():
			cancel()
			<-ch
			return "", ctx.Err()
		}
	}
}

// setMode switches the agent's permission mode (the gateway's /mode:
// durable, for every conversation of the agent from its next turn).
func (s *session) setMode(ctx context.Context, mode string) (Settings, error) {
	if !knownMode(mode) {
		return Settings{}, fmt.Errorf("unknown mode %q: choose standard, acceptEdits, unrestricted or strict", mode)
	}
	return s.reconfigure(ctx, "/mode "+mode, func(st Settings) bool { return st.Mode == mode })
}

// setModel switches the agent's model (the gateway's /model).
func (s *session) setModel(ctx context.Context, model string) (Settings, error) {
	if model == "" || strings.ContainsAny(model, " \t\r\n") {
		return Settings{}, fmt.Errorf("model name %q: give one word", model)
	}
	return s.reconfigure(ctx, "/model "+model, func(st Settings) bool { return st.Model == model })
}

func (s *session) reconfigure(ctx context.Context, cmd string, took func(Settings) bool) (Settings, error) {
	reply, err := s.command(ctx, cmd)
	if err != nil {
		return Settings{}, err
	}
	st, err := s.a.o.Host.Settings(ctx, s.spec.ConversationID)
	if err != nil {
		return Settings{}, err
	}
	if !took(st) {
		return st, errors.New(reply)
	}
	return st, nil
}

// ctxOrBackground is the running Start's context (sessions exist only
// while it runs).
func (a *Adapter) ctxOrBackground() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx == nil {
		return context.Background()
	}
	return a.ctx
}

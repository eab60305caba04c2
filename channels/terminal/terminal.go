// Package terminal is the surface of `switchboard chat`: a conversation in
// the terminal. Like every surface it hands what the person types to the
// gateway (messages and /commands alike) and shows the turn's typed events
// as they come (channels.LiveSurface): the answer rendered as plain text
// (no raw Markdown markers), one line per tool call with its outcome, the
// plan as a checklist. An ask is a prompt — [y]es, [a]lways (showing the rule
// it stores), [n]o with a reason — decided through the gateway's one decide
// path (channels.Decider).
//
// Concurrency: Start runs the session (it owns the input); Live, Send and
// Edit may be called from the gateway's goroutines meanwhile. Output is
// serialized. Done is closed when the person quits.
package terminal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// Name is the local channel (see headless.Name).
const Name = "local"

// Options configure an Adapter.
type Options struct {
	In       io.Reader
	Out      io.Writer
	Location channels.Location // local:chat:<conversation>:<session>
	User     channels.User
	Banner   string
	// Interrupts delivers Ctrl-C: it stops the running turn, and quits at
	// the prompt.
	Interrupts <-chan struct{}
}

// Adapter is the terminal surface.
type Adapter struct {
	o    Options
	out  sync.Mutex // serializes writes to o.Out
	done chan struct{}

	mu      sync.Mutex
	replies map[string]chan string // command replies awaited, by message id
	ended   chan turnEnd           // turn ends, for the prompt loop
	cards   []channels.ApprovalCard
	tasks   map[string]string // sub-agent task → the status last shown
	midLine bool
	next    atomic.Int64
}

type turnEnd struct {
	stop  string
	cards []channels.ApprovalCard
}

// New returns an Adapter.
func New(o Options) *Adapter {
	return &Adapter{o: o, done: make(chan struct{}), replies: map[string]chan string{}, ended: make(chan turnEnd, 16), tasks: map[string]string{}}
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements channels.Adapter.
func (a *Adapter) Capabilities() channels.Capabilities {
	// Buttons: asks come as prompts, so the gateway's cards (with buttons)
	// are not printed.
	return channels.Capabilities{Edit: true, Buttons: true, Dialect: channels.Plain}
}

// Done is closed when the person quits.
func (a *Adapter) Done() <-chan struct{} { return a.done }

func (a *Adapter) printf(format string, args ...any) {
	a.out.Lock()
	defer a.out.Unlock()
	fmt.Fprintf(a.o.Out, format, args...)
}

// Send implements channels.Adapter: a command's reply goes to the prompt
// that waits for it; a turn's final message only adds its notices (the
// content was shown live).
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	ref := channels.MessageRef{Location: loc, ID: "t" + strconv.FormatInt(a.next.Add(1), 10)}
	text := strings.TrimSpace(strings.Join(channels.RenderMessage(m, a.Capabilities()), "\n"))
	a.mu.Lock()
	wait, isReply := a.replies[m.ReplyTo]
	if isReply {
		delete(a.replies, m.ReplyTo)
	}
	a.mu.Unlock()
	switch {
	case isReply:
		wait <- text
	case m.Turn != "":
		for _, p := range m.Parts {
			if n, ok := p.(channels.Notice); ok && strings.HasPrefix(n.Text, "⚠") {
				a.line(n.Text)
			}
		}
	case len(m.ButtonRows()) > 0:
		// An approval card: the prompt asks instead.
	default:
		if text != "" {
			a.line(text)
		}
	}
	return ref, nil
}

// Edit implements channels.Adapter: outcomes arrive live.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	return nil
}

// line prints s on its own line.
func (a *Adapter) line(s string) {
	a.out.Lock()
	defer a.out.Unlock()
	if a.midLine {
		fmt.Fprintln(a.o.Out)
		a.midLine = false
	}
	fmt.Fprintln(a.o.Out, s)
}

// Live implements channels.LiveSurface.
func (a *Adapter) Live(ctx context.Context, ev channels.LiveEvent) {
	switch ev.Kind {
	case channels.LiveMessage:
		if t := strings.TrimSpace(channels.Render(ev.Text, channels.Plain)); t != "" {
			a.line(t)
		}
	case channels.LiveTool:
		t := ev.Tool
		switch {
		case t.Status == channels.StatusRunning:
			a.line("⚙ " + channels.Render(t.Title, channels.Plain))
		case t.Status == channels.StatusPending:
		case t.Outcome == channels.OutcomeOK:
			a.line("  ↳ done")
		default:
			a.line("  ↳ " + statusWord(t) + firstLine(t.Output))
		}
	case channels.LivePlan:
		var b strings.Builder
		for _, it := range ev.Plan.Items {
			mark := "[ ]"
			switch it.Status {
			case channels.PlanCompleted:
				mark = "[x]"
			case channels.PlanInProgress:
				mark = "[~]"
			}
			fmt.Fprintf(&b, "  %s %s\n", mark, it.Content)
		}
		a.line(strings.TrimRight(b.String(), "\n"))
	case channels.LiveTask:
		a.taskLine(ev.Task)
	case channels.LiveApproval:
		if ev.Location != a.o.Location {
			return
		}
		if c := ev.Approval; c.Task != "" {
			// A sub-agent's ask comes while no turn of this session may
			// run: it is answered by typing, through the same decide path.
			a.line(fmt.Sprintf("🔐 sub-agent task %s wants to run: %s\n   type /approve %s or /deny %s [reason]", c.Task, c.Summary, c.ID, c.ID))
			return
		}
		a.mu.Lock()
		a.cards = append(a.cards, *ev.Approval)
		a.mu.Unlock()
	case channels.LiveTurnEnd:
		if ev.Location != a.o.Location {
			return // a turn of an earlier session this one adopted
		}
		if ev.Error != "" {
			a.line("⚠ " + ev.Error)
		}
		a.mu.Lock()
		cards := a.cards
		a.cards = nil
		a.mu.Unlock()
		a.ended <- turnEnd{stop: ev.StopReason, cards: cards}
	}
}

// taskLine prints a sub-agent task's status when it changes (one line per
// change, not one per step of the sub-agent).
func (a *Adapter) taskLine(t *channels.TaskActivity) {
	if t == nil {
		return
	}
	a.mu.Lock()
	same := a.tasks[t.ID] == t.Status
	a.tasks[t.ID] = t.Status
	a.mu.Unlock()
	if same {
		return
	}
	mark := map[string]string{"queued": "🕒", "running": "⏳", "waiting": "🔐", "done": "✅", "failed": "❌", "cancelled": "⏹"}[t.Status]
	text := fmt.Sprintf("%s sub-agent %s · task %s · %s — %s", mark, t.Type, t.ID, t.Status, t.Description)
	if t.Status == "done" || t.Status == "failed" || t.Status == "cancelled" {
		text += fmt.Sprintf(" (%s)", t.Duration.Round(time.Second))
	}
	a.line(text)
}

func statusWord(t *channels.ToolActivity) string {
	switch t.Outcome {
	case channels.OutcomeDeniedPolicy, channels.OutcomeDeniedPerson:
		return "denied: "
	case channels.OutcomeUnknown:
		return "interrupted: "
	}
	return "error: "
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return s
}

// errQuit ends the session.
var errQuit = errors.New("quit")

// Start implements channels.Adapter: the prompt loop. When the person
// quits, Done is closed and Start waits for ctx to end.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	select {
	case <-a.done:
		<-ctx.Done()
		return nil
	default:
	}
	a.session(ctx, h)
	close(a.done)
	<-ctx.Done()
	return nil
}

func (a *Adapter) session(ctx context.Context, h channels.Handler) {
	if a.o.Banner != "" {
		a.printf("%s\n", a.o.Banner)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		in := bufio.NewReader(a.o.In)
		for {
			line, err := in.ReadString('\n')
			if line != "" || err == nil {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	p := &prompter{a: a, ctx: ctx, lines: lines}
	for {
		a.printf("\n> ")
		line, err := p.read()
		if err != nil {
			a.printf("\n")
			return
		}
		line = strings.TrimSpace(line)
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return
		}
		if err := a.say(ctx, h, p, line); errors.Is(err, errQuit) {
			return
		} else if err != nil {
			a.line("⚠ " + err.Error())
		}
	}
}

// prompter reads lines; Ctrl-C at a prompt quits.
type prompter struct {
	a     *Adapter
	ctx   context.Context
	lines <-chan string
}

func (p *prompter) read() (string, error) {
	select {
	case l, ok := <-p.lines:
		if !ok {
			return "", io.EOF
		}
		return l, nil
	case <-p.a.o.Interrupts:
		return "", errQuit
	case <-p.ctx.Done():
		return "", p.ctx.Err()
	}
}

// say hands one line to the gateway and waits for its answer: a command's
// reply, or the end of the turn (answering its asks on the way).
func (a *Adapter) say(ctx context.Context, h channels.Handler, p *prompter, line string) error {
	id := a.o.Location.ThreadID + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(a.next.Add(1), 10)
	isCommand := channels.CommandName(line) != ""
	var reply chan string
	if isCommand {
		reply = make(chan string, 1)
		a.mu.Lock()
		a.replies[id] = reply
		a.mu.Unlock()
	}
	for drained := false; !drained; { // ends of turns nobody waited for (a resume decided elsewhere)
		select {
		case <-a.ended:
		default:
			drained = true
		}
	}
	in := channels.Inbound{EventID: id, MessageID: id, Location: a.o.Location, User: a.o.User, Text: line,
		DirectMessage: true, Mentioned: true, At: time.Now()}
	if err := h.OnInbound(ctx, in); err != nil {
		return err
	}
	if isCommand {
		select {
		case text := <-reply:
			a.line(text)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		end, err := a.waitTurn(ctx, h)
		if err != nil {
			return err
		}
		if end.stop != "requires_approval" || len(end.cards) == 0 {
			return nil
		}
		resumed := false
		for _, c := range end.cards {
			rep, err := a.ask(ctx, h, p, c)
			if err != nil {
				return err
			}
			resumed = resumed || rep.Resumed
		}
		if !resumed {
			return nil
		}
	}
}

// waitTurn waits for the running turn to end; Ctrl-C stops it.
func (a *Adapter) waitTurn(ctx context.Context, h channels.Handler) (turnEnd, error) {
	for {
		select {
		case end := <-a.ended:
			return end, nil
		case <-a.o.Interrupts:
			_ = h.OnInbound(ctx, channels.Inbound{EventID: a.o.Location.ThreadID + "-stop-" + strconv.FormatInt(a.next.Add(1), 10),
				Location: a.o.Location, User: a.o.User, Text: "/stop", DirectMessage: true, Mentioned: true, At: time.Now()})
		case <-ctx.Done():
			return turnEnd{}, ctx.Err()
		}
	}
}

// ask prompts for one approval and decides it.
func (a *Adapter) ask(ctx context.Context, h channels.Handler, p *prompter, c channels.ApprovalCard) (channels.DecisionReply, error) {
	d, ok := h.(channels.Decider)
	if !ok {
		return channels.DecisionReply{}, errors.New("approvals cannot be decided here")
	}
	a.line(fmt.Sprintf("\n⚠ the agent wants to run: %s\n  (%s)", c.Summary, c.Reason))
	if c.Diff != "" {
		a.line(c.Diff)
	}
	always := ""
	if c.Rule != "" {
		always = fmt.Sprintf(" / [a]lways (%s)", c.Rule)
	}
	for {
		a.printf("Allow? [y]es%s / [n]o: ", always)
		line, err := p.read()
		if err != nil {
			return channels.DecisionReply{}, errQuit
		}
		dec := channels.Decision{ApprovalID: c.ID, User: a.o.User, Location: a.o.Location}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			dec.Action = channels.DecideAllow
		case "a", "always":
			if c.Rule == "" {
				continue
			}
			dec.Action = channels.DecideAlways
		case "n", "no":
			a.printf("Reason (optional): ")
			reason, err := p.read()
			if err != nil {
				return channels.DecisionReply{}, errQuit
			}
			dec.Action, dec.Reason = channels.DecideDeny, strings.TrimSpace(reason)
		default:
			continue
		}
		rep, err := d.Decide(ctx, dec)
		if err != nil {
			return channels.DecisionReply{}, err
		}
		if rep.Refused {
			a.line("⚠ " + rep.Text)
		}
		return rep, nil
	}
}

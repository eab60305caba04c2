// Package headless is the surface of `switchboard run`: one prompt, or a
// stream of stream-json lines on stdin, answered on stdout as text, one
// JSON result, or the one event stream in stream-json (DESIGN §7). It is an
// adapter like the chat surfaces: the person's input goes to the gateway's
// queue, the turn runs on the gateway's workers, and the turn's typed events
// arrive here live (channels.LiveSurface); decisions go through the
// gateway's one decide path (channels.Decider).
//
// Sub-agent tasks run on the same gateway; their activity arrives as
// task events (relayed in stream-json). A turn parked on a foreground task
// keeps the session open until the task's report resumes it; with
// WaitTasks the session also waits for every background task this session
// started, whose <task-notification> is worked as the parent's next turn;
// without it, the background tasks still running when the session ends
// are named in the last result (CancelledTasks) for the host to cancel.
//
// Concurrency: Start runs the session; Live, Send and Edit may be called
// from the gateway's goroutines while it runs. Done is closed when the
// session is over (the prompt's turn ended, or stdin ended and every turn
// it started has ended); ExitCode is valid then.
package headless

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/headless/streamjson"
)

// Name is the channel of every local host (run, chat, acp): the person at
// the terminal or editor is "local:<OS user name>".
const Name = "local"

// Output formats.
const (
	FormatText       = "text"
	FormatJSON       = "json"
	FormatStreamJSON = "stream-json"
)

// Options configure an Adapter.
type Options struct {
	Format      string    // FormatText, FormatJSON or FormatStreamJSON
	StreamInput io.Reader // stream-json input lines; nil: only Prompt
	Prompt      string
	Out, Err    io.Writer
	// Location is this session's location (local:run:<conversation>:<session>).
	Location channels.Location
	User     channels.User // the local person
	Init     streamjson.Init
	// BusyWait bounds how long a turn may wait for another process working
	// the conversation before the session gives up (default 2m).
	BusyWait time.Duration
	// WaitTasks keeps the session until every background task it started
	// has reported (run --wait-tasks).
	WaitTasks bool
}

// Adapter is the headless surface.
type Adapter struct {
	o   Options
	enc *streamjson.Encoder

	mu          sync.Mutex
	outstanding int             // inputs and turns of this session that have not ended
	waiting     int             // of those, inputs whose turn has not started
	eof         bool            // no more input
	open        map[string]bool // tasks this session's turns started, not yet reported to them: id → background
	cancelled   []string        // background tasks left running at the end
	done        chan struct{}
	doneOnce    sync.Once
	exit        int
	last        *streamjson.Result
	text        string            // last assistant text of the current turn
	pending     []json.RawMessage // approvals asked in the current turn
	steps       int
	usage       streamjson.Usage
	start       time.Time
	started     chan struct{} // a turn began (closed and replaced per input)
	nextRef     atomic.Int64
	nextEvent   atomic.Int64
	turnStarted bool
	commands    map[string]bool // message ids of commands waiting for their reply
	h           channels.Handler
}

// New returns an Adapter.
func New(o Options) *Adapter {
	if o.BusyWait <= 0 {
		o.BusyWait = 2 * time.Minute
	}
	return &Adapter{o: o, enc: streamjson.NewEncoder(o.Out), done: make(chan struct{}), started: make(chan struct{}), commands: map[string]bool{}, open: map[string]bool{}}
}

// Name implements channels.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements channels.Adapter: no buttons (decisions are lines
// on stdin), rich parts (the event stream has everything).
func (a *Adapter) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: true, RichParts: true, Dialect: channels.Plain}
}

// Done is closed when the session is over.
func (a *Adapter) Done() <-chan struct{} { return a.done }

// ExitCode is the process's exit status once Done is closed: 0 success or
// waiting for approval, 1 error, 130 cancelled.
func (a *Adapter) ExitCode() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exit
}

// Send implements channels.Adapter. A turn's content was shown live; the
// reply to a command the person typed is printed (text: on stdout; json
// and stream-json: a {"type":"command","text":…} line).
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	a.mu.Lock()
	isReply := m.ReplyTo != "" && a.commands[m.ReplyTo]
	if isReply {
		delete(a.commands, m.ReplyTo)
	}
	a.mu.Unlock()
	if isReply {
		text := strings.TrimSpace(strings.Join(channels.RenderMessage(m, a.Capabilities()), "\n"))
		if a.o.Format == FormatText {
			fmt.Fprintln(a.o.Out, text)
		} else {
			a.enc.Write(map[string]string{"type": "command", "text": text})
		}
		a.mu.Lock()
		if a.outstanding > 0 {
			a.outstanding--
		}
		a.finishIfIdle()
		a.mu.Unlock()
	}
	return channels.MessageRef{Location: loc, ID: "h" + strconv.FormatInt(a.nextRef.Add(1), 10)}, nil
}

// Edit implements channels.Adapter: decisions and outcomes arrive live.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	return nil
}

// Live implements channels.LiveSurface. Once the session is over nothing
// more is shown.
func (a *Adapter) Live(ctx context.Context, ev channels.LiveEvent) {
	select {
	case <-a.done:
		return
	default:
	}
	if a.o.Format == FormatStreamJSON && len(ev.Wire) > 0 {
		a.enc.WriteRaw(ev.Wire)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ev.Kind == channels.LiveTurnStart {
		// This process works the conversation (also a turn it adopted):
		// nothing waits for another process.
		select {
		case <-a.started:
		default:
			close(a.started)
		}
	}
	if ev.Location != a.o.Location {
		return // a turn of an earlier session of the conversation, adopted: shown, not counted
	}
	switch ev.Kind {
	case channels.LiveTurnStart:
		a.text, a.pending, a.turnStarted = "", nil, true
		if a.waiting > 0 {
			a.waiting--
		} else {
			a.outstanding++ // a turn no input of ours started: a task's report
		}
	case channels.LiveMessage:
		a.text = ev.Text
	case channels.LiveTask:
		a.taskEvent(ev.Wire)
	case channels.LiveApproval:
		if ev.Approval != nil && ev.Approval.Task != "" {
			return // a sub-agent's ask: decided by its id, not this turn's
		}
		var w struct {
			Approval json.RawMessage `json:"approval"`
		}
		if json.Unmarshal(ev.Wire, &w) == nil && len(w.Approval) > 0 {
			a.pending = append(a.pending, w.Approval)
		}
	case channels.LiveTurnEnd:
		a.turnEnded(ev)
	}
}

// taskEvent tracks the tasks this session's turns started until their
// reports reach them. Called with a.mu held.
func (a *Adapter) taskEvent(wire []byte) {
	var w struct {
		Type   string `json:"type"`
		TaskID string `json:"taskId"`
		Task   struct {
			Background bool `json:"background"`
		} `json:"task"`
	}
	if json.Unmarshal(wire, &w) != nil || w.TaskID == "" {
		return
	}
	switch w.Type {
	case "task_started":
		a.open[w.TaskID] = w.Task.Background
	case "task_notification":
		delete(a.open, w.TaskID)
		a.finishIfIdle()
	}
}

// waitsOnTasks reports whether a task keeps the session open: a
// foreground one always, a background one with WaitTasks. Called with a.mu
// held.
func (a *Adapter) waitsOnTasks() bool {
	for _, bg := range a.open {
		if !bg || a.o.WaitTasks {
			return true
		}
	}
	return false
}

// leftTasks are the background tasks still running (sorted). Called with
// a.mu held.
func (a *Adapter) leftTasks() []string {
	var ids []string
	for id, bg := range a.open {
		if bg {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// idle reports whether the session can end. Called with a.mu held.
func (a *Adapter) idle() bool { return a.eof && a.outstanding == 0 && !a.waitsOnTasks() }

// CancelledTasks are the background tasks the session left running when
// it ended (valid once Done is closed): the host cancels them.
func (a *Adapter) CancelledTasks() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.cancelled...)
}

// turnEnded records a turn's result and prints it. Called with a.mu held.
func (a *Adapter) turnEnded(ev channels.LiveEvent) {
	a.steps += ev.Steps
	a.usage.InputTokens += ev.Usage.InputTokens
	a.usage.OutputTokens += ev.Usage.OutputTokens
	a.usage.CachedTokens += ev.Usage.CachedTokens
	text := a.text
	res := streamjson.Result{Type: "result", Subtype: streamjson.SubtypeOf(ev.StopReason), Result: text,
		StopReason: ev.StopReason, NumSteps: a.steps, Usage: a.usage, AgentID: a.o.Init.AgentID,
		ConversationID: ev.ConversationID, DurationMs: time.Since(a.start).Milliseconds(), Error: ev.Error, Pending: a.pending}
	if a.outstanding > 0 {
		a.outstanding--
	}
	final := a.idle()
	if final {
		res.CancelledTasks = a.leftTasks()
	}
	a.last = &res
	switch a.o.Format {
	case FormatStreamJSON:
		a.enc.Write(res)
	case FormatJSON:
		if a.o.WaitTasks && !final {
			a.enc.Write(res) // each turn's result; the last one at the end
		}
	case FormatText:
		if (a.o.StreamInput != nil || a.o.WaitTasks) && res.Result != "" {
			fmt.Fprintln(a.o.Out, res.Result)
		}
	}
	a.finishIfIdle()
}

// finishIfIdle ends the session when no input can come and no turn it
// started is still running. Called with a.mu held.
func (a *Adapter) finishIfIdle() {
	if !a.idle() {
		return
	}
	a.doneOnce.Do(func() {
		a.exit = 0
		a.cancelled = a.leftTasks()
		if a.last != nil && len(a.cancelled) > 0 && len(a.last.CancelledTasks) == 0 {
			// The last result went out before input ended (stream-json
			// input): say it on a line of its own.
			last := *a.last
			last.CancelledTasks = a.cancelled
			a.last = &last
			if a.o.Format == FormatStreamJSON {
				a.enc.Write(streamjson.NewError("cancelled unfinished background task(s) " + strings.Join(a.cancelled, ", ") + " at exit; use --wait-tasks to wait for them"))
			}
		}
		if a.last != nil {
			switch a.last.Subtype {
			case streamjson.SubtypeCancelled:
				a.exit = 130
			case streamjson.SubtypeError:
				a.exit = 1
			}
			a.printFinal(*a.last)
		}
		close(a.done)
	})
}

// printFinal writes what text and json print once, at the end.
func (a *Adapter) printFinal(res streamjson.Result) {
	switch a.o.Format {
	case FormatJSON:
		a.enc.Write(res)
	case FormatText:
		if a.o.StreamInput == nil && !a.o.WaitTasks && res.Result != "" {
			fmt.Fprintln(a.o.Out, res.Result)
		}
		if res.Error != "" {
			fmt.Fprintln(a.o.Err, "switchboard:", res.Error)
		}
		for _, id := range res.CancelledTasks {
			fmt.Fprintf(a.o.Err, "switchboard: cancelled background task %s: it had not finished when run exited (use --wait-tasks to wait for it)\n", id)
		}
		for _, p := range res.Pending {
			var ap struct{ ID, Summary string }
			if json.Unmarshal(p, &ap) == nil {
				fmt.Fprintf(a.o.Err, "switchboard: waiting for approval %s: %s\n", ap.ID, ap.Summary)
			}
		}
	}
}

// fail ends the session with an error before any turn could run.
func (a *Adapter) fail(msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.doneOnce.Do(func() {
		a.exit = 1
		if a.o.Format == FormatText {
			fmt.Fprintln(a.o.Err, "switchboard:", msg)
		} else {
			a.enc.Write(streamjson.Result{Type: "result", Subtype: streamjson.SubtypeError, StopReason: "error",
				AgentID: a.o.Init.AgentID, ConversationID: a.o.Init.ConversationID, Error: msg})
		}
		close(a.done)
	})
}

// Start implements channels.Adapter: it hands the prompt and the input
// lines to the gateway and runs until ctx ends.
func (a *Adapter) Start(ctx context.Context, h channels.Handler) error {
	a.mu.Lock()
	a.start = time.Now()
	a.h = h
	a.mu.Unlock()
	if a.o.Format == FormatStreamJSON {
		init := a.o.Init
		init.Type = "init"
		a.enc.Write(init)
	}
	if strings.TrimSpace(a.o.Prompt) != "" {
		if err := a.deliver(ctx, h, a.o.Prompt, nil); err != nil {
			a.fail(err.Error())
			<-ctx.Done()
			return nil
		}
	}
	if a.o.StreamInput == nil {
		a.mu.Lock()
		a.eof = true
		a.finishIfIdle()
		a.mu.Unlock()
	} else {
		a.readInput(ctx, h)
	}
	<-ctx.Done()
	return nil
}

// deliver hands one user message to the gateway, as the local person.
func (a *Adapter) deliver(ctx context.Context, h channels.Handler, text string, atts []channels.Attachment) error {
	id := fmt.Sprintf("%s-%d-%d", a.o.Location.ThreadID, time.Now().UnixNano(), a.nextEvent.Add(1))
	in := channels.Inbound{
		EventID:       id,
		MessageID:     id,
		Location:      a.o.Location,
		User:          a.o.User,
		Text:          text,
		Attachments:   atts,
		DirectMessage: true,
		Mentioned:     true,
		At:            time.Now(),
	}
	isCommand := channels.CommandName(text) != ""
	a.mu.Lock()
	a.outstanding++
	if isCommand {
		a.commands[id] = true
	} else {
		a.waiting++
	}
	started := a.started
	a.mu.Unlock()
	if err := h.OnInbound(ctx, in); err != nil {
		return fmt.Errorf("queue the message: %w", err)
	}
	if !isCommand {
		go a.watchBusy(ctx, started)
	}
	return nil
}

// watchBusy tells the person when a turn waits for another process that
// works the conversation, and gives up after BusyWait.
func (a *Adapter) watchBusy(ctx context.Context, started <-chan struct{}) {
	notice := time.NewTimer(time.Second)
	defer notice.Stop()
	limit := time.NewTimer(a.o.BusyWait)
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.done:
			return
		case <-started:
			return
		case <-notice.C:
			fmt.Fprintln(a.o.Err, "switchboard: the conversation is busy in another process; waiting for it…")
		case <-limit.C:
			a.fail(fmt.Sprintf("conversation %s is busy in another process; try again when it finishes", a.o.Init.ConversationID))
			return
		}
	}
}

// readInput reads stream-json lines until EOF.
func (a *Adapter) readInput(ctx context.Context, h channels.Handler) {
	sc := bufio.NewScanner(a.o.StreamInput)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		if err := sc.Err(); err != nil {
			a.enc.Write(streamjson.NewError("read stdin: " + err.Error()))
		}
	}()
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return
		case line, ok = <-lines:
		}
		if !ok {
			a.mu.Lock()
			a.eof = true
			a.finishIfIdle()
			a.mu.Unlock()
			return
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		in, err := streamjson.ParseInput([]byte(line))
		if err != nil {
			a.enc.Write(streamjson.NewError("bad input line: " + err.Error()))
			continue
		}
		a.handleInput(ctx, h, in)
	}
}

func (a *Adapter) handleInput(ctx context.Context, h channels.Handler, in streamjson.Input) {
	switch in.Type {
	case streamjson.TypeUser:
		var text []string
		var atts []channels.Attachment
		for i, p := range in.Parts {
			if p.IsImage() {
				atts = append(atts, channels.Attachment{Name: fmt.Sprintf("image-%d", i+1), MIME: p.MIME, Data: p.Data})
				continue
			}
			text = append(text, p.Text)
		}
		if err := a.deliver(ctx, h, strings.Join(text, "\n"), atts); err != nil {
			a.enc.Write(streamjson.NewError(err.Error()))
		}
	case streamjson.TypeApproval:
		d, ok := h.(channels.Decider)
		if !ok {
			a.enc.Write(streamjson.NewError("approvals cannot be decided here"))
			return
		}
		rep, err := d.Decide(ctx, channels.Decision{ApprovalID: in.ApprovalID, Action: in.Decision, Reason: in.Reason, User: a.o.User, Location: a.o.Location})
		switch {
		case err != nil:
			a.enc.Write(streamjson.NewError(fmt.Sprintf("approval %s: %v", in.ApprovalID, err)))
		case !rep.Decided:
			a.enc.Write(streamjson.NewError(fmt.Sprintf("approval %s: %s", in.ApprovalID, rep.Text)))
		default:
			if a.o.Format == FormatStreamJSON && len(rep.Wire) > 0 {
				a.enc.WriteRaw(rep.Wire)
			}
			if rep.Resumed {
				a.mu.Lock()
				a.outstanding++
				a.waiting++
				a.mu.Unlock()
			}
		}
	case streamjson.TypeInterrupt:
		_ = h.OnInbound(ctx, channels.Inbound{EventID: fmt.Sprintf("%s-stop-%d", a.o.Location.ThreadID, a.nextEvent.Add(1)),
			Location: a.o.Location, User: a.o.User, Text: "/stop", DirectMessage: true, Mentioned: true, At: time.Now()})
	}
}

// Interrupt stops the running turn (a signal): its result says cancelled.
func (a *Adapter) Interrupt(ctx context.Context) {
	a.mu.Lock()
	h := a.h
	a.mu.Unlock()
	if h == nil {
		return
	}
	_ = h.OnInbound(ctx, channels.Inbound{EventID: fmt.Sprintf("%s-stop-%d", a.o.Location.ThreadID, a.nextEvent.Add(1)),
		Location: a.o.Location, User: a.o.User, Text: "/stop", DirectMessage: true, Mentioned: true, At: time.Now()})
	a.mu.Lock()
	a.eof = true
	a.finishIfIdle()
	a.mu.Unlock()
}

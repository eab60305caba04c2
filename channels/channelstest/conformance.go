package channelstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// Platform drives the fake platform behind an adapter under test, so one
// conformance suite checks every adapter against the contract. Each adapter's
// fake (telegramtest, slacktest, discordtest, …) provides one. Abilities not
// every platform has are optional interfaces: Failer, NoRedelivery,
// CommandLister.
type Platform interface {
	// Chat is a location where the suite's users may talk to the bot.
	Chat() channels.Location
	// Users returns the platform user ids of two people allowed to act: user
	// and other. A surface with one person (the web page) returns "" for
	// other.
	Users() (user, other string)
	// Deliver makes the platform send the adapter a message from user at
	// loc, mentioning the bot. It returns once the platform queued the event,
	// without waiting for the adapter; id names the event for Acked. The
	// suite delivers at Chat() and, for a channels.DirectMessenger, at the
	// location DirectLocation named (the user's one-to-one chat).
	Deliver(ctx context.Context, loc channels.Location, user, text string) (id string, err error)
	// AcksEvents reports whether the platform waits for an acknowledgement
	// of each event (Telegram's offset, Slack's envelope acks, an HTTP
	// answer) and, unless the platform is a NoRedelivery, delivers it again
	// without one. Platforms that do not (Discord's gateway) return false
	// and are checked only for eventual delivery.
	AcksEvents() bool
	// Acked reports whether the platform has the event with this id
	// acknowledged, so it will not deliver it again.
	Acked(id string) bool
	// Shown returns the bot's messages the platform shows at loc, oldest
	// first, after edits, as it stores them (the raw text in the adapter's
	// dialect).
	Shown(loc channels.Location) []Shown
	// Press presses the button with token on the message msgID at loc as
	// user, and returns what the presser was shown (a toast, an alert or an
	// ephemeral message; "" if nothing).
	Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error)
}

// Failer is an optional Platform ability: make the platform refuse the next
// message send. A surface with no platform between the adapter and the
// person (the web page, which is its own server) has nothing that could
// refuse and does not implement it; the suite then checks only that an
// invalid message is refused permanently, which every adapter must do.
type Failer interface {
	// FailNext makes the platform refuse the next message send
	// (Adapter.Send): rate limited, asking to retry after retryAfter (> 0),
	// or permanently (retryAfter < 0; e.g. chat not found).
	FailNext(retryAfter time.Duration)
}

// NoRedelivery is an optional Platform ability of platforms that wait for
// the acknowledgement of an event (AcksEvents is true) but never deliver a
// refused event again: a browser does not repeat the web page's POST that
// was answered with an error (the person sends again, which is a new event).
// The suite then checks that a refused event ends refused and not
// acknowledged, instead of waiting for a redelivery.
type NoRedelivery interface {
	// Refused reports whether the platform was told that the event with this
	// id was not accepted (an error answer).
	Refused(id string) bool
}

// CommandLister is an optional Platform ability for adapters that are a
// channels.CommandRegistrar and register commands with their platform: the
// names of the commands the platform offers now, in order.
type CommandLister interface {
	Commands() []string
}

// Shown is a message as the platform shows it.
type Shown struct {
	ID     string   // the platform message id (MessageRef.ID)
	Text   string   // the text as stored by the platform
	Tokens []string // the tokens of its buttons, in order
}

// Subject is an adapter wired to its fake platform.
type Subject struct {
	Adapter  channels.Adapter
	Platform Platform
}

// Conformance runs the adapter contract suite. setup is called once per
// subtest and returns a fresh adapter (not started) and its platform; it
// registers cleanups with t. The suite starts the adapter itself.
//
// What it checks: an event is acknowledged only after OnInbound returned nil
// (and delivered again after an error, where the platform redelivers, or
// left refused where it does not); inbound fields are filled (channel, user,
// text, a stable event id); Send and Edit of paginated messages stay under
// MaxMessageLen and keep all the text; an edit that changes nothing
// succeeds; a button's token comes back in OnAction from the right user and
// location and the reply reaches the presser; an invalid message is refused
// permanently, rate limits are *channels.RateLimitError with the platform's
// delay and permanent refusals are channels.Permanent (where the platform
// can refuse: Failer); Typing works when the surface has it; a command table
// registers (and replaces the previous one, where the platform lists
// commands); the DM ability, when present, names a location Send can post
// to and that is the very location of the user's messages in that chat.
func Conformance(t *testing.T, setup func(t *testing.T) Subject) {
	t.Run("Capabilities", func(t *testing.T) {
		s := setup(t)
		caps := s.Adapter.Capabilities()
		if _, _, err := channels.ParseIdentity(channels.QualifiedID(s.Adapter.Name(), "x")); err != nil {
			t.Errorf("Name() %q is not a valid channel name: %v", s.Adapter.Name(), err)
		}
		if caps.MaxMessageLen < 0 {
			t.Errorf("MaxMessageLen %d < 0", caps.MaxMessageLen)
		}
		if caps != s.Adapter.Capabilities() {
			t.Error("Capabilities changed between calls")
		}
		if _, ok := s.Adapter.(channels.Typer); caps.Typing && !ok {
			t.Error("Capabilities().Typing but the adapter is no channels.Typer")
		}
		if caps.TypingEvery < 0 || (caps.TypingEvery > 0 && !caps.Typing) {
			t.Errorf("TypingEvery %v with Typing %v: want 0, or > 0 on a surface with typing", caps.TypingEvery, caps.Typing)
		}
		if _, ok := s.Adapter.(channels.EphemeralSender); caps.Ephemeral && !ok {
			t.Error("Capabilities().Ephemeral but the adapter is no channels.EphemeralSender")
		}
	})
	t.Run("AckOnlyAfterInbound", func(t *testing.T) { testAck(t, setup(t)) })
	t.Run("SendEditPaginated", func(t *testing.T) { testSendEdit(t, setup(t)) })
	t.Run("ButtonRoundTrip", func(t *testing.T) { testButtons(t, setup(t)) })
	t.Run("TypedErrors", func(t *testing.T) { testErrors(t, setup(t)) })
	t.Run("Typing", func(t *testing.T) { testTyping(t, setup(t)) })
	t.Run("RegisterCommands", func(t *testing.T) { testCommands(t, setup(t)) })
	t.Run("DirectMessage", func(t *testing.T) { testDM(t, setup(t)) })
}

// suiteHandler records what the adapter hands over and lets the test decide
// what OnInbound returns.
type suiteHandler struct {
	mu       sync.Mutex
	inbounds chan channels.Inbound
	actions  chan channels.Action
	// gate, when set, is received from before OnInbound answers: the test
	// sends the error to return.
	gate  chan error
	reply channels.ActionReply
}

func newSuiteHandler() *suiteHandler {
	return &suiteHandler{inbounds: make(chan channels.Inbound, 64), actions: make(chan channels.Action, 64)}
}

func (h *suiteHandler) OnInbound(ctx context.Context, in channels.Inbound) error {
	h.inbounds <- in
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case err := <-gate:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *suiteHandler) OnAction(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
	h.actions <- a
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reply, nil
}

// start runs the adapter until the test ends.
func start(t *testing.T, s Subject, h channels.Handler) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Adapter.Start(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v after its context ended; want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Start did not return within 30s after its context ended")
		}
	})
	return ctx
}

func deadline(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 20*time.Second)
}

func receive[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		var zero T
		t.Fatalf("timed out waiting for %s", what)
		return zero
	}
}

// eventually polls cond until it holds or ctx ends.
func eventually(ctx context.Context, cond func() bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
	return true
}

func testAck(t *testing.T, s Subject) {
	h := newSuiteHandler()
	h.gate = make(chan error)
	start(t, s, h)
	ctx, cancel := deadline(t)
	defer cancel()
	p := s.Platform
	user, _ := p.Users()
	loc := p.Chat()
	id, err := p.Deliver(ctx, loc, user, "conformance ack one")
	if err != nil {
		t.Fatal(err)
	}
	in := receive(t, ctx, h.inbounds, "the first delivery")
	if in.Location.Channel != s.Adapter.Name() || in.Location.ChatID == "" {
		t.Errorf("inbound location %+v: want channel %s and a chat id", in.Location, s.Adapter.Name())
	}
	if in.User.ID != user {
		t.Errorf("inbound user %q, want %q", in.User.ID, user)
	}
	if in.Text != "conformance ack one" {
		t.Errorf("inbound text %q, want %q: the bot's mention (and nothing else) removed", in.Text, "conformance ack one")
	}
	if !in.Mentioned && !in.DirectMessage {
		t.Error("a message mentioning the bot is neither Mentioned nor a DirectMessage")
	}
	if in.EventID == "" {
		t.Error("inbound has no EventID (the gateway dedupes on it)")
	}
	if p.AcksEvents() && p.Acked(id) {
		t.Error("the event was acknowledged while OnInbound had not returned")
	}
	h.gate <- errors.New("not durable yet")
	nr, oneShot := p.(NoRedelivery)
	switch {
	case p.AcksEvents() && oneShot:
		if !eventually(ctx, func() bool { return nr.Refused(id) }) {
			t.Fatal("the platform was not told that the event was refused after OnInbound returned an error")
		}
		if p.Acked(id) {
			t.Error("the event was acknowledged although OnInbound returned an error")
		}
	case p.AcksEvents():
		again := receive(t, ctx, h.inbounds, "the redelivery after OnInbound failed")
		if again.EventID != in.EventID {
			t.Errorf("redelivered EventID %q differs from %q: the gateway could not dedupe it", again.EventID, in.EventID)
		}
		if p.Acked(id) {
			t.Error("the event was acknowledged although OnInbound returned an error")
		}
		h.gate <- nil
		if !eventually(ctx, func() bool { return p.Acked(id) }) {
			t.Fatal("the event was not acknowledged after OnInbound returned nil")
		}
	}
	h.mu.Lock()
	h.gate = nil
	h.mu.Unlock()
	// A second event is handed over (and acknowledged) after the first was
	// accepted or refused.
	id2, err := p.Deliver(ctx, loc, user, "conformance ack two")
	if err != nil {
		t.Fatal(err)
	}
	for {
		in := receive(t, ctx, h.inbounds, "the second message")
		if strings.Contains(in.Text, "conformance ack two") {
			break
		}
		if oneShot || !strings.Contains(in.Text, "conformance ack one") {
			t.Fatalf("unexpected inbound %q", in.Text)
		}
	}
	if p.AcksEvents() && !eventually(ctx, func() bool { return p.Acked(id2) }) {
		t.Error("the second event was not acknowledged after OnInbound returned nil")
	}
}

// words returns the visible words of rendered text, markup removed well
// enough to compare content: tags and Markdown markers become spaces.
func words(s string) []string {
	var b strings.Builder
	inTag := false
	for _, r := range s {
		switch {
		case r == '<':
			inTag = true
			b.WriteRune(' ')
		case r == '>' && inTag:
			inTag = false
		case inTag:
		case strings.ContainsRune("*_~`|[]()#>\\", r):
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	return strings.Fields(b.String())
}

func testSendEdit(t *testing.T, s Subject) {
	h := newSuiteHandler()
	start(t, s, h)
	ctx, cancel := deadline(t)
	defer cancel()
	caps := s.Adapter.Capabilities()
	loc := s.Platform.Chat()

	var md strings.Builder
	n := 60
	if caps.MaxMessageLen > 0 {
		n = caps.MaxMessageLen/40 + 40 // well past one message
	}
	for i := range n {
		fmt.Fprintf(&md, "Paragraph w%04d has some words to fill the line.\n\n", i)
	}
	msg := channels.Message{Parts: []channels.Part{
		channels.ToolActivity{ID: "c1", Title: "Bash `ls`", Kind: "execute", Status: channels.StatusDone, Outcome: channels.OutcomeOK},
		channels.Text{Markdown: md.String()},
	}}
	pages := channels.Paginate(msg, caps)
	if caps.MaxMessageLen > 0 && len(pages) < 2 {
		t.Fatalf("a %d-character message paginated into %d page for a %d limit", md.Len(), len(pages), caps.MaxMessageLen)
	}
	// shownSince waits until the platform shows, after its first before
	// messages, at least want messages holding every word of md in order;
	// then it checks each against the limit and returns them.
	shownSince := func(what string, before, want int) []Shown {
		t.Helper()
		var shown []Shown
		var missing string
		complete := func() bool {
			shown = s.Platform.Shown(loc)
			if len(shown) < before+want {
				missing = fmt.Sprintf("%d new messages, want %d", len(shown)-before, want)
				return false
			}
			shown = shown[before:]
			var all []string
			for _, m := range shown {
				all = append(all, words(m.Text)...)
			}
			got := strings.Join(all, " ")
			last := -1
			for i := range n {
				w := fmt.Sprintf("w%04d", i)
				at := strings.Index(got, w)
				if at < 0 {
					missing = "word " + w + " was lost"
					return false
				}
				if at < last {
					missing = "word " + w + " is out of order"
					return false
				}
				last = at
			}
			return true
		}
		if !eventually(ctx, complete) {
			t.Fatalf("%s: the platform shows %s", what, missing)
		}
		for i, m := range shown {
			if caps.MaxMessageLen > 0 {
				if l := channels.Length(m.Text, caps.Dialect); l > caps.MaxMessageLen {
					t.Errorf("%s: message %d is %d long, over the %d limit", what, i, l, caps.MaxMessageLen)
				}
			}
		}
		return shown
	}

	before := len(s.Platform.Shown(loc))
	var refs []channels.MessageRef
	for i, pg := range pages {
		ref, err := s.Adapter.Send(ctx, loc, pg)
		if err != nil {
			t.Fatalf("send page %d: %v", i, err)
		}
		if ref.ID == "" {
			t.Fatalf("send page %d returned an empty message id", i)
		}
		refs = append(refs, ref)
	}
	for i, m := range shownSince("paginated", before, len(pages)) {
		if i < len(refs) && m.ID != refs[i].ID {
			t.Errorf("page %d is shown as message %s; Send returned %s", i, m.ID, refs[i].ID)
		}
	}

	// A message the gateway did not paginate is still shown within the
	// limit (Send posts several messages), all of it, and Send returns the
	// first.
	if caps.MaxMessageLen > 0 {
		before := len(s.Platform.Shown(loc))
		ref, err := s.Adapter.Send(ctx, loc, msg)
		if err != nil {
			t.Fatalf("send an unpaginated message: %v", err)
		}
		if shown := shownSince("unpaginated", before, 2); shown[0].ID != ref.ID {
			t.Errorf("Send returned %s, the first message shown is %s", ref.ID, shown[0].ID)
		}
	}

	if !caps.Edit {
		if err := s.Adapter.Edit(ctx, refs[0], channels.TextMessage("x")); err == nil || !channels.IsPermanent(err) {
			t.Errorf("Edit on a surface without edits returned %v; want a permanent ErrNotSupported", err)
		}
		return
	}
	edited := channels.TextMessage("Edited to **new** content zq17.")
	if err := s.Adapter.Edit(ctx, refs[0], edited); err != nil {
		t.Fatalf("edit: %v", err)
	}
	if err := s.Adapter.Edit(ctx, refs[0], edited); err != nil {
		t.Errorf("an edit that changes nothing failed: %v", err)
	}
	if !eventually(ctx, func() bool {
		for _, m := range s.Platform.Shown(loc) {
			if m.ID == refs[0].ID && strings.Contains(m.Text, "zq17") {
				return true
			}
		}
		return false
	}) {
		t.Errorf("the platform does not show the edit of %s", refs[0].ID)
	}
}

func testButtons(t *testing.T, s Subject) {
	caps := s.Adapter.Capabilities()
	if !caps.Buttons {
		t.Skip("the surface has no buttons")
	}
	h := newSuiteHandler()
	h.reply = channels.ActionReply{Text: "pressed ok rq5", Alert: true}
	start(t, s, h)
	ctx, cancel := deadline(t)
	defer cancel()
	loc := s.Platform.Chat()
	user, other := s.Platform.Users()
	token := "tok_" + strings.Repeat("x", channels.MaxTokenLen-4)
	ref, err := s.Adapter.Send(ctx, loc, channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "Approve this?"},
		channels.Buttons{Rows: [][]channels.Button{{
			{Label: "Approve", Style: channels.StylePrimary, Token: token},
			{Label: "Deny", Style: channels.StyleDanger, Token: "deny-1"},
		}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var msg Shown
	if !eventually(ctx, func() bool {
		for _, m := range s.Platform.Shown(loc) {
			if m.ID == ref.ID {
				msg = m
				return len(m.Tokens) == 2
			}
		}
		return false
	}) {
		t.Fatalf("the platform shows message %s with buttons %v; want two", ref.ID, msg.Tokens)
	}
	if msg.Tokens[0] != token || msg.Tokens[1] != "deny-1" {
		t.Errorf("button tokens %q, want the 64-byte token and deny-1 in order", msg.Tokens)
	}
	for _, who := range []string{user, other} {
		if who == "" {
			continue // a surface with one person
		}
		reply, err := s.Platform.Press(ctx, loc, ref.ID, token, who)
		if err != nil {
			t.Fatal(err)
		}
		a := receive(t, ctx, h.actions, "the button press")
		if a.Token != token {
			t.Errorf("action token %q, want %q", a.Token, token)
		}
		if a.User.ID != who {
			t.Errorf("action user %q, want %q", a.User.ID, who)
		}
		if a.Location.Channel != s.Adapter.Name() || a.Location.ChatID != loc.ChatID {
			t.Errorf("action location %+v, want the chat %+v", a.Location, loc)
		}
		if !strings.Contains(reply, "pressed ok rq5") {
			t.Errorf("the presser was shown %q; want the handler's reply", reply)
		}
	}
	if !caps.Edit {
		return
	}
	// An edit without buttons removes them.
	if err := s.Adapter.Edit(ctx, ref, channels.TextMessage("Approved by a person.")); err != nil {
		t.Fatalf("edit away the buttons: %v", err)
	}
	if !eventually(ctx, func() bool {
		for _, m := range s.Platform.Shown(loc) {
			if m.ID == ref.ID {
				msg = m
				return len(m.Tokens) == 0 && strings.Contains(m.Text, "Approved")
			}
		}
		return false
	}) {
		t.Errorf("after an edit without buttons the platform shows %q with buttons %q", msg.Text, msg.Tokens)
	}
}

func testErrors(t *testing.T, s Subject) {
	h := newSuiteHandler()
	start(t, s, h)
	ctx, cancel := deadline(t)
	defer cancel()
	loc := s.Platform.Chat()
	// Every adapter refuses a message the contract forbids, permanently.
	invalid := channels.Message{Parts: []channels.Part{
		channels.Text{Markdown: "invalid"},
		channels.Buttons{Rows: [][]channels.Button{{{Label: "Too long", Token: strings.Repeat("t", channels.MaxTokenLen+1)}}}},
	}}
	if _, err := s.Adapter.Send(ctx, loc, invalid); err == nil || !channels.IsPermanent(err) {
		t.Errorf("sending a button token over %d bytes returned %v; want channels.Permanent", channels.MaxTokenLen, err)
	}
	if f, ok := s.Platform.(Failer); ok {
		f.FailNext(3 * time.Second)
		_, err := s.Adapter.Send(ctx, loc, channels.TextMessage("limited"))
		d, ok := channels.RetryAfter(err)
		if !ok || d != 3*time.Second {
			t.Errorf("rate-limited send returned %v (retry after %v, %v); want a *channels.RateLimitError of 3s", err, d, ok)
		}
		if channels.IsPermanent(err) {
			t.Error("a rate limit is marked permanent")
		}
		f.FailNext(-1)
		_, err = s.Adapter.Send(ctx, loc, channels.TextMessage("refused"))
		if err == nil || !channels.IsPermanent(err) {
			t.Errorf("permanently refused send returned %v; want channels.Permanent", err)
		}
	} else {
		t.Log("the platform cannot refuse sends (no Failer): rate limits and refusals not checked")
	}
	// The adapter still works after all of them.
	if _, err := s.Adapter.Send(ctx, loc, channels.TextMessage("after errors")); err != nil {
		t.Errorf("send after errors: %v", err)
	}
}

func testTyping(t *testing.T, s Subject) {
	if !s.Adapter.Capabilities().Typing {
		t.Skip("the surface has no typing indicator")
	}
	typer, ok := s.Adapter.(channels.Typer)
	if !ok {
		t.Fatal("Capabilities().Typing but the adapter is no channels.Typer")
	}
	start(t, s, newSuiteHandler())
	ctx, cancel := deadline(t)
	defer cancel()
	if err := typer.Typing(ctx, s.Platform.Chat()); err != nil {
		t.Errorf("Typing at %s: %v", s.Platform.Chat(), err)
	}
}

func testCommands(t *testing.T, s Subject) {
	reg, ok := s.Adapter.(channels.CommandRegistrar)
	if !ok {
		t.Skip("the adapter does not register commands")
	}
	start(t, s, newSuiteHandler())
	ctx, cancel := deadline(t)
	defer cancel()
	table := []channels.Command{
		{Name: "status", Description: "Show the agent, model and pending approvals"},
		{Name: "deny", Args: "[id] [reason]", Description: "Deny a pending tool call"},
		{Name: "pair", Args: "approve CODE", Description: "Approve a pairing code", AdminOnly: true},
	}
	if err := reg.RegisterCommands(ctx, table); err != nil {
		t.Fatalf("RegisterCommands: %v", err)
	}
	lister, ok := s.Platform.(CommandLister)
	if !ok {
		return
	}
	has := func(names []string, want ...string) bool {
		for _, w := range want {
			found := false
			for _, n := range names {
				found = found || n == w
			}
			if !found {
				return false
			}
		}
		return true
	}
	var names []string
	if !eventually(ctx, func() bool { names = lister.Commands(); return has(names, "status", "deny") }) {
		t.Errorf("the platform offers commands %q; want status and deny", names)
	}
	// A new table replaces the old one.
	if err := reg.RegisterCommands(ctx, []channels.Command{{Name: "help", Description: "List commands"}}); err != nil {
		t.Fatalf("RegisterCommands again: %v", err)
	}
	if !eventually(ctx, func() bool { names = lister.Commands(); return has(names, "help") && !has(names, "status") }) {
		t.Errorf("after registering only help the platform offers %q", names)
	}
}

func testDM(t *testing.T, s Subject) {
	dm, ok := s.Adapter.(channels.DirectMessenger)
	if !ok {
		t.Skip("the adapter has no DM ability")
	}
	h := newSuiteHandler()
	start(t, s, h)
	ctx, cancel := deadline(t)
	defer cancel()
	user, _ := s.Platform.Users()
	loc, err := dm.DirectLocation(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Channel != s.Adapter.Name() || loc.ChatID == "" {
		t.Fatalf("DirectLocation(%s) = %+v", user, loc)
	}
	ref, err := s.Adapter.Send(ctx, loc, channels.TextMessage("direct hello dm7"))
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(ctx, func() bool {
		for _, m := range s.Platform.Shown(loc) {
			if m.ID == ref.ID && strings.Contains(m.Text, "dm7") {
				return true
			}
		}
		return false
	}) {
		t.Error("the DM does not show the message")
	}
	// What the user writes in that chat arrives at the same location: one
	// conversation, whether the gateway or the person spoke first.
	if _, err := s.Platform.Deliver(ctx, loc, user, "direct answer dm8"); err != nil {
		t.Fatal(err)
	}
	in := receive(t, ctx, h.inbounds, "the user's message in the DM")
	if in.Location != loc {
		t.Errorf("the user's DM arrives at %+v; DirectLocation named %+v: two locations for one chat", in.Location, loc)
	}
	if !in.DirectMessage {
		t.Error("the user's message in the DM is not marked DirectMessage")
	}
}

package channelstest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// DirectLocation implements channels.DirectMessenger: the fake's DM with a
// user is the chat "dm-<user>".
func (a *Adapter) DirectLocation(ctx context.Context, userID string) (channels.Location, error) {
	return channels.Location{Channel: a.name, ChatID: "dm-" + userID}, nil
}

// RegisterCommands implements channels.CommandRegistrar: the fake keeps the
// last table (Commands returns it).
func (a *Adapter) RegisterCommands(ctx context.Context, cmds []channels.Command) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fake register commands: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.commands = append([]channels.Command(nil), cmds...)
	return nil
}

// Commands returns the table the last RegisterCommands call registered.
func (a *Adapter) Commands() []channels.Command {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]channels.Command(nil), a.commands...)
}

// FakePlatform is the conformance Platform of the fake Adapter: a platform
// that redelivers an event until OnInbound accepts it.
type FakePlatform struct {
	A *Adapter

	mu    sync.Mutex
	acked map[string]bool
	next  atomic.Int64
	wg    sync.WaitGroup
}

// NewFakePlatform returns the platform behind a.
func NewFakePlatform(a *Adapter) *FakePlatform {
	return &FakePlatform{A: a, acked: map[string]bool{}}
}

// Chat implements Platform.
func (p *FakePlatform) Chat() channels.Location {
	return channels.Location{Channel: p.A.Name(), ChatID: "group-1"}
}

// Users implements Platform.
func (p *FakePlatform) Users() (string, string) { return "u1", "u2" }

// Deliver implements Platform: the event is handed to the adapter's handler
// until it returns nil.
func (p *FakePlatform) Deliver(ctx context.Context, loc channels.Location, user, text string) (string, error) {
	id := "ev" + strconv.FormatInt(p.next.Add(1), 10)
	in := channels.Inbound{EventID: id, Location: loc, User: channels.User{ID: user}, Text: text, Mentioned: true,
		DirectMessage: strings.HasPrefix(loc.ChatID, "dm-"), MessageID: id, At: time.Now()}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for ctx.Err() == nil {
			if err := p.A.Inbound(ctx, in); err == nil {
				p.mu.Lock()
				p.acked[id] = true
				p.mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond): // the platform's redelivery delay
			}
		}
	}()
	return id, nil
}

// AcksEvents implements Platform.
func (p *FakePlatform) AcksEvents() bool { return true }

// Acked implements Platform.
func (p *FakePlatform) Acked(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked[id]
}

// Shown implements Platform. A message whose rendering needs several chunks
// shows as that many messages, as on a platform with a length limit: the
// first has the message's id and its buttons, the others the id with
// "/2", "/3", … appended.
func (p *FakePlatform) Shown(loc channels.Location) []Shown {
	var out []Shown
	caps := p.A.Capabilities()
	for _, m := range p.A.Posted(loc) {
		if m.Deleted {
			continue
		}
		chunks := channels.RenderMessage(m.Message, caps)
		if len(chunks) == 0 {
			chunks = []string{""}
		}
		for i, c := range chunks {
			sh := Shown{ID: m.Ref.ID, Text: c}
			if i > 0 {
				sh.ID += "/" + strconv.Itoa(i+1)
			} else {
				for _, row := range m.Message.ButtonRows() {
					for _, b := range row {
						sh.Tokens = append(sh.Tokens, b.Token)
					}
				}
			}
			out = append(out, sh)
		}
	}
	return out
}

// Press implements Platform.
func (p *FakePlatform) Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error) {
	r, err := p.A.Press(ctx, channels.Action{EventID: "press-" + strconv.FormatInt(p.next.Add(1), 10), Location: loc,
		User: channels.User{ID: user}, Token: token, Message: channels.MessageRef{Location: loc, ID: msgID}})
	return r.Text, err
}

// Commands implements CommandLister: the names of the fake's registered
// commands.
func (p *FakePlatform) Commands() []string {
	var names []string
	for _, c := range p.A.Commands() {
		names = append(names, c.Name)
	}
	return names
}

// FailNext implements Failer.
func (p *FakePlatform) FailNext(retryAfter time.Duration) {
	if retryAfter < 0 {
		p.A.FailSends(1, channels.Permanent(errNotFound))
		return
	}
	p.A.FailSends(1, &channels.RateLimitError{RetryAfter: retryAfter})
}

// Wait waits for the platform's delivery goroutines (after their context
// ended).
func (p *FakePlatform) Wait() { p.wg.Wait() }

type fakeError string

func (e fakeError) Error() string { return string(e) }

const errNotFound = fakeError("fake platform: chat not found")

package channelstest_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
)

// The fake adapter passes the suite, for every mix of capabilities the
// gateway tests use.
func TestFakeConformance(t *testing.T) {
	for name, caps := range map[string]channels.Capabilities{
		"telegram-like": {MaxMessageLen: 4096, Edit: true, Buttons: true, Typing: true, TypingEvery: 4 * time.Second, Upload: true, Dialect: channels.TelegramHTML},
		"no-edit":       {MaxMessageLen: 2000, Dialect: channels.DiscordMarkdown},
		"unlimited":     {Edit: true, Buttons: true, Ephemeral: true, RichParts: true, Dialect: channels.HTML},
	} {
		t.Run(name, func(t *testing.T) {
			channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
				a := channelstest.New("fake", caps)
				p := channelstest.NewFakePlatform(a)
				t.Cleanup(p.Wait)
				return channelstest.Subject{Adapter: a, Platform: p}
			})
		})
	}
}

// oneShot is a platform that, like a browser, delivers each event once and
// is told whether it was accepted (a NoRedelivery), and that cannot refuse
// sends (no Failer).
type oneShot struct {
	a    *channelstest.Adapter
	next atomic.Int64
	wg   sync.WaitGroup

	mu      sync.Mutex
	outcome map[string]error // set once OnInbound returned
}

func (p *oneShot) Chat() channels.Location {
	return channels.Location{Channel: p.a.Name(), ChatID: "page-1"}
}
func (p *oneShot) Users() (string, string) { return "owner", "" }
func (p *oneShot) AcksEvents() bool        { return true }

func (p *oneShot) Deliver(ctx context.Context, loc channels.Location, user, text string) (string, error) {
	id := "post" + strconv.FormatInt(p.next.Add(1), 10)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := p.a.Inbound(ctx, channels.Inbound{EventID: id, Location: loc, User: channels.User{ID: user}, Text: text, DirectMessage: true})
		p.mu.Lock()
		p.outcome[id] = err
		p.mu.Unlock()
	}()
	return id, nil
}

func (p *oneShot) answered(id string) (error, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	err, ok := p.outcome[id]
	return err, ok
}

func (p *oneShot) Acked(id string) bool   { err, ok := p.answered(id); return ok && err == nil }
func (p *oneShot) Refused(id string) bool { err, ok := p.answered(id); return ok && err != nil }

func (p *oneShot) Shown(loc channels.Location) []channelstest.Shown {
	return channelstest.NewFakePlatform(p.a).Shown(loc)
}

func (p *oneShot) Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error) {
	return channelstest.NewFakePlatform(p.a).Press(ctx, loc, msgID, token, user)
}

// A platform without redelivery, refusals or a second person runs the
// suite's other paths.
func TestOneShotConformance(t *testing.T) {
	caps := channels.Capabilities{Edit: true, Buttons: true, Typing: true, Dialect: channels.HTML}
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		p := &oneShot{a: channelstest.New("page", caps), outcome: map[string]error{}}
		t.Cleanup(p.wg.Wait)
		return channelstest.Subject{Adapter: p.a, Platform: p}
	})
}

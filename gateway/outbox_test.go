package gateway_test

import (
	"context"
	"testing"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
)

// slowChat holds every send to one chat until released.
type slowChat struct {
	*channelstest.Adapter
	chat    string
	release chan struct{}
}

func (s *slowChat) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	if loc.ChatID == s.chat {
		select {
		case <-s.release:
		case <-ctx.Done():
			return channels.MessageRef{}, ctx.Err()
		}
	}
	return s.Adapter.Send(ctx, loc, m)
}

// A chat whose platform is slow does not hold up replies to other chats.
func TestSlowChatDoesNotBlockOthers(t *testing.T) {
	fake := channelstest.New("chat", channels.Capabilities{MaxMessageLen: 4000, Buttons: true, Dialect: channels.Plain})
	slow := &slowChat{Adapter: fake, chat: "dm-alice", release: make(chan struct{})}
	h := newHarnessWith(t, harnessOpts{}, slow)
	h.chat = fake
	h.model.SetResponder(echo)
	if err := fake.WaitStarted(h.ctx()); err != nil {
		t.Fatal(err)
	}
	h.send(inbound("a1", "alice", "to the slow chat", dm))
	waitRequests(t, h, 1)
	bob := channels.Location{Channel: "chat", Account: "bot", ChatID: "dm-bob"}
	h.send(inbound("b1", "bob", "to the fast chat", bob))
	waitText(t, fake, "echo: to the fast chat")
	close(slow.release)
	waitText(t, fake, "echo: to the slow chat")
}

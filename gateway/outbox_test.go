package gateway_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// slowChat holds every send to one chat (every chat when chat is "")
// until released.
type slowChat struct {
	*channelstest.Adapter
	chat    string
	release chan struct{}
}

func (s *slowChat) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	if s.chat == "" || loc.ChatID == s.chat {
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

// lossyChat records every send and fails the first one to a chat after the
// platform took it (its answer lost), as a killed process or a timeout
// would leave it.
type lossyChat struct {
	*channelstest.Adapter
	mu    sync.Mutex
	sends []channels.Message
}

func (l *lossyChat) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	l.mu.Lock()
	l.sends = append(l.sends, m)
	first := len(l.sends) == 1
	l.mu.Unlock()
	ref, err := l.Adapter.Send(ctx, loc, m)
	if first {
		return channels.MessageRef{}, errors.New("connection reset while reading the answer")
	}
	return ref, err
}

func (l *lossyChat) sent() []channels.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sends)
}

// A send retried after an attempt whose outcome is unknown tells the
// adapter it may have been posted already (so Slack can find it by key);
// a first attempt does not. The same holds for items a dead process left:
// the next process's first attempt may be a second post.
func TestRetriedSendSaysItMayBeSentAlready(t *testing.T) {
	fake := channelstest.New("chat", channels.Capabilities{MaxMessageLen: 4000, Buttons: true, Dialect: channels.Plain})
	lossy := &lossyChat{Adapter: fake}
	h := newHarnessWith(t, harnessOpts{}, lossy)
	h.chat = fake
	if err := fake.WaitStarted(h.ctx()); err != nil {
		t.Fatal(err)
	}
	h.send(inbound("s1", "alice", "/status", dm))
	eventually(t, "the retried reply", func() bool { return len(lossy.sent()) >= 2 })
	sends := lossy.sent()
	if !sends[0].MaybeSentSince.IsZero() {
		t.Errorf("the first attempt says it may be sent already (%v)", sends[0].MaybeSentSince)
	}
	if sends[1].MaybeSentSince.IsZero() || sends[1].Key != sends[0].Key || sends[1].Key == "" {
		t.Errorf("the retry: key %q (first %q), maybe sent since %v; want the same key, maybe sent", sends[1].Key, sends[0].Key, sends[1].MaybeSentSince)
	}
}

// cardLossyChat fails the first send of a message with buttons after the
// platform took it (the card's send-then-crash window); the rest go
// through.
type cardLossyChat struct {
	*channelstest.Adapter
	mu    sync.Mutex
	cards []channels.Message
}

func (l *cardLossyChat) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	ref, err := l.Adapter.Send(ctx, loc, m)
	if len(m.ButtonRows()) == 0 {
		return ref, err
	}
	l.mu.Lock()
	l.cards = append(l.cards, m)
	first := len(l.cards) == 1
	l.mu.Unlock()
	if first {
		return channels.MessageRef{}, errors.New("connection reset while reading the answer")
	}
	return ref, err
}

// A retried approval card carries what the outbox has on record in its
// chat (PostedBefore, PostedSince), so that an adapter that cannot find
// the lost copy by key (Telegram) can disarm it; a first attempt carries
// nothing.
func TestRetriedCardCarriesTheChatsRecord(t *testing.T) {
	fake := channelstest.New("chat", channels.Capabilities{MaxMessageLen: 4000, Buttons: true, Dialect: channels.Plain})
	lossy := &cardLossyChat{Adapter: fake}
	h := newHarnessWith(t, harnessOpts{}, lossy, fakemodel.Step{Text: "first answer"}, bashCall("c1", "touch retried-card"), fakemodel.Step{Text: "done"})
	h.chat = fake
	if err := fake.WaitStarted(h.ctx()); err != nil {
		t.Fatal(err)
	}
	h.send(inbound("r1", "alice", "hello", dm))
	waitText(t, fake, "first answer")
	h.send(inbound("r2", "alice", "make the file", dm))
	eventually(t, "the retried card", func() bool {
		lossy.mu.Lock()
		defer lossy.mu.Unlock()
		return len(lossy.cards) >= 2
	})
	lossy.mu.Lock()
	first, retry := lossy.cards[0], lossy.cards[1]
	lossy.mu.Unlock()
	if first.PostedSince != nil || first.PostedBefore != "" {
		t.Errorf("the first attempt carries a record: before %q, since %v", first.PostedBefore, first.PostedSince)
	}
	// The fake's message ids are not numbers, so the record is empty; it
	// is there (not nil), and ChatPosts itself is tested in store.
	if retry.MaybeSentSince.IsZero() || retry.PostedSince == nil {
		t.Errorf("the retry: maybe sent since %v, before %q, since %v; want the chat's record", retry.MaybeSentSince, retry.PostedBefore, retry.PostedSince)
	}
}

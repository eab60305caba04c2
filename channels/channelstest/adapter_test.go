package channelstest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
)

// echo is a Handler that answers every inbound by sending its text back and
// refuses presses by anyone but "owner".
type echo struct {
	a *channelstest.Adapter
}

func (e echo) OnInbound(ctx context.Context, in channels.Inbound) error {
	_, err := e.a.Send(ctx, in.Location, channels.TextMessage("you said: **"+in.Text+"**"))
	return err
}

func (e echo) OnAction(ctx context.Context, act channels.Action) (channels.ActionReply, error) {
	if act.User.ID != "owner" {
		return channels.ActionReply{Text: "only the owner can approve this", Alert: true}, nil
	}
	return channels.ActionReply{Text: "approved"}, nil
}

func start(t *testing.T, caps channels.Capabilities) (*channelstest.Adapter, context.Context) {
	t.Helper()
	a := channelstest.New("fake", caps)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, echo{a: a}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	})
	if err := a.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	return a, ctx
}

var loc = channels.Location{Channel: "fake", Account: "bot", ChatID: "c1", ThreadID: "t1"}

func TestInboundSendRecorded(t *testing.T) {
	a, ctx := start(t, channels.Capabilities{Dialect: channels.TelegramHTML, Edit: true})
	if err := a.Inbound(ctx, channels.Inbound{Location: loc, Text: "hi <there>"}); err != nil {
		t.Fatal(err)
	}
	sent := a.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d messages, want 1:%s", len(sent), channelstest.Summary(a.Records()))
	}
	if got, want := sent[0].Text(), "you said: <b>hi &lt;there&gt;</b>"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
	if sent[0].Location != loc || sent[0].Ref.ID == "" {
		t.Errorf("record = %+v", sent[0])
	}
	if err := a.Edit(ctx, sent[0].Ref, channels.TextMessage("edited")); err != nil {
		t.Fatal(err)
	}
	m, ok := a.Message(sent[0].Ref)
	if !ok || m.Markdown() != "edited" {
		t.Errorf("after edit: %v %q", ok, m.Markdown())
	}
	if p := a.Posted(loc); len(p) != 1 || p[0].Edits != 1 {
		t.Errorf("posted = %+v", p)
	}
}

func TestPressReply(t *testing.T) {
	a, ctx := start(t, channels.Capabilities{Buttons: true})
	tests := []struct {
		user string
		want channels.ActionReply
	}{
		{"mallory", channels.ActionReply{Text: "only the owner can approve this", Alert: true}},
		{"owner", channels.ActionReply{Text: "approved"}},
	}
	for _, tc := range tests {
		got, err := a.Press(ctx, channels.Action{Location: loc, User: channels.User{ID: tc.user}, Token: "tok"})
		if err != nil || got != tc.want {
			t.Errorf("press by %s = %+v, %v; want %+v", tc.user, got, err, tc.want)
		}
	}
	if _, err := a.Press(ctx, channels.Action{Token: strings.Repeat("x", 65)}); err == nil {
		t.Error("a 65-byte token was accepted")
	}
}

func TestFailures(t *testing.T) {
	a, ctx := start(t, channels.Capabilities{})
	rl := &channels.RateLimitError{RetryAfter: 3 * time.Second}
	a.FailSends(1, rl)
	a.FailSends(1, nil)
	_, err := a.Send(ctx, loc, channels.TextMessage("one"))
	if d, ok := channels.RetryAfter(err); !ok || d != 3*time.Second {
		t.Errorf("first send: %v, want rate limit 3s", err)
	}
	_, err = a.Send(ctx, loc, channels.TextMessage("two"))
	if err == nil || channels.IsPermanent(err) {
		t.Errorf("second send: %v, want a transient error", err)
	}
	if _, err := a.Send(ctx, loc, channels.TextMessage("three")); err != nil {
		t.Errorf("third send: %v", err)
	}
	// Without Edit capability, edits fail permanently with ErrNotSupported.
	ref := a.Sent()[0].Ref
	if err := a.Edit(ctx, ref, channels.TextMessage("x")); !channels.IsPermanent(err) || !errors.Is(err, channels.ErrNotSupported) {
		t.Errorf("edit without capability: %v", err)
	}
	a.SetCapabilities(channels.Capabilities{Edit: true})
	a.FailEdits(1, nil)
	if err := a.Edit(ctx, ref, channels.TextMessage("x")); err == nil || channels.IsPermanent(err) {
		t.Errorf("injected edit failure: %v", err)
	}
	if err := a.Edit(ctx, channels.MessageRef{Location: loc, ID: "nope"}, channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("edit of unknown message: %v", err)
	}
	bad := channels.Message{Parts: []channels.Part{channels.Buttons{Rows: [][]channels.Button{{{Label: "Approve", Token: strings.Repeat("t", 65)}}}}}}
	if _, err := a.Send(ctx, loc, bad); !channels.IsPermanent(err) {
		t.Errorf("send with a too long token: %v, want permanent", err)
	}
	if n := len(channelstest.Filter(a.Records(), func(r channelstest.Record) bool { return r.Err != nil })); n != 6 {
		t.Errorf("%d failed calls recorded, want 6:%s", n, channelstest.Summary(a.Records()))
	}
}

func TestWaitForConcurrent(t *testing.T) {
	a, ctx := start(t, channels.Capabilities{Dialect: channels.Plain})
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := a.Inbound(ctx, channels.Inbound{Location: loc, Text: "msg" + string(rune('a'+i))}); err != nil {
				t.Error(err)
			}
		})
	}
	recs, err := a.WaitFor(ctx, channelstest.Count(n, func(r channelstest.Record) bool { return r.Op == channelstest.OpSend }))
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Ref.ID] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct message ids, want %d", len(seen), n)
	}
	if _, err := a.WaitFor(ctx, channelstest.Count(1, channelstest.Contains("you said: msgc"))); err != nil {
		t.Error(err)
	}
}

func TestWaitForTimesOut(t *testing.T) {
	a := channelstest.New("fake", channels.Capabilities{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.WaitFor(ctx, func([]channelstest.Record) bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor on a cancelled context: %v", err)
	}
	if err := a.Inbound(ctx, channels.Inbound{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Inbound before Start with a cancelled context: %v", err)
	}
}

func TestFailStart(t *testing.T) {
	a := channelstest.New("fake", channels.Capabilities{})
	want := errors.New("bad token")
	a.FailStart(want)
	if err := a.Start(context.Background(), echo{a: a}); !errors.Is(err, want) {
		t.Errorf("Start = %v, want %v", err, want)
	}
}

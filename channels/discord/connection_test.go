package discord

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	dt "github.com/switchboard-gw/switchboard/channels/discord/discordtest"
)

// bindings is a Locations hook: the locations "bound" so far.
type bindings struct {
	mu   sync.Mutex
	locs []channels.Location
}

func (b *bindings) add(l channels.Location) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.locs = append(b.locs, l)
}

func (b *bindings) Locations(context.Context) ([]channels.Location, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Another channel's bindings are skipped by the adapter.
	return append([]channels.Location{{Channel: "telegram", ChatID: "42"}}, b.locs...), nil
}

func TestDroppedConnectionResumesAndHandsOverOnce(t *testing.T) {
	e := start(t, nil)
	e.srv.Post(dt.TextChannelID, dt.UserID, "before the drop", dt.Mention())
	in := e.rec.inboundWith(t, e.ctx, "before the drop")
	ref, err := e.a.Send(e.ctx, in.Location, channels.TextMessage("Working…"))
	if err != nil {
		t.Fatal(err)
	}
	// Mid-stream, the network drops; messages keep coming meanwhile.
	e.srv.RefuseConnections(true)
	e.srv.DropConnection()
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("Working… still")); err != nil {
		t.Fatalf("edit while the gateway is down: %v", err)
	}
	e.srv.Post(in.Location.ThreadID, dt.UserID, "while down")
	if err := e.srv.WaitGateway(e.ctx, "a refused reconnect", func(s dt.GatewayStats) bool { return s.Refused > 0 }); err != nil {
		t.Fatal(err)
	}
	e.srv.RefuseConnections(false)
	if err := e.srv.WaitGateway(e.ctx, "a resume", func(s dt.GatewayStats) bool { return s.Resumes == 1 && s.Live }); err != nil {
		t.Fatal(err)
	}
	e.rec.inboundWith(t, e.ctx, "while down")
	if err := e.a.Edit(e.ctx, ref, channels.TextMessage("Done.")); err != nil {
		t.Fatal(err)
	}
	e.srv.Post(in.Location.ThreadID, dt.UserID, "after the resume")
	e.rec.inboundWith(t, e.ctx, "after the resume")
	for _, s := range []string{"before the drop", "while down", "after the resume"} {
		if n := e.rec.count(s); n != 1 {
			t.Errorf("%q handed over %d times", s, n)
		}
	}
	if st := e.srv.Stats(); st.Identifies != 1 {
		t.Errorf("%d IDENTIFYs; a resumable drop must resume", st.Identifies)
	}
	if m, _ := e.srv.Message(ref.ID); m.Content != "Done." {
		t.Errorf("the answer reads %q", m.Content)
	}
}

func TestInvalidSessionCatchesUpOnce(t *testing.T) {
	b := &bindings{}
	e := start(t, func(o *Options) { o.Locations = b.Locations })
	e.srv.Post(dt.TextChannelID, dt.UserID, "open a thread", dt.Mention())
	in := e.rec.inboundWith(t, e.ctx, "open a thread")
	b.add(in.Location) // the gateway bound the thread to a conversation
	if _, err := e.a.Send(e.ctx, in.Location, channels.TextMessage("On it.")); err != nil {
		t.Fatal(err)
	}
	seenLast := e.srv.Post(in.Location.ThreadID, dt.UserID, "seen before")
	e.rec.inboundWith(t, e.ctx, "seen before")

	// The session ends while the bot is away; what is posted meanwhile is
	// never dispatched.
	e.srv.RefuseConnections(true)
	e.srv.InvalidateSession()
	missed := e.srv.Post(in.Location.ThreadID, dt.UserID, "posted while away")
	e.srv.Post(dt.TextChannelID, dt.UserID, "unbound channel chatter")
	if err := e.srv.WaitGateway(e.ctx, "a refused reconnect", func(s dt.GatewayStats) bool { return s.Refused > 0 }); err != nil {
		t.Fatal(err)
	}
	e.srv.RefuseConnections(false)
	got := e.rec.inboundWith(t, e.ctx, "posted while away")
	if got.EventID != missed || got.Location != in.Location || got.Mentioned {
		t.Errorf("caught-up inbound %+v: want event %s at the thread", got, missed)
	}
	// New messages flow again, and nothing was handed over twice.
	e.srv.Post(in.Location.ThreadID, dt.UserID, "after the catch-up")
	e.rec.inboundWith(t, e.ctx, "after the catch-up")
	for _, s := range []string{"open a thread", "seen before", "posted while away", "after the catch-up"} {
		if n := e.rec.count(s); n != 1 {
			t.Errorf("%q handed over %d times", s, n)
		}
	}
	if n := e.rec.count("unbound channel chatter"); n != 0 {
		t.Error("catch-up read a channel that is not bound")
	}
	if st := e.srv.Stats(); st.Identifies != 2 {
		t.Errorf("%d IDENTIFYs, want 2 (the resume was refused)", st.Identifies)
	}
	// Catch-up asked for what came after the newest message it had seen
	// there (the bot's own answer counts, and the user's last message).
	var after []string
	for _, c := range e.srv.Calls("GET /channels/" + in.Location.ThreadID + "/messages") {
		u, _ := url.Parse(c.Path)
		after = append(after, u.Query().Get("after"))
	}
	if len(after) != 1 || after[0] != seenLast {
		t.Errorf("catch-up reads after %v; want one read after %s (the newest seen)", after, seenLast)
	}
}

func TestCatchUpAtStart(t *testing.T) {
	srv := dt.New(t)
	// Posted before the bot connects: an hour and more ago, and recently.
	srv.Post(dt.TextChannelID, dt.UserID, "two hours ago", dt.Mention(), dt.PostedAt(time.Now().Add(-2*time.Hour)))
	recent := srv.Post(dt.TextChannelID, dt.UserID, "ten minutes ago", dt.Mention(), dt.PostedAt(time.Now().Add(-10*time.Minute)))
	srv.Post(dt.TextChannelID, dt.OtherBotID, "a bot, recently", dt.PostedAt(time.Now().Add(-5*time.Minute)))
	b := &bindings{}
	b.add(loc(dt.TextChannelID, ""))
	logs := &logBuffer{}
	a := newTestAdapter(t, srv, logs, func(o *Options) { o.Locations = b.Locations })
	rec := newRecorder()
	ctx := runAdapter(t, a, rec)
	in := rec.inboundWith(t, ctx, "ten minutes ago")
	// Caught up through the live path: the mention opened a thread.
	if in.EventID != recent || in.Location != loc(dt.TextChannelID, recent) || !in.Mentioned {
		t.Errorf("caught-up inbound %+v", in)
	}
	srv.Post(recent, dt.UserID, "sentinel")
	rec.inboundWith(t, ctx, "sentinel")
	if rec.count("two hours ago") != 0 || rec.count("a bot") != 0 {
		t.Errorf("catch-up handed over old or bot messages:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "catch-up handed over") {
		t.Error("catch-up not logged")
	}
}

// A fresh start catches up a busy channel from its newest messages: more
// than the pages catch-up reads were posted since its floor, and the one
// posted while the bot was away is the newest (the crash campaign lost such
// a message when catch-up read forward from the floor).
func TestCatchUpAtStartOfABusyChannel(t *testing.T) {
	srv := dt.New(t)
	for i := range catchUpPages*catchUpPage + 50 {
		srv.Post(dt.TextChannelID, dt.OtherBotID, fmt.Sprintf("noise %d", i), dt.PostedAt(time.Now().Add(-30*time.Minute)))
	}
	away := srv.Post(dt.TextChannelID, dt.UserID, "posted while away", dt.Mention(), dt.PostedAt(time.Now().Add(-time.Minute)))
	b := &bindings{}
	b.add(loc(dt.TextChannelID, ""))
	logs := &logBuffer{}
	a := newTestAdapter(t, srv, logs, func(o *Options) { o.Locations = b.Locations })
	rec := newRecorder()
	ctx := runAdapter(t, a, rec)
	if in := rec.inboundWith(t, ctx, "posted while away"); in.EventID != away {
		t.Errorf("caught-up inbound %+v", in)
	}
	if !strings.Contains(logs.String(), "catch-up read only the newest") {
		t.Error("the skipped older messages were not logged")
	}
}

func TestZombieConnectionIsReopened(t *testing.T) {
	e := start(t, func(o *Options) { o.StaleAfter = 1500 * time.Millisecond }, dt.HeartbeatInterval(time.Second))
	e.srv.StopAcks(true)
	if err := e.srv.WaitGateway(e.ctx, "a reconnect after missing acks", func(s dt.GatewayStats) bool { return s.Connects >= 2 }); err != nil {
		t.Fatal(err)
	}
	e.srv.StopAcks(false)
	if err := e.srv.WaitGateway(e.ctx, "a resume", func(s dt.GatewayStats) bool { return s.Resumes >= 1 && s.Live }); err != nil {
		t.Fatal(err)
	}
	e.srv.Post(dt.TextChannelID, dt.UserID, "alive again", dt.Mention())
	e.rec.inboundWith(t, e.ctx, "alive again")
	if !strings.Contains(e.logs.String(), "gateway silent") {
		t.Error("the zombie connection was not reported")
	}
	if st := e.srv.Stats(); st.Identifies != 1 {
		t.Errorf("%d IDENTIFYs; the zombie's session should resume", st.Identifies)
	}
}

func TestIntentsIdentified(t *testing.T) {
	e := start(t, nil)
	if got := e.srv.Stats().Intents; got&dt.RequiredIntents != dt.RequiredIntents {
		t.Errorf("intents %b lack %b", got, dt.RequiredIntents)
	}
}

func TestStartStopsEveryGoroutine(t *testing.T) {
	srv := dt.New(t)
	a := newTestAdapter(t, srv, &logBuffer{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, blockingHandler{}) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := srv.WaitGateway(wctx, "a live connection", func(s dt.GatewayStats) bool { return s.Live }); err != nil {
		t.Fatal(err)
	}
	// The worker is stuck in OnInbound and the queue fills, so discordgo's
	// reader blocks in the adapter's event handler: ending Start must still
	// release it.
	srv.Post(dt.TextChannelID, dt.UserID, "block", dt.Mention())
	for range cap(a.events) + 10 {
		srv.Post(dt.VoiceID, dt.OtherBotID, "noise")
	}
	if !eventually(wctx, func() bool { return len(a.events) == cap(a.events) }) {
		t.Fatal("the queue did not fill")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ours := func() string {
		buf := make([]byte, 1<<20)
		var left []string
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "channels/discord.(*Adapter)") || strings.Contains(g, "bwmarrin/discordgo.(*Session).listen") ||
				strings.Contains(g, "bwmarrin/discordgo.(*Session).heartbeat") {
				left = append(left, g)
			}
		}
		return strings.Join(left, "\n\n")
	}
	if !eventually(wctx, func() bool { return ours() == "" }) {
		t.Errorf("goroutines left after Start returned:\n%s", ours())
	}
}

// blockingHandler holds every message until its context ends.
type blockingHandler struct{}

func (blockingHandler) OnInbound(ctx context.Context, _ channels.Inbound) error {
	<-ctx.Done()
	return ctx.Err()
}

func (blockingHandler) OnAction(context.Context, channels.Action) (channels.ActionReply, error) {
	return channels.ActionReply{}, nil
}

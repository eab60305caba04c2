package slack

import (
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// texts returns the texts of inbounds.
func texts(ins []channels.Inbound) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Text)
	}
	return out
}

// bindOnMention makes the recorder act like the gateway for threads: a
// mention binds its thread (the Threads hook lists it) and is answered in
// it.
func (e *env) bindOnMention(t *testing.T) {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	e.rec.then = func(in channels.Inbound) {
		if in.Mentioned && in.Location.ThreadID != "" {
			e.threads.add(in.Location)
		}
	}
}

func TestSilentSocketIsReplacedAndCaughtUp(t *testing.T) {
	e := start(t, ModeSocket, func(o *Options) { o.IdleTimeout = 800 * time.Millisecond },
		slacktest.PingEvery(50*time.Millisecond))
	e.bindOnMention(t)
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("watch the deploy"))
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	if _, err := e.a.Send(e.ctx, in.Location, channels.TextMessage("Watching.")); err != nil {
		t.Fatal(err)
	}
	// The socket stays open but goes deaf: no pings, no events. A reply
	// posted meanwhile never arrives as an event.
	e.srv.Silence()
	lost := e.srv.Post(slacktest.General, slacktest.Grace, "it failed, look at step 3", slacktest.InThread(root.TS))
	if !e.srv.Lost(lost.EventIDs[0]) {
		t.Fatal("the fake delivered the event of a silent socket")
	}
	got := e.rec.waitInbound(t, e.ctx, 2)
	if e.srv.Connections() < 2 {
		t.Errorf("the message arrived over %d connection(s); want a new one after the silence", e.srv.Connections())
	}
	caught := got[1]
	if caught.Text != "it failed, look at step 3" || caught.Location != in.Location || caught.EventID != slacktest.General+":"+lost.TS || !caught.ReplyToBot {
		t.Errorf("caught-up inbound %+v", caught)
	}
	if !strings.Contains(e.logs.String(), "silent") {
		t.Error("the reconnect after silence was not logged")
	}
	// Live events flow on the new connection, and catch-up does not hand
	// the message over twice.
	e.srv.Post(slacktest.General, slacktest.Grace, "also step 4", slacktest.InThread(root.TS))
	got = e.rec.waitInbound(t, e.ctx, 3)
	if diff := cmp.Diff([]string{"watch the deploy", "it failed, look at step 3", "also step 4"}, texts(got)); diff != "" {
		t.Errorf("inbounds (-want +got):\n%s", diff)
	}
}

func TestDroppedAndRefreshedSocketsReconnect(t *testing.T) {
	e := start(t, ModeSocket, nil)
	e.bindOnMention(t)
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("hello"))
	e.rec.waitInbound(t, e.ctx, 1)
	// Lost by Slack (no event), then the socket drops: the catch-up after
	// the reconnect finds it.
	e.srv.Post(slacktest.General, slacktest.Ada, "missed while dropped", slacktest.InThread(root.TS), slacktest.Quietly())
	e.srv.Drop()
	got := e.rec.waitInbound(t, e.ctx, 2)
	if got[1].Text != "missed while dropped" {
		t.Errorf("after the drop got %q", got[1].Text)
	}
	n := e.srv.Connections()
	e.srv.Refresh()
	if err := e.srv.WaitFor(e.ctx, "a new connection after the refresh request", func() bool {
		return e.srv.Connections() > n && e.srv.Connected()
	}); err != nil {
		t.Fatal(err)
	}
	e.srv.Post(slacktest.General, slacktest.Ada, "after the refresh", slacktest.InThread(root.TS))
	got = e.rec.waitInbound(t, e.ctx, 3)
	if len(got) != 3 || got[2].Text != "after the refresh" {
		t.Errorf("inbounds %q", texts(got))
	}
}

func TestCatchUpAtStart(t *testing.T) {
	e := setup(t, ModeSocket, nil)
	// History from before this process: a thread where the bot was
	// mentioned and answered; then, while it was down, more replies.
	root := e.srv.Post(slacktest.General, slacktest.Ada, "lunch plans?", slacktest.Quietly())
	e.srv.Post(slacktest.General, slacktest.Grace, "pizza", slacktest.InThread(root.TS), slacktest.Quietly())
	asked := e.srv.Post(slacktest.General, slacktest.Ada, mention("book a table"), slacktest.InThread(root.TS), slacktest.Quietly())
	loc := generalThread(root.TS)
	if _, err := e.a.Send(e.ctx, loc, channels.TextMessage("Booked for 12:30.")); err != nil {
		t.Fatal(err)
	}
	missed := e.srv.Post(slacktest.General, slacktest.Grace, "make it 4 people", slacktest.InThread(root.TS), slacktest.Quietly())
	stop := e.srv.Post(slacktest.General, slacktest.Ada, "/stop", slacktest.InThread(root.TS), slacktest.Quietly())
	dm := e.srv.DM(slacktest.Ada)
	dmMissed := e.srv.Post(dm, slacktest.Ada, "are you there?", slacktest.Quietly())
	e.threads.add(loc)
	e.threads.add(channels.Location{Channel: Name, Account: slacktest.TeamID, ChatID: dm})
	e.threads.add(channels.Location{Channel: "telegram", ChatID: "42", ThreadID: "1"}) // not ours
	e.run(t)
	got := e.rec.waitInbound(t, e.ctx, 4)
	var ids []string
	for _, in := range got {
		ids = append(ids, in.EventID)
	}
	// The mention itself is handed over again (the gateway has it and
	// dedupes it), and so is the command (the gateway dedupes commands
	// too, also those it acts on at once); the reply from before the bot
	// joined is not.
	want := []string{slacktest.General + ":" + asked.TS, slacktest.General + ":" + missed.TS, slacktest.General + ":" + stop.TS, dm + ":" + dmMissed.TS}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("caught-up event ids (-want +got):\n%s", diff)
	}
	// A later catch-up (after a reconnect) hands nothing over twice.
	e.srv.Drop()
	if err := e.srv.WaitFor(e.ctx, "the reconnect", func() bool { return e.srv.Connections() >= 2 && e.srv.Connected() }); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.WaitFor(e.ctx, "the second catch-up", func() bool {
		return len(e.srv.Calls("conversations.replies")) >= 2 && len(e.srv.Calls("conversations.history")) >= 2
	}); err != nil {
		t.Fatal(err)
	}
	e.srv.Post(dm, slacktest.Ada, "new one")
	got = e.rec.waitInbound(t, e.ctx, 5)
	if len(got) != 5 || got[4].Text != "new one" {
		t.Errorf("after the reconnect: %q", texts(got))
	}
	calls := e.srv.Calls("conversations.replies")
	if oldest := calls[len(calls)-1].Params["oldest"]; oldest != stop.TS {
		t.Errorf("the second catch-up fetched after %s; want after the last message handed over (%s)", oldest, stop.TS)
	}
}

// A live message in a bound conversation waits for what was missed in it:
// while catch-up is busy with another thread, the live reply's own thread
// is caught up first, so the agent reads the missed reply before it.
func TestLiveEventAfterItsConversationsCatchUp(t *testing.T) {
	e := setup(t, ModeSocket, nil)
	busy := e.srv.Post(slacktest.General, slacktest.Ada, mention("thread one"), slacktest.Quietly())
	e.srv.Post(slacktest.General, slacktest.Ada, "hold me", slacktest.InThread(busy.TS), slacktest.Quietly())
	other := e.srv.Post(slacktest.General, slacktest.Grace, mention("thread two"), slacktest.Quietly())
	e.srv.Post(slacktest.General, slacktest.Grace, "missed in two", slacktest.InThread(other.TS), slacktest.Quietly())
	e.threads.add(generalThread(busy.TS))
	e.threads.add(generalThread(other.TS))
	release := make(chan struct{})
	e.rec.mu.Lock()
	e.rec.hold, e.rec.holdText = release, "hold me"
	e.rec.mu.Unlock()
	e.run(t)
	e.rec.wait(t, e.ctx, "catch-up busy with thread one", func() bool {
		return slices.ContainsFunc(e.rec.attempts, func(in channels.Inbound) bool { return in.Text == "hold me" })
	})
	live := e.srv.Post(slacktest.General, slacktest.Grace, "live in two", slacktest.InThread(other.TS))
	e.rec.wait(t, e.ctx, "the live reply", func() bool {
		return slices.ContainsFunc(e.rec.inbound, func(in channels.Inbound) bool { return in.Text == "live in two" })
	})
	if err := e.srv.WaitFor(e.ctx, "the live event acknowledged", func() bool { return e.srv.Acked(live.EventIDs[0]) }); err != nil {
		t.Fatal(err)
	}
	close(release)
	got := e.rec.waitInbound(t, e.ctx, 5)
	var two []string
	for _, in := range got {
		if in.Location.ThreadID == other.TS {
			two = append(two, in.Text)
		}
	}
	if want := []string{"<@" + slacktest.BotUserID + "> thread two", "missed in two", "live in two"}; !slices.Equal(two, want) &&
		!slices.Equal(two, []string{"thread two", "missed in two", "live in two"}) {
		t.Errorf("thread two reached the gateway as %q; want the missed reply before the live one", two)
	}
}

func TestStartLeavesNoGoroutines(t *testing.T) {
	tr := &http.Transport{}
	e := setup(t, ModeSocket, func(o *Options) { o.HTTPClient = &http.Client{Transport: tr} })
	base := runtime.NumGoroutine()
	e.run(t)
	e.bindOnMention(t)
	root := e.srv.Post(slacktest.General, slacktest.Ada, mention("hi"))
	in := e.rec.waitInbound(t, e.ctx, 1)[0]
	if _, err := e.a.Send(e.ctx, in.Location, channels.TextMessage("hello")); err != nil {
		t.Fatal(err)
	}
	e.srv.Post(slacktest.General, slacktest.Ada, "again", slacktest.InThread(root.TS), slacktest.Quietly())
	e.srv.Drop()
	e.rec.waitInbound(t, e.ctx, 2)
	e.stop()
	tr.CloseIdleConnections()
	eventually(t, e.ctx, "the adapter's goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dt "github.com/switchboard-gw/switchboard/channels/discord/discordtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

// discordEnv is an env with a fake Discord (in this process) and serve
// configured for it through api_url. Ada (dt.UserID) and Grace
// (dt.OtherUserID) may talk; nobody is an admin, so only the requester may
// decide an ask.
func discordEnv(t *testing.T, withAppID bool, steps ...fakemodel.Step) (*env, *dt.Server) {
	return discordEnvWith(t, withAppID, nil, steps...)
}

func discordEnvWith(t *testing.T, withAppID bool, opts []dt.Option, steps ...fakemodel.Step) (*env, *dt.Server) {
	e := newEnv(t, steps...)
	dc := dt.New(t, opts...)
	e.extra = append(e.extra, "DISCORD_BOT_TOKEN="+dt.Token())
	app := ""
	if withAppID {
		app = "application_id = \"" + dt.AppID + "\"\n"
	}
	e.writeServeConfig(`enabled = false

[channels.discord]
token = "${DISCORD_BOT_TOKEN}"
` + app + `api_url = "` + dc.URL() + `"
allow_users = ["` + dt.UserID + `", "` + dt.OtherUserID + `"]
edit_interval = "50ms"
`)
	return e, dc
}

// waitDC polls the fake until cond holds, and on failure shows what the
// bot did.
func waitDC(t *testing.T, dc *dt.Server, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, c := range dc.Calls("") {
				if !strings.Contains(c.Path, "/typing") {
					fmt.Fprintf(&b, "\n  %s %s %d %.160s", c.Method, c.Path, c.Status, c.Body)
				}
			}
			t.Fatalf("timed out waiting for %s\nREST calls:%s", what, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitIdentified waits for the n-th IDENTIFY: a (re)started serve is
// connected, so what the fake dispatches from now on reaches it.
func waitIdentified(t *testing.T, dc *dt.Server, n int) {
	t.Helper()
	waitDC(t, dc, fmt.Sprintf("IDENTIFY number %d", n), func() bool {
		s := dc.Stats()
		return s.Identifies >= n && s.Live
	})
}

// botMessages returns the bot's messages in a channel that are not deleted
// and satisfy keep (nil: all).
func botMessages(dc *dt.Server, channelID string, keep func(dt.Message) bool) []dt.Message {
	var out []dt.Message
	for _, m := range dc.Messages(channelID) {
		if m.Author.ID == dt.BotID && !m.Deleted && (keep == nil || keep(m)) {
			out = append(out, m)
		}
	}
	return out
}

func withText(s string) func(dt.Message) bool {
	return func(m dt.Message) bool { return strings.Contains(m.Content, s) }
}

// isAsk: an approval request (the live message has buttons too: Stop).
func isAsk(m dt.Message) bool { return strings.Contains(string(m.Components), `"label":"Approve"`) }

// waitBotMessage waits for a bot message in channelID satisfying keep.
func waitBotMessage(t *testing.T, dc *dt.Server, channelID, what string, keep func(dt.Message) bool) dt.Message {
	t.Helper()
	var found dt.Message
	waitDC(t, dc, what, func() bool {
		ms := botMessages(dc, channelID, keep)
		if len(ms) > 0 {
			found = ms[0]
			return true
		}
		return false
	})
	return found
}

// discordButton returns the custom id of the button labelled label.
func discordButton(t *testing.T, m dt.Message, label string) string {
	t.Helper()
	var rows []struct {
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal(m.Components, &rows); err != nil {
		t.Fatalf("components %s: %v", m.Components, err)
	}
	for _, r := range rows {
		for _, b := range r.Components {
			if b.Label == label {
				if len(b.CustomID) > 64 || strings.Contains(b.CustomID, "touch") {
					t.Fatalf("custom_id %q is not an opaque token", b.CustomID)
				}
				return b.CustomID
			}
		}
	}
	t.Fatalf("no %q button in %s", label, m.Components)
	return ""
}

// barrier makes a stranger DM the bot and waits for the pairing code: the
// adapter hands messages over one at a time in gateway order, so every
// message event dispatched before (and a catch-up before it) has been
// handed over and judged by the gateway once this returns.
func barrier(t *testing.T, dc *dt.Server, n int) {
	t.Helper()
	dm := fmt.Sprintf("82000000000000000%d", n)
	stranger := fmt.Sprintf("70000000000000005%d", n)
	dc.AddChannel(dt.Channel{ID: dm, Type: dt.TypeDM})
	dc.Post(dm, stranger, "hello?")
	waitBotMessage(t, dc, dm, "the pairing code in the stranger's DM", withText("pairing code"))
}

func interactionCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestDiscordEndToEnd drives the real binary through a fake Discord: slash
// commands registered from the gateway's table; a mention in a channel
// opens a thread and the answer streams there; a message in the thread
// needs no mention; a tool ask becomes buttons; another user's press gets
// an ephemeral refusal and nothing runs; SIGKILL and restart between the
// buttons and the press (the restart's catch-up and a redelivered mention
// start no turn); the requester's press runs the tool, the ask is edited
// and the answer arrives; /status is answered in the interaction.
func TestDiscordEndToEnd(t *testing.T) {
	hold := make(chan struct{})
	e, dc := discordEnv(t, true,
		fakemodel.Step{Text: "Hello from the agent, streamed in several pieces.", BlockMidStream: hold},
		bashStep("call_dc", "touch pressed-in-discord"),
	)
	p := e.startServe()
	waitIdentified(t, dc, 1)
	waitDC(t, dc, "the slash commands", func() bool {
		return strings.Contains(string(dc.Commands("global")), `"status"`)
	})

	// A mention in a channel: a thread from the message, the answer
	// streamed into it (sent, then edited).
	mention := dc.Post(dt.TextChannelID, dt.UserID, "hello", dt.Mention())
	thread := mention
	// While the model holds the stream the thread shows the start of the
	// answer; after it, the same message shows all of it.
	live := waitBotMessage(t, dc, thread, "the live answer in the thread", withText("Hello"))
	if strings.Contains(live.Content, "several pieces.") {
		t.Fatalf("the live message showed the whole answer while the model still streamed it: %q", live.Content)
	}
	close(hold)
	answer := waitBotMessage(t, dc, thread, "the answer in the thread", withText("several pieces."))
	if ch, ok := dc.Channel(thread); !ok || ch.Type != dt.TypePublicThread || ch.ParentID != dt.TextChannelID {
		t.Fatalf("thread = %+v, %v; want a public thread of the channel", ch, ok)
	}
	if answer.ID != live.ID || answer.Edits == 0 {
		t.Errorf("the answer is message %s with %d edits; want the live message %s edited", answer.ID, answer.Edits, live.ID)
	}
	if ms := botMessages(dc, dt.TextChannelID, nil); len(ms) != 0 {
		t.Errorf("the bot posted in the channel itself: %+v", ms)
	}
	if len(dc.Calls("POST /channels/"+thread+"/typing")) == 0 {
		t.Errorf("no typing indicator in the thread")
	}

	// In the thread no mention is needed; the tool ask becomes buttons.
	dc.Post(thread, dt.UserID, "make the file")
	ask := waitBotMessage(t, dc, thread, "the approval buttons", isAsk)
	approve := discordButton(t, ask, "Approve")

	// Grace may talk but not decide: an ephemeral refusal, nothing runs.
	ctx := interactionCtx(t)
	refused, err := dc.WaitFollowup(ctx, dc.PressButton(thread, ask.ID, approve, dt.OtherUserID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refused, "Only") {
		t.Fatalf("refusal = %q", refused)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "pressed-in-discord")); err == nil {
		t.Fatal("the tool ran after a refused press")
	}
	if m, _ := dc.Message(ask.ID); !isAsk(m) {
		t.Fatalf("the refused press changed the ask: %+v", m)
	}

	// SIGKILL and restart between the buttons and the press.
	waitOutboxIdle(t, e)
	p.kill()
	e.model.Push(fakemodel.Step{Text: "The file is there now."})
	e.startServe()
	waitIdentified(t, dc, 2)
	requests := len(e.model.Requests())
	// The restart's catch-up hands "make the file" over again, and the
	// mention arrives a second time: the gateway's dedupe drops both (a new
	// turn would also deny the ask as superseded).
	dc.Redispatch(mention)
	barrier(t, dc, 1)
	if n := len(e.model.Requests()); n != requests {
		t.Fatalf("a redelivered message started a turn (%d model requests, want %d)", n, requests)
	}

	// The requester's press: the tool runs, the ask shows the decision, the
	// answer arrives in the thread.
	ok, err := dc.WaitFollowup(ctx, dc.PressButton(thread, ask.ID, approve, dt.UserID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ok, "Approved") {
		t.Fatalf("press answer = %q", ok)
	}
	waitBotMessage(t, dc, thread, "the answer after the press", withText("The file is there now."))
	if _, err := os.Stat(filepath.Join(e.workspace, "pressed-in-discord")); err != nil {
		t.Fatal("the approved tool did not run")
	}
	waitDC(t, dc, "the ask edited to show the decision", func() bool {
		m, _ := dc.Message(ask.ID)
		return strings.Contains(m.Content, "Approved") && !isAsk(m)
	})
	if n := len(e.model.Requests()); n != requests+1 {
		t.Errorf("%d model requests after the press, want %d", n, requests+1)
	}

	// A slash command is acknowledged ephemerally and its answer replaces
	// the acknowledgement.
	cmd := dc.Command(thread, dt.UserID, "status", "")
	if _, err := dc.WaitCallback(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	waitDC(t, dc, "the /status answer", func() bool {
		in, _ := dc.Interaction(cmd)
		return in.Original != nil && strings.Contains(in.Original.Content, "test-model")
	})
}

// TestDiscordCatchUpAfterRestart: a message posted in a bound thread while
// serve was down is answered after the restart, once — also after a second
// restart, whose catch-up reads it again. Without application_id, commands
// are registered once READY names the application.
func TestDiscordCatchUpAfterRestart(t *testing.T) {
	e, dc := discordEnv(t, false, fakemodel.Step{Text: "First answer."})
	p := e.startServe()
	waitIdentified(t, dc, 1)
	thread := dc.Post(dt.TextChannelID, dt.UserID, "start", dt.Mention())
	waitBotMessage(t, dc, thread, "the first answer", withText("First answer."))
	waitDC(t, dc, "the slash commands (application id from READY)", func() bool {
		return strings.Contains(string(dc.Commands("global")), `"status"`)
	})
	waitOutboxIdle(t, e)
	p.kill()

	// Posted while serve is down: no dispatch reaches anyone.
	dc.Post(thread, dt.UserID, "did you miss me?")
	requests := len(e.model.Requests())
	e.model.Push(fakemodel.Step{Text: "Caught up."})
	p = e.startServe()
	waitIdentified(t, dc, 2)
	waitBotMessage(t, dc, thread, "the answer to the missed message", withText("Caught up."))
	reqs := e.model.Requests()
	if len(reqs) != requests+1 {
		t.Fatalf("%d model requests, want %d", len(reqs), requests+1)
	}
	if last := reqs[len(reqs)-1]; !strings.Contains(requestText(last), "did you miss me?") {
		t.Fatalf("the model did not see the missed message: %s", requestText(last))
	}

	// Another restart: catch-up reads the same hour again; nothing runs twice.
	waitOutboxIdle(t, e)
	p.kill()
	e.startServe()
	waitIdentified(t, dc, 3)
	barrier(t, dc, 1)
	if n := len(e.model.Requests()); n != requests+1 {
		t.Fatalf("%d model requests after the second restart, want %d", n, requests+1)
	}
	if pending := pendingItems(t, e); pending != 0 {
		t.Fatalf("%d queue items pending after the second restart's catch-up", pending)
	}
	if n := len(botMessages(dc, thread, withText("Caught up."))); n != 1 {
		t.Fatalf("the answer was posted %d times, want once", n)
	}
}

func requestText(r fakemodel.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(contentText(m))
		b.WriteByte('\n')
	}
	return b.String()
}

// pendingItems counts the queue items of the agent's conversations not yet
// done.
func pendingItems(t *testing.T, e *env) int {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	convs, err := db.ListConversations(ctx, "main", 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range convs {
		items, err := db.Pending(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		n += len(items)
	}
	return n
}

// TestDiscordSendRetriedAfterKillInsideIt: serve is killed while Discord
// has made the ask's message but not yet answered; after the restart the
// outbox sends it again with the same nonce, Discord answers with the
// message it made, and the channel has one ask — whose buttons work.
func TestDiscordSendRetriedAfterKillInsideIt(t *testing.T) {
	e, dc := discordEnv(t, true, bashStep("call_nonce", "touch after-the-retry"))
	hold := dc.HoldCreate(isAsk)
	p := e.startServe()
	waitIdentified(t, dc, 1)
	thread := dc.Post(dt.TextChannelID, dt.UserID, "make the file", dt.Mention())
	select {
	case <-hold.Caught():
	case <-time.After(90 * time.Second):
		t.Fatal("the ask was never sent")
	}
	asked := hold.Message()
	if asked.Nonce == "" {
		t.Fatalf("the ask %s was sent without a nonce", asked.ID)
	}
	p.kill()

	e.model.Push(fakemodel.Step{Text: "Done after the retry."})
	e.startServe()
	waitIdentified(t, dc, 2)
	sends := func() int {
		n := 0
		for _, c := range dc.Calls("POST /channels/" + thread + "/messages") {
			var body struct {
				Nonce string `json:"nonce"`
			}
			if json.Unmarshal(c.Body, &body) == nil && body.Nonce == asked.Nonce {
				n++
			}
		}
		return n
	}
	waitDC(t, dc, "the ask sent again with the same nonce", func() bool { return sends() >= 2 })
	waitOutboxIdle(t, e)
	if asks := botMessages(dc, thread, isAsk); len(asks) != 1 {
		var ids []string
		for _, m := range asks {
			ids = append(ids, m.ID+" nonce "+m.Nonce)
		}
		t.Fatalf("%d asks in the thread after the retry, want 1: %q", len(asks), ids)
	}

	// The store recorded the message the retry got back: its buttons work
	// and it is the message edited with the decision.
	ctx := interactionCtx(t)
	ok, err := dc.WaitFollowup(ctx, dc.PressButton(thread, asked.ID, discordButton(t, asked, "Approve"), dt.UserID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ok, "Approved") {
		t.Fatalf("press answer = %q", ok)
	}
	waitBotMessage(t, dc, thread, "the answer after the press", withText("Done after the retry."))
	waitDC(t, dc, "the ask edited to show the decision", func() bool {
		m, _ := dc.Message(asked.ID)
		return strings.Contains(m.Content, "Approved") && !isAsk(m)
	})
}

// TestDiscordRateLimited: a 429 with retry_after on the answer's first send
// is honoured (the send succeeds no sooner than retry_after after it) and
// the answer is posted once.
func TestDiscordRateLimited(t *testing.T) {
	const retryAfter = 3 * time.Second
	e, dc := discordEnv(t, true, fakemodel.Step{Text: "Patience pays."})
	e.startServe()
	waitIdentified(t, dc, 1)
	dc.FailNextRateLimited(retryAfter)
	thread := dc.Post(dt.TextChannelID, dt.UserID, "hi", dt.Mention())
	msg := waitBotMessage(t, dc, thread, "the answer", withText("Patience pays."))
	var limited *dt.Call
	for _, c := range dc.Calls("POST /channels/" + thread + "/messages") {
		if c.Status == 429 {
			limited = &c
			break
		}
	}
	if limited == nil {
		t.Fatal("no send was rate limited")
	}
	if gap := msg.Time.Sub(limited.At); gap < retryAfter {
		t.Fatalf("sent %v after the 429, before retry_after (%v)", gap, retryAfter)
	}
	waitOutboxIdle(t, e)
	if n := len(botMessages(dc, thread, withText("Patience pays."))); n != 1 {
		t.Fatalf("the answer was posted %d times, want once", n)
	}
}

// TestDiscordStreamKilledInsideItsFirstSend: serve is killed while Discord
// has made the streamed answer's first message (perhaps a few words and a
// Stop button) but not yet answered. The restart reruns the turn, whose
// sends (streamed again, or the stored answer at once) carry the key of
// the streamed message — the same nonce — so the thread ends with that one
// message, showing the whole answer, not an orphaned copy beside it.
func TestDiscordStreamKilledInsideItsFirstSend(t *testing.T) {
	e, dc := discordEnv(t, true, fakemodel.Step{Text: "An answer interrupted by a crash."})
	hold := dc.HoldCreate(func(m dt.Message) bool { return m.ChannelID != dt.TextChannelID })
	p := e.startServe()
	waitIdentified(t, dc, 1)
	thread := dc.Post(dt.TextChannelID, dt.UserID, "tell me", dt.Mention())
	select {
	case <-hold.Caught():
	case <-time.After(90 * time.Second):
		t.Fatal("the answer was never sent")
	}
	streamed := hold.Message()
	if streamed.Nonce == "" {
		t.Fatalf("the streamed message %s was sent without a nonce", streamed.ID)
	}
	p.kill()
	// Killed before the answer was stored, the rerun asks the model again
	// (and streams again); killed after, it sends the stored answer.
	e.model.Push(fakemodel.Step{Text: "An answer interrupted by a crash."})
	e.startServe()
	waitIdentified(t, dc, 2)
	waitDC(t, dc, "the answer sent again with the streamed message's nonce", func() bool {
		n := 0
		for _, c := range dc.Calls("POST /channels/" + thread + "/messages") {
			if strings.Contains(string(c.Body), `"nonce":"`+streamed.Nonce+`"`) {
				n++
			}
		}
		return n >= 2
	})
	waitOutboxIdle(t, e)
	ms := botMessages(dc, thread, nil)
	if len(ms) != 1 || ms[0].ID != streamed.ID || !strings.Contains(ms[0].Content, "An answer interrupted by a crash.") || len(ms[0].Tokens) != 0 {
		var texts []string
		for _, m := range ms {
			texts = append(texts, m.ID+": "+m.Content)
		}
		t.Fatalf("bot messages in the thread %q; want only %s with the whole answer and no Stop button", texts, streamed.ID)
	}
}

// TestDiscordIntentOffIsReported: when Discord refuses the connection
// because the Message Content intent is off, serve keeps running and
// /readyz names the Discord channel as down, with what to do.
func TestDiscordIntentOffIsReported(t *testing.T) {
	e, _ := discordEnvWith(t, true, []dt.Option{dt.NoMessageContentIntent()})
	p := e.startServe()
	body := ""
	eventually(t, 60*time.Second, "/readyz to report the Discord channel down", func() bool {
		resp, err := http.Get(p.url() + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, "channel discord down")
	})
	if !strings.Contains(body, "Message Content intent") {
		t.Fatalf("/readyz says %q; want the Message Content intent named", body)
	}
}

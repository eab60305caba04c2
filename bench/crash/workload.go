package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// Who is who in the campaign's Telegram world. Chat ids of private chats
// are the user's id, as on Telegram.
const (
	adminID  = 300 // an admin: may decide any approval
	strayID  = 201 // allowed to talk, not an approver of anyone else's asks
	botToken = "4242:crash-campaign-token"
)

// chat is one place people talk to the bot.
type chat struct {
	name   string
	letter string // the prefix of its tokens
	id     int64
	thread int64   // forum topic, 0 for none
	users  []int64 // who writes here
	group  bool

	// Slack and Discord chats.
	platform   string
	people     map[int64]string // platform user ids by campaign id
	downLetter string           // the prefix of the messages posted while the server is down
	root       string           // the Slack thread's root ts, the Discord thread's id (guarded by campaign.mu)
	busy       sync.Mutex       // held by the driver while an ask of the chat is open
	downN      int              // messages posted while down (the kill loop's)
}

// campaignChats are the Telegram chats, then the Slack and the Discord
// one (each driven by its own random source, numbered by its place here).
func campaignChats() []*chat {
	chats := []*chat{
		{name: "dm-101", letter: "A", id: 101, users: []int64{101}},
		{name: "dm-102", letter: "B", id: 102, users: []int64{102}},
		{name: "dm-103", letter: "C", id: 103, users: []int64{103}},
		{name: "group", letter: "D", id: -1002, users: []int64{101, 103}, group: true},
		{name: "topic-77", letter: "E", id: -1001, thread: 77, users: []int64{101, 102}, group: true},
	}
	for _, ch := range chats {
		ch.platform = platformTelegram
	}
	return append(chats, slackChat(), discordChat())
}

func (c *chat) messageOpts() []telegramtest.MessageOption {
	switch {
	case c.thread != 0:
		return []telegramtest.MessageOption{telegramtest.InGroup(), telegramtest.InTopic(c.thread)}
	case c.group:
		return []telegramtest.MessageOption{telegramtest.InGroup()}
	}
	return nil
}

func (c *chat) callbackOpts() []telegramtest.CallbackOption {
	if c.thread != 0 {
		return []telegramtest.CallbackOption{telegramtest.CallbackInTopic(c.thread)}
	}
	return nil
}

// wrongPresser is someone allowed to talk here who may not decide an ask
// of requester.
func (c *chat) wrongPresser(requester int64) int64 {
	for _, u := range c.users {
		if u != requester {
			return u
		}
	}
	return strayID
}

// episode is one user message and everything the campaign expects of it.
type episode struct {
	token string // e.g. "A7": in the message, the tool commands and the answer
	chat  *chat
	user  int64
	kind  string
	// cmds are the Bash commands the fake model calls, one per step, before
	// its final answer.
	cmds []string
	// delays hold each model step (len(cmds)+1) before it is answered: a
	// slow model keeps the window between a tool result and the next step
	// open long enough for a kill to land in it.
	delays []time.Duration
	// hold stops the final answer's stream after its first chunk, so a
	// half-streamed message is on screen when a kill lands.
	hold time.Duration

	ask     bool
	approve bool  // the decider approves (else denies)
	decider int64 // who decides: the requester or the admin
	wrong   bool  // someone who may not decide presses first
	again   bool  // the decider presses a second time
	late    bool  // left pending until the final phase
	// supersede: nobody presses; the chat's next message arrives instead,
	// which denies the ask ("the user sent a new message instead"), and no
	// answer to this message is expected.
	supersede bool
	askDelay  time.Duration

	down  bool // posted while the server was down (Slack, Discord)
	quiet bool // … and Slack dropped its event: only catch-up finds it

	// Filled while running.
	ref      string // the Slack ts or Discord id of the message
	updateID int64
	sentAt   time.Time
	shown    chan struct{} // closed when its approval keyboard was first seen
}

// answerText is the fake model's final answer to the episode: the first
// streamed third carries the ANS marker, only the whole text the END one.
func answerText(token string, calls int) string {
	return fmt.Sprintf("ANS %s · the answer to task %s after %d tool calls is ready · END %s", token, token, calls, token)
}

var (
	taskRE   = regexp.MustCompile(`task ([A-Z][0-9]+):`)
	ansRE    = regexp.MustCompile(`ANS ([A-Z][0-9]+) ·`)
	endRE    = regexp.MustCompile(`END ([A-Z][0-9]+)\b`)
	askCmdRE = regexp.MustCompile(`ask\.sh ([A-Z][0-9]+) `)
)

func ms(rng *rand.Rand, lo, hi int) time.Duration {
	return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond
}

// newEpisode draws the next episode of chat c.
func newEpisode(rng *rand.Rand, c *chat, n int) *episode {
	tok := fmt.Sprintf("%s%d", c.letter, n)
	ep := &episode{token: tok, chat: c, user: c.users[rng.IntN(len(c.users))], shown: make(chan struct{})}
	secs := 1 + rng.IntN(3)
	switch r := rng.IntN(100); {
	case r < 22:
		ep.kind = "plain"
	case r < 30:
		ep.kind, ep.cmds = "echo", []string{"echo " + tok}
	case r < 35:
		ep.kind, ep.cmds = "read-only", []string{"ls"}
	case r < 52:
		ep.kind, ep.cmds = "tool", []string{fmt.Sprintf("./mark.sh %s %d", tok, secs)}
	case r < 60:
		ep.kind, ep.cmds = "two-tools", []string{"echo " + tok, fmt.Sprintf("./mark.sh %s %d", tok, secs)}
	case r < 88:
		ep.kind, ep.cmds = "ask", []string{fmt.Sprintf("./ask.sh %s %d", tok, rng.IntN(3))}
	default:
		ep.kind, ep.cmds = "tool+ask", []string{fmt.Sprintf("./mark.sh %s 1", tok), fmt.Sprintf("./ask.sh %s %d", tok, rng.IntN(3))}
	}
	for range ep.cmds {
		ep.delays = append(ep.delays, ms(rng, 30, 700))
	}
	final := ms(rng, 100, 1500)
	if len(ep.cmds) > 0 {
		final = ms(rng, 300, 3000) // the step after a tool result: slow
	}
	ep.delays = append(ep.delays, final)
	if rng.IntN(100) < 40 {
		ep.hold = ms(rng, 200, 1500)
	}
	if strings.Contains(ep.kind, "ask") {
		ep.ask = true
		ep.approve = rng.IntN(100) < 65
		ep.decider = ep.user
		if rng.IntN(100) < 20 && c.platform == platformTelegram {
			ep.decider = adminID
		}
		ep.wrong = rng.IntN(100) < 40
		ep.again = rng.IntN(100) < 15
		ep.askDelay = ms(rng, 200, 4000)
		if rng.IntN(100) < 15 {
			ep.supersede, ep.wrong, ep.again = true, false, false
			ep.kind += "-superseded"
		}
	}
	return ep
}

// wantsAnswer says whether the episode's message should get an answer.
func (ep *episode) wantsAnswer() bool { return !ep.supersede }

// lateAsk is an ask left pending through every later restart and decided
// in the final phase.
func lateAsk(rng *rand.Rand, c *chat, n int) *episode {
	tok := fmt.Sprintf("%s%d", c.letter, n)
	ep := &episode{token: tok, chat: c, user: c.users[rng.IntN(len(c.users))], kind: "late-ask", ask: true, late: true, shown: make(chan struct{})}
	ep.cmds = []string{fmt.Sprintf("./ask.sh %s 1", tok)}
	ep.delays = []time.Duration{ms(rng, 30, 500), ms(rng, 300, 2000)}
	ep.approve = rng.IntN(100) < 65
	ep.decider = ep.user
	return ep
}

func (ep *episode) text() string {
	s := fmt.Sprintf("task %s: %s", ep.token, ep.kind)
	if ep.chat.group && ep.chat.platform == platformTelegram {
		s = "@" + telegramtest.BotUsername + " " + s
	}
	return s
}

// respond is the fake model: the last user message names the task; the
// number of tool results after it says which step this is. The same
// request always gets the same answer, so a step retried after a crash
// sees what the first attempt saw.
func (c *campaign) respond(req fakemodel.Request) fakemodel.Step {
	c.touch()
	lastUser := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			lastUser = i
		}
	}
	if lastUser < 0 {
		return fakemodel.Step{Text: "There is no user message in this request."}
	}
	mt := taskRE.FindStringSubmatch(req.Messages[lastUser].Text())
	if mt == nil {
		return fakemodel.Step{Text: "I do not know this task."}
	}
	ep := c.episode(mt[1])
	if ep == nil {
		return fakemodel.Step{Text: "I do not know task " + mt[1] + "."}
	}
	done := 0
	for _, m := range req.Messages[lastUser+1:] {
		if m.Role == "tool" {
			done++
		}
	}
	step := fakemodel.Step{}
	what := "the answer"
	if done < len(ep.cmds) {
		args, _ := json.Marshal(map[string]string{"command": ep.cmds[done]})
		step.ToolCalls = []fakemodel.ToolCall{{ID: fmt.Sprintf("call_%s_%d", ep.token, done+1), Name: "Bash", Arguments: string(args)}}
		what = "Bash " + ep.cmds[done]
	} else {
		step.Text = answerText(ep.token, done)
		if ep.hold > 0 {
			step.BlockMidStream = c.after(ep.hold)
		}
	}
	d := ep.delays[min(done, len(ep.delays)-1)]
	step.Block = c.after(d)
	c.log.add("model", ep.token, "step %d of %d requested (%s, answered after %v)", done+1, len(ep.cmds)+1, what, d)
	return step
}

// lateAskGap is the least time between a chat's last message and its late
// ask (see drive).
const lateAskGap = time.Second

// after returns a channel closed after d.
func (c *campaign) after(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	time.AfterFunc(d, func() { close(ch) })
	return ch
}

// drive runs one chat's people until stop is closed: messages with gaps
// (sometimes in bursts, so they arrive while turns run), at most a few
// unanswered at once, and the presses of each ask. Then it may leave one
// ask pending for the final phase.
func (c *campaign) drive(ctx context.Context, ch *chat, rng *rand.Rand, stop <-chan struct{}) {
	n := 0
	var last time.Time // when this chat's previous message was posted
	for {
		select {
		case <-stop:
			if rng.IntN(100) < 50 {
				// The chat stays busy while its late ask waits, so no
				// message posted while serve is down supersedes it.
				ch.busy.Lock()
				// Nor one posted just before it: two messages a
				// millisecond apart may reach the gateway in either order
				// (Slack does not promise event order), and the one
				// handled second supersedes the other's ask.
				sleepCtx(ctx, time.Until(last.Add(lateAskGap)))
				n++
				ep := lateAsk(rng, ch, n)
				c.send(ep)
				c.waitShown(ctx, ep)
			}
			return
		case <-ctx.Done():
			return
		default:
		}
		if !c.waitOutstanding(ctx, ch, 3, stop) {
			continue
		}
		n++
		ep := newEpisode(rng, ch, n)
		ch.busy.Lock()
		c.send(ep)
		last = time.Now()
		switch {
		case ep.supersede:
			// Once the keyboard is up, the next message arrives instead of
			// a press.
			c.waitShown(ctx, ep)
			sleepCtx(ctx, ep.askDelay)
			n++
			next := newEpisode(rng, ch, n)
			next.kind, next.cmds, next.delays = "plain", nil, next.delays[len(next.delays)-1:]
			next.ask, next.supersede = false, false
			c.send(next)
			last = time.Now()
		case ep.ask:
			c.pressAsk(ctx, ep, rng)
		}
		ch.busy.Unlock()
		gap := ms(rng, 500, 6000)
		if rng.IntN(100) < 30 {
			gap = ms(rng, 0, 300) // a burst: the next one arrives while this turn runs
		}
		select {
		case <-time.After(gap):
		case <-stop:
		case <-ctx.Done():
		}
	}
}

// send posts the episode's message as its user.
func (c *campaign) send(ep *episode) {
	c.register(ep)
	ep.sentAt = time.Now()
	if ep.chat.platform != platformTelegram {
		c.sendOther(ep)
		how := ""
		if ep.quiet {
			how = ", its event dropped"
		}
		c.log.add("message", ep.token, "%s from %s in %s (%s%s): %v", ep.kind, c.userName(ep.chat, ep.user), ep.chat.name, ep.ref, how, ep.cmds)
		return
	}
	ep.updateID = c.tg.AddMessage(ep.chat.id, ep.user, ep.text(), ep.chat.messageOpts()...)
	c.log.add("message", ep.token, "%s from %d in %s (update %d): %v", ep.kind, ep.user, ep.chat.name, ep.updateID, ep.cmds)
}

// waitShown waits until the episode's approval keyboard was posted.
func (c *campaign) waitShown(ctx context.Context, ep *episode) bool {
	ctx, cancel := context.WithTimeout(ctx, c.opts.askWait)
	defer cancel()
	select {
	case <-ep.shown:
		return true
	case <-ctx.Done():
		c.log.add("timeout", ep.token, "its approval keyboard was not shown within %v", c.opts.askWait)
		return false
	}
}

// pressAsk answers an ask the way people do: after a while, sometimes a
// person who may not decide presses first, then the decider presses, and
// sometimes presses again.
func (c *campaign) pressAsk(ctx context.Context, ep *episode, rng *rand.Rand) {
	if !c.waitShown(ctx, ep) {
		return
	}
	sleepCtx(ctx, ep.askDelay)
	if ep.wrong {
		c.press(ep, ep.chat.wrongPresser(ep.user), pick(rng, "Approve", "Deny"), pressWrong)
		sleepCtx(ctx, ms(rng, 0, 1500))
	}
	c.press(ep, ep.decider, decisionButton(ep), pressDecide)
	if ep.again {
		sleepCtx(ctx, ms(rng, 0, 800))
		c.press(ep, ep.decider, pick(rng, "Approve", "Deny"), pressAgain)
	}
}

func decisionButton(ep *episode) string {
	if ep.approve {
		return "Approve"
	}
	return "Deny"
}

func pick(rng *rand.Rand, a, b string) string {
	if rng.IntN(2) == 0 {
		return a
	}
	return b
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

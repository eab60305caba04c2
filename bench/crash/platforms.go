package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/discord/discordtest"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// The campaign's Slack and Discord chats: one Slack channel thread (rooted
// at the first message, a mention in the general channel) and one Discord
// thread (opened by the bot from the first message, a mention in the text
// channel). Each has two people who may talk: each decides their own asks
// and may not decide the other's.
const (
	platformTelegram = "telegram"
	platformSlack    = "slack"
	platformDiscord  = "discord"
)

func slackChat() *chat {
	return &chat{name: "slack-thread", letter: "S", downLetter: "T", platform: platformSlack, users: []int64{1, 2},
		people: map[int64]string{1: slacktest.Ada, 2: slacktest.Grace}}
}

func discordChat() *chat {
	return &chat{name: "discord-thread", letter: "G", downLetter: "H", platform: platformDiscord, users: []int64{1, 2},
		people: map[int64]string{1: discordtest.UserID, 2: discordtest.OtherUserID}}
}

// fakeTB lets the test fakes, made for tests, live in the campaign
// process: it runs their cleanups at close and records what they report.
type fakeTB struct {
	testing.TB // nil: a method the fakes do not use panics
	mu         sync.Mutex
	cleanups   []func()
	errors     []string
}

func (t *fakeTB) Helper()             {}
func (t *fakeTB) Cleanup(f func())    { t.mu.Lock(); t.cleanups = append(t.cleanups, f); t.mu.Unlock() }
func (t *fakeTB) Logf(string, ...any) {}
func (t *fakeTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errors = append(t.errors, fmt.Sprintf(format, args...))
}

func (t *fakeTB) Fatalf(format string, args ...any) { t.Errorf(format, args...) }

func (t *fakeTB) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (t *fakeTB) reported() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.errors...)
}

// startPlatformFakes starts the fake Slack and Discord.
func (c *campaign) startPlatformFakes() {
	c.tb = &fakeTB{}
	c.sl = slacktest.New(c.tb, slacktest.RedeliverAfter(time.Second))
	c.dc = discordtest.New(c.tb)
}

func (c *campaign) platformConfig() string {
	return fmt.Sprintf(`
[channels.slack]
mode = "socket"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
allow_users = [%q, %q]
admins = ["U0BOSS"]
edit_interval = "100ms"

[channels.discord]
token = "${DISCORD_BOT_TOKEN}"
application_id = %q
api_url = %q
allow_users = [%q, %q]
edit_interval = "100ms"
`, c.sl.URL(), slacktest.Ada, slacktest.Grace, discordtest.AppID, c.dc.URL(), discordtest.UserID, discordtest.OtherUserID)
}

func platformEnv() []string {
	return []string{
		"SLACK_BOT_TOKEN=" + slacktest.BotToken,
		"SLACK_APP_TOKEN=" + slacktest.AppToken,
		"DISCORD_BOT_TOKEN=" + discordtest.Token(),
	}
}

// place names where a message of the chat belongs: the Telegram chat and
// topic, the Slack thread, the Discord thread. botMessage.place is in the
// same form.
func (ch *chat) placeLocked() string {
	switch ch.platform {
	case platformSlack:
		return slackPlace(slacktest.General, ch.root)
	case platformDiscord:
		return discordPlace(ch.root)
	}
	return telegramPlace(ch.id, ch.thread)
}

func telegramPlace(chat, thread int64) string  { return fmt.Sprintf("telegram:%d/%d", chat, thread) }
func slackPlace(channel, thread string) string { return "slack:" + channel + "/" + thread }
func discordPlace(channel string) string       { return "discord:" + channel }

// sendOther posts the episode's message on Slack or Discord. The chat's
// first message mentions the bot in the channel and roots the thread; the
// others are posted in the thread.
func (c *campaign) sendOther(ep *episode) {
	ch := ep.chat
	who := ch.people[ep.user]
	c.mu.Lock()
	root := ch.root
	c.mu.Unlock()
	switch ch.platform {
	case platformSlack:
		if root == "" {
			p := c.sl.Post(slacktest.General, who, "<@"+slacktest.BotUserID+"> "+ep.text())
			c.mu.Lock()
			ch.root = p.TS
			c.mu.Unlock()
			ep.ref = p.TS
			return
		}
		var opts []slacktest.PostOption
		opts = append(opts, slacktest.InThread(root))
		if ep.quiet {
			opts = append(opts, slacktest.Quietly())
		}
		ep.ref = c.sl.Post(slacktest.General, who, ep.text(), opts...).TS
	case platformDiscord:
		if root == "" {
			// Discord delivers a message to a bot that is connected, and
			// catch-up reads only bound threads: the first mention waits
			// for a connection.
			wctx, cancel := context.WithTimeout(c.ctx, time.Minute)
			_ = c.dc.WaitGateway(wctx, "a live gateway", func(st discordtest.GatewayStats) bool { return st.Live })
			cancel()
			id := c.dc.Post(discordtest.TextChannelID, who, ep.text(), discordtest.Mention())
			c.mu.Lock()
			ch.root = id
			c.mu.Unlock()
			ep.ref = id
			// The next message goes into the thread the bot opens.
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && c.ctx.Err() == nil; {
				if _, ok := c.dc.Channel(id); ok {
					break
				}
				sleepCtx(c.ctx, 50*time.Millisecond)
			}
			return
		}
		ep.ref = c.dc.Post(root, who, ep.text())
	}
}

// pressOther presses a button on Slack or Discord and waits for what the
// presser is shown. A press the server did not answer (a kill took it) is
// pressed again after a while, as a person would, four times at most.
func (c *campaign) pressOther(p *press, s *shownApproval, value string) {
	who := p.ep.chat.people[p.who]
	for attempt := 1; attempt <= 4; attempt++ {
		p.attempts = attempt
		ctx, cancel := context.WithTimeout(c.ctx, 8*time.Second)
		var text string
		var err error
		switch p.ep.chat.platform {
		case platformSlack:
			text, err = c.sl.Press(ctx, slacktest.General, s.ref, value, who)
		case platformDiscord:
			_ = c.dc.WaitGateway(ctx, "a live gateway", func(st discordtest.GatewayStats) bool { return st.Live })
			id := c.dc.PressButton(c.placeID(p.ep.chat), s.ref, value, who)
			text, err = c.dc.WaitFollowup(ctx, id)
		}
		cancel()
		if err != nil && strings.Contains(err.Error(), "has no button") {
			// Slack removed the buttons with the decision: nothing to press.
			c.mu.Lock()
			p.gone = true
			c.mu.Unlock()
			c.log.add("gone", p.ep.token, "the %s button is gone from message %s", p.button, s.ref)
			return
		}
		if err == nil {
			c.mu.Lock()
			p.reply, p.answered = text, true
			c.mu.Unlock()
			kind := "answered"
			if p.role == pressOld {
				kind = "old-answer"
			}
			c.log.add(kind, p.ep.token, "%s's press (attempt %d): %q", c.userName(p.ep.chat, p.who), attempt, text)
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		c.log.add("unanswered", p.ep.token, "%s's press of %s (attempt %d) got no answer: %v", c.userName(p.ep.chat, p.who), p.button, attempt, err)
	}
}

// placeID is the chat's Slack root ts or Discord thread id.
func (c *campaign) placeID(ch *chat) string {
	if ch == nil {
		return "" // the platform is not driven
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return ch.root
}

func (c *campaign) userName(ch *chat, id int64) string {
	if ch.platform == platformSlack || ch.platform == platformDiscord {
		return ch.platform + ":" + ch.people[id]
	}
	return userName(id)
}

// postWhileDown posts, between a kill and the next start, a message in
// each Slack or Discord chat that is not in the middle of an ask (its
// driver holds its lock then): Slack delivers the event once the next run
// connects (or, for a quiet one, drops it: the next run's catch-up must
// find it); Discord dispatches it to no one (catch-up must find it).
func (c *campaign) postWhileDown(rng *rand.Rand, chats []*chat) {
	for _, ch := range chats {
		if ch.platform == platformTelegram || rng.IntN(100) >= 35 {
			continue
		}
		quiet := rng.IntN(2) == 0
		tool := rng.IntN(3) == 0
		delay := ms(rng, 100, 1500)
		root := c.placeID(ch)
		if root == "" {
			continue
		}
		if _, ok := c.dc.Channel(root); ch.platform == platformDiscord && !ok {
			continue
		}
		if !ch.busy.TryLock() {
			continue
		}
		ch.downN++
		tok := fmt.Sprintf("%s%d", ch.downLetter, ch.downN)
		ep := &episode{token: tok, chat: ch, user: ch.users[ch.downN%len(ch.users)], kind: "while-down", shown: make(chan struct{}), down: true}
		if tool {
			ep.kind, ep.cmds = "while-down-echo", []string{"echo " + tok}
			ep.delays = append(ep.delays, ms(rng, 30, 300))
		}
		ep.delays = append(ep.delays, delay)
		ep.quiet = ch.platform == platformSlack && quiet
		c.send(ep)
		ch.busy.Unlock()
	}
}

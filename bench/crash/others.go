package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/channels/discord/discordtest"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// The Slack and Discord fakes are read by polling their state: the bot's
// messages as they are now, and the calls that made and changed them.

// slackBotMessages are the bot's messages in the general channel (thread
// replies and top level), with the calls that made and last changed each:
// a message's ts is the fake's clock when it made it, just after the
// postMessage call was recorded.
func slackBotMessages(msgs []slacktest.Message, calls []slacktest.Call) []botMessage {
	var out []botMessage
	for _, m := range msgs {
		if m.BotID != slacktest.BotID || m.Deleted {
			continue
		}
		at := slackTime(m.TS)
		bm := botMessage{platform: platformSlack, place: slackPlace(m.Channel, m.ThreadTS), id: m.TS, text: m.Shown(), createdAt: at, lastSet: at}
		for _, c := range calls {
			if c.Error != "" || c.Params["channel"] != m.Channel {
				continue
			}
			switch {
			case c.Method == "chat.postMessage" && !c.At.After(at) && c.Params["thread_ts"] == m.ThreadTS:
				bm.createdText, bm.createdAt, bm.lastSet = c.Params["text"], c.At, c.At
			case c.Method == "chat.update" && c.Params["ts"] == m.TS && c.At.After(bm.lastSet):
				bm.lastSet = c.At
			}
		}
		out = append(out, bm)
	}
	return out
}

func slackTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, _ := strconv.ParseInt(sec, 10, 64)
	us, _ := strconv.ParseInt(frac, 10, 64)
	return time.Unix(s, us*1000)
}

// discordBotMessages are the bot's messages in the given channels, with
// the calls that made (by nonce) and last changed each.
func discordBotMessages(msgs []discordtest.Message, calls []discordtest.Call) []botMessage {
	var out []botMessage
	for _, m := range msgs {
		if m.Author.ID != discordtest.BotID || m.Deleted {
			continue
		}
		bm := botMessage{platform: platformDiscord, place: discordPlace(m.ChannelID), id: m.ID, text: m.Content, createdAt: m.Time, lastSet: m.Time}
		create := "/channels/" + m.ChannelID + "/messages"
		for _, c := range calls {
			if c.Status/100 != 2 {
				continue
			}
			switch {
			case c.Method == "POST" && c.Path == create && m.Nonce != "" && bodyField(c.Body, "nonce") == m.Nonce && bm.createdText == "":
				bm.createdText = bodyField(c.Body, "content")
			case c.Method == "PATCH" && c.Path == create+"/"+m.ID && c.At.After(bm.lastSet):
				bm.lastSet = c.At
			}
		}
		out = append(out, bm)
	}
	return out
}

func bodyField(body json.RawMessage, key string) string {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	switch v := m[key].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// discordButtons reads the label → custom id of a message's buttons.
func discordButtons(raw json.RawMessage) map[string]string {
	var rows []struct {
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	out := map[string]string{}
	if json.Unmarshal(raw, &rows) != nil {
		return out
	}
	for _, r := range rows {
		for _, b := range r.Components {
			if b.CustomID != "" {
				out[b.Label] = b.CustomID
			}
		}
	}
	return out
}

func (c *campaign) discordMessages() []discordtest.Message {
	msgs := c.dc.Messages(discordtest.TextChannelID)
	if root := c.placeID(c.chatOf(platformDiscord)); root != "" {
		msgs = append(msgs, c.dc.Messages(root)...)
	}
	return msgs
}

func (c *campaign) chatOf(platform string) *chat {
	for _, ch := range c.chats {
		if ch.platform == platform {
			return ch
		}
	}
	return nil
}

// watchSlack and watchDiscord follow the bot's messages: approval
// messages with their buttons, answers.
func (c *campaign) watchSlack(ctx context.Context) {
	seen := map[string]string{}
	calls := 0
	for sleepCtx(ctx, 100*time.Millisecond); ctx.Err() == nil; sleepCtx(ctx, 100*time.Millisecond) {
		if n := len(c.sl.Calls()); n != calls {
			calls = n
			c.touch()
		}
		for _, m := range c.sl.Messages(slacktest.General) {
			if m.BotID != slacktest.BotID {
				continue
			}
			text := m.Shown()
			if seen[m.TS] == text {
				continue
			}
			seen[m.TS] = text
			buttons := map[string]string{}
			for _, b := range m.Buttons() {
				buttons[b.Text] = b.Value
			}
			c.observeOther(platformSlack, m.TS, text, buttons)
		}
	}
}

func (c *campaign) watchDiscord(ctx context.Context) {
	seen := map[string]string{}
	calls := 0
	for sleepCtx(ctx, 100*time.Millisecond); ctx.Err() == nil; sleepCtx(ctx, 100*time.Millisecond) {
		if n := len(c.dc.Calls("")); n != calls {
			calls = n
			c.touch()
		}
		for _, m := range c.discordMessages() {
			if m.Author.ID != discordtest.BotID {
				continue
			}
			key := m.Content + string(m.Components)
			if seen[m.ID] == key {
				continue
			}
			seen[m.ID] = key
			c.observeOther(platformDiscord, m.ID, m.Content, discordButtons(m.Components))
		}
	}
}

// observeOther notes a new or changed bot message on Slack or Discord.
func (c *campaign) observeOther(platform, ref, text string, buttons map[string]string) {
	if m := askCmdRE.FindStringSubmatch(text); m != nil && strings.Contains(text, "Approval needed") && buttons["Approve"] != "" {
		c.mu.Lock()
		for _, s := range c.shown[m[1]] {
			if s.ref == ref {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		c.addShown(m[1], &shownApproval{token: m[1], ref: ref, buttons: buttons, at: time.Now()}, fmt.Sprintf("%s message %s", platform, ref))
		return
	}
	if m := askCmdRE.FindStringSubmatch(text); m != nil && (strings.Contains(text, "Approved") || strings.Contains(text, "Denied")) {
		c.log.add("edited", m[1], "approval message %s now shows: %.60s", ref, text)
	}
	if m := ansRE.FindStringSubmatch(text); m != nil {
		state := "partial"
		if endRE.MatchString(text) {
			state = "complete"
		}
		c.log.add("answer", m[1], "%s message %s shows the %s answer", platform, ref, state)
	}
	c.answerSeen(text)
}

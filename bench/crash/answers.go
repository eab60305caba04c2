package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

// botMessages are the bot's messages on every platform, as they are now.
func (c *campaign) botMessages() []botMessage {
	created := map[int64]telegramtest.Call{}
	lastSet := map[int64]time.Time{}
	for _, call := range c.tg.Calls() {
		if call.MessageID != 0 {
			created[call.MessageID] = call
			lastSet[call.MessageID] = call.Received
		}
		if call.Method == "editMessageText" && call.Status == 200 {
			lastSet[call.Int("message_id")] = call.Received
		}
	}
	var out []botMessage
	for _, m := range c.tg.Messages() {
		cr := created[m.ID]
		out = append(out, botMessage{platform: platformTelegram, place: telegramPlace(m.ChatID, m.ThreadID), id: strconv.FormatInt(m.ID, 10),
			text: m.Text, markup: m.Markup, createdText: cr.Params["text"], createdAt: cr.Received, lastSet: lastSet[m.ID]})
	}
	if c.sl != nil {
		out = append(out, slackBotMessages(c.sl.Messages(slacktest.General), c.sl.Calls())...)
	}
	if c.dc != nil {
		out = append(out, discordBotMessages(c.discordMessages(), c.dc.Calls(""))...)
	}
	return out
}

// killedAfter reports whether a request that arrived at t came from a run
// that was killed later (so a message it sent may be a leftover of a
// killed turn). A request arrives before its sender is gone.
func (c *campaign) killedAfter(t time.Time) bool {
	for _, p := range c.procs {
		if !p.start.After(t) && !p.gone.IsZero() && p.gone.After(t) {
			return true
		}
	}
	return false
}

// checkAnswers: each message has exactly one complete answer put there by
// the outbox (its final reply), in its own chat or topic; other messages
// showing the answer are classified.
func (c *campaign) checkAnswers(r *report, f *dbFacts) {
	// finals[msg] are the tokens whose complete answer a sent outbox item
	// put on message msg; sends[msg] is the send item that created msg.
	finals := map[string]map[string]bool{}
	sends := map[string]outboxRow{}
	for _, o := range f.outbox {
		if o.messageID == "" || !o.sent {
			continue
		}
		platform, _, _ := strings.Cut(o.location, ":")
		id := platform + "#" + o.messageID
		if o.kind == "send" {
			sends[id] = o
		}
		for _, m := range endRE.FindAllStringSubmatch(o.body, -1) {
			if finals[id] == nil {
				finals[id] = map[string]bool{}
			}
			finals[id][m[1]] = true
		}
	}
	byToken := map[string][]botMessage{}
	for _, m := range c.botMessages() {
		if mt := ansRE.FindStringSubmatch(m.text); mt != nil {
			byToken[mt[1]] = append(byToken[mt[1]], m)
		}
	}
	for _, ep := range c.episodeList() {
		pf := r.platform(ep.chat.platform)
		pf.messages++
		if ep.down {
			pf.down++
		}
		var mine []botMessage
		place := c.placeOf(ep.chat)
		for _, m := range byToken[ep.token] {
			if m.place != place {
				r.misplaced++
				pf.misplaced++
				r.fail(ep.token, "its answer (%s) went to %s instead of %s (%s)", m.key(), m.place, place, ep.chat.name)
				continue
			}
			mine = append(mine, m)
		}
		if !ep.wantsAnswer() {
			r.superseded++
			if len(mine) > 0 {
				r.fail(ep.token, "it was superseded by a newer message, yet message %s answers it", mine[0].key())
			}
			continue
		}
		var good *botMessage
		for i := range mine {
			if finals[mine[i].key()][ep.token] && endRE.MatchString(mine[i].text) {
				good = &mine[i]
				break
			}
		}
		if good == nil {
			r.lost++
			pf.lost++
			r.fail(ep.token, "never answered: %s", lostCause(ep, f, mine))
			continue
		}
		r.answered++
		pf.answered++
		if at, ok := c.answered[ep.token]; ok && !ep.late {
			r.latencies = append(r.latencies, at.Sub(ep.sentAt))
		}
		for _, m := range mine {
			if m.id == good.id {
				continue
			}
			pf.dup++
			switch cause := c.duplicateCause(ep.token, m, *good, finals, sends); cause {
			case "send-then-crash":
				r.dupSendCrash++
			case "streaming":
				r.dupStream++
			default:
				r.dupOther++
				r.fail(ep.token, "answered twice: message %s besides %s (%s); calls on it: %s",
					m.key(), good.id, cause, c.callsOn(m))
			}
		}
	}
}

// placeOf is where the chat's answers belong.
func (c *campaign) placeOf(ch *chat) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ch.placeLocked()
}

// callsOn lists the successful calls that created or changed message m,
// with the run that made them.
func (c *campaign) callsOn(m botMessage) string {
	var parts []string
	add := func(what string, at time.Time) {
		parts = append(parts, fmt.Sprintf("%s at %.3fs (run %d)", what, c.log.since(at).Seconds(), c.runAt(at)))
	}
	switch m.platform {
	case platformTelegram:
		id, _ := strconv.ParseInt(m.id, 10, 64)
		for _, call := range c.tg.Calls() {
			if call.Status == 200 && (call.MessageID == id || call.Method == "editMessageText" && call.Int("message_id") == id) {
				add(call.Method, call.Received)
			}
		}
	case platformSlack:
		add("chat.postMessage", m.createdAt)
		for _, call := range c.sl.Calls("chat.update") {
			if call.Error == "" && call.Params["ts"] == m.id {
				add(call.Method, call.At)
			}
		}
	case platformDiscord:
		for _, call := range c.dc.Calls("") {
			if call.Status/100 == 2 && strings.Contains(call.Path, "/messages") && (strings.HasSuffix(call.Path, "/"+m.id) || bodyField(call.Body, "content") == m.createdText && call.Method == "POST") {
				add(call.Method+" "+call.Path, call.At)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// runAt is the number of the run that was up at t (0 between runs).
func (c *campaign) runAt(t time.Time) int {
	for _, p := range c.procs {
		if !p.start.After(t) && (p.gone.IsZero() || p.gone.After(t)) {
			return p.n
		}
	}
	return 0
}

// duplicateCause says why m shows the answer to token besides good.
func (c *campaign) duplicateCause(token string, m, good botMessage, finals map[string]map[string]bool, sends map[string]outboxRow) string {
	if finals[m.key()][token] {
		return "the outbox delivered the final answer twice"
	}
	// The outbox sent good's item once before, as m, and the run died
	// before it recorded that send: the documented send-then-crash window.
	if o, ok := sends[good.key()]; ok && o.created.Before(m.createdAt) && m.createdText == good.createdText && c.killedAfter(m.createdAt) {
		return "send-then-crash"
	}
	// A message a turn was streaming when its run was killed; the retried
	// turn streamed a new one.
	if c.killedAfter(m.lastSet) {
		return "streaming"
	}
	return "not explained by a kill"
}

var callIDRE = regexp.MustCompile(`^call_([A-Z][0-9]+)_`)

// lostCause reads the transcript to say where an unanswered turn stopped.
func lostCause(ep *episode, f *dbFacts, shown []botMessage) string {
	for _, msgs := range f.convs {
		for i, m := range msgs {
			if m.Role != agentcore.RoleUser || !strings.Contains(m.Text(), "task "+ep.token+":") {
				continue
			}
			seg := msgs[i+1:]
			for j, n := range seg {
				if n.Role == agentcore.RoleUser {
					seg = seg[:j]
					break
				}
			}
			for _, n := range seg {
				if n.Role == agentcore.RoleAssistant && endRE.MatchString(n.Text()) {
					return "the answer is in the transcript but no finalized message shows it"
				}
			}
			if len(seg) == 0 {
				return "its input is in the transcript, and nothing after it"
			}
			last := seg[len(seg)-1]
			switch {
			case last.Role == agentcore.RoleTool:
				what := "a tool result"
				if strings.HasPrefix(last.Text(), "Outcome unknown") {
					what = "an \"outcome unknown\" tool result"
				}
				if strings.HasPrefix(last.Text(), "Permission denied") {
					what = "a denied tool's result"
				}
				return fmt.Sprintf("the turn ended after %s (%s) without a model call", what, last.ToolCallID)
			case last.Role == agentcore.RoleAssistant && len(last.ToolCalls) > 0:
				return "the turn stopped at unanswered tool calls (parked on an approval?)"
			}
			return fmt.Sprintf("the turn ended at a %s message", last.Role)
		}
	}
	if len(shown) > 0 {
		return "its input is in no transcript, yet a partial answer was shown"
	}
	return "its input is in no transcript"
}

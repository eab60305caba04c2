package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// checkApprovals: every ask was shown, decided once by its decider (or is
// still decidable), every press got the right answer.
func (c *campaign) checkApprovals(r *report, f *dbFacts) {
	byToken := map[string][]approvalRow{}
	for _, a := range f.approvals {
		if m := askCmdRE.FindStringSubmatch(a.args); m != nil {
			byToken[m[1]] = append(byToken[m[1]], a)
		}
	}
	for _, ep := range c.episodeList() {
		if !ep.ask {
			continue
		}
		r.asks++
		pf := r.platform(ep.chat.platform)
		pf.asks++
		shown := c.shown[ep.token]
		r.askPosts += len(shown)
		if len(shown) > 1 {
			r.askDupPosts += len(shown) - 1
		}
		aps := byToken[ep.token]
		if len(shown) == 0 {
			r.fail(ep.token, "its approval was never shown (%d approvals stored)", len(aps))
			continue
		}
		if len(aps) != 1 {
			r.fail(ep.token, "%d approvals stored for one ask", len(aps))
			continue
		}
		a := aps[0]
		want, by := "denied", c.userName(ep.chat, ep.decider)
		if ep.approve {
			want = "allowed"
		}
		if ep.supersede {
			want, by = "denied", "switchboard"
		}
		switch {
		case a.state == "pending":
			r.pending++
			r.fail(ep.token, "its approval %s is still pending; want %s by %s", a.id, want, by)
		case a.state != want || a.decidedBy != by:
			r.decided++
			pf.decided++
			r.fail(ep.token, "its approval %s is %s by %s; want %s by %s", a.id, a.state, a.decidedBy, want, by)
		default:
			r.decided++
			pf.decided++
		}
	}
	c.checkApprovalMessages(r, byToken)
	for _, p := range c.presses {
		text, alert, ok := c.pressReply(p)
		if p.gone {
			r.platform(p.ep.chat.platform).gone++
			continue
		}
		if p.role == pressOld {
			r.oldTotal++
		}
		if p.role == pressWrong {
			r.wrongTotal++
		}
		if p.ep.chat.platform != platformTelegram {
			pf := r.platform(p.ep.chat.platform)
			pf.pressed++
			if ok {
				pf.pressAnswered++
			}
			if p.attempts > 1 {
				pf.repressed++
			}
		}
		who := c.userName(p.ep.chat, p.who)
		if !ok {
			r.fail(p.ep.token, "the %s press of %s (%s) was never answered", p.role, who, p.ident())
			continue
		}
		switch verdict := judgePress(p.role, p.button, text, alert); {
		case verdict != "":
			r.fail(p.ep.token, "%s: %s's %s press on %s was answered %q", verdict, who, p.button, p.ident(), text)
		case p.role == pressWrong:
			r.wrongRefused++
		case p.role == pressOld:
			r.oldOK++
		}
	}
}

// ident names the press for a problem: its update or its message.
func (p *press) ident() string {
	if p.ep.chat.platform == platformTelegram {
		return fmt.Sprintf("update %d, message %d", p.updateID, p.msgID)
	}
	return fmt.Sprintf("%s message %s, %d presses", p.ep.chat.platform, p.ref, p.attempts)
}

// pressReply is what the presser was shown: the callback's answer
// (Telegram) or the ephemeral reply (Slack, Discord: shown to the presser
// alone, as an alert is).
func (c *campaign) pressReply(p *press) (text string, alert, ok bool) {
	if p.ep.chat.platform != platformTelegram {
		c.mu.Lock()
		defer c.mu.Unlock()
		return p.reply, true, p.answered
	}
	ans, ok := c.tg.AnswerFor(p.updateID)
	return ans.Params["text"], ans.Params["show_alert"] == "true", ok
}

// judgePress says what is wrong with the answer to a press ("" for
// nothing): someone who may not decide is refused with an alert; the
// decider's press decides (or finds the decision made, by an earlier press
// a kill took the answer of); a press after the decision says it was
// decided.
func judgePress(role pressRole, button, text string, alert bool) string {
	switch role {
	case pressWrong:
		if !strings.HasPrefix(text, "Only ") || !alert {
			return "someone who may not decide was not refused"
		}
	case pressDecide, pressLate:
		verb := "Denied:"
		if button == "Approve" {
			verb = "Approved:"
		}
		if !strings.HasPrefix(text, verb) && !strings.HasPrefix(text, "Already decided") {
			return "the decider's press did not decide"
		}
	case pressAgain, pressOld:
		if !strings.HasPrefix(text, "Already decided") {
			return "a press after the decision did not say it was decided"
		}
	}
	return ""
}

// telegramLostCopy is what the Telegram adapter makes of a copy an earlier
// attempt posted before its process died (channels/telegram outbound.go
// lostCopyText).
const telegramLostCopy = "(This message was posted again below.)"

// checkApprovalMessages: every posted copy of a decided approval was
// edited to show the decision, without buttons, but for a Telegram copy
// the send-then-crash window left before the live one, which must have
// lost its buttons and say that it was posted again.
func (c *campaign) checkApprovalMessages(r *report, byToken map[string][]approvalRow) {
	current := map[string]botMessage{}
	for _, m := range c.botMessages() {
		current[m.key()] = m
	}
	for _, ep := range c.episodeList() {
		aps := byToken[ep.token]
		if len(aps) != 1 || aps[0].state == "pending" {
			continue
		}
		want := "⛔ Denied"
		if aps[0].state == "allowed" {
			want = "✅ Approved"
		}
		shown := c.shown[ep.token]
		for i, s := range shown {
			text, buttons, where := c.approvalNow(ep.chat.platform, s, current)
			if i < len(shown)-1 && ep.chat.platform == platformTelegram && text == telegramLostCopy && !buttons {
				// A copy the send-then-crash window left, which the retry
				// disarmed (Telegram has no way to find it by key).
				continue
			}
			if !strings.HasPrefix(text, want) || buttons {
				r.fail(ep.token, "approval message %s still shows %q (buttons: %v) after the approval was %s", where, clip(text, 60), buttons, aps[0].state)
			}
		}
	}
}

// approvalNow is what an approval message shows now, and whether it still
// has buttons.
func (c *campaign) approvalNow(platform string, s *shownApproval, current map[string]botMessage) (text string, buttons bool, where string) {
	switch platform {
	case platformSlack:
		m, _ := c.sl.Message(slacktest.General, s.ref)
		return m.Shown(), len(m.Buttons()) > 0, "slack " + s.ref
	case platformDiscord:
		m, _ := c.dc.Message(s.ref)
		return m.Content, len(discordButtons(m.Components)) > 0, "discord " + s.ref
	}
	m := current[platformTelegram+"#"+strconv.FormatInt(s.msgID, 10)]
	return m.text, strings.Contains(m.markup, "callback_data"), strconv.FormatInt(s.msgID, 10)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

package main

import (
	"strings"
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
		want, by := "denied", userName(ep.decider)
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
			r.fail(ep.token, "its approval %s is %s by %s; want %s by %s", a.id, a.state, a.decidedBy, want, by)
		default:
			r.decided++
		}
	}
	c.checkApprovalMessages(r, byToken)
	for _, p := range c.presses {
		ans, ok := c.tg.AnswerFor(p.updateID)
		text := ans.Params["text"]
		if p.role == pressOld {
			r.oldTotal++
		}
		if p.role == pressWrong {
			r.wrongTotal++
		}
		if !ok {
			r.fail(p.ep.token, "the %s press of %s (update %d) was never answered", p.role, userName(p.who), p.updateID)
			continue
		}
		switch p.role {
		case pressWrong:
			if strings.HasPrefix(text, "Only ") && ans.Params["show_alert"] == "true" {
				r.wrongRefused++
			} else {
				r.fail(p.ep.token, "%s, who may not decide, pressed %s and was answered %q", userName(p.who), p.button, text)
			}
		case pressDecide, pressLate:
			verb := "Denied:"
			if p.button == "Approve" {
				verb = "Approved:"
			}
			if !strings.HasPrefix(text, verb) && !strings.HasPrefix(text, "Already decided") {
				r.fail(p.ep.token, "the decider's %s press was answered %q", p.button, text)
			}
		case pressAgain, pressOld:
			if strings.HasPrefix(text, "Already decided") {
				if p.role == pressOld {
					r.oldOK++
				}
			} else {
				r.fail(p.ep.token, "pressing %s again on message %d after the decision was answered %q", p.button, p.msgID, text)
			}
		}
	}
}

// checkApprovalMessages: every posted copy of a decided approval was
// edited to show the decision, without buttons.
func (c *campaign) checkApprovalMessages(r *report, byToken map[string][]approvalRow) {
	current := map[int64]string{}
	markup := map[int64]string{}
	for _, m := range c.tg.Messages() {
		current[m.ID], markup[m.ID] = m.Text, m.Markup
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
		for _, s := range c.shown[ep.token] {
			text := current[s.msgID]
			if !strings.HasPrefix(text, want) || strings.Contains(markup[s.msgID], "callback_data") {
				r.fail(ep.token, "approval message %d still shows %q (buttons: %v) after the approval was %s", s.msgID, clip(text, 60), strings.Contains(markup[s.msgID], "callback_data"), aps[0].state)
			}
		}
	}
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/store"
)

// problem is one broken promise, about one message when token is set.
type problem struct {
	token string
	what  string
}

// report is what a campaign found.
type report struct {
	seed             uint64
	kills            int
	startupKills     int
	beforeReadyKills int
	wall             time.Duration // the campaign, from the first start to the checks
	messages         int
	superseded       int // asks a newer message denied: no answer expected
	answered         int
	lost             int
	dupSendCrash     int
	dupStream        int
	dupOther         int
	misplaced        int
	asks             int // ask episodes
	askPosts         int // approval messages shown
	askDupPosts      int // approval messages beyond the first of an ask
	decided          int
	pending          int
	oldOK            int
	oldTotal         int
	wrongRefused     int
	wrongTotal       int
	deniedRan        int
	ranTwice         int
	transcriptOK     bool
	queueLeft        int
	outboxLeft       int
	leftovers        int
	restarts         []time.Duration
	resumes          []time.Duration // ready → the next model call of a turn a kill cut
	latencies        []time.Duration
	problems         []problem
}

func (r *report) fail(token, format string, args ...any) {
	r.problems = append(r.problems, problem{token: token, what: fmt.Sprintf(format, args...)})
}

func (r *report) ok() bool { return len(r.problems) == 0 }

// botMessage is a message the bot sent, with the call that created it
// (its text and when the request arrived) and when the request that last
// set its content (that send or an edit) arrived.
type botMessage struct {
	telegramtest.Message
	createdText string
	createdAt   time.Time
	lastSet     time.Time
}

// outboxRow is one row of the outbox table.
type outboxRow struct {
	id        int64
	kind      string
	messageID string
	body      string
	created   time.Time
	sent      bool
}

// approvalRow is one row of the approvals table.
type approvalRow struct {
	id, callID, state, decidedBy, requester, args string
}

// dbFacts is what the campaign reads of the data directory after the last
// run stopped.
type dbFacts struct {
	convs     map[string][]agentcore.Message // by conversation id
	outbox    []outboxRow
	approvals []approvalRow
	queueLeft int
}

func (c *campaign) readDB(ctx context.Context) (*dbFacts, error) {
	path := filepath.Join(c.home, "switchboard.db")
	f := &dbFacts{convs: map[string][]agentcore.Message{}}
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	convs, err := st.ListConversations(ctx, "main", 100000)
	if err != nil {
		return nil, err
	}
	for _, cv := range convs {
		msgs, err := st.Messages(ctx, cv.ID, 0, 1000000)
		if err != nil {
			return nil, err
		}
		f.convs[cv.ID] = msgs
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, kind, message_id, body, created, sent FROM outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	for rows.Next() {
		var o outboxRow
		var created, sent int64
		var body []byte
		if err := rows.Scan(&o.id, &o.kind, &o.messageID, &body, &created, &sent); err != nil {
			rows.Close()
			return nil, err
		}
		o.body, o.created, o.sent = string(body), time.Unix(0, created), sent != 0
		f.outbox = append(f.outbox, o)
	}
	rows.Close()
	rows, err = db.QueryContext(ctx, `SELECT id, tool_call_id, state, decided_by, requester, arguments FROM approvals ORDER BY created`)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	for rows.Next() {
		var a approvalRow
		if err := rows.Scan(&a.id, &a.callID, &a.state, &a.decidedBy, &a.requester, &a.args); err != nil {
			rows.Close()
			return nil, err
		}
		f.approvals = append(f.approvals, a)
	}
	rows.Close()
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM queue WHERE state = 'queued'`).Scan(&f.queueLeft); err != nil {
		return nil, fmt.Errorf("read queue: %w", err)
	}
	return f, nil
}

// check compares what happened with what every promise says.
func (c *campaign) check() (*report, error) {
	r := &report{seed: c.opts.seed, transcriptOK: true, wall: time.Since(c.log.start)}
	facts, err := c.readDB(context.Background())
	if err != nil {
		return nil, fmt.Errorf("read the data directory: %w", err)
	}
	c.checkProcesses(r)
	c.checkDelivery(r)
	c.checkAnswers(r, facts)
	c.checkApprovals(r, facts)
	c.checkTools(r, facts)
	checkTranscripts(r, facts, c.episodeList())
	r.resumes = resumeDelays(c.log.all())
	if facts.queueLeft > 0 {
		r.queueLeft = facts.queueLeft
		r.fail("", "%d queue items are still queued after the last run stopped", facts.queueLeft)
	}
	for _, o := range facts.outbox {
		if !o.sent {
			r.outboxLeft++
		}
	}
	if r.outboxLeft > 0 {
		r.fail("", "%d outbox items were never sent", r.outboxLeft)
	}
	return r, nil
}

func (c *campaign) checkProcesses(r *report) {
	for _, p := range c.procs {
		if !p.killed.IsZero() {
			r.kills++
			if p.startup {
				r.startupKills++
			}
			if p.beforeReady {
				r.beforeReadyKills++
			}
		}
		if p.ready > 0 {
			r.restarts = append(r.restarts, p.ready)
		}
		if p.exited != "" {
			r.fail("", "run %d exited on its own: %s", p.n, p.exited)
		}
		if p.readyError != "" && p.killed.IsZero() {
			r.fail("", "run %d never became ready: %s", p.n, p.readyError)
		}
		for _, l := range p.leftovers {
			r.leftovers++
			r.fail("", "run %d started with a tool process of an earlier run still alive: pid %d (group %d) %s", p.n, l.pid, l.pgid, l.cmdline)
		}
	}
	for _, l := range c.endProcs {
		r.leftovers++
		r.fail("", "after the last run stopped, a process still works in the workspace: pid %d (group %d) %s", l.pid, l.pgid, l.cmdline)
	}
	if !c.cleanStop {
		r.fail("", "the last run did not exit within 30s of SIGTERM")
	}
}

// checkDelivery: every update the campaign added was confirmed.
func (c *campaign) checkDelivery(r *report) {
	offset := c.tg.Offset()
	for _, ep := range c.episodeList() {
		r.messages++
		if ep.updateID >= offset {
			r.fail(ep.token, "its update %d was never confirmed (offset %d)", ep.updateID, offset)
		}
	}
	for _, p := range c.presses {
		if p.updateID >= offset {
			r.fail(p.ep.token, "the press in update %d was never confirmed (offset %d)", p.updateID, offset)
		}
	}
}

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
		out = append(out, botMessage{Message: m, createdText: cr.Params["text"], createdAt: cr.Received, lastSet: lastSet[m.ID]})
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
	finals := map[int64]map[string]bool{}
	sends := map[int64]outboxRow{}
	for _, o := range f.outbox {
		id, err := strconv.ParseInt(o.messageID, 10, 64)
		if err != nil || !o.sent {
			continue
		}
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
		if mt := ansRE.FindStringSubmatch(m.Text); mt != nil {
			byToken[mt[1]] = append(byToken[mt[1]], m)
		}
	}
	for _, ep := range c.episodeList() {
		var mine []botMessage
		for _, m := range byToken[ep.token] {
			if m.ChatID != ep.chat.id || m.ThreadID != ep.chat.thread {
				r.misplaced++
				r.fail(ep.token, "its answer (message %d) went to chat %d thread %d instead of %s", m.ID, m.ChatID, m.ThreadID, ep.chat.name)
				continue
			}
			mine = append(mine, m)
		}
		if !ep.wantsAnswer() {
			r.superseded++
			if len(mine) > 0 {
				r.fail(ep.token, "it was superseded by a newer message, yet message %d answers it", mine[0].ID)
			}
			continue
		}
		var good *botMessage
		for i := range mine {
			if finals[mine[i].ID][ep.token] && endRE.MatchString(mine[i].Text) {
				good = &mine[i]
				break
			}
		}
		if good == nil {
			r.lost++
			r.fail(ep.token, "never answered: %s", lostCause(ep, f, mine))
			continue
		}
		r.answered++
		if at, ok := c.answered[ep.token]; ok && !ep.late {
			r.latencies = append(r.latencies, at.Sub(ep.sentAt))
		}
		for _, m := range mine {
			if m.ID == good.ID {
				continue
			}
			switch cause := c.duplicateCause(ep.token, m, *good, finals, sends); cause {
			case "send-then-crash":
				r.dupSendCrash++
			case "streaming":
				r.dupStream++
			default:
				r.dupOther++
				r.fail(ep.token, "answered twice: message %d besides %d (%s); calls on %d: %s",
					m.ID, good.ID, cause, m.ID, c.callsOn(m.ID))
			}
		}
	}
}

// callsOn lists the successful calls that created or changed message id,
// with the run that made them.
func (c *campaign) callsOn(id int64) string {
	var parts []string
	for _, call := range c.tg.Calls() {
		if call.Status == 200 && (call.MessageID == id || call.Method == "editMessageText" && call.Int("message_id") == id) {
			parts = append(parts, fmt.Sprintf("%s at %.3fs (run %d)", call.Method, c.log.since(call.Received).Seconds(), c.runAt(call.Received)))
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
func (c *campaign) duplicateCause(token string, m, good botMessage, finals map[int64]map[string]bool, sends map[int64]outboxRow) string {
	if finals[m.ID][token] {
		return "the outbox delivered the final answer twice"
	}
	// The outbox sent good's item once before, as m, and the run died
	// before it recorded that send: the documented send-then-crash window.
	if o, ok := sends[good.ID]; ok && o.created.Before(m.createdAt) && m.createdText == good.createdText && c.killedAfter(m.createdAt) {
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

// checkTools: no tool ran twice, no denied tool ran.
func (c *campaign) checkTools(r *report, f *dbFacts) {
	starts := func(name string) map[string]int {
		n := map[string]int{}
		data, _ := os.ReadFile(filepath.Join(c.ws, name))
		for line := range strings.SplitSeq(string(data), "\n") {
			if tok, ok := strings.CutPrefix(line, "start "); ok {
				n[tok]++
			}
		}
		return n
	}
	ran, asked := starts("ran.log"), starts("asked.log")
	ends := func(name string) map[string]bool {
		n := map[string]bool{}
		data, _ := os.ReadFile(filepath.Join(c.ws, name))
		for line := range strings.SplitSeq(string(data), "\n") {
			if tok, ok := strings.CutPrefix(line, "end "); ok {
				n[tok] = true
			}
		}
		return n
	}
	ranEnd, askedEnd := ends("ran.log"), ends("asked.log")
	state := map[string]string{}
	for _, a := range f.approvals {
		if m := askCmdRE.FindStringSubmatch(a.args); m != nil {
			state[m[1]] = a.state
		}
	}
	for _, ep := range c.episodeList() {
		if n := ran[ep.token]; n > 1 {
			r.ranTwice++
			r.fail(ep.token, "its allowed tool ran %d times", n)
		}
		if n := asked[ep.token]; n > 1 {
			r.ranTwice++
			r.fail(ep.token, "its approved tool ran %d times", n)
		}
		if ep.ask && state[ep.token] != "allowed" && asked[ep.token] > 0 {
			r.deniedRan++
			r.fail(ep.token, "its tool ran although the approval is %q", state[ep.token])
		}
	}
	// Every result tells the truth: a script's output only when it ran to
	// its end, "outcome unknown" only for what may have run, a denial only
	// for what was not allowed.
	for _, msgs := range f.convs {
		cmds := map[string]string{}
		for _, m := range msgs {
			for _, tc := range m.ToolCalls {
				var args struct {
					Command string `json:"command"`
				}
				_ = json.Unmarshal([]byte(tc.Arguments), &args)
				cmds[tc.ID] = args.Command
			}
			if m.Role != agentcore.RoleTool {
				continue
			}
			text := m.Text()
			words := strings.Fields(cmds[m.ToolCallID])
			if len(words) < 2 {
				continue
			}
			tok := words[1]
			unknown := strings.HasPrefix(text, "Outcome unknown")
			refused := strings.HasPrefix(text, "Permission denied") || strings.HasPrefix(text, "Not run")
			switch words[0] {
			case "./mark.sh":
				if !unknown && !(strings.Contains(text, "marked "+tok) && ranEnd[tok]) {
					r.fail(tok, "the result of its allowed tool is %q (ran to the end: %v)", clip(text, 80), ranEnd[tok])
				}
			case "./ask.sh":
				allowed := state[tok] == "allowed"
				switch {
				case allowed && !unknown && !(strings.Contains(text, "asked "+tok) && askedEnd[tok]):
					r.fail(tok, "the result of its approved tool is %q (ran to the end: %v)", clip(text, 80), askedEnd[tok])
				case !allowed && !refused:
					r.fail(tok, "the result of its %s tool is %q", state[tok], clip(text, 80))
				}
			}
		}
	}
}

// checkTranscripts: the provider invariant on every conversation (each
// tool call answered by exactly one result before the next user or
// assistant message, none left open), and each message's input appended
// exactly once (agentcoretest.CheckTranscript's rule, without a testing.T).
func checkTranscripts(r *report, f *dbFacts, eps []*episode) {
	inputs := map[string]int{}
	answers := map[string]int{}
	calls := map[string]int{}
	for id, msgs := range f.convs {
		open := map[string]bool{}
		for _, m := range msgs {
			switch m.Role {
			case agentcore.RoleAssistant, agentcore.RoleUser:
				if len(open) > 0 {
					r.transcriptOK = false
					r.fail(tokenOfCalls(open), "conversation %s: message %d (%s) follows unanswered tool calls %v", id, m.Seq, m.Role, slices.Sorted(maps.Keys(open)))
					open = map[string]bool{}
				}
				for _, tc := range m.ToolCalls {
					open[tc.ID] = true
					calls[tc.ID]++
				}
				if m.Role == agentcore.RoleUser {
					if mt := taskRE.FindStringSubmatch(m.Text()); mt != nil {
						inputs[mt[1]]++
					}
				}
				if m.Role == agentcore.RoleAssistant {
					if mt := endRE.FindStringSubmatch(m.Text()); mt != nil {
						answers[mt[1]]++
					}
				}
			case agentcore.RoleTool:
				if !open[m.ToolCallID] {
					r.transcriptOK = false
					r.fail(tokenOfCalls(map[string]bool{m.ToolCallID: true}), "conversation %s: tool result %d answers unknown or already answered call %s", id, m.Seq, m.ToolCallID)
				}
				delete(open, m.ToolCallID)
			}
		}
		if len(open) > 0 {
			r.transcriptOK = false
			r.fail(tokenOfCalls(open), "conversation %s ends with unanswered tool calls %v", id, slices.Sorted(maps.Keys(open)))
		}
	}
	for id, n := range calls {
		if n > 1 {
			r.transcriptOK = false
			r.fail(tokenOfCalls(map[string]bool{id: true}), "tool call id %s appears in %d assistant messages", id, n)
		}
	}
	for _, ep := range eps {
		if n := inputs[ep.token]; n > 1 {
			r.transcriptOK = false
			r.fail(ep.token, "its input was appended %d times", n)
		}
		if n := answers[ep.token]; n > 1 {
			r.transcriptOK = false
			r.fail(ep.token, "its final answer was stored %d times (the model was asked again after it answered)", n)
		}
	}
}

func tokenOfCalls(ids map[string]bool) string {
	for id := range ids {
		if m := callIDRE.FindStringSubmatch(id); m != nil {
			return m[1]
		}
	}
	return ""
}

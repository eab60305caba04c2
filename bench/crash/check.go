package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
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
	platforms        map[string]*platformFigures // Slack and Discord figures (Telegram's too, unprinted)
}

// platformFigures are one platform's share of the figures.
type platformFigures struct {
	messages, down, answered, lost, dup, misplaced   int
	asks, decided, pressed, pressAnswered, repressed int
	gone                                             int // Slack presses on buttons already removed
}

func (r *report) platform(name string) *platformFigures {
	if r.platforms == nil {
		r.platforms = map[string]*platformFigures{}
	}
	if r.platforms[name] == nil {
		r.platforms[name] = &platformFigures{}
	}
	return r.platforms[name]
}

func (r *report) fail(token, format string, args ...any) {
	r.problems = append(r.problems, problem{token: token, what: fmt.Sprintf(format, args...)})
}

func (r *report) ok() bool { return len(r.problems) == 0 }

// botMessage is a message the bot sent, with the call that created it
// (its text and when the request arrived) and when the request that last
// set its content (that send or an edit) arrived.
type botMessage struct {
	platform    string
	place       string // where it is, in the form of chat.placeLocked
	id          string // the platform's message id (Slack: ts)
	text        string // what it shows now
	markup      string // Telegram: its reply markup now
	createdText string
	createdAt   time.Time
	lastSet     time.Time
}

// key names the message across platforms, as the outbox's location and
// message id do.
func (m botMessage) key() string { return m.platform + "#" + m.id }

// outboxRow is one row of the outbox table.
type outboxRow struct {
	id        int64
	kind      string
	location  string
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
	rows, err := db.QueryContext(ctx, `SELECT id, kind, location, message_id, body, created, sent FROM outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	for rows.Next() {
		var o outboxRow
		var created, sent int64
		var body []byte
		if err := rows.Scan(&o.id, &o.kind, &o.location, &o.messageID, &body, &created, &sent); err != nil {
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
	if c.tb != nil {
		for _, e := range c.tb.reported() {
			r.fail("", "a platform fake reported: %s", e)
		}
	}
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
		if ep.chat.platform != platformTelegram {
			continue
		}
		if ep.updateID >= offset {
			r.fail(ep.token, "its update %d was never confirmed (offset %d)", ep.updateID, offset)
		}
	}
	for _, p := range c.presses {
		if p.ep.chat.platform == platformTelegram && p.updateID >= offset {
			r.fail(p.ep.token, "the press in update %d was never confirmed (offset %d)", p.updateID, offset)
		}
	}
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

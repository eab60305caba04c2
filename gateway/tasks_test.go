package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// isChild reports whether a request is a sub-agent's: a fresh child's
// system prompt, or a fork's reminder.
func isChild(req fakemodel.Request) bool {
	for _, m := range req.Messages {
		text := m.Text()
		if m.Role == "system" && strings.HasPrefix(text, "You are a sub-agent of") {
			return true
		}
		if m.Role == "user" && strings.Contains(text, "You are now a forked sub-agent") {
			return true
		}
	}
	return false
}

// route answers the parent's and the sub-agents' requests from two
// scripts, "parent" and "child".
func route(m *fakemodel.Server, parent, child []fakemodel.Step) *fakemodel.Router {
	r := fakemodel.NewRouter(func(req fakemodel.Request) string {
		if isChild(req) {
			return "child"
		}
		return "parent"
	})
	r.Add("parent", parent...)
	r.Add("child", child...)
	m.SetResponder(r.Respond)
	return r
}

func agentCall(id, typ, prompt string, extra map[string]any) fakemodel.Step {
	args := map[string]any{"description": "count the notes", "prompt": prompt, "subagent_type": typ}
	for k, v := range extra {
		args[k] = v
	}
	b, _ := json.Marshal(args)
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Agent", Arguments: string(b)}}}
}

func readCall(id, path string) fakemodel.Step {
	b, _ := json.Marshal(map[string]string{"file_path": path})
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Read", Arguments: string(b)}}}
}

var thread = channels.Location{Channel: "chat", Account: "bot", ChatID: "room", ThreadID: "t1"}

func threadMsg(id, user, text string) channels.Inbound {
	in := inbound(id, user, text, thread)
	in.DirectMessage = false
	return in
}

// postedWith returns the messages posted at loc whose final content
// contains substr.
func postedWith(a *channelstest.Adapter, loc channels.Location, substr string) []channelstest.Posted {
	var out []channelstest.Posted
	for _, p := range a.Posted(loc) {
		if strings.Contains(strings.Join(channels.RenderMessage(p.Message, a.Capabilities()), "\n"), substr) {
			out = append(out, p)
		}
	}
	return out
}

func lastUserText(req fakemodel.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Text()
		}
	}
	return ""
}

func allText(req fakemodel.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Text())
		b.WriteString("\n")
	}
	return b.String()
}

func (h *harness) tasks(conv string) []agentcore.Task {
	h.t.Helper()
	ts, err := h.db.ConversationTasks(context.Background(), conv, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return ts
}

func (h *harness) conversationAt(loc channels.Location) string {
	h.t.Helper()
	b, err := h.db.Binding(context.Background(), loc.String())
	if err != nil {
		h.t.Fatal(err)
	}
	return b.ConversationID
}

// The first done-when: a parent in a thread starts a background task and
// answers at once; the child runs a tool and reports; the report is posted
// in that thread exactly once; the parent's next turn sees the
// <task-notification>. The child is fresh: it never sees the parent's
// conversation.
func TestTaskBackgroundReportsInThread(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if err := os.WriteFile(filepath.Join(h.workspace, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	r := route(h.model,
		[]fakemodel.Step{
			agentCall("a1", "general-purpose", "Count the lines of notes.txt and report the number.", nil),
			{Text: "I started a helper; I will tell you."},
			{Text: "The helper says notes.txt has 3 lines."},
		},
		[]fakemodel.Step{
			func() fakemodel.Step { s := readCall("r1", "notes.txt"); s.Block = answered; return s }(),
			{Text: "notes.txt has 3 lines."},
		})
	h.send(threadMsg("m1", "alice", "secret-parent-words: how long is notes.txt?"))
	// The parent answers while the child's first model call is held.
	waitText(t, h.chat, "I started a helper")
	if n := len(r.Requests("child")); n > 1 {
		t.Fatalf("the child made %d model calls before the parent answered", n)
	}
	close(answered)
	waitText(t, h.chat, "The helper says notes.txt has 3 lines.")

	for _, rec := range h.chat.Records() {
		if (rec.Op == channelstest.OpSend || rec.Op == channelstest.OpEdit) && rec.Location != thread {
			t.Errorf("%s went to %v, not the thread", rec.Op, rec.Location)
		}
	}
	if n := len(postedWith(h.chat, thread, "notes.txt has 3 lines.")); n < 1 {
		t.Fatal("no report in the thread")
	}
	eventually(t, "one report message", func() bool { return len(postedWith(h.chat, thread, "📋 Report")) == 1 })
	reports := postedWith(h.chat, thread, "📋 Report")
	if !strings.Contains(strings.Join(channels.RenderMessage(reports[0].Message, h.chat.Capabilities()), "\n"), "notes.txt has 3 lines.") {
		t.Errorf("the report message does not carry the report: %+v", reports[0].Message)
	}
	// The status line ended with the task's status and duration.
	eventually(t, "the status line to say done", func() bool {
		return len(postedWith(h.chat, thread, "✅ sub-agent general-purpose")) == 1
	})

	parent := r.Requests("parent")
	if len(parent) != 3 {
		t.Fatalf("parent made %d model calls, want 3", len(parent))
	}
	note := lastUserText(parent[2])
	for _, want := range []string{"<task-notification>", "task-id: t-", "status: done", "notes.txt has 3 lines.", "report-file: " + h.overflow} {
		if !strings.Contains(note, want) {
			t.Errorf("the parent's third request does not carry %q:\n%s", want, note)
		}
	}
	// The Agent call's own result: a task id at once.
	if res := toolResults(parent[1]); len(res) != 1 || !strings.Contains(res[0], "in the background") {
		t.Errorf("the Agent call's result = %q", res)
	}
	child := r.Requests("child")
	if len(child) != 2 {
		t.Fatalf("child made %d model calls, want 2", len(child))
	}
	if strings.Contains(allText(child[0]), "secret-parent-words") {
		t.Error("a fresh child saw the parent's conversation")
	}
	if !strings.Contains(lastUserText(child[0]), "Count the lines of notes.txt") {
		t.Errorf("the child's first message is not its brief: %q", lastUserText(child[0]))
	}
	if names := child[0].ToolNames(); strings.Contains(strings.Join(names, ","), "Agent") || len(names) != 7 {
		t.Errorf("general-purpose child tools = %v", names)
	}
	ts := h.tasks(h.conversationAt(thread))
	if len(ts) != 1 || ts[0].Status != agentcore.TaskDone || ts[0].Report != "notes.txt has 3 lines." || ts[0].ReportFile == "" {
		t.Fatalf("tasks = %+v", ts)
	}
	if b, err := os.ReadFile(ts[0].ReportFile); err != nil || string(b) != "notes.txt has 3 lines." {
		t.Errorf("report file: %q, %v", b, err)
	}
}

// A child's ask yields buttons in the parent's thread, labelled with the
// task; a non-approver's press is refused; the approver's press resumes
// the child, which finishes and reports.
func TestTaskChildAskInParentThread(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	r := route(h.model,
		[]fakemodel.Step{
			agentCall("a1", "general-purpose", "Create the file made-by-child.", nil),
			{Text: "Helper started."},
			{Text: "Done: the helper made the file."},
		},
		[]fakemodel.Step{
			bashCall("b1", "touch made-by-child"),
			{Text: "I made the file."},
		})
	h.send(threadMsg("m1", "alice", "make the file with a helper"))
	waitText(t, h.chat, "Helper started.")
	waitText(t, h.chat, "Approval needed")
	ref, rows := buttons(t, h.chat, "Approval needed")
	ask := postedWith(h.chat, thread, "Approval needed")
	if len(ask) != 1 || !strings.Contains(strings.Join(channels.RenderMessage(ask[0].Message, h.chat.Capabilities()), ""), "sub-agent general-purpose · task t-") {
		t.Fatalf("the ask is not labelled with the task: %+v", ask)
	}
	reply, err := h.chat.Press(h.ctx(), channels.Action{EventID: "p1", Location: thread, User: channels.User{ID: "bob"}, Token: rows[0][0].Token, Message: ref})
	if err != nil || !reply.Alert || !strings.Contains(reply.Text, "Only") {
		t.Fatalf("bob's press: %+v, %v", reply, err)
	}
	if _, err := os.Stat(filepath.Join(h.workspace, "made-by-child")); err == nil {
		t.Fatal("the child's tool ran after a refused press")
	}
	reply, err = h.chat.Press(h.ctx(), channels.Action{EventID: "p2", Location: thread, User: channels.User{ID: "alice"}, Token: rows[0][0].Token, Message: ref})
	if err != nil || !strings.Contains(reply.Text, "Approved") {
		t.Fatalf("alice's press: %+v, %v", reply, err)
	}
	waitText(t, h.chat, "Done: the helper made the file.")
	if _, err := os.Stat(filepath.Join(h.workspace, "made-by-child")); err != nil {
		t.Fatal("the approved tool of the child did not run")
	}
	eventually(t, "one report", func() bool { return len(postedWith(h.chat, thread, "📋 Report")) == 1 })
	if n := len(r.Requests("child")); n != 2 {
		t.Errorf("child made %d calls, want 2", n)
	}
	note := lastUserText(r.Requests("parent")[2])
	if !strings.Contains(note, "I made the file.") {
		t.Errorf("parent's notification: %q", note)
	}
}

// Foreground: the parent's turn parks on the task (nothing waits in
// memory) and resumes with the report as the Agent call's result.
func TestTaskForegroundParksAndResumes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	hold := make(chan struct{})
	r := route(h.model,
		[]fakemodel.Step{
			agentCall("a1", "explore", "Find where main is.", map[string]any{"background": false}),
			{Text: "main is in main.go, says the helper."},
		},
		[]fakemodel.Step{
			{Text: "main is in main.go.", Block: hold},
		})
	h.send(threadMsg("m1", "alice", "where is main?"))
	eventually(t, "the child's model call", func() bool { return len(r.Requests("child")) == 1 })
	// Parked: the parent's item is done, nothing of it runs.
	conv := h.conversationAt(thread)
	eventually(t, "the parent to park", func() bool {
		items, _ := h.db.Pending(context.Background(), conv)
		return len(items) == 0 && len(postedWith(h.chat, thread, "Waiting for sub-agent task")) == 1
	})
	close(hold)
	waitText(t, h.chat, "main is in main.go, says the helper.")
	parent := r.Requests("parent")
	if len(parent) != 2 {
		t.Fatalf("parent made %d calls, want 2", len(parent))
	}
	res := toolResults(parent[1])
	if len(res) != 1 || !strings.Contains(res[0], "Report:\nmain is in main.go.") {
		t.Fatalf("the Agent call's result = %q", res)
	}
	if strings.Contains(lastUserText(parent[1]), "<task-notification>") {
		t.Error("a foreground task also sent a notification")
	}
	// One message of the parent's turn: the parked message continued.
	eventually(t, "the parked message to show the answer", func() bool {
		return len(postedWith(h.chat, thread, "main is in main.go, says the helper.")) == 1 &&
			len(postedWith(h.chat, thread, "Waiting for sub-agent task")) == 0
	})
	if names := r.Requests("child")[0].ToolNames(); strings.Join(names, ",") != "Read,Grep,Glob" {
		t.Errorf("explore tools = %v", names)
	}
}

// A fork starts from a copy of the parent's view; a fresh child does not.
func TestTaskForkSeesParentConversation(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	r := route(h.model,
		[]fakemodel.Step{
			{Text: "Noted: the code word is pelican."},
			agentCall("a1", "general-purpose", "What is the code word?", map[string]any{"fork": true, "background": false}),
			{Text: "The fork knew it."},
		},
		[]fakemodel.Step{{Text: "The code word is pelican."}})
	h.send(threadMsg("m1", "alice", "remember: the code word is pelican"))
	waitText(t, h.chat, "Noted")
	h.send(threadMsg("m2", "alice", "ask a fork for the code word"))
	waitText(t, h.chat, "The fork knew it.")
	child := r.Requests("child")[0]
	if !strings.Contains(allText(child), "the code word is pelican") {
		t.Error("the fork did not see the parent's conversation")
	}
	if child.Messages[0].Text() != r.Requests("parent")[0].Messages[0].Text() {
		t.Error("the fork's system prompt is not the parent's")
	}
	// The fork's copy holds no open call: every tool call has its result.
	for _, m := range child.Messages {
		if len(m.ToolCalls) > 0 {
			t.Errorf("the fork's copy has an assistant message with calls: %+v", m.ToolCalls)
		}
	}
}

// Depth: a child of depth 2 has no Agent tool; a type that lists every
// tool gets Agent below the limit. With one slot (max_tasks 1) a child
// waiting for its own foreground task holds no slot, so its task runs.
func TestTaskDepthLimit(t *testing.T) {
	all := agentcore.SubagentType{Name: "deep", Description: "every tool"}
	h := newHarness(t, harnessOpts{subagents: []agentcore.SubagentType{all}, maxTasks: 1})
	r := route(h.model,
		[]fakemodel.Step{
			agentCall("a1", "deep", "level one", map[string]any{"background": false}),
			{Text: "all levels reported"},
		},
		[]fakemodel.Step{
			agentCall("a2", "deep", "level two", nil), // foreground below the top
			{Text: "level two done"},
			{Text: "level one done"},
		})
	h.send(threadMsg("m1", "alice", "go deep"))
	waitText(t, h.chat, "all levels reported")
	child := r.Requests("child")
	if len(child) != 3 {
		t.Fatalf("children made %d calls, want 3", len(child))
	}
	hasAgent := func(req fakemodel.Request) bool {
		return strings.Contains(strings.Join(req.ToolNames(), ","), "Agent")
	}
	if !hasAgent(child[0]) {
		t.Error("a depth-1 child of a type with every tool has no Agent tool")
	}
	if hasAgent(child[1]) {
		t.Error("a depth-2 child has the Agent tool")
	}
	ts := h.tasks(h.conversationAt(thread))
	if len(ts) != 1 {
		t.Fatalf("top tasks = %d", len(ts))
	}
	kids := h.tasks(ts[0].ConversationID)
	if len(kids) != 1 || kids[0].Depth != 2 || kids[0].Background {
		t.Fatalf("nested tasks = %+v", kids)
	}
}

// max_tasks: with one slot, a second task waits in the queue until the
// first ends.
func TestTaskMaxTasksPerAgent(t *testing.T) {
	h := newHarness(t, harnessOpts{maxTasks: 1})
	hold := make(chan struct{})
	var mu sync.Mutex
	started := map[string]bool{}
	h.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
		if !isChild(req) {
			if len(toolResults(req)) == 0 && !strings.Contains(lastUserText(req), "<task-notification>") {
				s1 := agentCall("a1", "explore", "job one", nil)
				s2 := agentCall("a2", "explore", "job two", nil)
				s1.ToolCalls = append(s1.ToolCalls, s2.ToolCalls...)
				return s1
			}
			return fakemodel.Step{Text: "parent ok"}
		}
		brief := lastUserText(req)
		mu.Lock()
		started[brief] = true
		mu.Unlock()
		return fakemodel.Step{Text: "job done", Block: hold}
	})
	h.send(threadMsg("m1", "alice", "two jobs"))
	eventually(t, "the first job", func() bool { mu.Lock(); defer mu.Unlock(); return len(started) == 1 })
	ts := h.tasks(h.conversationAt(thread))
	statuses := map[agentcore.TaskStatus]int{}
	for _, tk := range ts {
		statuses[tk.Status]++
	}
	if statuses[agentcore.TaskRunning] != 1 || statuses[agentcore.TaskQueued] != 1 {
		t.Fatalf("with max_tasks 1: %v", statuses)
	}
	mu.Lock()
	if len(started) != 1 {
		t.Fatalf("both jobs started: %v", started)
	}
	mu.Unlock()
	close(hold)
	eventually(t, "both tasks to end", func() bool {
		n := 0
		for _, tk := range h.tasks(h.conversationAt(thread)) {
			if tk.Status == agentcore.TaskDone {
				n++
			}
		}
		return n == 2
	})
}

// /tasks lists; /stop t-… stops one task (its report says cancelled).
func TestTaskStopOne(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	hold := make(chan struct{})
	defer close(hold)
	route(h.model,
		[]fakemodel.Step{
			agentCall("a1", "explore", "a long look", nil),
			{Text: "Started."},
			{Text: "It was stopped."},
		},
		[]fakemodel.Step{{Text: "never", Block: hold}})
	h.send(threadMsg("m1", "alice", "look around"))
	waitText(t, h.chat, "Started.")
	var id string
	eventually(t, "the task to run", func() bool {
		ts := h.tasks(h.conversationAt(thread))
		if len(ts) == 1 && ts[0].Status == agentcore.TaskRunning {
			id = ts[0].ID
			return true
		}
		return false
	})
	h.send(threadMsg("c1", "alice", "/tasks"))
	waitText(t, h.chat, "Sub-agent tasks")
	waitText(t, h.chat, id)
	h.send(threadMsg("c2", "alice", "/stop "+id))
	waitText(t, h.chat, "Stopping task")
	waitText(t, h.chat, "It was stopped.")
	ts := h.tasks(h.conversationAt(thread))
	if ts[0].Status != agentcore.TaskCancelled {
		t.Fatalf("status = %s", ts[0].Status)
	}
	eventually(t, "the cancelled status line", func() bool { return len(postedWith(h.chat, thread, "⏹ sub-agent explore")) == 1 })
}

// Deny rules hold in children, and the mode ceiling: a type asking for
// unrestricted under a standard parent still asks.
func TestTaskChildPolicyNoLooser(t *testing.T) {
	rule, err := permission.ParseRule("Bash(rm:*)")
	if err != nil {
		t.Fatal(err)
	}
	yolo := agentcore.SubagentType{Name: "yolo", Description: "wants everything", Mode: "unrestricted", Tools: []string{"Bash", "Write"}}
	h := newHarness(t, harnessOpts{deny: []permission.Rule{rule}, subagents: []agentcore.SubagentType{yolo}})
	r := route(h.model,
		[]fakemodel.Step{
			agentCall("a1", "yolo", "delete and write", nil),
			{Text: "started"},
			{Text: "parent heard it"},
		},
		[]fakemodel.Step{
			bashCall("b1", "rm -f important.txt"),
			func() fakemodel.Step {
				b, _ := json.Marshal(map[string]string{"file_path": "new.txt", "content": "x"})
				return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "w1", Name: "Write", Arguments: string(b)}}}
			}(),
			{Text: "tried"},
		})
	if err := os.WriteFile(filepath.Join(h.workspace, "important.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.send(threadMsg("m1", "alice", "go"))
	waitText(t, h.chat, "Approval needed") // Write asks: the type's unrestricted is capped at standard
	if _, err := os.Stat(filepath.Join(h.workspace, "important.txt")); err != nil {
		t.Fatal("a deny rule did not hold in the child")
	}
	child := r.Requests("child")
	if res := toolResults(child[1]); len(res) != 1 || !strings.Contains(res[0], "deny rule") {
		t.Fatalf("the child's rm result = %q", res)
	}
	if _, err := os.Stat(filepath.Join(h.workspace, "new.txt")); err == nil {
		t.Fatal("the child wrote without approval")
	}
}

// A background task that ends while its parent is parked on an approval
// does not deny the parent's ask: its notification is kept and reaches
// the model after the parked step's results, once.
func TestTaskNotificationWhileParentParked(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	parked := make(chan struct{})
	r := route(h.model,
		[]fakemodel.Step{
			agentCall("a1", "explore", "look around", nil),
			bashCall("b1", "touch parent-file"),
			{Text: "Both done."},
		},
		[]fakemodel.Step{{Text: "looked around: all fine", Block: parked}})
	h.send(threadMsg("m1", "alice", "start a helper, then make a file"))
	waitText(t, h.chat, "Approval needed")
	close(parked)
	conv := h.conversationAt(thread)
	eventually(t, "the notification to be kept", func() bool {
		ts := h.tasks(conv)
		items, _ := h.db.Pending(context.Background(), conv)
		return len(ts) == 1 && ts[0].Status == agentcore.TaskDone && len(items) == 0
	})
	pending, err := h.db.PendingApprovals(context.Background(), conv)
	if err != nil || len(pending) != 1 {
		t.Fatalf("the parent's ask was settled by the notification: %v %v", pending, err)
	}
	if n := len(r.Requests("parent")); n != 2 {
		t.Fatalf("the kept notification ran a model call (%d)", n)
	}
	ref, rows := buttons(t, h.chat, "Approval needed")
	if reply, err := h.chat.Press(h.ctx(), channels.Action{EventID: "p1", Location: thread, User: channels.User{ID: "alice"}, Token: rows[0][0].Token, Message: ref}); err != nil || !strings.Contains(reply.Text, "Approved") {
		t.Fatalf("press: %+v %v", reply, err)
	}
	waitText(t, h.chat, "Both done.")
	last := r.Requests("parent")[2]
	if res := toolResults(last); len(res) != 2 || strings.Contains(res[1], "denied") || strings.Contains(res[1], "new message") {
		t.Fatalf("the parent's Bash result = %q", res)
	}
	if !strings.Contains(lastUserText(last), "<task-notification>") || !strings.Contains(lastUserText(last), "looked around: all fine") {
		t.Fatalf("the kept notification did not reach the model: %q", lastUserText(last))
	}
	msgs, err := h.db.Messages(context.Background(), conv, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if strings.Contains(m.ModelText(), "<task-notification>\ntask-id:") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the notification is %d times in the transcript", n)
	}
	if _, err := os.Stat(filepath.Join(h.workspace, "parent-file")); err != nil {
		t.Fatal("the approved parent call did not run")
	}
}

// A child never writes the agent's memory: its policy puts the memory
// directory out of reach in every mode.
func TestTaskChildCannotWriteMemory(t *testing.T) {
	root := t.TempDir()
	mem := filepath.Join(root, "main")
	if err := os.MkdirAll(mem, 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{mode: "unrestricted", memoryDir: mem, memoryRoot: root})
	write := func(id string) fakemodel.Step {
		b, _ := json.Marshal(map[string]string{"file_path": filepath.Join(mem, "notes.md"), "content": "from " + id})
		return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Write", Arguments: string(b)}}}
	}
	r := route(h.model,
		[]fakemodel.Step{agentCall("a1", "general-purpose", "write memory", map[string]any{"background": false}), {Text: "ok"}},
		[]fakemodel.Step{write("w1"), {Text: "could not"}})
	h.send(threadMsg("m1", "alice", "let a helper write memory"))
	waitText(t, h.chat, "ok")
	if res := toolResults(r.Requests("child")[1]); len(res) != 1 || !strings.Contains(res[0], "Permission denied") {
		t.Fatalf("the child's memory write = %q", res)
	}
	if _, err := os.Stat(filepath.Join(mem, "notes.md")); err == nil {
		t.Fatal("a child wrote the agent's memory")
	}
}

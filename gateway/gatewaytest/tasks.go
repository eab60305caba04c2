package gatewaytest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

// The task port (gateway.TaskStore): a task's start, slot and end each
// change the queue and the outbox in one transaction, and an end is
// written once. Task rows name conversations, so these tests need the
// store's agent side too (agentcore.Transcript and agentcore.Tasks).

type taskStore interface {
	gateway.Store
	CreateConversation(ctx context.Context, c agentcore.Conversation) error
	agentcore.Tasks
}

func taskWorld(t *testing.T, s gateway.Store) (taskStore, agentcore.Task) {
	t.Helper()
	ts, ok := s.(taskStore)
	if !ok {
		t.Skip("the store does not keep conversations and tasks")
	}
	ctx := t.Context()
	parent, child := newID("conv"), newID("conv")
	for _, c := range []string{parent, child} {
		if err := ts.CreateConversation(ctx, agentcore.Conversation{ID: c, AgentID: "main"}); err != nil {
			t.Fatalf("CreateConversation: %v", err)
		}
	}
	return ts, agentcore.Task{
		ID: newID("t"), AgentID: "main", ParentConversationID: parent, ParentLocation: "telegram:-1001:77",
		ParentToolCallID: "call-1", ConversationID: child, Type: "explore", Description: "look", Prompt: "look around",
		Spec: agentcore.SubagentType{Name: "explore", Description: "reads", Tools: []string{"Read"}}, Background: true,
		Depth: 1, Requester: "telegram:100", Status: agentcore.TaskQueued, Created: base(),
	}
}

func startTask(t *testing.T, s taskStore, task agentcore.Task) agentcore.Task {
	t.Helper()
	first := gateway.Item{ConversationID: task.ConversationID, AgentID: "main", Kind: gateway.ItemTask, Location: task.ParentLocation}
	status := gateway.Outbound{Kind: gateway.OutboundSend, Location: task.ParentLocation, Body: []byte(`{"status":1}`)}
	got, err := s.StartTask(t.Context(), task, first, status)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	return got
}

func testTaskStart(t *testing.T, gs gateway.Store) {
	s, task := taskWorld(t, gs)
	ctx := t.Context()
	got := startTask(t, s, task)
	if got.StatusPost == 0 {
		t.Fatal("StartTask recorded no status post")
	}
	st, err := s.OutboundItem(ctx, got.StatusPost)
	if err != nil || string(st.Body) != `{"status":1}` || st.Location != task.ParentLocation {
		t.Fatalf("status post = %+v, %v", st, err)
	}
	it, err := s.Peek(ctx, task.ConversationID, nil)
	if err != nil || it.Kind != gateway.ItemTask || it.Location != task.ParentLocation {
		t.Fatalf("the child's first item = %+v, %v", it, err)
	}
	want := task
	want.StatusPost = got.StatusPost
	for what, read := range map[string]func() (agentcore.Task, error){
		"Task":               func() (agentcore.Task, error) { return s.Task(ctx, task.ID) },
		"TaskOfConversation": func() (agentcore.Task, error) { return s.TaskOfConversation(ctx, task.ConversationID) },
	} {
		r, err := read()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(t, what, r, want)
	}
	_, err = s.TaskOfConversation(ctx, task.ParentConversationID)
	if !errors.Is(err, agentcore.ErrNotFound) {
		t.Fatalf("TaskOfConversation of a conversation that is no task's: %v", err)
	}
	calls, err := s.CallTasks(ctx, task.ParentConversationID, []string{"call-1", "call-2"})
	if err != nil || len(calls) != 1 || calls["call-1"].ID != task.ID {
		t.Fatalf("CallTasks = %v, %v", calls, err)
	}
	// A task of an unknown conversation is refused, and nothing is queued.
	bad := task
	bad.ID, bad.ConversationID = newID("t"), newID("conv")
	before := latestIDs(t, s)
	if _, err := s.StartTask(ctx, bad, gateway.Item{ConversationID: bad.ConversationID, Kind: gateway.ItemTask, Location: bad.ParentLocation},
		gateway.Outbound{Kind: gateway.OutboundSend, Location: bad.ParentLocation, Body: []byte(`{}`)}); err == nil {
		t.Fatal("StartTask of a task whose conversation does not exist succeeded")
	}
	if after := latestIDs(t, s); after != before {
		t.Fatalf("a refused StartTask wrote: ids %v → %v", before, after)
	}
}

func latestIDs(t *testing.T, s gateway.Store) [2]int64 {
	t.Helper()
	q, o, err := s.LatestIDs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return [2]int64{q, o}
}

func testTaskAdmit(t *testing.T, gs gateway.Store) {
	s, a := taskWorld(t, gs)
	ctx := t.Context()
	startTask(t, s, a)
	b := a
	b.ID, b.ConversationID, b.ParentToolCallID = newID("t"), newID("conv"), "call-2"
	if err := s.CreateConversation(ctx, agentcore.Conversation{ID: b.ConversationID, AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	startTask(t, s, b)
	got, runs, err := s.AdmitTask(ctx, a.ID, 1)
	if err != nil || !runs || got.Status != agentcore.TaskRunning || got.Started.IsZero() {
		t.Fatalf("AdmitTask(a) = %+v, %v, %v", got, runs, err)
	}
	if _, runs, err := s.AdmitTask(ctx, b.ID, 1); err != nil || runs {
		t.Fatalf("AdmitTask(b) with the slot taken = %v, %v", runs, err)
	}
	if q, err := s.QueuedTasks(ctx, "main"); err != nil || !slices.Equal(q, []string{b.ConversationID}) {
		t.Fatalf("QueuedTasks = %v, %v", q, err)
	}
	// A task waiting for approval holds no slot.
	if err := s.SetTaskStatus(ctx, a.ID, agentcore.TaskWaiting); err != nil {
		t.Fatal(err)
	}
	if got, runs, err := s.AdmitTask(ctx, b.ID, 1); err != nil || !runs || got.Status != agentcore.TaskRunning {
		t.Fatalf("AdmitTask(b) beside a waiting task = %+v, %v, %v", got, runs, err)
	}
	// A running task is admitted as it is.
	if got, runs, err := s.AdmitTask(ctx, b.ID, 0); err != nil || !runs || got.Status != agentcore.TaskRunning {
		t.Fatalf("AdmitTask of a running task = %+v, %v, %v", got, runs, err)
	}
	list, err := s.ConversationTasks(ctx, a.ParentConversationID, 0)
	if err != nil || len(list) != 2 {
		t.Fatalf("ConversationTasks = %v, %v", list, err)
	}
}

func testTaskFinishOnce(t *testing.T, gs gateway.Store) {
	for _, background := range []bool{true, false} {
		s, task := taskWorld(t, gs)
		ctx := t.Context()
		task.Background = background
		task = startTask(t, s, task)
		it, err := s.Peek(ctx, task.ConversationID, nil)
		if err != nil {
			t.Fatal(err)
		}
		end := task
		end.Status, end.Report, end.Ended = agentcore.TaskDone, "the report", base().Add(time.Minute)
		notify := gateway.Item{Kind: gateway.ItemNotification, Payload: []byte(`{"text":"<task-notification>"}`)}
		resume := gateway.Item{Kind: gateway.ItemResume}
		report := gateway.Outbound{Kind: gateway.OutboundSend, Location: task.ParentLocation, Body: []byte(`{"report":1}`)}
		finished, err := s.FinishTask(ctx, it.ID, end, notify, resume, []gateway.Outbound{report})
		if err != nil || !finished {
			t.Fatalf("FinishTask = %v, %v", finished, err)
		}
		got, err := s.Task(ctx, task.ID)
		if err != nil || got.Status != agentcore.TaskDone || got.Report != "the report" || !sameTime(got.Ended, end.Ended) {
			t.Fatalf("task after FinishTask = %+v, %v", got, err)
		}
		parent, err := s.Pending(ctx, task.ParentConversationID)
		wantKind := gateway.ItemResume
		if background {
			wantKind = gateway.ItemNotification
		}
		if err != nil || len(parent) != 1 || parent[0].Kind != wantKind || parent[0].Location != task.ParentLocation || parent[0].AgentID != "main" {
			t.Fatalf("background=%v: the parent's items = %+v, %v", background, parent, err)
		}
		if _, err := s.Peek(ctx, task.ConversationID, nil); !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("the child's item is not done: %v", err)
		}
		// The same end again, with the item done: ErrNotFound, nothing
		// written.
		before := latestIDs(t, s)
		if _, err := s.FinishTask(ctx, it.ID, end, notify, resume, []gateway.Outbound{report}); !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("FinishTask of a done item: %v", err)
		}
		if after := latestIDs(t, s); after != before {
			t.Fatalf("FinishTask of a done item wrote: %v → %v", before, after)
		}
		// Another item of the ended task: completed, nothing else.
		extra := mustEnqueue(t, s, gateway.Item{ConversationID: task.ConversationID, AgentID: "main", Kind: gateway.ItemResume, Location: task.ParentLocation}, "")
		before = latestIDs(t, s)
		finished, err = s.FinishTask(ctx, extra.ID, end, notify, resume, []gateway.Outbound{report})
		if err != nil || finished {
			t.Fatalf("FinishTask of an ended task = %v, %v", finished, err)
		}
		if after := latestIDs(t, s); after != before {
			t.Fatalf("the second end wrote: %v → %v", before, after)
		}
		if items, _ := s.Pending(ctx, task.ConversationID); len(items) != 0 {
			t.Fatalf("the ended task's item is still queued: %+v", items)
		}
		if p, _ := s.Pending(ctx, task.ParentConversationID); len(p) != 1 {
			t.Fatalf("the parent got %d items, want 1", len(p))
		}
	}
}

func testTaskDetach(t *testing.T, gs gateway.Store) {
	s, task := taskWorld(t, gs)
	ctx := t.Context()
	task.Background = false
	task = startTask(t, s, task)
	d, err := s.DetachTask(ctx, task.ID)
	if err != nil || !d.Background {
		t.Fatalf("DetachTask = %+v, %v", d, err)
	}
	end := d
	end.Status = agentcore.TaskCancelled
	if ok, err := s.FinishTask(ctx, 0, end, gateway.Item{Kind: gateway.ItemNotification, Payload: []byte(`{}`)}, gateway.Item{Kind: gateway.ItemResume}, nil); err != nil || !ok {
		t.Fatalf("FinishTask without an item = %v, %v", ok, err)
	}
	if p, _ := s.Pending(ctx, task.ParentConversationID); len(p) != 1 || p[0].Kind != gateway.ItemNotification {
		t.Fatalf("a detached task's end queued %+v, want a notification", p)
	}
	// An ended task stays ended.
	if d, err := s.DetachTask(ctx, task.ID); err != nil || d.Status != agentcore.TaskCancelled {
		t.Fatalf("DetachTask of an ended task = %+v, %v", d, err)
	}
	if err := s.SetTaskStatus(ctx, task.ID, agentcore.TaskRunning); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Task(ctx, task.ID); got.Status != agentcore.TaskCancelled {
		t.Fatalf("SetTaskStatus revived an ended task: %s", got.Status)
	}
}

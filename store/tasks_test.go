package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

func taskDB(t *testing.T) (*DB, agentcore.Task) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now().UTC()
	for i, c := range []string{"parent", "child"} {
		if err := db.CreateConversation(ctx, agentcore.Conversation{ID: c, AgentID: "main", Created: now, Updated: now.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	return db, agentcore.Task{ID: "t-1", AgentID: "main", ParentConversationID: "parent", ParentLocation: "web::chat",
		ParentToolCallID: "c1", ConversationID: "child", Type: "explore", Status: agentcore.TaskQueued, Background: true, Created: now}
}

// Starting and ending a task are each one transaction: a failure between
// their steps leaves nothing of them behind.
func TestTaskStartAndFinishAreOneTransaction(t *testing.T) {
	ctx := context.Background()
	db, task := taskDB(t)
	crash := errors.New("the store failed here")
	first := gateway.Item{ConversationID: "child", AgentID: "main", Kind: gateway.ItemTask, Location: "web::chat"}
	status := gateway.Outbound{Kind: gateway.OutboundSend, Location: "web::chat", Body: []byte(`{}`)}
	db.failAt = func(s string) error {
		if s == "task" {
			return crash
		}
		return nil
	}
	if _, err := db.StartTask(ctx, task, first, status); !errors.Is(err, crash) {
		t.Fatalf("StartTask with a failure: %v", err)
	}
	if _, err := db.Task(ctx, "t-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a failed StartTask left its task: %v", err)
	}
	if q, o, _ := db.LatestIDs(ctx); q != 0 || o != 0 {
		t.Fatalf("a failed StartTask left queue %d / outbox %d items", q, o)
	}
	db.failAt = nil
	task, err := db.StartTask(ctx, task, first, status)
	if err != nil {
		t.Fatal(err)
	}
	it, err := db.Peek(ctx, "child", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The child's usage is summed from its runs when it ends.
	for i, u := range []agentcore.Usage{{InputTokens: 10, OutputTokens: 2, CachedTokens: 1}, {InputTokens: 5, OutputTokens: 3}} {
		if err := db.StartRun(ctx, agentcore.Run{ID: "run-" + string(rune('a'+i)), ConversationID: "child", Usage: u, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	end := task
	end.Status, end.Report = agentcore.TaskDone, "done"
	for _, step := range []string{"ended", "parent"} {
		db.failAt = func(s string) error {
			if s == step {
				return crash
			}
			return nil
		}
		if _, err := db.FinishTask(ctx, it.ID, end, gateway.Item{Kind: gateway.ItemNotification, Payload: []byte(`{}`)}, gateway.Item{}, []gateway.Outbound{status}); !errors.Is(err, crash) {
			t.Fatalf("FinishTask failing at %s: %v", step, err)
		}
		if got, _ := db.Task(ctx, "t-1"); got.Status != agentcore.TaskQueued {
			t.Fatalf("after a failure at %s the task is %s", step, got.Status)
		}
		if p, _ := db.Pending(ctx, "child"); len(p) != 1 {
			t.Fatalf("after a failure at %s the child's item is done", step)
		}
		if p, _ := db.Pending(ctx, "parent"); len(p) != 0 {
			t.Fatalf("after a failure at %s the parent got an item", step)
		}
	}
	db.failAt = nil
	if ok, err := db.FinishTask(ctx, it.ID, end, gateway.Item{Kind: gateway.ItemNotification, Payload: []byte(`{}`)}, gateway.Item{}, []gateway.Outbound{status}); err != nil || !ok {
		t.Fatalf("FinishTask = %v, %v", ok, err)
	}
	got, _ := db.Task(ctx, "t-1")
	if got.Usage.InputTokens != 15 || got.Usage.OutputTokens != 5 || got.Usage.CachedTokens != 1 {
		t.Fatalf("usage = %+v", got.Usage)
	}
}

// A task's child conversation is none of the agent's conversations for
// people (lists, --continue), and /new's rebind leaves its items alone.
func TestTaskChildConversationStaysWithItsTask(t *testing.T) {
	ctx := context.Background()
	db, task := taskDB(t)
	if _, err := db.StartTask(ctx, task, gateway.Item{ConversationID: "child", AgentID: "main", Kind: gateway.ItemTask, Location: "web::chat"}, gateway.Outbound{}); err != nil {
		t.Fatal(err)
	}
	latest, err := db.LatestConversation(ctx, "main")
	if err != nil || latest.ID != "parent" {
		t.Fatalf("LatestConversation = %s, %v; want the parent (the child is newer)", latest.ID, err)
	}
	list, err := db.ListConversations(ctx, "main", 0)
	if err != nil || len(list) != 1 || list[0].ID != "parent" {
		t.Fatalf("ListConversations = %v, %v", list, err)
	}
	if err := db.CreateConversation(ctx, agentcore.Conversation{ID: "fresh", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Rebind(ctx, gateway.Binding{Location: "web::chat", AgentID: "main", ConversationID: "fresh"}, 0); err != nil {
		t.Fatal(err)
	}
	if p, _ := db.Pending(ctx, "child"); len(p) != 1 {
		t.Fatalf("/new moved the task's items: the child has %d", len(p))
	}
	if got, _ := db.TaskOfConversation(ctx, "child"); got.StatusPost != 0 {
		t.Fatalf("a task started without a status line has status post %d", got.StatusPost)
	}
}

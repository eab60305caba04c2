package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

const (
	topicChat = -1001
	topicID   = 77
)

func inTopic(c telegramtest.Call) bool {
	return c.Params["chat_id"] == "-1001" && c.Params["message_thread_id"] == "77"
}

// reportsInTopic counts the report messages of a task posted in the topic.
func reportsInTopic(tg *telegramtest.Server, taskID string) int {
	n := 0
	for _, c := range tg.CallsOf("sendMessage") {
		if c.Status == 200 && inTopic(c) && strings.Contains(c.Params["text"], "Report") && strings.Contains(c.Params["text"], taskID) {
			n++
		}
	}
	return n
}

// theTask returns the one task of the agent's newest conversation.
func theTask(t *testing.T, e *env) agentcore.Task {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	convs, err := db.ListConversations(ctx, "main", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		if ts, err := db.ConversationTasks(ctx, c.ID, 0); err == nil && len(ts) > 0 {
			return ts[0]
		}
	}
	t.Fatal("no task")
	return agentcore.Task{}
}

func topicMessage(tg *telegramtest.Server, user int64, text string) int64 {
	return tg.AddMessage(topicChat, user, "@"+telegramtest.BotUsername+" "+text, telegramtest.InGroup(), telegramtest.InTopic(topicID))
}

// Through the binary with the Telegram fake, in a forum topic: the parent
// starts a background task and answers at once; the child runs a tool and
// reports; the report is posted in the topic exactly once; the parent's
// next turn sees the <task-notification>.
func TestTelegramTaskReportInTopic(t *testing.T) {
	e, tg := telegramEnv(t)
	if err := os.WriteFile(filepath.Join(e.workspace, "notes.txt"), []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	r := subagentRouter(e.model)
	r.Add("parent",
		agentStep("a1", "explore", "How many lines has notes.txt?", nil),
		fakemodel.Step{Text: "A helper is counting."},
		fakemodel.Step{Text: "The helper counted 3 lines."})
	glob := fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "g1", Name: "Read", Arguments: `{"file_path":"notes.txt"}`}}, Block: answered}
	r.Add("child", glob, fakemodel.Step{Text: "notes.txt has 3 lines."})
	e.startServe()
	topicMessage(tg, 100, "count the lines of notes.txt with a helper")
	waitTG(t, tg, "the parent's answer", textContains("", "A helper is counting."))
	close(answered)
	waitTG(t, tg, "the answer to the notification", textContains("", "The helper counted 3 lines."))
	task := theTask(t, e)
	if task.Status != agentcore.TaskDone {
		t.Fatalf("task = %+v", task)
	}
	eventually(t, 30*time.Second, "the report", func() bool { return reportsInTopic(tg, task.ID) == 1 })
	for _, c := range tg.Calls() {
		if c.Params["chat_id"] == "-1001" && c.Method != "getUpdates" && c.Method != "editMessageText" && c.Params["message_thread_id"] != "77" {
			t.Errorf("%s outside the topic: %v", c.Method, c.Params)
		}
	}
	if n := reportsInTopic(tg, task.ID); n != 1 {
		t.Fatalf("the report was posted %d times", n)
	}
	note := r.Requests("parent")[2].LastMessage().Text()
	if !strings.Contains(note, "<task-notification>") || !strings.Contains(note, "notes.txt has 3 lines.") {
		t.Fatalf("the parent's notification turn: %q", note)
	}
}

// A child's ask yields an inline keyboard in the parent's topic; another
// user's press is refused; serve is killed between the ask and the press
// and again while the child runs its long tool; after each restart the
// task continues, and the report arrives exactly once.
func TestTelegramTaskAskSurvivesKills(t *testing.T) {
	e, tg := telegramEnv(t)
	r := subagentRouter(e.model)
	r.Add("parent",
		agentStep("a1", "general-purpose", "Make pressed-by-child, then wait a while.", nil),
		fakemodel.Step{Text: "A helper is on it."},
		fakemodel.Step{Text: "The helper is done."})
	r.Add("child",
		bashStep("b1", "touch pressed-by-child && sleep 120"),
		fakemodel.Step{Text: "I made pressed-by-child; the wait was cut short."})
	p := e.startServe()
	topicMessage(tg, 100, "make the file with a helper")
	ask := waitTG(t, tg, "the child's ask in the topic", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && inTopic(c) && strings.Contains(c.Params["text"], "Approval needed") && c.Has("reply_markup")
	})
	if !strings.Contains(ask.Params["text"], "sub-agent") || !strings.Contains(ask.Params["text"], "task") {
		t.Fatalf("the ask is not labelled with the task: %q", ask.Params["text"])
	}
	token := callbackData(t, ask, "Approve")
	var askID int64
	for _, m := range tg.Messages() {
		if strings.Contains(m.Text, "Approval needed") {
			askID = m.ID
		}
	}
	bob := tg.AddCallback(topicChat, 200, askID, token, telegramtest.CallbackInTopic(topicID))
	waitTG(t, tg, "the refusal", func(c telegramtest.Call) bool {
		return c.Method == "answerCallbackQuery" && c.Params["callback_query_id"] == "cb"+itoa(bob)
	})
	if ans, _ := tg.AnswerFor(bob); ans.Params["show_alert"] != "true" || !strings.Contains(ans.Params["text"], "Only") {
		t.Fatalf("bob's answer = %v", ans.Params)
	}

	// Kill between the ask and the press.
	waitOutboxIdle(t, e)
	p.kill()
	p = e.startServe()
	press := tg.AddCallback(topicChat, 100, askID, token, telegramtest.CallbackInTopic(topicID))
	waitTG(t, tg, "the press's answer", func(c telegramtest.Call) bool {
		return c.Method == "answerCallbackQuery" && c.Params["callback_query_id"] == "cb"+itoa(press)
	})
	if ans, _ := tg.AnswerFor(press); !strings.Contains(ans.Params["text"], "Approved") {
		t.Fatalf("alice's answer = %v", ans.Params)
	}
	// The approved tool runs (the file appears while it sleeps): kill
	// again, mid-tool.
	eventually(t, 60*time.Second, "the child's tool to run", func() bool {
		_, err := os.Stat(filepath.Join(e.workspace, "pressed-by-child"))
		return err == nil
	})
	p.kill()
	e.startServe()
	waitTG(t, tg, "the answer to the report", textContains("", "The helper is done."))
	task := theTask(t, e)
	if task.Status != agentcore.TaskDone {
		t.Fatalf("task = %+v", task)
	}
	eventually(t, 30*time.Second, "the report", func() bool { return reportsInTopic(tg, task.ID) >= 1 })
	waitOutboxIdle(t, e)
	if n := reportsInTopic(tg, task.ID); n != 1 {
		t.Fatalf("the report was posted %d times, want once", n)
	}
	// The child's interrupted call was settled "outcome unknown".
	child := r.Requests("child")
	last := child[len(child)-1]
	if res := toolMessages(last); len(res) != 1 || !strings.Contains(contentText(res[0]), "Outcome unknown") {
		t.Fatalf("the child's last request's tool results: %v", res)
	}
	if n := len(r.Requests("parent")); n != 3 {
		t.Fatalf("parent made %d model calls, want 3", n)
	}
}

// Foreground: the parent's turn parks on the task, serve is killed while
// it is parked, and after the restart the parent resumes with the report
// as the Agent call's result.
func TestTelegramForegroundTaskAcrossRestart(t *testing.T) {
	e, tg := telegramEnv(t)
	hold := make(chan struct{})
	defer close(hold)
	r := subagentRouter(e.model)
	r.Add("parent",
		agentStep("a1", "explore", "Where is the config read?", map[string]any{"background": false}),
		fakemodel.Step{Text: "The helper says: in config/load.go."})
	r.Add("child",
		fakemodel.Step{Text: "never sent", Block: hold},
		fakemodel.Step{Text: "It is read in config/load.go."})
	p := e.startServe()
	topicMessage(tg, 100, "where is the config read?")
	waitTG(t, tg, "the parked message", func(c telegramtest.Call) bool {
		return inTopic(c) && strings.Contains(c.Params["text"], "Waiting for sub-agent task") || c.Params["chat_id"] == "-1001" && strings.Contains(c.Params["text"], "Waiting for sub-agent task")
	})
	eventually(t, 30*time.Second, "the child's first model call", func() bool { return len(r.Requests("child")) == 1 })
	waitOutboxIdle(t, e)
	p.kill()
	e.startServe()
	waitTG(t, tg, "the parent's answer", textContains("", "The helper says: in config/load.go."))
	parent := r.Requests("parent")
	if len(parent) != 2 {
		t.Fatalf("parent made %d calls, want 2", len(parent))
	}
	res := toolMessages(parent[1])
	if len(res) != 1 || !strings.Contains(contentText(res[0]), "It is read in config/load.go.") {
		t.Fatalf("the Agent call's result: %v", res)
	}
	if task := theTask(t, e); task.Status != agentcore.TaskDone || task.Background {
		t.Fatalf("task = %+v", task)
	}
}

package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// cmdTasks is /tasks: the conversation's running and recent tasks.
func cmdTasks(ctx context.Context, c *cmdCtx) string {
	if !c.bound {
		return "There is no conversation here yet."
	}
	list, err := c.env.opts.AgentStore.ConversationTasks(ctx, c.binding.ConversationID, 10)
	if err != nil {
		return "Could not read the tasks; try again."
	}
	if len(list) == 0 {
		return "No sub-agent tasks in this conversation."
	}
	now := c.env.now()
	var b strings.Builder
	b.WriteString("**Sub-agent tasks** (running first, then the newest)\n")
	for _, t := range list {
		icon, words := statusWords(t, now)
		if !t.Status.Final() && t.Status == agentcore.TaskRunning {
			words = "running for " + t.Duration(now).Round(1e9).String()
		}
		fmt.Fprintf(&b, "%s `%s` %s — %s · %s\n", icon, t.ID, channels.EscapeMarkdown(t.Type), channels.EscapeMarkdown(t.Description), words)
	}
	b.WriteString("Stop one with /stop TASK-ID.")
	return b.String()
}

// stopOneTask is /stop t-…: a task of this conversation (or one its tasks
// started).
func stopOneTask(ctx context.Context, c *cmdCtx, id string) string {
	t, err := c.env.opts.AgentStore.Task(ctx, id)
	if err != nil || !descendsFrom(ctx, c.env, t, c.binding.ConversationID) {
		return "No task " + channels.EscapeMarkdown(id) + " in this conversation; /tasks lists them."
	}
	if t.Status.Final() {
		return "Task `" + t.ID + "` has ended already (" + string(t.Status) + ")."
	}
	if !c.tasks.stop(ctx, t, "stopped with /stop by "+c.who) {
		return "Task `" + t.ID + "` has ended already."
	}
	return "Stopping task `" + t.ID + "`."
}

// descendsFrom reports whether conv started t, directly or through its
// tasks.
func descendsFrom(ctx context.Context, e *env, t agentcore.Task, conv string) bool {
	for range agentcore.MaxTaskDepth + 1 {
		if t.ParentConversationID == conv {
			return true
		}
		parent, err := e.opts.AgentStore.TaskOfConversation(ctx, t.ParentConversationID)
		if err != nil {
			return false
		}
		t = parent
	}
	return false
}

package agentcore

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed preset.md
var defaultPreset string

// DefaultPreset returns the built-in system prompt preset for an agent.
func DefaultPreset(agentID, workspace, memoryDir string) string {
	if memoryDir == "" {
		memoryDir = "(none)"
	}
	r := strings.NewReplacer("{{agent}}", agentID, "{{workspace}}", workspace, "{{memory}}", memoryDir)
	return r.Replace(defaultPreset)
}

const (
	reminderOpen      = "<system-reminder>\n"
	reminderClose     = "\n</system-reminder>"
	memoryUpdateTag   = "memory-update revision="
	contextReminderID = "context:"
)

func reminder(body string) string { return reminderOpen + body + reminderClose }

// ensurePrompt compiles the conversation's system prompt once: preset plus
// memory from HEAD. It is then sent byte-identical on every call until the
// next recompile.
func (t *turn) ensurePrompt(ctx context.Context) error {
	if t.conv.SystemPrompt != "" {
		return nil
	}
	prompt, rev, err := t.a.compilePrompt(ctx)
	if err != nil {
		return err
	}
	if err := t.a.deps.Store.SetSystemPrompt(ctx, t.conv.ID, prompt, rev); err != nil {
		return fmt.Errorf("store system prompt: %w", err)
	}
	t.conv.SystemPrompt, t.conv.PromptRevision = prompt, rev
	return nil
}

// compilePrompt renders preset + memory.
func (a *Agent) compilePrompt(ctx context.Context) (string, string, error) {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(a.cfg.Preset))
	rev := ""
	if a.deps.Memory != nil {
		text, r, err := a.deps.Memory.Compile(ctx)
		if err != nil {
			return "", "", fmt.Errorf("compile memory: %w", err)
		}
		rev = r
		b.WriteString("\n\n<memory>\n")
		b.WriteString(strings.TrimSpace(text))
		b.WriteString("\n</memory>\n")
	}
	return b.String(), rev, nil
}

// lastMemoryRevision is the memory revision the model last heard of: the
// newest memory-update reminder in view, else the prompt's revision.
func lastMemoryRevision(view []Message, promptRev string) string {
	for i := len(view) - 1; i >= 0; i-- {
		for _, p := range view[i].Parts {
			if p.Type != PartReminder {
				continue
			}
			body := strings.TrimPrefix(p.Text, reminderOpen)
			if rest, ok := strings.CutPrefix(body, memoryUpdateTag); ok {
				if rev, _, ok := strings.Cut(rest, "\n"); ok {
					return rev
				}
			}
		}
	}
	return promptRev
}

// memoryReminder describes memory changes the model has not heard of, or
// returns "". The reminder is persisted with the next input, so it stays in
// every later request while the system prompt stays byte-stable.
func (t *turn) memoryReminder(ctx context.Context) string {
	mem := t.a.deps.Memory
	if mem == nil {
		return ""
	}
	head, err := mem.Revision(ctx)
	if err != nil || head == "" || head == t.memoryNotified {
		return ""
	}
	diff, err := mem.Diff(ctx, t.memoryNotified, head)
	if err != nil {
		diff = "(the change could not be shown: " + err.Error() + ")"
	}
	t.memoryNotified = head
	return reminder(memoryUpdateTag + head + "\nYour memory changed since this conversation's system prompt was built. The change is part of your memory from now on:\n" + clip(diff, 4000))
}

// userParts builds the content of a user message: the person's parts and
// the volatile facts as reminders.
func (t *turn) userParts(ctx context.Context, view []Message) []Part {
	now := t.a.deps.Now()
	var parts []Part
	facts := []string{contextReminderID}
	if t.in.Speaker != "" {
		facts = append(facts, "speaker: "+t.in.Speaker)
	}
	if t.in.Origin != "" {
		facts = append(facts, "channel: "+t.in.Origin)
	}
	facts = append(facts, "permission mode: "+string(t.a.cfg.Policy.Mode))
	ctxRem := reminder(strings.Join(facts, "\n"))
	if lastContextReminder(view) != ctxRem {
		parts = append(parts, Part{Type: PartReminder, Text: ctxRem})
	}
	parts = append(parts, Part{Type: PartReminder, Text: reminder("time: " + now.Format("2006-01-02 15:04 MST (Monday)"))})
	if rem := t.memoryReminder(ctx); rem != "" {
		parts = append(parts, Part{Type: PartReminder, Text: rem})
	}
	return append(parts, t.in.Parts...)
}

func lastContextReminder(view []Message) string {
	for i := len(view) - 1; i >= 0; i-- {
		for _, p := range view[i].Parts {
			if p.Type == PartReminder && strings.HasPrefix(p.Text, reminderOpen+contextReminderID) {
				return p.Text
			}
		}
	}
	return ""
}

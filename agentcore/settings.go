package agentcore

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/switchboard-gw/switchboard/agentcore/permission"
)

// overrides are run-time changes to an agent's settings (/mode, /model).
// They are shared by every copy of an Agent and apply from the next turn.
type overrides struct {
	mu    sync.Mutex
	mode  permission.Mode
	model string
}

// SetMode switches the agent's permission mode until restart. Running
// turns keep the mode they started with.
func (a *Agent) SetMode(mode string) error {
	m, err := permission.ParseMode(strings.TrimSpace(mode))
	if err != nil {
		return err
	}
	a.over.mu.Lock()
	a.over.mode = m
	a.over.mu.Unlock()
	return nil
}

// SetModel switches the agent's model until restart. The provider must
// serve it; a wrong name ends the next turn with the provider's "model not
// found" advice.
func (a *Agent) SetModel(model string) error {
	model = strings.TrimSpace(model)
	if model == "" || strings.ContainsAny(model, " \t\n") {
		return fmt.Errorf("model name %q: give one word, e.g. /model qwen3:8b", model)
	}
	a.over.mu.Lock()
	a.over.model = model
	a.over.mu.Unlock()
	return nil
}

// Config returns the agent's configuration with run-time overrides.
func (a *Agent) Config() Config {
	cfg := a.cfg
	a.over.mu.Lock()
	defer a.over.mu.Unlock()
	if a.over.mode != "" {
		cfg.Policy.Mode = a.over.mode
	}
	if a.over.model != "" {
		cfg.Model = a.over.model
	}
	return cfg
}

// MemoryLogText renders the last n memory commits for chat.
func (a *Agent) MemoryLogText(ctx context.Context, n int) (string, error) {
	cs, err := a.MemoryLog(ctx, n)
	if err != nil {
		return "", err
	}
	if len(cs) == 0 {
		return "No memory commits yet.", nil
	}
	var b strings.Builder
	b.WriteString("**Memory history** (newest first)\n")
	for _, c := range cs {
		b.WriteString("• `" + strings.ReplaceAll(c.Line(), "`", "'") + "`\n")
	}
	return strings.TrimSpace(b.String()), nil
}

// MemoryShowText renders one memory commit and its diff for chat.
func (a *Agent) MemoryShowText(ctx context.Context, rev string) (string, error) {
	c, diff, err := a.MemoryShow(ctx, rev)
	if err != nil {
		return "", err
	}
	return "**" + strings.ReplaceAll(c.Line(), "*", "") + "**\n```diff\n" + strings.ReplaceAll(clip(diff, 3000), "```", "'''") + "\n```", nil
}

// MemoryRevertText reverts a memory commit and says so for chat.
func (a *Agent) MemoryRevertText(ctx context.Context, rev string) (string, error) {
	head, err := a.MemoryRevert(ctx, rev)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Reverted %s; memory is now at %s. New conversations see it in their prompt; running ones get a reminder.", shortRev(rev), shortRev(head)), nil
}

package agentcore

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/switchboard-gw/switchboard/agentcore/permission"
)

// Setting keys of an agent's durable run-time settings (scope "agent:<id>").
const (
	SettingMode  = "mode"
	SettingModel = "model"
)

// overrides are run-time changes to an agent's settings (/mode, /model).
// They live in the store (so they survive restarts and every process sharing
// the data directory sees them); this is the copy read at the start of the
// latest turn, shared by every copy of an Agent.
type overrides struct {
	mu    sync.Mutex
	mode  permission.Mode
	model string
}

func settingsScope(agentID string) string { return "agent:" + agentID }

// SetMode switches the agent's permission mode from the next turn on, for
// every conversation and across restarts. Running turns keep the mode they
// started with.
func (a *Agent) SetMode(ctx context.Context, mode string) error {
	m, err := permission.ParseMode(strings.TrimSpace(mode))
	if err != nil {
		return err
	}
	if err := a.deps.Store.SetSetting(ctx, settingsScope(a.cfg.ID), SettingMode, string(m)); err != nil {
		return fmt.Errorf("store the permission mode: %w", err)
	}
	a.over.mu.Lock()
	a.over.mode = m
	a.over.mu.Unlock()
	return nil
}

// SetModel switches the agent's model from the next turn on, across
// restarts. The provider must serve it; a wrong name ends the next turn
// with the provider's "model not found" advice.
func (a *Agent) SetModel(ctx context.Context, model string) error {
	model = strings.TrimSpace(model)
	if model == "" || strings.ContainsAny(model, " \t\n") {
		return fmt.Errorf("model name %q: give one word, e.g. /model qwen3:8b", model)
	}
	if err := a.deps.Store.SetSetting(ctx, settingsScope(a.cfg.ID), SettingModel, model); err != nil {
		return fmt.Errorf("store the model: %w", err)
	}
	a.over.mu.Lock()
	a.over.model = model
	a.over.mu.Unlock()
	return nil
}

// LoadSettings reads the agent's stored run-time settings into the copy
// Config returns. Turns call it as they start; hosts call it once at start.
func (a *Agent) LoadSettings(ctx context.Context) error {
	vals, err := a.deps.Store.Settings(ctx, settingsScope(a.cfg.ID))
	if err != nil {
		return fmt.Errorf("read the settings of agent %s: %w", a.cfg.ID, err)
	}
	var mode permission.Mode
	if v := vals[SettingMode]; v != "" {
		if m, err := permission.ParseMode(v); err == nil {
			mode = m
		}
	}
	a.over.mu.Lock()
	a.over.mode, a.over.model = mode, vals[SettingModel]
	a.over.mu.Unlock()
	return nil
}

// Config returns the agent's configuration with run-time overrides (a mode
// given on the command line, Config.FixedMode, wins over a stored /mode).
func (a *Agent) Config() Config {
	cfg := a.cfg
	a.over.mu.Lock()
	defer a.over.mu.Unlock()
	if a.over.mode != "" && !cfg.FixedMode {
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

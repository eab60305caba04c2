package agentcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNoMemoryHistory is returned by the memory operations when the agent
// has no memory, or its memory keeps no history.
var ErrNoMemoryHistory = errors.New("this agent's memory has no history to show")

// MemoryChange is one file a memory commit changed.
type MemoryChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // added, modified or deleted
}

// MemoryCommit is one commit of an agent's memory history.
type MemoryCommit struct {
	Revision string         `json:"revision"`
	Message  string         `json:"message"`
	When     time.Time      `json:"when"`
	Changes  []MemoryChange `json:"changes,omitempty"`
}

// Line renders the commit as one line for chat: short revision, time,
// first line of the message and the files it changed.
func (c MemoryCommit) Line() string {
	msg, _, _ := strings.Cut(c.Message, "\n")
	var files []string
	for _, ch := range c.Changes {
		files = append(files, ch.Path)
	}
	s := fmt.Sprintf("%s %s %s", shortRev(c.Revision), c.When.UTC().Format("2006-01-02 15:04"), msg)
	if len(files) > 0 {
		s += " (" + clip(strings.Join(files, ", "), 200) + ")"
	}
	return s
}

func shortRev(rev string) string {
	if len(rev) > 8 {
		return rev[:8]
	}
	return rev
}

// MemoryHistory is implemented by a Memory that keeps a history (memfs
// through cmd's adapter). The /memory commands of every host use it through
// Agent.MemoryLog, MemoryShow and MemoryRevert.
type MemoryHistory interface {
	// Log returns up to n commits, newest first.
	Log(ctx context.Context, n int) ([]MemoryCommit, error)
	// Show returns one commit and a bounded diff against its parent.
	Show(ctx context.Context, rev string) (MemoryCommit, string, error)
	// Revert undoes one commit with a new commit and returns the new HEAD.
	Revert(ctx context.Context, rev string) (string, error)
}

func (a *Agent) memoryHistory() (MemoryHistory, error) {
	h, ok := a.deps.Memory.(MemoryHistory)
	if !ok {
		return nil, ErrNoMemoryHistory
	}
	return h, nil
}

// MemoryLog lists the agent's latest n memory commits, newest first
// (default 10).
func (a *Agent) MemoryLog(ctx context.Context, n int) ([]MemoryCommit, error) {
	h, err := a.memoryHistory()
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		n = 10
	}
	cs, err := h.Log(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("memory log of %s: %w", a.cfg.ID, err)
	}
	for i := range cs {
		cs[i].Message = a.deps.Env.Redactor.Redact(cs[i].Message)
	}
	return cs, nil
}

// MemoryShow returns one memory commit and its diff, redacted for chat.
func (a *Agent) MemoryShow(ctx context.Context, rev string) (MemoryCommit, string, error) {
	h, err := a.memoryHistory()
	if err != nil {
		return MemoryCommit{}, "", err
	}
	c, diff, err := h.Show(ctx, strings.TrimSpace(rev))
	if err != nil {
		return MemoryCommit{}, "", fmt.Errorf("show memory commit %s of %s: %w", rev, a.cfg.ID, err)
	}
	red := a.deps.Env.Redactor
	c.Message = red.Redact(c.Message)
	return c, red.Redact(diff), nil
}

// MemoryRevert undoes one memory commit with a new commit and returns the
// new revision. Conversations learn of it like of any memory change: a
// memory-update reminder on their next input.
func (a *Agent) MemoryRevert(ctx context.Context, rev string) (string, error) {
	h, err := a.memoryHistory()
	if err != nil {
		return "", err
	}
	head, err := h.Revert(ctx, strings.TrimSpace(rev))
	if err != nil {
		return "", fmt.Errorf("revert memory commit %s of %s: %w", rev, a.cfg.ID, err)
	}
	return head, nil
}

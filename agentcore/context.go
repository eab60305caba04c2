package agentcore

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/sandbox"
)

// The context of a request is sorted by volatility (DESIGN §5): the
// system prompt (preset + memory compiled from HEAD) is compiled once per
// conversation and sent byte-identical until the next recompile
// (compaction); everything that changes rides on inputs as persisted
// <system-reminder> parts, so every request extends the previous one and the
// provider's prompt cache keeps working. Nothing edits the prefix to
// announce state, and no role-system message is ever added mid-conversation.

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
	gitReminderID     = "workspace git:"
	modeFact          = "permission mode: "
	modeChangedNote   = " (changed from "

	memoryDiffChars = 4000
	gitStatusLines  = 20
	gitTimeout      = 2 * time.Second
)

func reminder(body string) string { return reminderOpen + body + reminderClose }

// ensurePrompt compiles the conversation's system prompt once: preset plus
// memory from HEAD. It is stored with the turn's first write and then sent
// byte-identical on every call until the next recompile. (A turn that dies
// before that write stored nothing a prompt belongs to: the next attempt
// compiles it anew.)
func (t *turn) ensurePrompt(ctx context.Context) error {
	if t.conv.SystemPrompt != "" {
		return nil
	}
	prompt, rev, err := t.a.compilePrompt(ctx)
	if err != nil {
		return err
	}
	t.pending.SystemPrompt, t.pending.PromptRevision = prompt, rev
	t.conv.SystemPrompt, t.conv.PromptRevision = prompt, rev
	return nil
}

// compilePrompt renders preset + memory. Memory comes from the committed
// HEAD only, so an uncommitted edit in the memory directory never reaches a
// prompt.
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

// isSummary reports whether m is a compaction summary.
func isSummary(m Message) bool {
	for _, p := range m.Parts {
		if p.Type == PartSummary {
			return true
		}
	}
	return false
}

// summarySeq is the transcript position of the view's compaction summary
// (always first in view), or 0. The summary was appended when the system
// prompt was last recompiled, so messages with a smaller Seq — kept verbatim
// by the compaction — predate the current prompt.
func summarySeq(view []Message) int64 {
	if len(view) > 0 && isSummary(view[0]) {
		return view[0].Seq
	}
	return 0
}

// lastReminder returns the newest reminder in view that starts with id and
// was sent since the prompt was last compiled, or "".
func lastReminder(view []Message, id string) string {
	since := summarySeq(view)
	for i := len(view) - 1; i >= 0; i-- {
		if view[i].Seq < since {
			continue
		}
		parts := view[i].Parts
		for j := len(parts) - 1; j >= 0; j-- {
			if parts[j].Type == PartReminder && strings.HasPrefix(parts[j].Text, reminderOpen+id) {
				return parts[j].Text
			}
		}
	}
	return ""
}

// lastMemoryRevision is the memory revision the model last heard of: the
// newest memory-update reminder since the last recompile, else the prompt's
// revision.
func lastMemoryRevision(view []Message, promptRev string) string {
	rem := lastReminder(view, memoryUpdateTag)
	if rem == "" {
		return promptRev
	}
	rest := strings.TrimPrefix(rem, reminderOpen+memoryUpdateTag)
	if rev, _, ok := strings.Cut(rest, "\n"); ok && rev != "" {
		return rev
	}
	return promptRev
}

// memoryReminder describes memory changes the model has not heard of, or
// returns "". The reminder is persisted with the next input (a tool result
// or a user message), so it stays in every later request while the system
// prompt stays byte-stable.
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
	if strings.TrimSpace(diff) == "" {
		// Changes that cancel out (a commit and its revert) are news to
		// nobody.
		return ""
	}
	return reminder(memoryUpdateTag + head + "\nYour memory changed since this conversation's system prompt was built. The change is part of your memory from now on:\n" + clip(diff, memoryDiffChars))
}

// userParts builds the content of a user message: the volatile facts as
// reminders (context and git state when they changed, time always, memory
// changes), then the person's parts.
func (t *turn) userParts(ctx context.Context, view []Message) []Part {
	var parts []Part
	if t.in.Kind != InputNotification {
		// A harness message changes nobody's context: who speaks and from
		// where stays what the last person's message said.
		parts = t.contextReminders(ctx, view, false)
	}
	now := t.a.deps.Now()
	parts = append(parts, Part{Type: PartReminder, Text: reminder("time: " + now.Format("2006-01-02 15:04 MST (Monday)"))})
	if rem := t.memoryReminder(ctx); rem != "" {
		parts = append(parts, Part{Type: PartReminder, Text: rem})
	}
	return append(parts, t.in.Parts...)
}

// contextReminders returns the context reminder (speaker, channel,
// permission mode) and the workspace git reminder, each only when it
// differs from the last one sent since the prompt was compiled, or always
// with force (the summary message of a compaction re-sends them).
func (t *turn) contextReminders(ctx context.Context, view []Message, force bool) []Part {
	var parts []Part
	last := lastReminder(view, contextReminderID)
	facts := []string{contextReminderID}
	if t.in.Speaker != "" {
		facts = append(facts, "speaker: "+t.in.Speaker)
	}
	if t.in.Origin != "" {
		facts = append(facts, "channel: "+t.in.Origin)
	}
	mode := string(t.a.cfg.Policy.Mode)
	if mode == "" {
		mode = "standard"
	}
	facts = append(facts, modeFact+mode)
	ctxRem := reminder(strings.Join(facts, "\n"))
	if force || stripModeChange(last) != ctxRem {
		if prev := reminderMode(last); prev != "" && prev != mode {
			ctxRem = strings.Replace(ctxRem, modeFact+mode, modeFact+mode+modeChangedNote+prev+")", 1)
		}
		parts = append(parts, Part{Type: PartReminder, Text: ctxRem})
	}
	if g := t.gitFacts(ctx); g != "" {
		gitRem := reminder(g)
		if force || lastReminder(view, gitReminderID) != gitRem {
			parts = append(parts, Part{Type: PartReminder, Text: gitRem})
		}
	}
	return parts
}

// reminderLine returns the value of the reminder line starting with key.
func reminderLine(rem, key string) string {
	for line := range strings.SplitSeq(rem, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			return v
		}
	}
	return ""
}

// reminderMode is the permission mode a context reminder stated.
func reminderMode(rem string) string {
	_, rest, ok := strings.Cut(rem, modeFact)
	if !ok {
		return ""
	}
	mode, _, _ := strings.Cut(rest, "\n")
	mode, _, _ = strings.Cut(mode, modeChangedNote)
	return mode
}

func stripModeChange(rem string) string {
	before, rest, ok := strings.Cut(rem, modeChangedNote)
	if !ok {
		return rem
	}
	_, after, _ := strings.Cut(rest, ")")
	return before + after
}

// gitFacts describes the workspace's git branch and short status, or ""
// when the workspace is not inside a git repository. The branch is read
// from HEAD without a git binary; the status runs `git status` through the
// agent's own runner (same confinement and scrubbed environment as its
// Bash tool, since a repository's config can run commands) with a short
// timeout, and is left out when that fails. It never fails the turn.
func (t *turn) gitFacts(ctx context.Context) string {
	env := &t.a.deps.Env
	gitDir := t.a.gitDir.find(env.Workspace, t.a.deps.Now())
	if gitDir == "" {
		return ""
	}
	lines := []string{gitReminderID, "branch: " + headBranch(gitDir)}
	if status := gitStatus(ctx, env); status != "" {
		lines = append(lines, "status (git status --porcelain=v1 -b):", status)
	}
	return strings.Join(lines, "\n")
}

// gitDirCacheFor is how long an agent reuses where its workspace's git
// directory is (or that there is none): looking it up stats .git in every
// directory up to the root, a fiftieth of a turn's CPU at saturation
// outside a repository. A `git init` shows in the reminder within it.
const gitDirCacheFor = 2 * time.Second

// gitDirCache remembers an agent's last findGitDir.
type gitDirCache struct {
	mu        sync.Mutex
	workspace string
	dir       string
	at        time.Time
}

// find returns findGitDir(workspace), looked up at most every
// gitDirCacheFor.
func (c *gitDirCache) find(workspace string, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if age := now.Sub(c.at); c.workspace == workspace && age >= 0 && age < gitDirCacheFor {
		return c.dir
	}
	c.workspace, c.dir, c.at = workspace, findGitDir(workspace), now
	return c.dir
}

// findGitDir returns the git directory of the repository holding dir, or "".
func findGitDir(dir string) string {
	if dir == "" {
		return ""
	}
	for range 64 {
		p := filepath.Join(dir, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				return p
			}
			if b, err := os.ReadFile(p); err == nil {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
					g := strings.TrimSpace(rest)
					if !filepath.IsAbs(g) {
						g = filepath.Join(dir, g)
					}
					return g
				}
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	return ""
}

// headBranch reads the current branch from a git directory's HEAD.
func headBranch(gitDir string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "(unknown)"
	}
	head := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(head, "ref: "); ok {
		return strings.TrimPrefix(ref, "refs/heads/")
	}
	return clip(head, 12) + " (detached HEAD)"
}

// gitStatus runs a bounded `git status`, or returns "".
func gitStatus(ctx context.Context, env *ToolEnv) string {
	if env.Runner == nil {
		return ""
	}
	if _, err := exec.LookPath("git"); err != nil {
		return ""
	}
	out, err := env.Runner.Run(ctx, sandbox.Cmd{
		Command: fmt.Sprintf("git --no-optional-locks status --porcelain=v1 -b --ignore-submodules=all 2>/dev/null | head -n %d", gitStatusLines+2),
		Dir:     env.Workspace,
		Env:     env.Env,
		Timeout: gitTimeout,
		Confine: env.Confine, // and nothing writable
		Hidden:  env.Hidden,
	})
	if err != nil || out.ExitCode != 0 || out.TimedOut || out.Cancelled {
		return ""
	}
	lines := strings.Split(strings.TrimRight(out.Stdout, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return ""
	}
	if len(lines) > gitStatusLines+1 {
		lines = append(lines[:gitStatusLines+1], "(more changes not shown)")
	}
	for i := range lines {
		lines[i] = clip(lines[i], 300)
	}
	if len(lines) == 1 {
		lines = append(lines, "(clean)")
	}
	return strings.Join(lines, "\n")
}

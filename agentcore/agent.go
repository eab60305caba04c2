package agentcore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/sandbox"
)

// ErrBusy is returned when another process or worker holds the
// conversation's lease.
var ErrBusy = errors.New("conversation is busy: another process is working on it")

// Memory is the agent's memory repository as the loop uses it
// (implemented by *memfs.Repo through an adapter in cmd, or nil).
type Memory interface {
	Dir() string
	Revision(ctx context.Context) (string, error)
	// Compile renders HEAD into the memory part of the system prompt.
	Compile(ctx context.Context) (text, revision string, err error)
	// Commit commits the given paths of the work tree (all changes when
	// none are given); a validation failure restores them and returns an
	// error that says why. Other uncommitted edits are left alone.
	Commit(ctx context.Context, message string, paths ...string) (changed bool, err error)
	// Diff is a bounded description of the changes between two revisions.
	Diff(ctx context.Context, from, to string) (string, error)
}

// Config is one agent's settings, handed over by cmd.
type Config struct {
	ID              string
	Model           string
	ContextWindow   int
	MaxOutputTokens int
	MaxSteps        int           // default 50
	TurnTimeout     time.Duration // 0: none
	MaxStepOutput   int           // bytes one step may stream (Request.MaxStepOutput); 0: DefaultMaxStepOutput
	Preset          string        // the fixed part of the system prompt
	Policy          permission.Policy
	Approvers       []string      // qualified ids allowed to decide; empty: requester + admins
	ApprovalTimeout time.Duration // default 12h
	ClampChars      int           // tool output clamp, default 30,000 (and at most a quarter of the window)
	LeaseTTL        time.Duration // default 10s
	// FixedMode: Policy.Mode was chosen for this process (a command-line
	// flag) and a stored /mode does not replace it.
	FixedMode bool
	// Subagents are the sub-agent types besides the built-ins (from type
	// files); a type of a built-in's name replaces it.
	Subagents []SubagentType
}

// Deps are the collaborators of an Agent.
type Deps struct {
	Store    Store
	Provider Provider
	Tools    *Tools
	Memory   Memory // may be nil
	Env      ToolEnv
	Owner    string // lease owner; default host:pid:random
	Now      func() time.Time
}

// Agent runs turns of one agent's conversations. It is safe for concurrent
// use by several conversations; a conversation runs one turn at a time,
// enforced by its lease.
type Agent struct {
	cfg    Config
	deps   Deps
	over   *overrides
	gitDir *gitDirCache
}

// New returns an Agent.
func New(cfg Config, deps Deps) *Agent {
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 50
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = 12 * time.Hour
	}
	if cfg.LeaseTTL <= 0 {
		// Short enough that a crashed process's conversations are picked up
		// within seconds after a restart; renewed every third of it.
		cfg.LeaseTTL = 10 * time.Second
	}
	if cfg.ClampChars <= 0 {
		cfg.ClampChars = 30000
	}
	if cfg.ContextWindow > 0 && cfg.ClampChars > cfg.ContextWindow {
		// A quarter of the window in tokens is about the window in
		// characters (four characters a token).
		cfg.ClampChars = cfg.ContextWindow
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Owner == "" {
		host, _ := os.Hostname()
		deps.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randomID(4))
	}
	if deps.Tools == nil {
		deps.Tools = NewTools()
	}
	if deps.Env.Redactor == nil {
		deps.Env.Redactor = sandbox.NewRedactor()
	}
	return &Agent{cfg: cfg, deps: deps, over: &overrides{}, gitDir: &gitDirCache{}}
}

// ID returns the agent's id.
func (a *Agent) ID() string { return a.cfg.ID }

// Tools returns the agent's tool set.
func (a *Agent) Tools() *Tools { return a.deps.Tools }

// NewConversation creates an empty conversation of this agent.
func (a *Agent) NewConversation(ctx context.Context) (Conversation, error) {
	// CreateConversation records the agent too (one write, not two).
	c := a.ConversationRecord()
	if err := a.deps.Store.CreateConversation(ctx, c); err != nil {
		return Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	return c, nil
}

// ConversationRecord returns a new, empty conversation of this agent
// without storing it, for a host that stores it together with its own
// records (the gateway's first message of a chat).
func (a *Agent) ConversationRecord() Conversation {
	now := a.deps.Now().UTC()
	return Conversation{ID: conversationID(now), AgentID: a.cfg.ID, Created: now, Updated: now}
}

// Decide records a person's decision on an approval of this agent. It
// returns the approval and whether this decision was the first (and so
// took effect).
func (a *Agent) Decide(ctx context.Context, approvalID string, d Decision) (Approval, bool, error) {
	if d.At.IsZero() {
		d.At = a.deps.Now().UTC()
	}
	return a.deps.Store.Decide(ctx, approvalID, d)
}

// conversationID is "conv-", the creation time in milliseconds (12 hex
// digits, so ids sort by age) and 8 random bytes. Every table keyed by
// conversation (messages, view, runs, the queue, bindings, approvals'
// index) then grows at its end instead of at a random leaf: with purely
// random ids, each commit wrote pages spread over the whole B-tree, and
// parking 40,000 asks ran at 686/s instead of 898/s (bench/gatewayload
// -phases park). The random part keeps the ids as hard to guess as before.
func conversationID(now time.Time) string {
	return fmt.Sprintf("conv-%012x%s", max(now.UnixMilli(), 0), randomID(8))
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newID returns a time-ordered (UUIDv7) identifier: 48 bits of
// milliseconds, then 74 random bits. Message and run ids are the keys of
// the transcript's and the runs' unique indexes; random (v4) ids put each
// insert at a random leaf, so every commit wrote index pages spread over
// the whole B-tree (bench/gatewayload phases a and park). They are not
// secrets: nothing is authorized by knowing one.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// Only a failing system random source gets here; a panic beats
		// storing colliding ids.
		panic(fmt.Sprintf("agentcore: generate id: %v", err))
	}
	return id.String()
}

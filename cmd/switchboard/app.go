package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/agentcore/tools"
	"github.com/switchboard-gw/switchboard/config"
	"github.com/switchboard-gw/switchboard/memfs"
	"github.com/switchboard-gw/switchboard/sandbox"
	"github.com/switchboard-gw/switchboard/store"
)

// app holds what every command that runs agents needs: the resolved
// config, the store, the secret redactor and the sandbox.
type app struct {
	cfg      *config.Config
	store    *store.DB
	redactor *sandbox.Redactor
	registry *sandbox.Registry
	runner   *sandbox.Runner
	log      *slog.Logger
	owner    string // this process in leases (leaseOwner)
}

// loadConfig locates and loads the configuration.
func loadConfig() (*config.Config, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find the current directory: %w", err)
	}
	paths, err := config.Locate(os.LookupEnv, cwd)
	if err != nil {
		return nil, err
	}
	return config.Load(paths, os.LookupEnv)
}

// openApp loads the config, opens the data directory and kills process
// groups a crashed switchboard left behind.
func openApp(ctx context.Context, s *streams) (*app, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	red := sandbox.NewRedactor(cfg.Secrets()...)
	red.Add(envSecrets(os.Environ())...)
	level := slog.LevelWarn
	if s.info {
		level = slog.LevelInfo
	}
	if s.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(newRedactingHandler(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}), red))
	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory %s (set SWITCHBOARD_HOME to another place?): %w", cfg.Home, err)
	}
	db, err := store.Open(ctx, filepath.Join(cfg.Home, "switchboard.db"))
	if err != nil {
		return nil, err
	}
	reg, err := sandbox.OpenRegistry(filepath.Join(cfg.Home, "run", "groups"))
	if err != nil {
		db.Close()
		return nil, err
	}
	if n, err := reg.KillLeftovers(ctx); err != nil {
		log.Warn("could not kill leftover tool processes", "err", err)
	} else if n > 0 {
		log.Info("killed tool process groups left by a crashed run", "groups", n)
	}
	runner := sandbox.NewRunner(sandbox.Options{Redactor: red, Registry: reg})
	a := &app{cfg: cfg, store: db, redactor: red, registry: reg, runner: runner, log: log, owner: leaseOwner()}
	a.dropDeadLeases(ctx)
	return a, nil
}

func (a *app) Close() error { return a.store.Close() }

// envSecrets returns the values of environment variables whose names say
// they hold secrets, for redaction.
func envSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && sandbox.IsSecretName(k) {
			out = append(out, v)
		}
	}
	return out
}

// agentOptions are per-run overrides from flags.
type agentOptions struct {
	permissionMode string
	maxSteps       int
	// allowNoModel builds the agent even when no model is configured
	// (serve starts anyway and tells people how to configure one).
	allowNoModel bool
	// observeStep, when set, is told how long each model call took.
	observeStep func(time.Duration)
	// workspace, when set, replaces the agent's workspace (an ACP
	// session works in the directory the person opened in the editor).
	workspace string
}

// agent builds the named agent with its provider, memory, tools and
// policy.
func (a *app) agent(ctx context.Context, name string, o agentOptions) (*agentcore.Agent, error) {
	ac, ok := a.cfg.Agents[name]
	if !ok {
		return nil, fmt.Errorf("no agent %q in the configuration (agents: %s); define [agents.%s] or pick one with --agent", name, strings.Join(agentNames(a.cfg), ", "), name)
	}
	pc := a.cfg.Providers[ac.Provider]
	model := pc.Model
	if ac.Model != "" {
		model = ac.Model
	}
	if model == "" && !o.allowNoModel {
		if err := pc.Check(); err != nil {
			return nil, err
		}
	}
	if o.workspace != "" {
		ac.Workspace = o.workspace
	}
	modeName := ac.PermissionMode
	if o.permissionMode != "" {
		modeName = o.permissionMode
	}
	mode, err := permission.ParseMode(modeName)
	if err != nil {
		return nil, err
	}
	memRoot := filepath.Join(a.cfg.Home, "memory")
	memDir := filepath.Join(memRoot, name)
	overflow := filepath.Join(a.cfg.Home, "overflow", name)
	if err := os.MkdirAll(overflow, 0o700); err != nil {
		return nil, fmt.Errorf("create overflow directory: %w", err)
	}
	repo, err := memfs.Open(ctx, memDir, memfs.Options{AgentName: name})
	if err != nil {
		return nil, fmt.Errorf("open memory of agent %s: %w", name, err)
	}
	policy := permission.Policy{
		Mode:            mode,
		DisallowedTools: ac.DisallowedTools,
		Workspace:       ac.Workspace,
		MemoryDir:       memDir,
		MemoryRoot:      memRoot,
		ReadOnlyDirs:    []string{overflow},
	}
	for _, set := range []struct {
		in  []string
		out *[]permission.Rule
		key string
	}{{ac.Allow, &policy.Allow, "allow"}, {ac.Deny, &policy.Deny, "deny"}, {ac.Ask, &policy.Ask, "ask"}} {
		for _, s := range set.in {
			r, err := permission.ParseRule(s)
			if err != nil {
				return nil, fmt.Errorf("agents.%s.%s: %w", name, set.key, err)
			}
			*set.out = append(*set.out, r)
		}
	}
	maxSteps := ac.MaxSteps
	if o.maxSteps > 0 {
		maxSteps = o.maxSteps
	}
	preset := agentcore.DefaultPreset(name, ac.Workspace, memDir)
	if ac.SystemPrompt != "" {
		preset += "\n\n# Instructions for this agent\n" + ac.SystemPrompt
	}
	var provider agentcore.Provider = agentcore.NewOpenAI(agentcore.OpenAIOptions{
		BaseURL:           pc.BaseURL,
		APIKey:            pc.APIKey,
		Model:             model,
		MaxOutputTokens:   pc.MaxOutputTokens,
		Vision:            pc.Vision,
		StreamIdleTimeout: pc.StreamIdleTimeout,
	})
	if o.observeStep != nil {
		provider = timedProvider{provider, o.observeStep}
	}
	env := agentcore.ToolEnv{
		AgentID:     name,
		Workspace:   ac.Workspace,
		MemoryDir:   memDir,
		OverflowDir: overflow,
		Runner:      a.runner,
		Redactor:    a.redactor,
		Confine:     sandbox.Confinement(ac.Sandbox),
		Network:     ac.Network,
		Env:         sandbox.ScrubEnv(os.Environ(), ac.Env, a.redactor),
		Writable:    []string{ac.Workspace, memDir},
		Hidden:      []string{a.cfg.Home},
		Recall:      a.store,
		// acp_client_tools: an ACP editor that offers fs/terminal does the
		// file work and runs commands; never Bash of a confined agent (the
		// editor's terminal is not confined).
		ClientRoute: agentcore.ClientRoute{Files: ac.ACPClientTools,
			Shell: ac.ACPClientTools && sandbox.Confinement(ac.Sandbox) != sandbox.ConfineBwrap},
	}
	// Sub-agent types: $SWITCHBOARD_HOME/subagents, then the workspace's
	// .switchboard/subagents (a later file of a name wins).
	types, problems := agentcore.LoadSubagentTypes(filepath.Join(a.cfg.Home, "subagents"), filepath.Join(ac.Workspace, ".switchboard", "subagents"))
	for _, p := range problems {
		a.log.Warn("sub-agent type skipped", "err", p)
	}
	return agentcore.New(agentcore.Config{
		ID:              name,
		Model:           model,
		ContextWindow:   pc.ContextWindow,
		MaxOutputTokens: pc.MaxOutputTokens,
		MaxSteps:        maxSteps,
		TurnTimeout:     ac.TurnTimeout,
		MaxStepOutput:   ac.MaxStepOutput,
		Preset:          preset,
		Policy:          policy,
		Approvers:       ac.Approvers,
		ApprovalTimeout: a.cfg.Approvals.Timeout,
		Subagents:       types,
		FixedMode:       o.permissionMode != "",
	}, agentcore.Deps{
		Owner:    a.owner,
		Store:    a.store,
		Provider: provider,
		Tools:    agentcore.NewTools(tools.WithSubagents(agentcore.MergeSubagents(types...))...),
		Memory:   memoryAdapter{repo},
		Env:      env,
	}), nil
}

func agentNames(cfg *config.Config) []string {
	var names []string
	for n := range cfg.Agents {
		names = append(names, n)
	}
	return sortedStrings(names)
}

// memoryAdapter fits *memfs.Repo to agentcore.Memory.
type memoryAdapter struct{ r *memfs.Repo }

func (m memoryAdapter) Dir() string { return m.r.Dir() }
func (m memoryAdapter) Revision(ctx context.Context) (string, error) {
	return m.r.Revision(ctx)
}
func (m memoryAdapter) Compile(ctx context.Context) (string, string, error) {
	c, err := m.r.Compile(ctx)
	return c.Text, c.Revision, err
}
func (m memoryAdapter) Commit(ctx context.Context, message string, paths ...string) (bool, error) {
	if len(paths) > 0 {
		res, err := m.r.CommitPaths(ctx, message, paths...)
		return res.Changed, err
	}
	res, err := m.r.CommitWorkTree(ctx, message)
	return res.Changed, err
}
func (m memoryAdapter) Diff(ctx context.Context, from, to string) (string, error) {
	d, err := m.r.Diff(ctx, from, to, 4000)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range d.Changes {
		fmt.Fprintf(&b, "%s %s\n", c.Kind, c.Path)
	}
	b.WriteString(d.Patch)
	return b.String(), nil
}

// Log, Show and Revert implement agentcore.MemoryHistory for /memory.
func (m memoryAdapter) Log(ctx context.Context, n int) ([]agentcore.MemoryCommit, error) {
	cs, err := m.r.Log(ctx, n)
	if err != nil {
		return nil, err
	}
	out := make([]agentcore.MemoryCommit, len(cs))
	for i, c := range cs {
		out[i] = memoryCommit(c)
	}
	return out, nil
}
func (m memoryAdapter) Show(ctx context.Context, rev string) (agentcore.MemoryCommit, string, error) {
	c, d, err := m.r.Show(ctx, rev, 8000)
	if err != nil {
		return agentcore.MemoryCommit{}, "", err
	}
	return memoryCommit(c), d.Patch, nil
}
func (m memoryAdapter) Revert(ctx context.Context, rev string) (string, error) {
	res, err := m.r.Revert(ctx, rev, "")
	return res.Revision, err
}

func memoryCommit(c memfs.Commit) agentcore.MemoryCommit {
	mc := agentcore.MemoryCommit{Revision: c.Revision, Message: c.Message, When: c.When}
	for _, ch := range c.Changes {
		mc.Changes = append(mc.Changes, agentcore.MemoryChange{Path: ch.Path, Kind: ch.Kind})
	}
	return mc
}

// timedProvider reports each model call's duration (provider latency
// metric).
type timedProvider struct {
	p       agentcore.Provider
	observe func(time.Duration)
}

func (t timedProvider) Step(ctx context.Context, req agentcore.Request, onDelta func(agentcore.Delta)) (agentcore.Response, error) {
	start := time.Now()
	res, err := t.p.Step(ctx, req, onDelta)
	t.observe(time.Since(start))
	return res, err
}

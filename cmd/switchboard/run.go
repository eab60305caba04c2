package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels/headless"
	"github.com/switchboard-gw/switchboard/channels/headless/streamjson"
)

type runFlags struct {
	prompt          string
	outputFormat    string
	inputFormat     string
	agent           string
	permissionMode  string
	maxSteps        int
	continueLast    bool
	conversation    string
	newConversation bool
	leaseWait       time.Duration
	waitTasks       bool
}

func newRunCmd(s *streams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the agent headless: one prompt, or a stream of JSON lines on stdin",
		Long: `Run the agent without a terminal UI.

  switchboard run -p "fix the failing test"                      one turn, answer on stdout
  switchboard run -p "…" --output-format json                    only the result object
  switchboard run --input-format stream-json --output-format stream-json
                                                                 bidirectional: user messages,
                                                                 approvals and interrupts on stdin

With text or json input nobody can answer a permission ask, so asks are denied
with a reason the model reads; use --permission-mode or allow rules to let calls run.

Sub-agent tasks the agent starts run in this process. With --wait-tasks, run waits
for every background task and works each report as the agent's next turn (printed
too); without it, background tasks still running at exit are cancelled and the
result names them (cancelledTasks).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHeadless(cmd.Context(), s, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.prompt, "prompt", "p", "", "the prompt (required unless --input-format stream-json)")
	fl.StringVar(&f.outputFormat, "output-format", "text", "text | json | stream-json")
	fl.StringVar(&f.inputFormat, "input-format", "text", "text | stream-json")
	fl.StringVar(&f.agent, "agent", "main", "the agent to run")
	fl.StringVar(&f.permissionMode, "permission-mode", "", "standard | acceptEdits | unrestricted | strict (default: the agent's)")
	fl.IntVar(&f.maxSteps, "max-steps", 0, "stop a turn after this many model calls (default: the agent's max_steps)")
	fl.BoolVar(&f.continueLast, "continue", false, "continue the agent's most recent conversation")
	fl.StringVar(&f.conversation, "conversation", "", "continue this conversation id")
	fl.BoolVar(&f.newConversation, "new-conversation", false, "start a new conversation (the default)")
	fl.DurationVar(&f.leaseWait, "busy-wait", 2*time.Minute, "how long to wait when another process is working on the conversation")
	fl.BoolVar(&f.waitTasks, "wait-tasks", false, "wait for background sub-agent tasks and work their reports before exiting")
	return cmd
}

func runHeadless(ctx context.Context, s *streams, f *runFlags) error {
	switch f.outputFormat {
	case headless.FormatText, headless.FormatJSON, headless.FormatStreamJSON:
	default:
		return fmt.Errorf("--output-format %q: use text, json or stream-json", f.outputFormat)
	}
	switch f.inputFormat {
	case "text", "stream-json":
	default:
		return fmt.Errorf("--input-format %q: use text or stream-json", f.inputFormat)
	}
	if f.inputFormat == "text" && strings.TrimSpace(f.prompt) == "" {
		return errors.New("missing prompt: pass -p \"…\" (or --input-format stream-json to read messages from stdin)")
	}
	if n := btoi(f.continueLast) + btoi(f.conversation != "") + btoi(f.newConversation); n > 1 {
		return errors.New("--continue, --conversation and --new-conversation exclude each other")
	}
	// A signal stops the running turn (its result says cancelled) instead
	// of tearing the process down under it.
	sig := ctx
	ctx = context.WithoutCancel(ctx)
	a, err := openApp(ctx, s)
	if err != nil {
		return err
	}
	defer a.Close()
	ag, err := a.agent(ctx, f.agent, agentOptions{permissionMode: f.permissionMode, maxSteps: f.maxSteps})
	if err != nil {
		return err
	}
	convID, err := pickConversation(ctx, a, ag, f)
	if err != nil {
		return err
	}
	sess, err := a.newLocalSession(ctx, "run", ag.ID(), convID)
	if err != nil {
		return err
	}
	defer sess.Close()
	cfg := ag.Config()
	o := headless.Options{
		Format: f.outputFormat, Prompt: f.prompt, Out: s.out, Err: s.err,
		Location: sess.loc, User: localUser(), BusyWait: f.leaseWait, WaitTasks: f.waitTasks,
		Init: streamjson.Init{AgentID: ag.ID(), ConversationID: convID, Model: cfg.Model, Tools: ag.Tools().Names(),
			Cwd: cfg.Policy.Workspace, PermissionMode: string(cfg.Policy.Mode)},
	}
	deny := ""
	if f.inputFormat == "stream-json" {
		o.StreamInput = s.in
	} else {
		deny = "nobody can approve in this mode (switchboard run with text input); rerun with --permission-mode or an allow rule"
	}
	ad := headless.New(o)
	g, err := a.localGateway(ag, sess, ad, deny)
	if err != nil {
		return err
	}
	gctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(gctx, 10*time.Second) }()
	select {
	case <-ad.Done():
	case <-sig.Done():
		ad.Interrupt(ctx)
		select {
		case <-ad.Done():
		case <-time.After(10 * time.Second):
		}
	}
	sess.finish()
	if ids := ad.CancelledTasks(); len(ids) > 0 {
		g.StopTasks(ctx, ids, "run exited before it finished (run --wait-tasks waits)")
	}
	stop()
	<-done
	if code := ad.ExitCode(); code != 0 {
		return exitError{code}
	}
	if sig.Err() != nil {
		return exitError{130}
	}
	return nil
}

func pickConversation(ctx context.Context, a *app, ag *agentcore.Agent, f *runFlags) (string, error) {
	switch {
	case f.conversation != "":
		c, err := a.store.Conversation(ctx, f.conversation)
		if err != nil {
			return "", fmt.Errorf("conversation %s: %w", f.conversation, err)
		}
		if c.AgentID != ag.ID() {
			return "", fmt.Errorf("conversation %s belongs to agent %s; pass --agent %s", c.ID, c.AgentID, c.AgentID)
		}
		return c.ID, nil
	case f.continueLast:
		c, err := a.store.LatestConversation(ctx, ag.ID())
		if err == nil {
			return c.ID, nil
		}
		if !errors.Is(err, agentcore.ErrNotFound) {
			return "", err
		}
	}
	c, err := ag.NewConversation(ctx)
	return c.ID, err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

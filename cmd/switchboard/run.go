package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
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
with a reason the model reads; use --permission-mode or allow rules to let calls run.`,
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
	return cmd
}

// resultObject is the last line of stream-json and the only output of
// json (DESIGN §7; field names are a contract).
type resultObject struct {
	Type           string               `json:"type"`
	Subtype        string               `json:"subtype"`
	Result         string               `json:"result"`
	StopReason     agentcore.StopReason `json:"stopReason"`
	NumSteps       int                  `json:"numSteps"`
	Usage          usageObject          `json:"usage"`
	AgentID        string               `json:"agentId"`
	ConversationID string               `json:"conversationId"`
	DurationMs     int64                `json:"durationMs"`
	Error          string               `json:"error,omitempty"`
	Pending        []agentcore.Approval `json:"pendingApprovals,omitempty"`
}

type usageObject struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
}

func subtype(r agentcore.StopReason) string {
	switch r {
	case agentcore.StopEndTurn:
		return "success"
	case agentcore.StopRequiresApproval:
		return "requires_approval"
	case agentcore.StopCancelled:
		return "cancelled"
	default:
		return "error"
	}
}

func toResult(res agentcore.TurnResult, usage agentcore.Usage, steps int, d time.Duration) resultObject {
	return resultObject{
		Type:           "result",
		Subtype:        subtype(res.StopReason),
		Result:         res.Text,
		StopReason:     res.StopReason,
		NumSteps:       steps,
		Usage:          usageObject{usage.InputTokens, usage.OutputTokens, usage.CachedTokens},
		AgentID:        res.AgentID,
		ConversationID: res.ConversationID,
		DurationMs:     d.Milliseconds(),
		Error:          res.Error,
		Pending:        res.Pending,
	}
}

// jsonLines writes one JSON object per line, safe for concurrent use.
type jsonLines struct {
	mu sync.Mutex
	w  io.Writer
}

func (j *jsonLines) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.w.Write(append(b, '\n'))
}

func runHeadless(ctx context.Context, s *streams, f *runFlags) error {
	switch f.outputFormat {
	case "text", "json", "stream-json":
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
	out := &jsonLines{w: s.out}
	if f.outputFormat == "stream-json" {
		out.write(map[string]any{
			"type":           "init",
			"agentId":        ag.ID(),
			"conversationId": convID,
			"model":          ag.Config().Model,
			"tools":          ag.Tools().Names(),
			"cwd":            ag.Config().Policy.Workspace,
			"permissionMode": ag.Config().Policy.Mode,
		})
	}
	var sink agentcore.Sink = agentcore.Discard
	if f.outputFormat == "stream-json" {
		sink = agentcore.SinkFunc(func(e agentcore.Event) { out.write(e) })
	}
	h := &headless{s: s, a: a, ag: ag, convID: convID, f: f, out: out, sink: sink}
	if f.inputFormat == "stream-json" {
		return h.bidirectional(ctx)
	}
	res, err := h.turn(ctx, agentcore.Input{
		Kind:     agentcore.InputUser,
		Parts:    []agentcore.Part{{Type: agentcore.PartText, Text: f.prompt}},
		Speaker:  "the local user",
		Origin:   "terminal (switchboard run)",
		DenyAsks: "nobody can approve in this mode (switchboard run with text input); rerun with --permission-mode or an allow rule",
	})
	if err != nil {
		return err
	}
	return h.finish(res)
}

type headless struct {
	s      *streams
	a      *app
	ag     *agentcore.Agent
	convID string
	f      *runFlags
	out    *jsonLines
	sink   agentcore.Sink
	steps  int
	usage  agentcore.Usage
	start  time.Time
}

func (h *headless) turn(ctx context.Context, in agentcore.Input) (agentcore.TurnResult, error) {
	if h.start.IsZero() {
		h.start = time.Now()
	}
	res, err := waitTurn(ctx, h.ag, h.convID, in, h.sink, h.f.leaseWait, func() {
		fmt.Fprintln(h.s.err, "switchboard: the conversation is busy in another process; waiting for it…")
	})
	if errors.Is(err, agentcore.ErrBusy) {
		return res, fmt.Errorf("conversation %s is busy in another process; try again when it finishes", h.convID)
	}
	h.steps += res.Steps
	h.usage = h.usage.Add(res.Usage)
	return res, err
}

// finish prints the result in the chosen format and sets the exit code.
func (h *headless) finish(res agentcore.TurnResult) error {
	obj := toResult(res, h.usage, h.steps, time.Since(h.start))
	switch h.f.outputFormat {
	case "text":
		if res.Text != "" {
			fmt.Fprintln(h.s.out, res.Text)
		}
		if res.Error != "" {
			fmt.Fprintln(h.s.err, "switchboard:", res.Error)
		}
		for _, p := range res.Pending {
			fmt.Fprintf(h.s.err, "switchboard: waiting for approval %s: %s\n", p.ID, p.Summary)
		}
	default:
		h.out.write(obj)
	}
	switch obj.Subtype {
	case "success", "requires_approval":
		return nil
	case "cancelled":
		return exitError{130}
	default:
		return exitError{1}
	}
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

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
)

func newChatCmd(s *streams) *cobra.Command {
	var agentName, mode string
	var cont bool
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with an agent in the terminal (approvals are asked as prompts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChat(cmd.Context(), s, agentName, mode, cont)
		},
	}
	cmd.Flags().StringVar(&agentName, "agent", "main", "the agent to talk with")
	cmd.Flags().StringVar(&mode, "permission-mode", "", "standard | acceptEdits | unrestricted | strict (default: the agent's)")
	cmd.Flags().BoolVar(&cont, "continue", false, "continue the agent's most recent conversation")
	return cmd
}

// terminalSink prints streamed text and a line per tool call.
type terminalSink struct {
	w       io.Writer
	midLine bool
}

func (t *terminalSink) Emit(e agentcore.Event) {
	switch e.Type {
	case agentcore.EventAssistantDelta:
		fmt.Fprint(t.w, e.Text)
		t.midLine = !strings.HasSuffix(e.Text, "\n")
	case agentcore.EventToolCall:
		t.newline()
		fmt.Fprintf(t.w, "⚙ %s %s\n", e.ToolName, clipLine(string(e.Arguments), 120))
	case agentcore.EventToolResult:
		status := "done"
		if e.IsError {
			status = "error: " + clipLine(e.Text, 120)
		}
		fmt.Fprintf(t.w, "  ↳ %s\n", status)
	case agentcore.EventPlan:
		t.newline()
		for _, td := range e.Todos {
			mark := "[ ]"
			switch td.Status {
			case "completed":
				mark = "[x]"
			case "in_progress":
				mark = "[~]"
			}
			fmt.Fprintf(t.w, "  %s %s\n", mark, td.Content)
		}
	}
}

func (t *terminalSink) newline() {
	if t.midLine {
		fmt.Fprintln(t.w)
		t.midLine = false
	}
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func runChat(ctx context.Context, s *streams, agentName, mode string, cont bool) error {
	a, err := openApp(ctx, s)
	if err != nil {
		return err
	}
	defer a.Close()
	ag, err := a.agent(ctx, agentName, agentOptions{permissionMode: mode})
	if err != nil {
		return err
	}
	convID, err := pickConversation(ctx, a, ag, &runFlags{continueLast: cont})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "switchboard chat — agent %s, model %s, %s mode. /new starts over, /exit or Ctrl-D quits.\n", ag.ID(), ag.Config().Model, ag.Config().Policy.Mode)
	in := bufio.NewReader(s.in)
	sink := &terminalSink{w: s.out}
	for {
		fmt.Fprint(s.out, "\n> ")
		line, err := in.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			fmt.Fprintln(s.out)
			return nil
		}
		line = strings.TrimSpace(line)
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/new":
			c, err := ag.NewConversation(ctx)
			if err != nil {
				return err
			}
			convID = c.ID
			fmt.Fprintln(s.out, "New conversation", convID)
			continue
		}
		input := agentcore.Input{Kind: agentcore.InputUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: line}},
			Speaker: "the local user", Origin: "terminal (switchboard chat)", Requester: "local:user"}
		for {
			res, err := waitTurn(ctx, ag, convID, input, sink, time.Minute, nil)
			if err != nil {
				return err
			}
			sink.newline()
			if res.Error != "" {
				fmt.Fprintln(s.out, "⚠", res.Error)
			}
			if res.StopReason != agentcore.StopRequiresApproval {
				break
			}
			for _, p := range res.Pending {
				d, err := askApproval(s.out, in, p)
				if err != nil {
					return nil
				}
				d.By = "local:user"
				if _, _, err := ag.Decide(ctx, p.ID, d); err != nil {
					return err
				}
			}
			input = agentcore.Input{Kind: agentcore.InputResume}
		}
	}
}

func askApproval(w io.Writer, in *bufio.Reader, p agentcore.Approval) (agentcore.Decision, error) {
	fmt.Fprintf(w, "\n⚠ %s wants to run: %s\n  (%s)\n", "the agent", p.Summary, p.Reason)
	if p.Diff != "" {
		fmt.Fprintln(w, p.Diff)
	}
	always := ""
	if p.Rule != "" {
		always = fmt.Sprintf(" / [a]lways (%s)", p.Rule)
	}
	for {
		fmt.Fprintf(w, "Allow? [y]es%s / [n]o: ", always)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return agentcore.Decision{}, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return agentcore.Decision{State: agentcore.ApprovalAllowed}, nil
		case "a", "always":
			if p.Rule != "" {
				return agentcore.Decision{State: agentcore.ApprovalAlways}, nil
			}
		case "n", "no":
			fmt.Fprint(w, "Reason (optional): ")
			reason, _ := in.ReadString('\n')
			return agentcore.Decision{State: agentcore.ApprovalDenied, Reason: strings.TrimSpace(reason)}, nil
		}
	}
}

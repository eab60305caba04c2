package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
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

// readResult is one line of chat input.
type readResult struct {
	line string
	err  error
}

func runChat(ctx context.Context, s *streams, agentName, mode string, cont bool) error {
	// main's context ends at the first SIGINT. In chat an interrupt stops
	// the running turn and brings back the prompt (at the prompt it quits),
	// so chat takes the signals itself and works on a context detached
	// from main's.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx = context.WithoutCancel(ctx)

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
	fmt.Fprintf(s.out, "switchboard chat — agent %s, model %s, %s mode. /new starts over, /exit, Ctrl-D or Ctrl-C at the prompt quits; Ctrl-C during a turn stops it.\n", ag.ID(), ag.Config().Model, ag.Config().Policy.Mode)

	// One reader owns stdin (it blocks in a read the process may exit
	// during); prompts take lines from it or a signal.
	lines := make(chan readResult)
	go func() {
		defer close(lines)
		in := bufio.NewReader(s.in)
		for {
			line, err := in.ReadString('\n')
			if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
				lines <- readResult{err: err}
				return
			}
			lines <- readResult{line: line}
		}
	}()
	readLine := func() (string, bool) {
		select {
		case r, open := <-lines:
			return r.line, open && r.err == nil
		case <-sigs:
			return "", false
		}
	}
	sink := &terminalSink{w: s.out}
	for {
		fmt.Fprint(s.out, "\n> ")
		line, ok := readLine()
		if !ok {
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
		if handled := chatCommand(ctx, s.out, ag, convID, line); handled {
			continue
		}
		input := agentcore.Input{Kind: agentcore.InputUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: line}},
			Speaker: "the local user", Origin: "terminal (switchboard chat)", Requester: "local:user"}
		for {
			res, quit, err := chatTurn(ctx, ag, convID, input, sink, sigs)
			if err != nil {
				return err
			}
			sink.newline()
			if res.Error != "" {
				fmt.Fprintln(s.out, "⚠", res.Error)
			}
			if quit {
				return nil
			}
			if res.StopReason != agentcore.StopRequiresApproval {
				break
			}
			for _, p := range res.Pending {
				d, ok := askApproval(s.out, readLine, p)
				if !ok {
					fmt.Fprintln(s.out)
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

// chatTurn runs one turn; SIGINT cancels it, SIGTERM cancels it and asks
// chat to quit.
func chatTurn(ctx context.Context, ag *agentcore.Agent, convID string, in agentcore.Input, sink agentcore.Sink, sigs <-chan os.Signal) (agentcore.TurnResult, bool, error) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan turnDone, 1)
	go func() {
		res, err := waitTurn(tctx, ag, convID, in, sink, time.Minute, nil)
		done <- turnDone{res, err}
	}()
	quit := false
	for {
		select {
		case d := <-done:
			return d.res, quit, d.err
		case sig := <-sigs:
			quit = quit || sig == syscall.SIGTERM
			cancel()
		}
	}
}

func askApproval(w io.Writer, readLine func() (string, bool), p agentcore.Approval) (agentcore.Decision, bool) {
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
		line, ok := readLine()
		if !ok {
			return agentcore.Decision{}, false
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return agentcore.Decision{State: agentcore.ApprovalAllowed}, true
		case "a", "always":
			if p.Rule != "" {
				return agentcore.Decision{State: agentcore.ApprovalAlways}, true
			}
		case "n", "no":
			fmt.Fprint(w, "Reason (optional): ")
			reason, _ := readLine()
			return agentcore.Decision{State: agentcore.ApprovalDenied, Reason: strings.TrimSpace(reason)}, true
		}
	}
}

// chatHelp lists the terminal chat's commands.
const chatHelp = `/new          start a new conversation
/compact      summarize older context now
/memory       the agent's memory history (/memory show REV, /memory revert REV)
/status       agent, model, mode and conversation
/exit         quit (also Ctrl-D)`

// chatCommand handles the terminal chat's slash commands; it reports
// whether line was one.
func chatCommand(ctx context.Context, w io.Writer, ag *agentcore.Agent, convID, line string) bool {
	fields := strings.Fields(line)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "/") {
		return false
	}
	var text string
	var err error
	switch fields[0] {
	case "/help":
		text = chatHelp
	case "/status":
		cfg := ag.Config()
		text = fmt.Sprintf("agent %s · model %s · mode %s · conversation %s", ag.ID(), cfg.Model, cfg.Policy.Mode, convID)
	case "/compact":
		var res agentcore.CompactResult
		res, err = ag.Compact(ctx, convID)
		text = res.Note
		if err == nil && !res.Compacted {
			text = "Nothing to compact yet."
		}
	case "/memory":
		switch {
		case len(fields) == 1 || fields[1] == "log":
			text, err = ag.MemoryLogText(ctx, 10)
		case len(fields) == 3 && (fields[1] == "show" || fields[1] == "diff"):
			text, err = ag.MemoryShowText(ctx, fields[2])
		case len(fields) == 3 && fields[1] == "revert":
			text, err = ag.MemoryRevertText(ctx, fields[2])
		default:
			text = "Usage: /memory [log | show REV | revert REV]"
		}
	default:
		if strings.Count(fields[0], "/") > 1 { // a path, not a command
			return false
		}
		text = "Unknown command " + fields[0] + ".\n" + chatHelp
	}
	if err != nil {
		text = "⚠ " + err.Error()
	}
	fmt.Fprintln(w, text)
	return true
}

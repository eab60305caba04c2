package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/channels/terminal"
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

// runChat runs the terminal surface on a gateway of its own: what is typed
// goes to the queue like any chat message, /commands come from the one
// command table, asks are prompts decided through the one decide path.
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
	sess, err := a.newLocalSession(ctx, "chat", ag.ID(), convID)
	if err != nil {
		return err
	}
	defer sess.Close()
	interrupts := make(chan struct{}, 1)
	quit := make(chan struct{})
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGTERM {
				close(quit)
				return
			}
			select {
			case interrupts <- struct{}{}:
			default:
			}
		}
	}()
	cfg := ag.Config()
	ad := terminal.New(terminal.Options{
		In: s.in, Out: s.out, Location: sess.loc, User: localUser(), Interrupts: interrupts,
		Banner: fmt.Sprintf("switchboard chat — agent %s, model %s, %s mode. /help lists commands; /exit, Ctrl-D or Ctrl-C at the prompt quits; Ctrl-C during a turn stops it.",
			ag.ID(), cfg.Model, cfg.Policy.Mode),
	})
	g, err := a.localGateway(ag, sess, ad, "")
	if err != nil {
		return err
	}
	gctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(gctx, 5*time.Second) }()
	select {
	case <-ad.Done():
	case <-quit:
	}
	stop()
	<-done
	return nil
}

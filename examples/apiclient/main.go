// Command apiclient talks to a switchboard gateway through its HTTP API:
// it starts a conversation (or continues one), sends a message, streams
// the answer to stdout as it arrives, and approves every tool call the
// agent asks about (or denies them, with -deny).
//
//	SWITCHBOARD_API_TOKEN=… go run ./examples/apiclient -url http://127.0.0.1:7700 "run the tests"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/switchboard-gw/switchboard/client"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:7700", "the gateway's [http] address")
	conv := flag.String("conversation", "", "continue this conversation (default: start one)")
	agent := flag.String("agent", "", "the agent of a new conversation (default: the channel's)")
	deny := flag.Bool("deny", false, "deny the agent's asks instead of approving them")
	flag.Parse()
	text := strings.Join(flag.Args(), " ")
	if text == "" {
		fmt.Fprintln(os.Stderr, "usage: apiclient [-url URL] [-conversation ID] [-deny] message…")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *url, os.Getenv("SWITCHBOARD_API_TOKEN"), *conv, *agent, text, *deny); err != nil {
		fmt.Fprintln(os.Stderr, "apiclient:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, token, conv, agent, text string, deny bool) error {
	c, err := client.New(url, token, client.Options{})
	if err != nil {
		return err
	}
	if conv == "" {
		cv, err := c.CreateConversation(ctx, client.NewConversation{Agent: agent, Title: title(text)})
		if err != nil {
			return fmt.Errorf("start a conversation: %w", err)
		}
		conv = cv.ID
		fmt.Fprintln(os.Stderr, "conversation", conv)
	}
	// Follow before sending, so no event of the answer can be missed.
	f, err := c.Follow(ctx, conv, client.StreamOptions{})
	if err != nil {
		return err
	}
	defer f.Close()
	q, err := c.Send(ctx, conv, client.NewMessage{Text: text}, client.SendOptions{})
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	fmt.Fprintln(os.Stderr, "queued", q.InputID)

	// Our exchange: the turn answering our input, and the turns that resume
	// it after each decision.
	ours := map[string]bool{q.InputID: true}
	resuming := false
	for {
		ev, err := f.Next(ctx)
		if err != nil {
			return err
		}
		if ev.Type == client.EventTurnStart && resuming {
			ours[ev.InputID], resuming = true, false
		}
		if !ours[ev.InputID] {
			continue // an earlier input's turn
		}
		switch ev.Type {
		case client.EventAssistantDelta:
			fmt.Print(ev.Text)
		case client.EventAssistantMessage:
			fmt.Println()
		case client.EventToolCall:
			fmt.Fprintf(os.Stderr, "→ %s\n", firstOf(ev.Title, ev.ToolName))
		case client.EventToolResult:
			fmt.Fprintf(os.Stderr, "← %s: %s\n", ev.ToolName, ev.Outcome)
		case client.EventApprovalRequest:
			if ev.Approval == nil {
				continue
			}
			d := client.Decision{Decision: client.DecideAllow}
			if deny {
				d = client.Decision{Decision: client.DecideDeny, Reason: "denied by apiclient -deny"}
			}
			res, err := c.Decide(ctx, ev.Approval.ID, d)
			var ae *client.APIError
			if errors.As(err, &ae) && ae.Status == 409 {
				fmt.Fprintln(os.Stderr, "approval refused:", ae.Message)
				continue
			}
			if err != nil {
				return fmt.Errorf("decide %s: %w", ev.Approval.ID, err)
			}
			fmt.Fprintf(os.Stderr, "%s (%s)\n", res.Text, ev.Approval.Summary)
			resuming = resuming || res.Resumed
		case client.EventTurnEnd:
			switch ev.StopReason {
			case "requires_approval":
				continue // the resume is a new turn, after our decisions
			case client.StopRestarted:
				continue // the gateway restarted; the input runs again
			case "end_turn":
				return nil
			}
			return fmt.Errorf("the turn ended: %s %s", ev.StopReason, ev.Error)
		}
	}
}

func title(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

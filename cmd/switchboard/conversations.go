package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/store"
)

// titleLen is how much of the first user text a listing shows.
const titleLen = 60

func newConversationsCmd(s *streams) *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:     "conversations",
		Aliases: []string{"conversation", "conv"},
		Short:   "List conversations and read their transcripts",
	}
	cmd.PersistentFlags().StringVar(&configFile, "config", "", "config file (default: $SWITCHBOARD_CONFIG, else $SWITCHBOARD_HOME/switchboard.toml)")

	var agent string
	var limit int
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List conversations, most recent first: agent, id, title, last update, size, where they are bound",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listConversations(cmd.Context(), s, configFile, agent, limit, asJSON)
		},
	}
	list.Flags().StringVar(&agent, "agent", "", "only this agent's conversations")
	list.Flags().IntVar(&limit, "limit", 50, "show at most this many (0: all)")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Print a conversation's transcript: what was said, tool calls and how they ended",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showConversation(cmd.Context(), s, configFile, args[0], showJSON)
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	cmd.AddCommand(list, show)
	return cmd
}

func listConversations(ctx context.Context, s *streams, configFile, agent string, limit int, asJSON bool) error {
	cfg, err := loadConfigWith(configFile)
	if err != nil {
		return err
	}
	db, err := openExistingStore(ctx, cfg.Home)
	var convs []store.ConversationSummary
	switch {
	case errors.Is(err, errNoData):
	case err != nil:
		return err
	default:
		defer db.Close()
		convs, err = db.ConversationSummaries(ctx, agent, limit)
		if err != nil {
			return err
		}
	}
	if asJSON {
		if convs == nil {
			convs = []store.ConversationSummary{}
		}
		return printJSON(s.out, map[string]any{"conversations": convs})
	}
	if len(convs) == 0 {
		fmt.Fprintf(s.out, "No conversations yet in %s: start one with `switchboard chat`, `switchboard run -p …` or a message to a channel of `switchboard serve`.\n", cfg.Home)
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tID\tUPDATED\tMESSAGES\tTITLE\tLOCATIONS")
	for _, c := range convs {
		fmt.Fprintf(tw, "%s\t%s\t%s ago\t%d\t%s\t%s\n", c.AgentID, c.ID, shortAge(now, c.Updated), c.Messages,
			orDash(oneLine(c.FirstText, titleLen)), orDash(strings.Join(c.Locations, " ")))
	}
	return tw.Flush()
}

// transcriptView is a conversation as `conversations show` presents it.
type transcriptView struct {
	ID        string          `json:"id"`
	AgentID   string          `json:"agentId"`
	Created   time.Time       `json:"created"`
	Updated   time.Time       `json:"updated"`
	Locations []string        `json:"locations,omitempty"`
	Messages  []messageView   `json:"messages"`
	Pending   []approvalBrief `json:"pendingApprovals,omitempty"`
}

// messageView is one visible entry of a transcript: a user or assistant
// message with its tool calls. Tool results are folded into their calls.
type messageView struct {
	Seq       int64          `json:"seq"`
	Role      agentcore.Role `json:"role"`
	Text      string         `json:"text,omitempty"`
	Summary   bool           `json:"summary,omitempty"` // a compaction summary standing for earlier messages
	Images    int            `json:"images,omitempty"`
	ToolCalls []toolCallView `json:"toolCalls,omitempty"`
	Created   time.Time      `json:"created"`
}

// Tool call outcomes as `conversations show` reports them.
const (
	callOK       = "ok"
	callError    = "error"
	callAsking   = "waiting for approval"
	callNoResult = "no result yet"
)

type toolCallView struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Subject string `json:"subject,omitempty"` // what it acts on: the command, the file…
	Status  string `json:"status"`            // ok | error | waiting for approval | no result yet
	Result  string `json:"result,omitempty"`  // the start of the result text
}

type approvalBrief struct {
	ID      string `json:"id"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
}

// resultPreview bounds the result text show prints per call.
const resultPreview = 300

func showConversation(ctx context.Context, s *streams, configFile, id string, asJSON bool) error {
	cfg, err := loadConfigWith(configFile)
	if err != nil {
		return err
	}
	db, err := openExistingStore(ctx, cfg.Home)
	if errors.Is(err, errNoData) {
		return notFoundConversation(id)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	conv, err := db.ResolveConversation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return notFoundConversation(id)
	}
	if err != nil {
		return err
	}
	msgs, err := db.Messages(ctx, conv.ID, 0, 0)
	if err != nil {
		return err
	}
	approvals, err := db.ConversationApprovals(ctx, conv.ID, nil)
	if err != nil {
		return err
	}
	bindings, err := db.BindingsOf(ctx, conv.ID)
	if err != nil {
		return err
	}
	v := transcriptView{ID: conv.ID, AgentID: conv.AgentID, Created: conv.Created, Updated: conv.Updated, Messages: []messageView{}}
	for _, b := range bindings {
		v.Locations = append(v.Locations, b.Location)
	}
	v.Messages = visibleMessages(msgs, approvals)
	for _, a := range approvals {
		if a.State == agentcore.ApprovalPending {
			v.Pending = append(v.Pending, approvalBrief{ID: a.ID, Tool: a.ToolName, Summary: a.Summary})
		}
	}
	if asJSON {
		return printJSON(s.out, v)
	}
	return printTranscript(s.out, v, len(msgs))
}

func notFoundConversation(id string) error {
	return fmt.Errorf("no conversation %q: list the valid ids with `switchboard conversations list`", id)
}

// visibleMessages folds tool results into their calls and drops what
// people never see (reminder-only inputs, empty assistant steps).
func visibleMessages(msgs []agentcore.Message, approvals map[string]agentcore.Approval) []messageView {
	results := map[string]agentcore.Message{}
	for _, m := range msgs {
		if m.Role == agentcore.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	out := []messageView{}
	for _, m := range msgs {
		if m.Role == agentcore.RoleTool {
			continue
		}
		v := messageView{Seq: m.Seq, Role: m.Role, Text: m.Text(), Created: m.CreatedAt}
		for _, p := range m.Parts {
			switch p.Type {
			case agentcore.PartSummary:
				v.Summary = true
				if v.Text == "" {
					v.Text = p.Text
				}
			case agentcore.PartImage:
				v.Images++
			}
		}
		for _, c := range m.ToolCalls {
			tc := toolCallView{ID: c.ID, Name: c.Name, Subject: agentcore.CallSubject(json.RawMessage(c.Arguments)), Status: callNoResult}
			if r, ok := results[c.ID]; ok {
				tc.Status = callOK
				if r.IsError {
					tc.Status = callError
				}
				tc.Result = oneLine(r.ModelText(), resultPreview)
			} else if a, ok := approvals[c.ID]; ok && a.State == agentcore.ApprovalPending {
				tc.Status = callAsking + " " + a.ID
			}
			v.ToolCalls = append(v.ToolCalls, tc)
		}
		if v.Text == "" && len(v.ToolCalls) == 0 && v.Images == 0 {
			continue
		}
		out = append(out, v)
	}
	return out
}

func printTranscript(w io.Writer, v transcriptView, stored int) error {
	fmt.Fprintf(w, "Conversation %s of agent %s: %d messages stored, started %s, updated %s\n",
		v.ID, v.AgentID, stored, v.Created.Local().Format(time.DateTime), v.Updated.Local().Format(time.DateTime))
	if len(v.Locations) > 0 {
		fmt.Fprintf(w, "Bound to: %s\n", strings.Join(v.Locations, ", "))
	}
	for _, m := range v.Messages {
		fmt.Fprintln(w)
		who := string(m.Role)
		if m.Summary {
			who = "summary of earlier messages"
		}
		fmt.Fprintf(w, "[%s] %s:\n", m.Created.Local().Format(time.DateTime), who)
		if m.Text != "" {
			for _, line := range strings.Split(strings.TrimRight(m.Text, "\n"), "\n") {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
		if m.Images > 0 {
			fmt.Fprintf(w, "  (%d image(s))\n", m.Images)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "  → %s %s [%s]\n", c.Name, oneLine(c.Subject, 100), c.Status)
			if c.Result != "" {
				fmt.Fprintf(w, "      %s\n", oneLine(c.Result, 160))
			}
		}
	}
	for _, p := range v.Pending {
		fmt.Fprintf(w, "\nWaiting for approval %s: %s %s (decide it in the chat it was asked in)\n", p.ID, p.Tool, p.Summary)
	}
	return nil
}

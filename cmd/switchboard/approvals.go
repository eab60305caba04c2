package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/headless"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/store"
)

// newApprovalsCmd is `switchboard approvals`. Deciding (approve, deny)
// joins here through the gateway's one decide path.
func newApprovalsCmd(s *streams) *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:     "approvals",
		Aliases: []string{"approval"},
		Short:   "See and decide the tool calls waiting for a person's decision",
	}
	cmd.PersistentFlags().StringVar(&configFile, "config", "", "config file (default: $SWITCHBOARD_CONFIG, else $SWITCHBOARD_HOME/switchboard.toml)")
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List pending approvals, oldest first: agent, conversation, where it was asked, what would run, age",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listApprovals(cmd.Context(), s, configFile, asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	for _, verb := range []string{"approve", "deny"} {
		var reason string
		var always bool
		c := &cobra.Command{
			Use:   verb + " ID",
			Short: map[string]string{"approve": "Approve a pending tool call (the turn resumes in the process that runs its chat)", "deny": "Deny a pending tool call, with an optional reason the model reads"}[verb],
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return decideApproval(cmd.Context(), s, configFile, args[0], verb, always, reason)
			},
		}
		c.Flags().StringVar(&reason, "reason", "", "why (the model reads it)")
		if verb == "approve" {
			c.Flags().BoolVar(&always, "always", false, "also store the approval's rule for the agent (like the Always button)")
		}
		cmd.AddCommand(c)
	}
	return cmd
}

// decideApproval decides one approval through the gateway's one decide
// path, as the local operator; the resume it queues is worked by the
// process that runs the approval's chat (serve, or the run/chat that asked).
func decideApproval(ctx context.Context, s *streams, configFile, id, verb string, always bool, reason string) error {
	cfg, err := loadConfigWith(configFile)
	if err != nil {
		return err
	}
	db, err := openExistingStore(ctx, cfg.Home)
	if errors.Is(err, errNoData) {
		return fmt.Errorf("approval %s not found: there is no data yet in %s; `switchboard approvals list` shows pending ones", id, cfg.Home)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Approval(ctx, id); errors.Is(err, agentcore.ErrNotFound) {
		return fmt.Errorf("approval %s not found; `switchboard approvals list` shows pending ones", id)
	}
	agentOpts := map[string]gateway.AgentOptions{}
	for name, ac := range cfg.Agents {
		agentOpts[name] = gateway.AgentOptions{Approvers: ac.Approvers, ApprovalRoutes: ac.ApprovalRoutes}
	}
	d := gateway.NewDecider(gateway.DeciderOptions{Store: db, AgentStore: db, AgentOptions: agentOpts})
	action := gateway.ButtonApprove
	switch {
	case verb == "deny":
		action = gateway.ButtonDeny
	case always:
		action = gateway.ButtonAlways
	}
	res, err := d.Decide(ctx, gateway.DecideRequest{ApprovalID: id, Action: action, By: channels.QualifiedID(headless.Name, localUser().ID), Reason: reason, Operator: true})
	if err != nil {
		return err
	}
	if !res.Decided {
		return fmt.Errorf("approval %s: %s", id, res.Reply)
	}
	fmt.Fprintln(s.out, res.Reply)
	if res.Resumed {
		fmt.Fprintln(s.out, "The turn resumes in the process that runs its chat.")
	}
	return nil
}

// pendingApproval is one row of `approvals list`.
type pendingApproval struct {
	agentcore.Approval
	// Locations are where the ask was posted, or else where its
	// conversation is bound; empty for terminal hosts (chat, run, acp).
	Locations []string `json:"locations,omitempty"`
}

func listApprovals(ctx context.Context, s *streams, configFile string, asJSON bool) error {
	cfg, err := loadConfigWith(configFile)
	if err != nil {
		return err
	}
	var rows []pendingApproval
	db, err := openExistingStore(ctx, cfg.Home)
	switch {
	case errors.Is(err, errNoData):
	case err != nil:
		return err
	default:
		defer db.Close()
		if rows, err = pendingApprovals(ctx, db); err != nil {
			return err
		}
	}
	if asJSON {
		if rows == nil {
			rows = []pendingApproval{}
		}
		return printJSON(s.out, map[string]any{"approvals": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(s.out, "No approvals are waiting.")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tCONVERSATION\tLOCATION\tAGE\tTOOL\tWHAT")
	for _, r := range rows {
		loc := "-"
		if len(r.Locations) > 0 {
			loc = r.Locations[0]
			if len(r.Locations) > 1 {
				loc += fmt.Sprintf(" (+%d)", len(r.Locations)-1)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.AgentID, r.ConversationID, loc,
			shortAge(now, r.Created), r.ToolName, orDash(oneLine(r.Summary, 80)))
	}
	return tw.Flush()
}

func pendingApprovals(ctx context.Context, db *store.DB) ([]pendingApproval, error) {
	as, err := db.AllPendingApprovals(ctx, 0)
	if err != nil {
		return nil, err
	}
	out := make([]pendingApproval, 0, len(as))
	bound := map[string][]string{}
	for _, a := range as {
		p := pendingApproval{Approval: a}
		posts, err := db.ApprovalPosts(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, post := range posts {
			if !seen[post.Location] {
				seen[post.Location] = true
				p.Locations = append(p.Locations, post.Location)
			}
		}
		if len(p.Locations) == 0 {
			locs, ok := bound[a.ConversationID]
			if !ok {
				bs, err := db.BindingsOf(ctx, a.ConversationID)
				if err != nil {
					return nil, err
				}
				for _, b := range bs {
					locs = append(locs, b.Location)
				}
				bound[a.ConversationID] = locs
			}
			p.Locations = locs
		}
		out = append(out, p)
	}
	return out, nil
}

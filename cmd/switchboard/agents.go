package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/config"

	"github.com/spf13/cobra"
)

func newAgentsCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "Inspect the configured agents"}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the agents defined in the configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tPROVIDER\tMODEL\tMODE\tWORKSPACE")
			for _, name := range agentNames(cfg) {
				ac := cfg.Agents[name]
				model := cfg.Providers[ac.Provider].Model
				if ac.Model != "" {
					model = ac.Model
				}
				if model == "" {
					model = "(unset: set SWITCHBOARD_MODEL)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, ac.Provider, model, ac.PermissionMode, ac.Workspace)
			}
			return tw.Flush()
		},
	})
	return cmd
}

func newConfigCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Check the configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate",
		Short: "Load and check the configuration, then print it resolved with secrets masked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			if err := validateRules(cfg); err != nil {
				return err
			}
			return cfg.WriteMasked(s.out)
		},
	})
	return cmd
}

// validateRules checks every agent's permission rules and mode with the
// permission package's parser (config only checks their shape).
func validateRules(cfg *config.Config) error {
	for _, name := range agentNames(cfg) {
		ac := cfg.Agents[name]
		if _, err := permission.ParseMode(ac.PermissionMode); err != nil {
			return fmt.Errorf("agents.%s.permission_mode: %w", name, err)
		}
		for key, rules := range map[string][]string{"allow": ac.Allow, "deny": ac.Deny, "ask": ac.Ask} {
			for _, r := range rules {
				if _, err := permission.ParseRule(r); err != nil {
					return fmt.Errorf("agents.%s.%s: %w", name, key, err)
				}
			}
		}
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/store"
)

func newPairCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{Use: "pair", Short: "Manage who may talk to the agents"}
	cmd.AddCommand(&cobra.Command{
		Use:   "approve CODE",
		Short: "Allow the user who received this pairing code in a DM",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			db, err := store.Open(cmd.Context(), filepath.Join(cfg.Home, "switchboard.db"))
			if err != nil {
				return err
			}
			defer db.Close()
			p, err := db.ApprovePairing(cmd.Context(), strings.ToUpper(strings.TrimSpace(args[0])), time.Now().UTC())
			if errors.Is(err, gateway.ErrNotFound) {
				return fmt.Errorf("no pending pairing code %q: codes expire after an hour; ask the person to message the bot again", args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "Paired %s (%s:%s). They can talk to the agent now.\n", p.UserName, p.Channel, p.UserID)
			return nil
		},
	})
	return cmd
}

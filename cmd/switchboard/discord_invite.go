package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/channels/discord"
)

func newDiscordCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{Use: "discord", Short: "Set up the Discord channel"}
	var appID string
	invite := &cobra.Command{
		Use:   "invite",
		Short: "Print the URL that adds the bot to a Discord server, with the permissions it needs",
		Long: "Print the OAuth2 URL that adds the bot to a server: scopes bot and applications.commands,\n" +
			"and exactly the permissions the Discord channel uses. Open it in a browser as a server admin.\n" +
			"The application id comes from channels.discord.application_id, or --application-id.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id := strings.TrimSpace(appID)
			if id == "" {
				var err error
				if id, err = configuredApplicationID(); err != nil {
					return err
				}
			}
			if strings.Trim(id, "0123456789") != "" {
				return fmt.Errorf("%q is not an application id: copy the numeric Application ID (Developer Portal → your application → General Information)", id)
			}
			fmt.Fprintln(s.out, discord.InviteURL(id))
			fmt.Fprintln(s.err, "Scopes: "+strings.Join(discord.Scopes(), ", ")+". Permissions:")
			for _, p := range discord.Permissions() {
				fmt.Fprintf(s.err, "  %s — %s\n", p.Name, p.Why)
			}
			fmt.Fprintln(s.err, "Also enable the Message Content intent: Developer Portal → your application → Bot → Privileged Gateway Intents.")
			return nil
		},
	}
	invite.Flags().StringVar(&appID, "application-id", "", "the application id (default: channels.discord.application_id)")
	cmd.AddCommand(invite)
	return cmd
}

// configuredApplicationID reads channels.discord.application_id.
func configuredApplicationID() (string, error) {
	const how = `set application_id = "…" in [channels.discord] (Developer Portal → your application → General Information → Application ID), or pass --application-id`
	cfg, err := loadConfig()
	if err != nil {
		return "", fmt.Errorf("%w\n(or pass --application-id)", err)
	}
	dc := cfg.Channels.Discord
	if dc == nil {
		return "", errors.New("the Discord channel is not configured (no [channels.discord] table, or enabled = false): " + how)
	}
	if dc.ApplicationID == "" {
		return "", errors.New("channels.discord.application_id is empty: " + how)
	}
	return dc.ApplicationID, nil
}

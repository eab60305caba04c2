package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/channels/slack"
)

func newSlackCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "slack",
		Short: "Set up the Slack channel",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSlackManifestCmd(s))
	return cmd
}

func newSlackManifestCmd(s *streams) *cobra.Command {
	var o slack.ManifestOptions
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Print the Slack app manifest: create the app from it at api.slack.com/apps (Create New App → From a manifest)",
		Long: `Print a ready Slack app manifest (JSON, which Slack accepts like YAML): the bot
scopes and events switchboard uses, the messages tab for DMs, interactivity for
approval buttons, the /switchboard slash command, and either Socket Mode (the
default) or, with --mode http, the request URLs under the public URL
(--public-url https://…/ → /slack/events, /slack/interactions, /slack/commands).

Without --mode, the mode of [channels.slack] in the config is used when there is
one; without --public-url, [http] public_url.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			modeSet, urlSet := cmd.Flags().Changed("mode"), cmd.Flags().Changed("public-url")
			if !modeSet || !urlSet {
				cfg, err := loadConfig()
				switch {
				case err != nil:
					// A set-up command: the tokens the config references
					// may not exist yet. Say what is not used.
					fmt.Fprintf(s.err, "switchboard: the config did not load, so its [channels.slack] mode and [http] public_url are not used (%v)\n", err)
				default:
					if !modeSet && cfg.Channels.Slack != nil && cfg.Channels.Slack.Mode != "" {
						o.Mode = cfg.Channels.Slack.Mode
					}
					if !urlSet {
						o.PublicURL = cfg.HTTP.PublicURL
					}
				}
			}
			b, err := slack.Manifest(o)
			if err != nil {
				return fmt.Errorf("slack manifest: %w", err)
			}
			_, err = s.out.Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&o.Mode, "mode", "socket", "how Slack reaches switchboard: socket (Socket Mode, no public URL) or http (the Events API)")
	cmd.Flags().StringVar(&o.PublicURL, "public-url", "", "in http mode, the https URL Slack reaches the [http] listener at (default: [http] public_url)")
	cmd.Flags().StringVar(&o.Name, "name", "switchboard", "the app's and bot's name in Slack")
	return cmd
}

package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/slack-go/slack"
)

// ManifestOptions describe the app `switchboard slack manifest` prints.
type ManifestOptions struct {
	// Name is the app's and bot's display name (default "switchboard").
	Name string
	// Mode is ModeSocket (default) or ModeHTTP.
	Mode string
	// PublicURL is the https base URL Slack reaches the [http] listener at,
	// e.g. https://switchboard.example.com; required in HTTP mode, where the
	// request URLs are PublicURL + EventsPath, InteractionsPath and
	// CommandsPath.
	PublicURL string
}

// BotScopes are the bot token scopes the adapter uses.
var BotScopes = []string{
	"app_mentions:read", // app_mention events
	"channels:history",  // messages and thread replies in public channels (and catch-up)
	"groups:history",    // the same in private channels
	"im:history",        // direct messages
	"mpim:history",      // group direct messages
	"chat:write",        // post, edit, delete, ephemeral messages
	"users:read",        // display names (users.info)
	"files:read",        // images people post
	"files:write",       // attachments the agent sends
	"im:write",          // open a DM (approval routes, pairing)
	"commands",          // the /switchboard slash command
}

// BotEvents are the events the adapter subscribes to.
var BotEvents = []string{"app_mention", "message.channels", "message.groups", "message.im", "message.mpim"}

// Manifest returns a Slack app manifest (JSON, which Slack's "create from
// manifest" accepts as well as YAML) for switchboard: the bot scopes and
// events above, the messages tab for DMs, interactivity for approval
// buttons, the /switchboard slash command, and either Socket Mode or the
// HTTP request URLs under PublicURL.
func Manifest(o ManifestOptions) ([]byte, error) {
	if o.Name == "" {
		o.Name = "switchboard"
	}
	if len(o.Name) > 35 {
		return nil, fmt.Errorf("app name %q is longer than Slack's 35 characters", o.Name)
	}
	var base string
	switch o.Mode {
	case "", ModeSocket:
		o.Mode = ModeSocket
	case ModeHTTP:
		u, err := url.Parse(o.PublicURL)
		switch {
		case o.PublicURL == "":
			return nil, errors.New(`http mode needs the public URL Slack posts to: set [http] public_url (or pass --public-url https://…)`)
		case err != nil || u.Host == "" || u.Scheme != "https" || u.RawQuery != "" || u.Fragment != "":
			return nil, fmt.Errorf("public URL %q must be an https:// URL without query (Slack only posts to https)", o.PublicURL)
		}
		base = strings.TrimRight(o.PublicURL, "/")
	default:
		return nil, fmt.Errorf("unknown mode %q: use socket or http", o.Mode)
	}
	m := slack.Manifest{
		Metadata: slack.ManifestMetadata{MajorVersion: 1, MinorVersion: 1},
		Display: slack.Display{
			Name:            o.Name,
			Description:     "Stateful AI agents in Slack, with tools on your machine",
			LongDescription: "switchboard puts stateful AI agents into Slack. Mention the bot in a channel and it answers in a thread that becomes its conversation; DM it directly. Tool calls that need a person's approval appear as buttons that only approvers may press.",
			BackgroundColor: "#1d2b3a",
		},
		Features: slack.Features{
			AppHome: slack.AppHome{MessagesTabEnabled: true},
			BotUser: slack.BotUser{DisplayName: o.Name, AlwaysOnline: true},
			SlashCommands: []slack.ManifestSlashCommand{{
				Command:     SlashCommand,
				Description: "Talk to switchboard: help, status, new, stop, approve, deny …",
				UsageHint:   "[command] [arguments]",
			}},
		},
		OAuthConfig: slack.OAuthConfig{Scopes: slack.OAuthScopes{Bot: BotScopes}},
		Settings: slack.Settings{
			EventSubscriptions: &slack.EventSubscriptions{BotEvents: BotEvents},
			Interactivity:      &slack.Interactivity{IsEnabled: true},
			SocketModeEnabled:  o.Mode == ModeSocket,
		},
	}
	if o.Mode == ModeHTTP {
		m.Settings.EventSubscriptions.RequestUrl = base + EventsPath
		m.Settings.Interactivity.RequestUrl = base + InteractionsPath
		m.Features.SlashCommands[0].Url = base + CommandsPath
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

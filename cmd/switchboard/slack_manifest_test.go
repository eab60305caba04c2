package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/channels/slack"
)

// runCLI runs the command line in-process with an empty home.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd(os.Stdin, &out, &errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

type manifest struct {
	Settings struct {
		EventSubscriptions struct {
			RequestURL string   `json:"request_url"`
			BotEvents  []string `json:"bot_events"`
		} `json:"event_subscriptions"`
		Interactivity struct {
			IsEnabled  bool   `json:"is_enabled"`
			RequestURL string `json:"request_url"`
		} `json:"interactivity"`
		SocketModeEnabled bool `json:"socket_mode_enabled"`
	} `json:"settings"`
	Features struct {
		AppHome struct {
			MessagesTabEnabled bool `json:"messages_tab_enabled"`
		} `json:"app_home"`
		BotUser struct {
			DisplayName string `json:"display_name"`
		} `json:"bot_user"`
		SlashCommands []struct {
			Command, URL string
		} `json:"slash_commands"`
	} `json:"features"`
	OAuthConfig struct {
		Scopes struct {
			Bot []string `json:"bot"`
		} `json:"scopes"`
	} `json:"oauth_config"`
}

func parseManifest(t *testing.T, out string) manifest {
	t.Helper()
	var m manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("the manifest is not JSON: %v\n%s", err, out)
	}
	return m
}

func TestSlackManifest(t *testing.T) {
	home := t.TempDir()
	t.Setenv("SWITCHBOARD_HOME", home)
	t.Setenv("SWITCHBOARD_CONFIG", "")
	out, err := runCLI(t, "slack", "manifest", "--name", "helper")
	if err != nil {
		t.Fatal(err)
	}
	m := parseManifest(t, out)
	for _, scope := range []string{"app_mentions:read", "channels:history", "groups:history", "im:history", "mpim:history",
		"chat:write", "users:read", "files:read", "files:write", "im:write", "commands"} {
		if !slices.Contains(m.OAuthConfig.Scopes.Bot, scope) {
			t.Errorf("scope %s missing", scope)
		}
	}
	for _, ev := range []string{"app_mention", "message.channels", "message.groups", "message.im", "message.mpim"} {
		if !slices.Contains(m.Settings.EventSubscriptions.BotEvents, ev) {
			t.Errorf("event %s missing", ev)
		}
	}
	if !m.Settings.SocketModeEnabled || m.Settings.EventSubscriptions.RequestURL != "" || !m.Settings.Interactivity.IsEnabled ||
		!m.Features.AppHome.MessagesTabEnabled || m.Features.BotUser.DisplayName != "helper" {
		t.Errorf("socket mode manifest %+v", m)
	}
	if len(m.Features.SlashCommands) != 1 || m.Features.SlashCommands[0].Command != "/switchboard" || m.Features.SlashCommands[0].URL != "" {
		t.Errorf("slash commands %+v", m.Features.SlashCommands)
	}

	out, err = runCLI(t, "slack", "manifest", "--mode", "http", "--public-url", "https://sb.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	m = parseManifest(t, out)
	if m.Settings.SocketModeEnabled || m.Settings.EventSubscriptions.RequestURL != "https://sb.example.com"+slack.EventsPath ||
		m.Settings.Interactivity.RequestURL != "https://sb.example.com"+slack.InteractionsPath ||
		m.Features.SlashCommands[0].URL != "https://sb.example.com"+slack.CommandsPath {
		t.Errorf("http mode manifest %+v", m)
	}
	for _, bad := range [][]string{
		{"--mode", "http"},
		{"--mode", "http", "--public-url", "http://sb.example.com"},
		{"--mode", "rtm"},
	} {
		if _, err := runCLI(t, append([]string{"slack", "manifest"}, bad...)...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}

	// Without --mode, the config's mode applies.
	cfg := filepath.Join(home, "switchboard.toml")
	if err := os.WriteFile(cfg, []byte("[channels.slack]\nmode = \"http\"\nbot_token = \"xoxb-1\"\nsigning_secret = \"s3cret\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "slack", "manifest"); err == nil || !strings.Contains(err.Error(), "public") {
		t.Errorf("with mode = http in the config: %v; want the public URL asked for", err)
	}

	// [http] public_url is the default public URL.
	if err := os.WriteFile(cfg, []byte("[http]\npublic_url = \"https://cfg.example.com\"\n\n[channels.slack]\nmode = \"http\"\nbot_token = \"xoxb-1\"\nsigning_secret = \"s3cret\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, "slack", "manifest")
	if err != nil {
		t.Fatal(err)
	}
	if m = parseManifest(t, out); m.Settings.EventSubscriptions.RequestURL != "https://cfg.example.com"+slack.EventsPath ||
		m.Features.SlashCommands[0].URL != "https://cfg.example.com"+slack.CommandsPath {
		t.Errorf("with [http] public_url: %+v", m)
	}
	// A flag still wins.
	out, err = runCLI(t, "slack", "manifest", "--public-url", "https://flag.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if m = parseManifest(t, out); m.Settings.Interactivity.RequestURL != "https://flag.example.com"+slack.InteractionsPath {
		t.Errorf("--public-url over [http] public_url: %+v", m)
	}
}

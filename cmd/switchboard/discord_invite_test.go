package main

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiscordInvite(t *testing.T) {
	const perms = "309237746688" // View Channels, Send Messages, Attach Files, Read Message History, Create Public Threads, Send Messages in Threads
	for _, c := range []struct {
		name, config string
		args         []string
		wantURL      string // client_id
		wantErr      string
	}{
		{name: "from config", config: "[channels.discord]\ntoken = \"${DISCORD_BOT_TOKEN}\"\napplication_id = \"123456789012345678\"\n", wantURL: "123456789012345678"},
		{name: "numeric id in config", config: "[channels.discord]\ntoken = \"t\"\napplication_id = 123456789012345679\n", wantURL: "123456789012345679"},
		{name: "flag wins", config: "", args: []string{"--application-id", "42"}, wantURL: "42"},
		{name: "no application id", config: "[channels.discord]\ntoken = \"t\"\n", wantErr: "channels.discord.application_id is empty"},
		{name: "no discord table", config: "", wantErr: "not configured"},
		{name: "disabled", config: "[channels.discord]\nenabled = false\napplication_id = \"1\"\n", wantErr: "enabled = false"},
		{name: "bad flag", args: []string{"--application-id", "my-app"}, wantErr: "not an application id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("SWITCHBOARD_HOME", home)
			t.Setenv("SWITCHBOARD_CONFIG", "")
			t.Setenv("DISCORD_BOT_TOKEN", "secret")
			if c.config != "" {
				if err := os.WriteFile(filepath.Join(home, "switchboard.toml"), []byte(c.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out, errb bytes.Buffer
			root := newRootCmd(nil, &out, &errb)
			root.SetArgs(append([]string{"discord", "invite"}, c.args...))
			err := root.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if c.name != "bad flag" && !strings.Contains(err.Error(), "--application-id") {
					t.Errorf("the error %q does not say how to fix it", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(strings.TrimSpace(out.String()))
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			if u.Scheme != "https" || u.Host != "discord.com" || q.Get("client_id") != c.wantURL || q.Get("scope") != "bot applications.commands" || q.Get("permissions") != perms {
				t.Errorf("stdout %q", out.String())
			}
			if !strings.Contains(errb.String(), "Message Content intent") || !strings.Contains(errb.String(), "Create Public Threads") {
				t.Errorf("stderr lacks the explanation:\n%s", errb.String())
			}
		})
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// TestDoctorSlack: doctor checks the bot token with auth.test and names the
// bot, reports missing scopes from X-OAuth-Scopes, checks the app-level
// token in Socket Mode, and in http mode asks for [http] public_url; a
// refused token fails with what to do, and no token is ever printed.
func TestDoctorSlack(t *testing.T) {
	sl := slacktest.New(t)
	block := func(mode, bot, app string) string {
		s := fmt.Sprintf("[channels.slack]\nmode = %q\nbot_token = %q\napi_url = %q\n", mode, bot, sl.URL())
		if mode == "http" {
			return s + "signing_secret = \"${SLACK_SIGNING_SECRET}\"\n"
		}
		return s + fmt.Sprintf("app_token = %q\n", app)
	}
	for _, tc := range []struct {
		name   string
		block  string
		scopes []string
		code   int
		want   map[string]string // check → status and a part of its line
	}{
		{"socket mode, all good", block("socket", "${SLACK_BOT_TOKEN}", "${SLACK_APP_TOKEN}"), nil, 0, map[string]string{
			"slack":        "ok|bot @switchboard (" + slacktest.BotUserID + ") in workspace Fake (" + slacktest.TeamID + ")",
			"slack-scopes": "ok|every scope",
			"slack-socket": "ok|opens Socket Mode connections",
		}},
		{"missing scopes", block("socket", "${SLACK_BOT_TOKEN}", "${SLACK_APP_TOKEN}"), []string{"chat:write", "app_mentions:read"}, 0, map[string]string{
			"slack":        "ok|accepted the token",
			"slack-scopes": "warn|lacks the scopes channels:history, groups:history",
		}},
		{"refused bot token", block("socket", "xoxb-not-the-token", "${SLACK_APP_TOKEN}"), nil, 1, map[string]string{
			"slack": "FAIL|Slack refused the bot token (invalid_auth)",
		}},
		{"refused app token", block("socket", "${SLACK_BOT_TOKEN}", "xapp-not-the-token"), nil, 1, map[string]string{
			"slack":        "ok|accepted the token",
			"slack-socket": "FAIL|refused to open a Socket Mode connection with the app-level token (invalid_auth)",
		}},
		{"http mode without public_url", block("http", "${SLACK_BOT_TOKEN}", ""), nil, 0, map[string]string{
			"slack-http": "warn|[http] public_url is not set",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoctorSetup(t)
			d.telegram = tc.block
			d.e.extra = append(d.e.extra, "SLACK_BOT_TOKEN="+slacktest.BotToken, "SLACK_APP_TOKEN="+slacktest.AppToken,
				"SLACK_SIGNING_SECRET="+slacktest.SigningSecret)
			scopes := slacktest.DefaultScopes
			if tc.scopes != nil {
				scopes = tc.scopes
			}
			sl.SetScopes(scopes...)
			d.write()
			r := d.e.run("", "doctor")
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			lines := doctorLines(r.stdout)
			for check, want := range tc.want {
				status, part, _ := strings.Cut(want, "|")
				if l := lines[check]; !strings.HasPrefix(l, status) || !strings.Contains(l, part) {
					t.Errorf("%s line %q; want %s with %q\n%s", check, l, status, part, r.stdout)
				}
			}
			for _, secret := range []string{slacktest.BotToken, slacktest.AppToken, slacktest.SigningSecret} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("doctor printed a Slack secret:\n%s", r.stdout)
				}
			}
		})
	}
}

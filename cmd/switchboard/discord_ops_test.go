package main

import (
	"fmt"
	"strings"
	"testing"

	dt "github.com/switchboard-gw/switchboard/channels/discord/discordtest"
)

// TestDoctorDiscord: doctor checks the Discord token, the Message Content
// intent and application_id against the fake Discord (through api_url, as
// serve does), and never prints the token.
func TestDoctorDiscord(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []dt.Option
		token string // "" = the fake's
		appID string
		want  map[string]string // check → status and text in its line
	}{
		{"all good", nil, "", dt.AppID, map[string]string{
			"discord": "ok|@" + dt.BotUsername, "intent": "ok|Message Content intent is on"}},
		{"refused token", nil, "OTAwMDAwMDAwMDAwMDAwMDAx.Gother.wrong-signature", dt.AppID, map[string]string{
			"discord": "FAIL|refused the bot token"}},
		{"intent off", []dt.Option{dt.NoMessageContentIntent()}, "", dt.AppID, map[string]string{
			"discord": "ok|@" + dt.BotUsername, "intent": "FAIL|Message Content intent is off"}},
		{"no application_id", nil, "", "", map[string]string{
			"intent": "ok|", "application": "warn|" + dt.AppID}},
		{"another application_id", nil, "", "123456789012345678", map[string]string{
			"application": "FAIL|is not this bot's application"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoctorSetup(t)
			dc := dt.New(t, tc.opts...)
			token := tc.token
			if token == "" {
				token = dt.Token()
			}
			app := ""
			if tc.appID != "" {
				app = fmt.Sprintf("application_id = %q\n", tc.appID)
			}
			d.telegram = fmt.Sprintf("[channels.discord]\ntoken = \"${DISCORD_BOT_TOKEN}\"\napi_url = %q\n%s", dc.URL(), app)
			d.e.extra = append(d.e.extra, "DISCORD_BOT_TOKEN="+token)
			d.write()
			r := d.e.run("", "doctor")
			lines := doctorLines(r.stdout)
			for check, want := range tc.want {
				status, text, _ := strings.Cut(want, "|")
				if l := lines[check]; !strings.HasPrefix(l, status) || !strings.Contains(l, text) {
					t.Errorf("check %s: %q, want %s with %q\n%s", check, l, status, text, r.stdout)
				}
			}
			if strings.Contains(r.stdout+r.stderr, token) {
				t.Errorf("the bot token leaked into doctor's output:\n%s", r.stdout)
			}
			failed := false
			for _, w := range tc.want {
				failed = failed || strings.HasPrefix(w, "FAIL|")
			}
			if failed && r.code == 0 {
				t.Errorf("doctor exited 0 with a failed Discord check")
			}
		})
	}
}

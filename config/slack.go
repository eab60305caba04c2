package config

import (
	"strings"
	"time"
)

// Slack modes (channels.slack.mode).
const (
	SlackSocket = "socket"
	SlackHTTP   = "http"
)

// DefaultSlackAPIURL is Slack's Web API.
const DefaultSlackAPIURL = "https://slack.com/api/"

// DefaultSlackEditInterval is Slack's edit_interval: chat.update is in
// Slack's rate tier 3 (about 50 calls a minute per workspace), so a reply
// streamed at 1.5 s uses 40 of them.
const DefaultSlackEditInterval = 1500 * time.Millisecond

// Slack is the [channels.slack] table.
type Slack struct {
	Chat
	Mode          string // mode: socket (default) | http
	AppToken      string // app_token (xapp-…), required in socket mode
	BotToken      string // bot_token (xoxb-…), required
	SigningSecret string // signing_secret, required in http mode
	APIURL        string // api_url, default https://slack.com/api/ (always ends in /)
}

func (d *decoder) slack(t *table, cfg *Config) *Slack {
	s := &Slack{Chat: d.chat(t, cfg, chatSpec{userID: slackUserID, hasChannels: true, editInterval: DefaultSlackEditInterval})}
	if !s.Enabled {
		t.skipRest()
		return s
	}
	s.Mode = t.enum("mode", SlackSocket, SlackSocket, SlackHTTP)
	s.BotToken = d.requireSecret(t, "bot_token", `set bot_token = "${SLACK_BOT_TOKEN}" (OAuth & Permissions → Bot User OAuth Token, xoxb-…)`)
	if s.BotToken != "" && !strings.HasPrefix(s.BotToken, "xoxb-") {
		t.errorf("bot_token", "does not look like a bot token (it should start with xoxb-): copy the Bot User OAuth Token from OAuth & Permissions")
	}
	if s.Mode == SlackSocket {
		s.AppToken = d.requireSecret(t, "app_token", `set app_token = "${SLACK_APP_TOKEN}" (Basic Information → App-Level Tokens, scope connections:write, xapp-…), or use mode = "http"`)
		if s.AppToken != "" && !strings.HasPrefix(s.AppToken, "xapp-") {
			t.errorf("app_token", "does not look like an app-level token (it should start with xapp-): create one under Basic Information → App-Level Tokens with connections:write")
		}
		s.SigningSecret, _ = t.str("signing_secret")
	} else {
		s.SigningSecret = d.requireSecret(t, "signing_secret", `set signing_secret = "${SLACK_SIGNING_SECRET}" (Basic Information → App Credentials → Signing Secret); http mode verifies every request with it`)
		s.AppToken, _ = t.str("app_token")
	}
	s.APIURL = apiURL(t, "api_url", DefaultSlackAPIURL)
	if !strings.HasSuffix(s.APIURL, "/") {
		s.APIURL += "/"
	}
	return s
}

// slackUserID accepts Slack member ids (U… or W…).
func slackUserID(s string) (bool, string) {
	const hint = "is not a Slack member id: use the U… id (profile → ⋮ → Copy member ID), not the display name"
	if len(s) < 2 || (s[0] != 'U' && s[0] != 'W') {
		return false, hint
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false, hint
		}
	}
	return true, ""
}

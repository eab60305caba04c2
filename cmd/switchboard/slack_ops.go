package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/switchboard-gw/switchboard/channels/slack"
	"github.com/switchboard-gw/switchboard/config"
)

// Slack's rows of doctor and init (see chatChannels).

// slackAnswer is the part of a Web API reply doctor reads.
type slackAnswer struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Team   string `json:"team"`
	TeamID string `json:"team_id"`
	User   string `json:"user"`
	UserID string `json:"user_id"`
}

// slackCall calls a Web API method with a bearer token and no arguments.
// The token travels in a header only, so no error names it. scopes is the
// X-OAuth-Scopes header Slack answers every call of a token with.
func (d *doctor) slackCall(ctx context.Context, apiURL, token, method string) (ans slackAnswer, scopes string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(apiURL, "/")+"/"+method, nil)
	if err != nil {
		return ans, "", fmt.Errorf("bad api_url %q", apiURL)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := d.http.Do(req)
	if err != nil {
		return ans, "", fmt.Errorf("%s", transportProblem(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		return ans, "", fmt.Errorf("rate limited (429); run doctor again in a minute")
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ans); err != nil {
		return ans, "", fmt.Errorf("%s answered %s, not a Slack API reply", method, resp.Status)
	}
	ans.Error = strings.ReplaceAll(ans.Error, token, "<token>")
	return ans, resp.Header.Get("X-OAuth-Scopes"), nil
}

// checkSlack checks the bot token with auth.test (and the scopes it
// reports), the app-level token with apps.connections.open in Socket Mode,
// and that Slack has a public URL to post to in HTTP mode.
func checkSlack(ctx context.Context, d *doctor, cfg *config.Config) []checkResult {
	sc := cfg.Channels.Slack
	r := checkResult{Check: "slack", Status: statusFail}
	ans, scopes, err := d.slackCall(ctx, sc.APIURL, sc.BotToken, "auth.test")
	switch {
	case err != nil:
		r.Message = fmt.Sprintf("cannot check the bot token with Slack at %s (%v)", sc.APIURL, err)
		r.Fix = "check this machine's network access (or api_url under [channels.slack])"
		return []checkResult{r}
	case !ans.OK:
		r.Message = fmt.Sprintf("Slack refused the bot token (%s)", orDash(ans.Error))
		r.Fix = "copy the Bot User OAuth Token (xoxb-…) again from the app's OAuth & Permissions page into the environment variable [channels.slack] bot_token references; install the app to the workspace if it is not"
		return []checkResult{r}
	}
	r.Status = statusOK
	r.Message = fmt.Sprintf("bot @%s (%s) in workspace %s (%s) accepted the token (%s mode)", ans.User, ans.UserID, ans.Team, ans.TeamID, sc.Mode)
	out := []checkResult{r}
	if scopes != "" {
		have := strings.Split(strings.ReplaceAll(scopes, " ", ""), ",")
		var missing []string
		for _, s := range slack.BotScopes {
			if !slices.Contains(have, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			out = append(out, checkResult{Check: "slack-scopes", Status: statusWarn,
				Message: "the bot token lacks the scopes " + strings.Join(missing, ", ") + " (what needs them does not work)",
				Fix:     "add them under OAuth & Permissions → Bot Token Scopes (or update the app from `switchboard slack manifest`), then reinstall the app"})
		} else {
			out = append(out, checkResult{Check: "slack-scopes", Status: statusOK, Message: "the bot token has every scope switchboard uses"})
		}
	}
	if sc.Mode == config.SlackHTTP {
		h := checkResult{Check: "slack-http", Status: statusOK}
		if cfg.HTTP.PublicURL == "" {
			h.Status = statusWarn
			h.Message = "in http mode Slack posts to the app's request URLs, and [http] public_url is not set"
			h.Fix = "set [http] public_url to the https URL that reaches this listener, and create or update the app from `switchboard slack manifest`"
		} else {
			base := strings.TrimRight(cfg.HTTP.PublicURL, "/")
			h.Message = fmt.Sprintf("the app's request URLs should be %s%s, %s and %s (signing_secret cannot be checked from here)",
				base, slack.EventsPath, slack.InteractionsPath, slack.CommandsPath)
		}
		return append(out, h)
	}
	sm := checkResult{Check: "slack-socket", Status: statusFail}
	ans, _, err = d.slackCall(ctx, sc.APIURL, sc.AppToken, "apps.connections.open")
	switch {
	case err != nil:
		sm.Message = fmt.Sprintf("cannot check the app-level token (%v)", err)
		sm.Fix = "run doctor again; serve retries Socket Mode connections"
	case !ans.OK:
		sm.Message = fmt.Sprintf("Slack refused to open a Socket Mode connection with the app-level token (%s)", orDash(ans.Error))
		sm.Fix = `turn on Socket Mode in the app settings and create an app-level token with the connections:write scope (Basic Information → App-Level Tokens, xapp-…) for [channels.slack] app_token, or use mode = "http"`
	default:
		sm.Status = statusOK
		sm.Message = "the app-level token opens Socket Mode connections"
	}
	return append(out, sm)
}

// slackInit is Slack's row of init.
type slackInit struct {
	enabled   bool
	mode      string
	botEnv    string
	appEnv    string
	secretEnv string
	users     []string
}

func newSlackInit() *slackInit {
	return &slackInit{mode: config.SlackSocket, botEnv: "SLACK_BOT_TOKEN", appEnv: "SLACK_APP_TOKEN", secretEnv: "SLACK_SIGNING_SECRET"}
}

func (s *slackInit) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&s.enabled, "slack", false, "enable the Slack channel (create the app from `switchboard slack manifest`)")
	fs.StringVar(&s.mode, "slack-mode", s.mode, "how Slack reaches switchboard: socket (no public URL) or http (implies --slack)")
	fs.StringVar(&s.botEnv, "slack-bot-token-env", s.botEnv, "environment variable holding the Bot User OAuth Token (xoxb-…)")
	fs.StringVar(&s.appEnv, "slack-app-token-env", s.appEnv, "environment variable holding the app-level token (xapp-…, socket mode)")
	fs.StringVar(&s.secretEnv, "slack-signing-secret-env", s.secretEnv, "environment variable holding the signing secret (http mode)")
	fs.StringSliceVar(&s.users, "slack-user", nil, "Slack member id (U…) allowed to talk and admin (repeatable; implies --slack)")
}

func (s *slackInit) on() bool { return s.enabled || len(s.users) > 0 || s.mode != config.SlackSocket }

func (s *slackInit) ask(p *prompter) error {
	on, err := p.yesNo("Enable Slack (an app created from `switchboard slack manifest`)?", s.on())
	if err != nil || !on {
		return err
	}
	s.enabled = true
	if s.mode, err = p.askValid("  Receive events by socket (Socket Mode, no public URL) or http", s.mode, checkSlackMode); err != nil {
		return err
	}
	if s.botEnv, err = p.askValid("  Environment variable holding the bot token (xoxb-…)", s.botEnv, checkEnvName); err != nil {
		return err
	}
	if s.mode == config.SlackHTTP {
		if s.secretEnv, err = p.askValid("  Environment variable holding the signing secret", s.secretEnv, checkEnvName); err != nil {
			return err
		}
	} else if s.appEnv, err = p.askValid("  Environment variable holding the app-level token (xapp-…)", s.appEnv, checkEnvName); err != nil {
		return err
	}
	user, err := p.askValid("  Your Slack member id (U…), allowed and admin (profile → ⋮ → Copy member ID)", strings.Join(s.users, ","), checkSlackUserIDs)
	if err != nil {
		return err
	}
	s.users = splitIDs(user)
	return nil
}

func checkSlackMode(m string) error {
	if m != config.SlackSocket && m != config.SlackHTTP {
		return fmt.Errorf("answer socket or http")
	}
	return nil
}

func checkSlackUserIDs(s string) error {
	for _, id := range splitIDs(s) {
		ok := len(id) >= 2 && (id[0] == 'U' || id[0] == 'W')
		for _, c := range id {
			ok = ok && (c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
		}
		if !ok {
			return fmt.Errorf("%q is not a Slack member id: use the U… id (profile → ⋮ → Copy member ID), not the name", id)
		}
	}
	return nil
}

func (s *slackInit) check() error {
	if !s.on() {
		return nil
	}
	if err := checkSlackMode(s.mode); err != nil {
		return fmt.Errorf("--slack-mode: %w", err)
	}
	if err := checkEnvName(s.botEnv); err != nil {
		return fmt.Errorf("--slack-bot-token-env: %w", err)
	}
	if s.mode == config.SlackHTTP {
		if err := checkEnvName(s.secretEnv); err != nil {
			return fmt.Errorf("--slack-signing-secret-env: %w", err)
		}
	} else if err := checkEnvName(s.appEnv); err != nil {
		return fmt.Errorf("--slack-app-token-env: %w", err)
	}
	if err := checkSlackUserIDs(strings.Join(s.users, ",")); err != nil {
		return fmt.Errorf("--slack-user: %w", err)
	}
	return nil
}

func (s *slackInit) block() string {
	var b strings.Builder
	b.WriteString("# Slack: create the app from `switchboard slack manifest` (README, Slack).\n# Mention the bot in a channel and it answers in a thread; DMs work too.\n[channels.slack]\n")
	b.WriteString(tomlLine("mode = "+tomlString(s.mode), "socket | http"))
	b.WriteString(tomlLine("bot_token = "+tomlEnvRef(s.botEnv), "xoxb-…, never the token itself"))
	if s.mode == config.SlackHTTP {
		b.WriteString("# http mode: Slack posts to [http] public_url + /slack/events, /slack/interactions\n# and /slack/commands; set public_url under [http].\n")
		b.WriteString(tomlLine("signing_secret = "+tomlEnvRef(s.secretEnv), "checks every request Slack posts"))
	} else {
		b.WriteString(tomlLine("app_token = "+tomlEnvRef(s.appEnv), "xapp-…, scope connections:write"))
	}
	b.WriteString(tomlLine("allow_users = "+tomlStrings(orEmpty(s.users)), "member ids (U…)"))
	b.WriteString(tomlLine("admins = "+tomlStrings(orEmpty(s.users)), "may /pair, /mode and press Always"))
	b.WriteString(tomlLine("require_mention = true", "in channels: mentions and the bot's threads"))
	return b.String()
}

func (s *slackInit) envRefs() []envRef {
	out := []envRef{{s.botEnv, "xoxb-placeholder", "the Slack bot token"}}
	if s.mode == config.SlackHTTP {
		return append(out, envRef{s.secretEnv, "placeholder-signing-secret", "the Slack signing secret"})
	}
	return append(out, envRef{s.appEnv, "xapp-placeholder", "the Slack app-level token"})
}

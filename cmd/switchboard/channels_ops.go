package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/switchboard-gw/switchboard/config"
)

// chatChannel is one row of the channels that init offers and doctor
// checks. Adding a channel (Slack, Discord) is one more row: whether the
// config enables it, its doctor check (one function: Slack auth.test,
// Discord's application) and its init questions and TOML.
type chatChannel struct {
	name    string
	enabled func(*config.Config) bool
	// check returns the channel's doctor lines: credentials, webhook.
	check func(ctx context.Context, d *doctor, cfg *config.Config) []checkResult
	// init returns the channel's init questions and block; nil when init
	// does not offer it (the web page is always on).
	init func() initChannel
}

// chatChannels is the table, in the order doctor reports.
func chatChannels() []chatChannel {
	return []chatChannel{
		{
			name:    "web",
			enabled: func(cfg *config.Config) bool { return cfg.Channels.Web.Enabled },
			check:   checkWeb,
		},
		{
			name:    "telegram",
			enabled: func(cfg *config.Config) bool { return cfg.Channels.Telegram != nil },
			check:   checkTelegram,
			init:    func() initChannel { return &telegramInit{} },
		},
		{
			name:    "slack",
			enabled: func(cfg *config.Config) bool { return cfg.Channels.Slack != nil },
			check:   checkSlack,
			init:    func() initChannel { return newSlackInit() },
		},
		{
			name:    "discord",
			enabled: func(cfg *config.Config) bool { return cfg.Channels.Discord != nil },
			check:   checkDiscord,
			init:    func() initChannel { return &discordInit{} },
		},
	}
}

// minWebToken is the shortest web token doctor accepts without a warning.
const minWebToken = 16

func checkWeb(_ context.Context, _ *doctor, cfg *config.Config) []checkResult {
	w := cfg.Channels.Web
	listen := cfg.HTTP.Listen
	r := checkResult{Check: "web", Status: statusOK}
	switch {
	case w.Token == "" && !loopbackListen(listen):
		r.Status = statusWarn
		r.Message = fmt.Sprintf("the web page listens beyond this machine (%s) with a random token printed at each start", listen)
		r.Fix = `set [channels.web] token = "${SWITCHBOARD_WEB_TOKEN}" (a long random value, e.g. openssl rand -hex 24) for a stable login`
	case w.Token != "" && len(w.Token) < minWebToken:
		r.Status = statusWarn
		r.Message = fmt.Sprintf("[channels.web] token is short (%d characters): easy to guess", len(w.Token))
		r.Fix = "use at least 16 random characters (openssl rand -hex 24)"
	case w.Token == "":
		r.Message = fmt.Sprintf("the web page is at http://%s/; serve prints a one-time login link at start", dialAddr(listen))
	default:
		r.Message = fmt.Sprintf("the web page is at http://%s/; log in with [channels.web] token", dialAddr(listen))
	}
	return []checkResult{r}
}

// loopbackListen reports whether a listen address accepts connections
// from this machine only.
func loopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// telegramAnswer is a Bot API reply.
type telegramAnswer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
}

// telegramCall calls a Bot API method without parameters. The error and
// the description never contain the token (it is part of the URL).
func (d *doctor) telegramCall(ctx context.Context, apiURL, token, method string, result any) (status int, desc string, err error) {
	url := strings.TrimRight(apiURL, "/") + "/bot" + token + "/" + method
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return 0, "", fmt.Errorf("bad api_url %q", apiURL)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s", transportProblem(err))
	}
	defer resp.Body.Close()
	var ans telegramAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ans); err != nil {
		return resp.StatusCode, resp.Status, nil
	}
	desc = strings.ReplaceAll(ans.Description, token, "<token>")
	if !ans.OK {
		code := ans.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return code, desc, nil
	}
	if result != nil && json.Unmarshal(ans.Result, result) != nil {
		return resp.StatusCode, "unexpected result", nil
	}
	return http.StatusOK, desc, nil
}

// checkTelegram checks the bot token with getMe and, in webhook mode,
// where Telegram delivers updates (getWebhookInfo).
func checkTelegram(ctx context.Context, d *doctor, cfg *config.Config) []checkResult {
	tc := cfg.Channels.Telegram
	r := checkResult{Check: "telegram", Status: statusFail}
	var me struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
	}
	status, desc, err := d.telegramCall(ctx, tc.APIURL, tc.Token, "getMe", &me)
	switch {
	case err != nil:
		r.Message = fmt.Sprintf("cannot reach the Telegram Bot API at %s (%v)", tc.APIURL, err)
		r.Fix = "check this machine's network access (or api_url under [channels.telegram])"
		return []checkResult{r}
	case status == http.StatusUnauthorized || status == http.StatusNotFound:
		r.Message = fmt.Sprintf("Telegram refused the bot token (%d %s)", status, orDash(desc))
		r.Fix = "copy the token again from @BotFather (/mybots → API Token) into the environment variable [channels.telegram] token references"
		return []checkResult{r}
	case status != http.StatusOK:
		r.Message = fmt.Sprintf("Telegram answered getMe with %d %s", status, desc)
		r.Fix = "try again later; if it persists, check api_url and the token"
		return []checkResult{r}
	}
	r.Status = statusOK
	r.Message = fmt.Sprintf("bot @%s (id %d) accepted the token (%s mode)", me.Username, me.ID, tc.Mode)
	out := []checkResult{r}

	var info struct {
		URL              string `json:"url"`
		Pending          int    `json:"pending_update_count"`
		LastErrorMessage string `json:"last_error_message"`
	}
	status, desc, err = d.telegramCall(ctx, tc.APIURL, tc.Token, "getWebhookInfo", &info)
	w := checkResult{Check: "webhook", Status: statusWarn}
	switch {
	case err != nil || status != http.StatusOK:
		if tc.Mode != config.TelegramWebhook {
			return out
		}
		problem := desc
		if err != nil {
			problem = err.Error()
		}
		w.Message = fmt.Sprintf("could not read the webhook from Telegram (%s)", orDash(problem))
		w.Fix = "run doctor again; serve registers the webhook at start"
	case tc.Mode != config.TelegramWebhook:
		if info.URL == "" {
			return out
		}
		w.Message = fmt.Sprintf("a webhook is registered (%s), and polling gets no updates while it is", info.URL)
		w.Fix = "serve removes it at start in polling mode; if another deployment runs this bot with a webhook, give each its own bot"
	case info.URL == "":
		w.Message = "no webhook is registered with Telegram yet"
		w.Fix = fmt.Sprintf("serve registers %s at start", tc.WebhookURL)
	case info.URL != tc.WebhookURL:
		w.Message = fmt.Sprintf("Telegram delivers to %s, not to webhook_url %s", info.URL, tc.WebhookURL)
		w.Fix = "serve registers its webhook_url at start; if another deployment uses this bot, give each its own bot"
	case info.LastErrorMessage != "":
		w.Status = statusFail
		if info.Pending == 0 {
			w.Status = statusWarn
		}
		w.Message = fmt.Sprintf("Telegram's last delivery to %s failed: %s (%s waiting)", info.URL, info.LastErrorMessage, plural(info.Pending, "update", "updates"))
		w.Fix = fmt.Sprintf("make %s reach POST /telegram/webhook on the [http] listener (%s), e.g. through a reverse proxy with a valid certificate", info.URL, cfg.HTTP.Listen)
	default:
		w.Status = statusOK
		w.Message = fmt.Sprintf("Telegram delivers to %s (%s waiting)", info.URL, plural(info.Pending, "update", "updates"))
	}
	return append(out, w)
}

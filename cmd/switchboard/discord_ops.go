package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/pflag"

	"github.com/switchboard-gw/switchboard/config"
)

// discordAPI is where Discord's REST API lives when api_url is not set
// (the adapter's discordgo endpoints use v9 too).
const discordAPI = "https://discord.com"

// Application flags that say the Message Content intent is on: granted to
// a verified application, or switched on for one in under 100 servers.
const (
	appFlagMessageContent        = 1 << 18
	appFlagMessageContentLimited = 1 << 19
)

// discordCall makes a GET to Discord's REST API (or api_url) with the bot
// token and decodes a 200 answer into out. The token travels in a header,
// so no error or answer contains it.
func (d *doctor) discordCall(ctx context.Context, apiURL, token, path string, out any) (status int, desc string, err error) {
	base := strings.TrimRight(apiURL, "/")
	if base == "" {
		base = discordAPI
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v9"+path, nil)
	if err != nil {
		return 0, "", fmt.Errorf("bad api_url %q", apiURL)
	}
	req.Header.Set("Authorization", "Bot "+token)
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s", transportProblem(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		return resp.StatusCode, strings.ReplaceAll(e.Message, token, "<token>"), nil
	}
	if out != nil && json.Unmarshal(body, out) != nil {
		return resp.StatusCode, "unexpected answer", nil
	}
	return http.StatusOK, "", nil
}

// checkDiscord checks the bot token (GET /users/@me), and with the
// application (GET /applications/@me) that the Message Content intent is
// on and application_id names it.
func checkDiscord(ctx context.Context, d *doctor, cfg *config.Config) []checkResult {
	dc := cfg.Channels.Discord
	where := "Discord"
	if dc.APIURL != "" {
		where = dc.APIURL
	}
	r := checkResult{Check: "discord", Status: statusFail}
	var me struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Bot      bool   `json:"bot"`
	}
	status, desc, err := d.discordCall(ctx, dc.APIURL, dc.Token, "/users/@me", &me)
	switch {
	case err != nil:
		r.Message = fmt.Sprintf("cannot reach %s (%v)", where, err)
		r.Fix = "check this machine's network access (or api_url under [channels.discord])"
		return []checkResult{r}
	case status == http.StatusUnauthorized:
		r.Message = fmt.Sprintf("Discord refused the bot token (%d %s)", status, orDash(desc))
		r.Fix = "copy the token again (Developer Portal → your application → Bot → Reset Token) into the environment variable [channels.discord] token references"
		return []checkResult{r}
	case status != http.StatusOK:
		r.Message = fmt.Sprintf("Discord answered GET /users/@me with %d %s", status, orDash(desc))
		r.Fix = "try again later; if it persists, check api_url and the token"
		return []checkResult{r}
	case !me.Bot:
		r.Message = fmt.Sprintf("the token belongs to the user @%s, not to a bot", me.Username)
		r.Fix = "use the bot's token: Developer Portal → your application → Bot → Reset Token"
		return []checkResult{r}
	}
	r.Status = statusOK
	r.Message = fmt.Sprintf("bot @%s (id %s) accepted the token", me.Username, me.ID)
	out := []checkResult{r}

	var app struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Flags int64  `json:"flags"`
	}
	status, desc, err = d.discordCall(ctx, dc.APIURL, dc.Token, "/applications/@me", &app)
	if err != nil || status != http.StatusOK {
		problem := desc
		if err != nil {
			problem = err.Error()
		}
		return append(out, checkResult{Check: "intent", Status: statusWarn,
			Message: fmt.Sprintf("could not read the application from Discord (%s)", orDash(problem)),
			Fix:     "run doctor again; in the Developer Portal, make sure Bot → Message Content Intent is on"})
	}
	intent := checkResult{Check: "intent", Status: statusOK, Message: "the Message Content intent is on"}
	if app.Flags&(appFlagMessageContent|appFlagMessageContentLimited) == 0 {
		intent.Status = statusFail
		intent.Message = "the Message Content intent is off: Discord refuses the bot's connection (close code 4014)"
		intent.Fix = "Developer Portal → your application → Bot → Privileged Gateway Intents → turn on Message Content Intent, then restart serve"
	}
	out = append(out, intent)
	switch {
	case dc.ApplicationID == "":
		out = append(out, checkResult{Check: "application", Status: statusWarn,
			Message: fmt.Sprintf("application_id is not set (this bot's application is %s)", app.ID),
			Fix:     fmt.Sprintf(`set application_id = %q under [channels.discord]; switchboard discord invite needs it`, app.ID)})
	case dc.ApplicationID != app.ID:
		out = append(out, checkResult{Check: "application", Status: statusFail,
			Message: fmt.Sprintf("application_id %s is not this bot's application (%s): slash commands would not register", dc.ApplicationID, app.ID),
			Fix:     fmt.Sprintf(`set application_id = %q under [channels.discord]`, app.ID)})
	}
	return out
}

// discordInit is Discord's row of init.
type discordInit struct {
	enabled  bool
	tokenEnv string
	appID    string
	users    []string
}

func (c *discordInit) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.enabled, "discord", false, "enable the Discord channel")
	fs.StringVar(&c.tokenEnv, "discord-token-env", "DISCORD_BOT_TOKEN", "environment variable holding the bot token (Developer Portal → Bot)")
	fs.StringVar(&c.appID, "discord-application-id", "", "the application id (Developer Portal → General Information; implies --discord)")
	fs.StringSliceVar(&c.users, "discord-user", nil, "numeric Discord user id allowed to talk and admin (repeatable; implies --discord)")
}

func (c *discordInit) on() bool { return c.enabled || c.appID != "" || len(c.users) > 0 }

func (c *discordInit) ask(p *prompter) error {
	on, err := p.yesNo("Enable Discord (a bot application from the Developer Portal)?", c.on())
	if err != nil || !on {
		return err
	}
	c.enabled = true
	if c.tokenEnv, err = p.askValid("  Environment variable holding the bot token", c.tokenEnv, checkEnvName); err != nil {
		return err
	}
	if c.appID, err = p.askValid("  Application ID (General Information; empty: learned when the bot connects)", c.appID, checkDiscordIDs); err != nil {
		return err
	}
	user, err := p.askValid("  Your numeric Discord user id, allowed and admin (Developer Mode → right-click your name → Copy User ID)", strings.Join(c.users, ","), checkDiscordIDs)
	if err != nil {
		return err
	}
	c.users = splitIDs(user)
	return nil
}

func (c *discordInit) check() error {
	if !c.on() {
		return nil
	}
	if err := checkEnvName(c.tokenEnv); err != nil {
		return fmt.Errorf("--discord-token-env: %w", err)
	}
	if len(splitIDs(c.appID)) > 1 {
		return fmt.Errorf("--discord-application-id: give one id")
	}
	if err := checkDiscordIDs(c.appID); err != nil {
		return fmt.Errorf("--discord-application-id: %w", err)
	}
	if err := checkDiscordIDs(strings.Join(c.users, ",")); err != nil {
		return fmt.Errorf("--discord-user: %w", err)
	}
	return nil
}

func (c *discordInit) block() string {
	var b strings.Builder
	b.WriteString("# Discord: a bot application (README → Discord). Turn on its Message Content\n# intent and add it to a server with `switchboard discord invite`.\n[channels.discord]\n")
	b.WriteString(tomlLine("token = "+tomlEnvRef(c.tokenEnv), "never the token itself"))
	if c.appID != "" {
		b.WriteString(tomlLine("application_id = "+tomlString(c.appID), "for slash commands and the invite URL"))
	} else {
		b.WriteString(tomlLine(`# application_id = "…"`, "for the invite URL; learned at connect otherwise"))
	}
	b.WriteString(tomlLine("allow_users = "+tomlStrings(orEmpty(c.users)), "numeric user ids; others may pair in a DM"))
	b.WriteString(tomlLine("admins = "+tomlStrings(orEmpty(c.users)), "may /pair, /mode and press Always"))
	b.WriteString(tomlLine("require_mention = true", "in channels: only mentions and bound threads"))
	b.WriteString(tomlLine("auto_thread = true", "a mention in a channel opens a thread"))
	return b.String()
}

func (c *discordInit) envRefs() []envRef {
	return []envRef{{c.tokenEnv, "placeholder.discord.bot-token", "the Discord bot token"}}
}

func checkDiscordIDs(s string) error {
	for _, id := range splitIDs(s) {
		if strings.Trim(id, "0123456789") != "" {
			return fmt.Errorf("%q is not a numeric Discord id (User Settings → Advanced → Developer Mode, then right-click → Copy ID)", id)
		}
	}
	return nil
}

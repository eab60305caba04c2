package config

import (
	"maps"
	"slices"
	"strings"
)

// telegram reads [channels.telegram]. The agents must already be decoded.
func (d *decoder) telegram(t *table, cfg *Config) *Telegram {
	tg := &Telegram{}
	if s, ok := t.str("token"); ok {
		switch {
		case s == "":
			t.errorf("token", "is empty: set it to the bot token from @BotFather, e.g. token = \"${TELEGRAM_BOT_TOKEN}\"")
		case strings.ContainsAny(s, " \t\r\n/?#"):
			t.errorf("token", "does not look like a bot token (it contains spaces or URL characters): copy it again from @BotFather")
		}
		tg.Token = s
	} else if !t.has("token") {
		d.errorf(t.keyPath("token"), "is missing: set token = \"${TELEGRAM_BOT_TOKEN}\" (the bot token from @BotFather), or remove [channels.telegram]")
	}

	tg.APIURL = DefaultTelegramAPIURL
	if s, ok := t.str("api_url"); ok {
		if err := checkHTTPURL(s); err != nil {
			t.errorf("api_url", "%v", err)
		}
		tg.APIURL = strings.TrimSuffix(s, "/")
	}

	tg.Mode = t.enum("mode", TelegramPolling, TelegramPolling, TelegramWebhook)
	if s, ok := t.str("webhook_url"); ok {
		if err := checkHTTPURL(s); err != nil {
			t.errorf("webhook_url", "%v", err)
		}
		tg.WebhookURL = s
	}
	if s, ok := t.str("webhook_secret"); ok {
		if !validWebhookSecret(s) {
			t.errorf("webhook_secret", "must be 1 to 256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule); generate one with: openssl rand -hex 32")
		}
		tg.WebhookSecret = s
	}
	if tg.Mode == TelegramWebhook {
		modeLine := t.line("mode")
		if tg.WebhookURL == "" && !t.has("webhook_url") {
			d.errs = append(d.errs, &Error{File: d.file, Line: modeLine, Key: displayKey(t.keyPath("webhook_url")),
				Msg: `is required when mode = "webhook": set it to the public https URL that reaches POST /telegram/webhook on the [http] listener`})
		}
		if tg.WebhookSecret == "" && !t.has("webhook_secret") {
			d.errs = append(d.errs, &Error{File: d.file, Line: modeLine, Key: displayKey(t.keyPath("webhook_secret")),
				Msg: `is required when mode = "webhook": set it to a random string (openssl rand -hex 32); Telegram sends it with every update`})
		}
	}

	if s, ok := t.str("agent"); ok {
		if _, exists := cfg.Agents[s]; !exists {
			t.errorf("agent", "%q is not a configured agent: use one of %s", s, strings.Join(slices.Sorted(maps.Keys(cfg.Agents)), ", "))
		}
		tg.Agent = s
	} else if !t.has("agent") {
		switch {
		case hasAgent(cfg, DefaultAgent):
			tg.Agent = DefaultAgent
		case len(cfg.Agents) == 1:
			for name := range cfg.Agents {
				tg.Agent = name
			}
		default:
			d.errorf(t.keyPath("agent"), "is missing and there is no agent %q: set agent = one of %s", DefaultAgent, strings.Join(slices.Sorted(maps.Keys(cfg.Agents)), ", "))
		}
	}

	userID := func(path []string, s string) bool {
		ok := s != ""
		for i := 0; ok && i < len(s); i++ {
			ok = s[i] >= '0' && s[i] <= '9'
		}
		if !ok {
			d.errorf(path, "%q is not a Telegram user id: use the numeric id (message @userinfobot to find yours), not the @username", s)
		}
		return ok
	}
	tg.AllowUsers = t.strings("allow_users", true, userID)
	tg.Admins = t.strings("admins", true, userID)
	tg.RequireMention = t.boolean("require_mention", true)
	tg.QueueMode = t.queueMode()
	tg.EditInterval = t.duration("edit_interval", DefaultEditInterval)
	return tg
}

func hasAgent(cfg *Config, name string) bool {
	_, ok := cfg.Agents[name]
	return ok
}

// validWebhookSecret applies Telegram's rule for secret_token.
func validWebhookSecret(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

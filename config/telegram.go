package config

import (
	"strings"
)

// telegram reads [channels.telegram]. The agents must already be decoded.
func (d *decoder) telegram(t *table, cfg *Config) *Telegram {
	tg := &Telegram{Chat: d.chat(t, cfg, chatSpec{
		userID: numericID("Telegram", "use the numeric id (message @userinfobot to find yours), not the @username"),
	})}
	if !tg.Enabled {
		t.skipRest()
		return tg
	}
	tg.Token = d.requireSecret(t, "token", `set token = "${TELEGRAM_BOT_TOKEN}" (the bot token from @BotFather), or remove [channels.telegram]`)
	if strings.ContainsAny(tg.Token, "/?#") {
		t.errorf("token", "does not look like a bot token (it contains URL characters): copy it again from @BotFather")
	}
	tg.APIURL = strings.TrimSuffix(apiURL(t, "api_url", DefaultTelegramAPIURL), "/")

	tg.Mode = t.enum("mode", TelegramPolling, TelegramPolling, TelegramWebhook)
	if s, ok := t.str("webhook_url"); ok && s != "" {
		if err := checkHTTPURL(s); err != nil {
			t.errorf("webhook_url", "%v", err)
		}
		tg.WebhookURL = s
	}
	if s, ok := t.str("webhook_secret"); ok && (s != "" || tg.Mode == TelegramWebhook) {
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
	return tg
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

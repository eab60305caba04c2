package config

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func TestSecretsAndWriteMasked(t *testing.T) {
	dir := t.TempDir()
	env := MapEnv(map[string]string{
		"OPENAI_API_KEY":     "sk-provider-canary",
		"TELEGRAM_BOT_TOKEN": "4242:tg-canary",
		"HOOK_SECRET":        "hook-canary",
		"DB_PASSWORD":        "db-canary",
		"PLAIN":              "not-secret-value",
	})
	doc := `
[providers.default]
base_url = "https://example.com/v1?pw=${DB_PASSWORD}"
api_key = "${OPENAI_API_KEY}"
model = "${PLAIN}"
[providers.other]
api_key = "literal-key-canary"
[agents.main]
env = { GH_TOKEN = "env-token-canary", EDITOR = "vi" }
system_prompt = "the hook is ${HOOK_SECRET}"
[channels.web]
token = "web-canary"
[channels.telegram]
token = "${TELEGRAM_BOT_TOKEN}"
mode = "webhook"
webhook_url = "https://example.com/telegram/webhook"
webhook_secret = "${HOOK_SECRET}"
`
	cfg, err := Parse("switchboard.toml", []byte(doc), dir, env)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{
		"4242:tg-canary", "db-canary", "env-token-canary", "hook-canary",
		"literal-key-canary", "sk-provider-canary", "web-canary",
	}
	if got := cfg.Secrets(); !slices.Equal(got, secrets) {
		t.Errorf("Secrets() = %q\nwant %q", got, secrets)
	}

	var out bytes.Buffer
	if err := cfg.WriteMasked(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	// Every secret holds "canary" and nothing else does.
	if strings.Contains(text, "canary") {
		t.Errorf("WriteMasked output reveals secret material:\n%s", text)
	}
	for _, want := range []string{
		"api_key = '****'", "token = '****'", "webhook_secret = '****'",
		"GH_TOKEN = '****'", "EDITOR = 'vi'", "model = 'not-secret-value'",
		"system_prompt = '****'", "base_url = '****'", "timeout = '12h'",
		"workspace = '" + dir + "'",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("WriteMasked output lacks %q:\n%s", want, text)
		}
	}
	var back map[string]any
	if err := toml.Unmarshal(out.Bytes(), &back); err != nil {
		t.Errorf("WriteMasked output is not valid TOML: %v\n%s", err, text)
	}
}

func TestWriteMaskedZeroConfig(t *testing.T) {
	cfg, err := Load(Paths{Home: "/data", BaseDir: t.TempDir()}, MapEnv(map[string]string{"OPENAI_API_KEY": "sk-zero-canary"}))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cfg.WriteMasked(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sk-zero-canary") {
		t.Errorf("output reveals the key:\n%s", out.String())
	}
	for _, want := range []string{"# source: no config file", "# home: /data", "[providers.default]", "[agents.main]", "api_key = '****'"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "[channels.telegram]") {
		t.Errorf("output shows a telegram table that is not configured:\n%s", out.String())
	}
	// An empty web token stays empty: it says "random at start", not a secret.
	if !strings.Contains(out.String(), "token = ''") {
		t.Errorf("empty web token not shown as empty:\n%s", out.String())
	}
}

func TestFormatDuration(t *testing.T) {
	for in, want := range map[string]string{"12h": "12h", "1h30m": "1h30m", "1m": "1m", "1s": "1s", "500ms": "500ms", "90m": "1h30m"} {
		cfg, err := Parse("f.toml", []byte("[approvals]\ntimeout = \""+in+"\"\n"), t.TempDir(), MapEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := formatDuration(cfg.Approvals.Timeout); got != want {
			t.Errorf("formatDuration(%s) = %q; want %q", in, got, want)
		}
	}
}

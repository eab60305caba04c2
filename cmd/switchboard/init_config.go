package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// initAnswers is what init asks for (or takes from flags).
type initAnswers struct {
	baseURL        string
	model          string
	apiKeyEnv      string // "" writes no api_key: local servers need none
	workspace      string // absolute
	permissionMode string
	sandbox        string
	listen         string
	webTokenEnv    string // "" leaves the web token unset (a login link per start)
	channels       []initChannel
}

// envRef is a ${NAME} the written file references, with a value of the
// right shape to validate the file when NAME is not set yet.
type envRef struct {
	name, placeholder, what string
}

// initChannel is a chat channel's part of init: its flags, its questions
// and its TOML table. Tokens are always written as ${ENV} references.
type initChannel interface {
	// flags registers the channel's flags (--telegram, …).
	flags(fs *pflag.FlagSet)
	// on reports whether the channel is to be written.
	on() bool
	// ask asks the channel's questions in a terminal.
	ask(p *prompter) error
	// check validates what the flags gave, naming the flag at fault.
	check() error
	// block renders the channel's table.
	block() string
	// envRefs lists the variables block references.
	envRefs() []envRef
}

// tomlString quotes s as a TOML basic string (JSON string escapes are
// valid TOML escapes).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlEnvRef writes a ${NAME} reference as a TOML string.
func tomlEnvRef(name string) string { return tomlString("${" + name + "}") }

// tomlLine pads a key = value line so its comment starts at column 40.
func tomlLine(kv, comment string) string {
	if comment == "" {
		return kv + "\n"
	}
	pad := 38 - len(kv)
	if pad < 1 {
		pad = 1
	}
	return kv + strings.Repeat(" ", pad) + "# " + comment + "\n"
}

// render writes the config file.
func (a initAnswers) render(now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# switchboard.toml, written by "switchboard init" on %s.
# Every key is described in the README (Configuration). "switchboard doctor"
# checks this file and the rest of the set-up; "switchboard config validate"
# prints it resolved. ${NAME} is replaced by the environment variable NAME:
# keep tokens and keys in the environment, never in this file.

# The model: any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, OpenAI…).
[providers.default]
`, now.Format(time.DateOnly))
	b.WriteString(tomlLine("base_url = "+tomlString(a.baseURL), ""))
	b.WriteString(tomlLine("model = "+tomlString(a.model), ""))
	if a.apiKeyEnv != "" {
		b.WriteString(tomlLine("api_key = "+tomlEnvRef(a.apiKeyEnv), "sent as the Authorization bearer token"))
	} else {
		b.WriteString(tomlLine(`# api_key = "${OPENAI_API_KEY}"`, "a remote endpoint needs a key; a local one none"))
	}
	b.WriteString(tomlLine("# context_window = 32768", "tokens the model accepts; compaction keeps under it"))
	b.WriteString(tomlLine("# vision = false", "true when the model accepts images"))

	b.WriteString("\n# The agent: its tools work in the workspace under the permission policy.\n[agents.main]\n")
	b.WriteString(tomlLine("workspace = "+tomlString(a.workspace), "the directory its tools work in"))
	b.WriteString(tomlLine("permission_mode = "+tomlString(a.permissionMode), "standard | acceptEdits | unrestricted | strict"))
	b.WriteString(tomlLine("allow = []", `rules, e.g. "Bash(go test:*)", "Edit(src/**)"`))
	b.WriteString(tomlLine("sandbox = "+tomlString(a.sandbox), "none | bwrap (tools see the disk read-only)"))
	b.WriteString(tomlLine("# approvers = []", `who may decide asks, e.g. "telegram:4242"`))

	b.WriteString("\n# One listener for the web page, webhooks, /healthz, /readyz and /metrics.\n[http]\n")
	comment := "this machine only"
	if !loopbackListen(a.listen) {
		comment = "reachable from other machines: set a web token"
	}
	b.WriteString(tomlLine("listen = "+tomlString(a.listen), comment))

	b.WriteString("\n# The local web page, always on (enabled = false turns it off).\n[channels.web]\n")
	if a.webTokenEnv != "" {
		b.WriteString(tomlLine("token = "+tomlEnvRef(a.webTokenEnv), "the login token (a long random value)"))
	} else {
		b.WriteString(tomlLine(`# token = "${SWITCHBOARD_WEB_TOKEN}"`, "unset: serve prints a one-time login link"))
	}
	for _, ch := range a.channels {
		if ch.on() {
			b.WriteString("\n")
			b.WriteString(ch.block())
		}
	}
	return b.String()
}

// envRefs lists every variable the rendered file references.
func (a initAnswers) envRefs() []envRef {
	var out []envRef
	if a.apiKeyEnv != "" {
		out = append(out, envRef{a.apiKeyEnv, "sk-placeholder", "the model endpoint's API key"})
	}
	if a.webTokenEnv != "" {
		out = append(out, envRef{a.webTokenEnv, "placeholder-web-token-0123456789", "the web page's login token"})
	}
	for _, ch := range a.channels {
		if ch.on() {
			out = append(out, ch.envRefs()...)
		}
	}
	return out
}

// telegramInit is Telegram's row of init.
type telegramInit struct {
	enabled    bool
	tokenEnv   string
	users      []string
	webhookURL string
	secretEnv  string
}

func (t *telegramInit) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&t.enabled, "telegram", false, "enable the Telegram channel")
	fs.StringVar(&t.tokenEnv, "telegram-token-env", "TELEGRAM_BOT_TOKEN", "environment variable holding the bot token from @BotFather")
	fs.StringSliceVar(&t.users, "telegram-user", nil, "numeric Telegram user id allowed to talk and admin (repeatable; implies --telegram)")
	fs.StringVar(&t.webhookURL, "telegram-webhook-url", "", "receive updates by webhook at this public https URL (default: polling; implies --telegram)")
	fs.StringVar(&t.secretEnv, "telegram-webhook-secret-env", "TELEGRAM_WEBHOOK_SECRET", "environment variable holding the webhook secret (webhook mode)")
}

func (t *telegramInit) on() bool { return t.enabled || len(t.users) > 0 || t.webhookURL != "" }

func (t *telegramInit) ask(p *prompter) error {
	on, err := p.yesNo("Enable Telegram (a bot from @BotFather)?", t.on())
	if err != nil || !on {
		return err
	}
	t.enabled = true
	if t.tokenEnv, err = p.askValid("  Environment variable holding the bot token", t.tokenEnv, checkEnvName); err != nil {
		return err
	}
	user, err := p.askValid("  Your numeric Telegram user id, allowed and admin (empty: pair later with a code)", strings.Join(t.users, ","), checkUserIDs)
	if err != nil {
		return err
	}
	t.users = splitIDs(user)
	mode := "polling"
	if t.webhookURL != "" {
		mode = "webhook"
	}
	if mode, err = p.askValid("  Receive updates by polling or webhook", mode, func(s string) error {
		if s != "polling" && s != "webhook" {
			return fmt.Errorf("answer polling or webhook")
		}
		return nil
	}); err != nil {
		return err
	}
	if mode == "polling" {
		t.webhookURL = ""
		return nil
	}
	if t.webhookURL, err = p.askValid("  Public https URL that reaches POST /telegram/webhook", t.webhookURL, checkWebhookURL); err != nil {
		return err
	}
	t.secretEnv, err = p.askValid("  Environment variable holding the webhook secret", t.secretEnv, checkEnvName)
	return err
}

func (t *telegramInit) check() error {
	if !t.on() {
		return nil
	}
	if err := checkEnvName(t.tokenEnv); err != nil {
		return fmt.Errorf("--telegram-token-env: %w", err)
	}
	if err := checkUserIDs(strings.Join(t.users, ",")); err != nil {
		return fmt.Errorf("--telegram-user: %w", err)
	}
	if t.webhookURL != "" {
		if err := checkWebhookURL(t.webhookURL); err != nil {
			return fmt.Errorf("--telegram-webhook-url: %w", err)
		}
		if err := checkEnvName(t.secretEnv); err != nil {
			return fmt.Errorf("--telegram-webhook-secret-env: %w", err)
		}
	}
	return nil
}

func (t *telegramInit) block() string {
	var b strings.Builder
	b.WriteString("# Telegram: a bot from @BotFather. Others who DM it get a pairing code\n# (switchboard pair approve CODE).\n[channels.telegram]\n")
	b.WriteString(tomlLine("token = "+tomlEnvRef(t.tokenEnv), "never the token itself"))
	if t.webhookURL != "" {
		b.WriteString(tomlLine(`mode = "webhook"`, "polling | webhook"))
		b.WriteString(tomlLine("webhook_url = "+tomlString(t.webhookURL), "reaches POST /telegram/webhook"))
		b.WriteString(tomlLine("webhook_secret = "+tomlEnvRef(t.secretEnv), "1-256 of A-Z a-z 0-9 _ -"))
	} else {
		b.WriteString(tomlLine(`mode = "polling"`, "polling | webhook"))
	}
	b.WriteString(tomlLine("allow_users = "+tomlStrings(orEmpty(t.users)), "numeric user ids"))
	b.WriteString(tomlLine("admins = "+tomlStrings(orEmpty(t.users)), "may /pair, /mode and press Always"))
	b.WriteString(tomlLine("require_mention = true", "in groups: only mentions, replies, bound threads"))
	return b.String()
}

func (t *telegramInit) envRefs() []envRef {
	out := []envRef{{t.tokenEnv, "123456:placeholder-token", "the Telegram bot token"}}
	if t.webhookURL != "" {
		out = append(out, envRef{t.secretEnv, "placeholder-webhook-secret", "the Telegram webhook secret (openssl rand -hex 32)"})
	}
	return out
}

func orEmpty(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// splitIDs splits "1, 2 3" into its items.
func splitIDs(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	return slices.Compact(f)
}

func checkEnvName(s string) error {
	if s == "" {
		return fmt.Errorf("a variable name is needed")
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%q is not a variable name: use letters, digits and _", s)
		}
	}
	return nil
}

func checkOptionalEnvName(s string) error {
	if s == "" {
		return nil
	}
	return checkEnvName(s)
}

func checkUserIDs(s string) error {
	for _, id := range splitIDs(s) {
		for _, c := range id {
			if c < '0' || c > '9' {
				return fmt.Errorf("%q is not a numeric user id (message @userinfobot to find yours)", id)
			}
		}
	}
	return nil
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL: write it like http://127.0.0.1:11434/v1", s)
	}
	return nil
}

func checkWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an https URL (Telegram delivers webhooks over https only)", s)
	}
	return nil
}

// loopbackURL reports whether u points at this machine.
func loopbackURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := p.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

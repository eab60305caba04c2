package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"
)

// Defaults applied when a key is absent.
const (
	DefaultContextWindow   = 32768
	DefaultMaxOutputTokens = 4096
	DefaultMaxSteps        = 50
	DefaultMaxTasks        = 4
	DefaultListen          = "127.0.0.1:7700"
	DefaultApprovalTimeout = 12 * time.Hour
	DefaultEditInterval    = time.Second
	DefaultStreamIdle      = 120 * time.Second // providers.NAME.stream_idle_timeout
	DefaultTurnTimeout     = 30 * time.Minute  // agents.NAME.turn_timeout
	DefaultMaxStepOutput   = 1 << 20           // agents.NAME.max_step_output, bytes
	MinMaxStepOutput       = 4 << 10           // smaller caps cut ordinary answers
	DefaultTelegramAPIURL  = "https://api.telegram.org"
	DefaultProvider        = "default"
	DefaultAgent           = "main"
	// OpenAIBaseURL is used when only OPENAI_API_KEY is set.
	OpenAIBaseURL = "https://api.openai.com/v1"
	// OllamaBaseURL is used when neither OPENAI_BASE_URL nor OPENAI_API_KEY is set.
	OllamaBaseURL = "http://127.0.0.1:11434/v1"
)

// Permission modes (agents.NAME.permission_mode).
const (
	ModeStandard     = "standard"
	ModeAcceptEdits  = "acceptEdits"
	ModeUnrestricted = "unrestricted"
	ModeStrict       = "strict"
)

// Sandbox kinds (agents.NAME.sandbox).
const (
	SandboxNone  = "none"
	SandboxBwrap = "bwrap"
)

// Queue modes (channels.*.queue_mode).
const (
	QueueFollowup  = "followup"
	QueueCollect   = "collect"
	QueueSteer     = "steer"
	QueueInterrupt = "interrupt"
)

// Telegram modes (channels.telegram.mode).
const (
	TelegramPolling = "polling"
	TelegramWebhook = "webhook"
)

// Config is the resolved configuration: every default applied, every ${VAR}
// expanded, every path absolute.
type Config struct {
	Home      string              // data directory ($SWITCHBOARD_HOME); set by Load
	File      string              // the config file read, "" for zero config
	Providers map[string]Provider // by name; never empty
	Agents    map[string]Agent    // by name; never empty
	HTTP      HTTP
	Approvals Approvals
	Channels  Channels

	// secrets holds values of secret-looking ${VAR}s and of the provider
	// key taken from OPENAI_API_KEY.
	secrets []string
	// agentsConfigured: the file has an [agents] table (else the default
	// agent works in the current directory).
	agentsConfigured bool
}

// Provider is one OpenAI-compatible model endpoint ([providers.NAME]).
type Provider struct {
	Name            string
	BaseURL         string // base_url
	APIKey          string // api_key; "" sends no Authorization header
	Model           string // model; "" until configured: see Check
	ContextWindow   int    // context_window, default 32768
	MaxOutputTokens int    // max_output_tokens, default 4096
	Vision          bool   // vision: the model accepts images
	// StreamIdleTimeout is stream_idle_timeout, default 120s: a step fails
	// when the server sends nothing for this long.
	StreamIdleTimeout time.Duration
}

// Check reports whether the provider can be used to talk to a model: it
// fails, with advice, when no model name is configured. Callers call it
// before the first model request; loading a config without a model succeeds
// so that commands that need no model (and `serve`'s advice page) still work.
func (p Provider) Check() error {
	if p.Model == "" {
		return fmt.Errorf("no model is configured for provider %q: set SWITCHBOARD_MODEL (for example SWITCHBOARD_MODEL=qwen3:8b), or set model under [providers.%s] in the config file", p.Name, p.Name)
	}
	return nil
}

// Agent is one agent definition ([agents.NAME]).
type Agent struct {
	Name            string
	Provider        string            // provider: a key of Config.Providers
	Model           string            // model: overrides the provider's model when set
	Workspace       string            // workspace: absolute; relative paths resolve against the config file's directory
	PermissionMode  string            // permission_mode: standard (default) | acceptEdits | unrestricted | strict
	Allow           []string          // allow: rules like "Bash(go test:*)"
	Deny            []string          // deny
	Ask             []string          // ask: always ask, in every mode
	DisallowedTools []string          // disallowed_tools
	Sandbox         string            // sandbox: none (default) | bwrap
	Network         bool              // network, default true
	Env             map[string]string // env: extra variables for tool processes
	Approvers       []string          // approvers: qualified ids like "telegram:4242"
	ApprovalRoutes  []string          // approval_routes: qualified ids of extra places asks are posted
	MaxSteps        int               // max_steps, default 50
	MaxTasks        int               // max_tasks: running sub-agent tasks per agent, default 4
	ACPClientTools  bool              // acp_client_tools: route Read/Write/Edit/Bash to an ACP client that offers them
	SystemPrompt    string            // system_prompt: extra instructions appended to the preset
	TurnTimeout     time.Duration     // turn_timeout, default 30m: a turn's wall-clock limit
	MaxStepOutput   int               // max_step_output, default 1 MiB: bytes one model step may stream
}

// HTTP is the [http] table: the one listener for the web page, webhooks,
// health and metrics.
type HTTP struct {
	Listen string // listen, default "127.0.0.1:7700"
	// PublicURL is public_url: the https URL that reaches this listener
	// from outside (webhooks, set-up commands), without a trailing slash;
	// "" when unset. Its host is an accepted Host header.
	PublicURL string
	// AllowedHosts is allowed_hosts: more host names the listener answers
	// to (lower case, IPv6 without brackets), e.g. a LAN name.
	AllowedHosts []string
	// MetricsToken is metrics_token: when set, /metrics requires
	// "Authorization: Bearer <token>". A secret.
	MetricsToken string
}

// Approvals is the [approvals] table.
type Approvals struct {
	Timeout time.Duration // timeout, default 12h; an expired approval is denied
}

// Channels is the [channels] table. A channel is on when its table exists
// (and enabled is not false); the web page is on unless disabled.
type Channels struct {
	Web      Web
	Telegram *Telegram // nil when [channels.telegram] is absent or disabled
	Slack    *Slack    // nil when absent or disabled
	Discord  *Discord  // nil when absent or disabled
	API      *API      // nil when absent or disabled
}

// Web is the [channels.web] table: the local web page.
type Web struct {
	Chat
	Token string // token; "" means a random token shown once at start
}

// Telegram is the [channels.telegram] table.
type Telegram struct {
	Chat
	Token         string // token (required)
	APIURL        string // api_url, default https://api.telegram.org
	Mode          string // mode: polling (default) | webhook
	WebhookURL    string // webhook_url, required in webhook mode
	WebhookSecret string // webhook_secret, required in webhook mode
}

// Load reads the config file named by paths (none means zero config), then
// expands, applies defaults and validates it. Problems in the file are
// reported as Errors naming file, line and key.
func Load(paths Paths, env Env) (*Config, error) {
	var data []byte
	name := paths.ConfigFile
	if name != "" {
		var err error
		data, err = os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read config %s: the file does not exist (it may have been removed since start): %w", name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("read config %s: %w", name, err)
		}
	}
	cfg, err := parse(name, data, paths.BaseDir, env)
	if err != nil {
		return nil, err
	}
	cfg.Home = paths.Home
	if !cfg.agentsConfigured && paths.Cwd != "" {
		if a, ok := cfg.Agents[DefaultAgent]; ok {
			a.Workspace = paths.Cwd
			cfg.Agents[DefaultAgent] = a
		}
	}
	return cfg, nil
}

// Parse parses data as a config file called name (used in error messages and
// as Config.File), resolving relative paths against baseDir and ${VAR} with
// env. Empty data is a valid zero config.
func Parse(name string, data []byte, baseDir string, env Env) (*Config, error) {
	return parse(name, data, baseDir, env)
}

// ProviderFor returns the provider agent a uses, with the agent's model
// override applied.
func (c *Config) ProviderFor(a Agent) (Provider, error) {
	p, ok := c.Providers[a.Provider]
	if !ok {
		return Provider{}, fmt.Errorf("agent %q uses provider %q, which is not configured: add [providers.%s] or change the agent's provider", a.Name, a.Provider, a.Provider)
	}
	if a.Model != "" {
		p.Model = a.Model
	}
	return p, nil
}

// Secrets returns every secret value the config holds, for redaction:
// provider API keys, channel tokens, the webhook secret, the web token, the
// metrics token, agent
// env values whose names look secret, and the value of every ${VAR} whose name
// looks secret (see IsSecretName). Empty values are left out; the result is
// sorted and has no duplicates.
func (c *Config) Secrets() []string {
	out := slices.Clone(c.secrets)
	for _, p := range c.Providers {
		out = append(out, p.APIKey)
	}
	for _, a := range c.Agents {
		for k, v := range a.Env {
			if IsSecretName(k) {
				out = append(out, v)
			}
		}
	}
	out = append(out, c.Channels.Web.Token, c.HTTP.MetricsToken)
	if t := c.Channels.Telegram; t != nil {
		out = append(out, t.Token, t.WebhookSecret)
	}
	if s := c.Channels.Slack; s != nil {
		out = append(out, s.AppToken, s.BotToken, s.SigningSecret)
	}
	if dc := c.Channels.Discord; dc != nil {
		out = append(out, dc.Token)
	}
	if a := c.Channels.API; a != nil {
		for _, t := range a.Tokens {
			out = append(out, t.Token)
		}
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

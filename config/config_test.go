package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// issue2Example is the provider and agent block of issue 2, verbatim.
const issue2Example = `
[providers.default]          # any OpenAI-compatible endpoint
base_url = "http://127.0.0.1:11434/v1"
api_key = "${OPENAI_API_KEY}"
model = "qwen3:8b"
context_window = 32768
max_output_tokens = 4096
vision = false               # whether the model accepts images

[agents.main]                # agents are defined in config; ` + "`agents list`" + ` shows them
provider = "default"
workspace = "."              # the host directory its tools work in
permission_mode = "standard" # standard | acceptEdits | unrestricted | strict
allow = ["Bash(go test:*)"]
deny = []
ask = []                     # always ask, in every mode
`

// issue3Keys are the agent keys issue 3 adds.
const issue3Keys = `
disallowed_tools = []
sandbox = "none"
network = true
env = {}
`

// issue5Example is the gateway block of issue 5, verbatim.
const issue5Example = `
[http]
listen = "127.0.0.1:7700"   # web page, webhooks, health, metrics
[channels.web]
enabled = true
token = ""                  # empty: a random token shown once at start
[approvals]
timeout = "12h"
[agents.main]
approvers = []              # qualified ids; empty: the requester plus admins
approval_routes = []        # extra places asks are posted, e.g. "telegram:4242"
`

// issue6Example is the Telegram block of issue 6, verbatim.
const issue6Example = `
[channels.telegram]
token = "${TELEGRAM_BOT_TOKEN}"
api_url = "https://api.telegram.org"   # or a self-hosted Bot API server
mode = "polling"                       # polling | webhook
agent = "main"
allow_users = ["123456789"]            # numeric user ids; else pairing
admins = ["123456789"]
require_mention = true                 # in groups
`

var ignoreSecrets = cmpopts.IgnoreUnexported(Config{})

// defaultAgent is the agent "main" as zero config makes it, in dir.
func defaultAgent(dir string) Agent {
	return Agent{
		Name: "main", Provider: "default", Workspace: dir,
		PermissionMode: "standard", Sandbox: "none", Network: true, MaxSteps: 50, MaxTasks: 4,
		TurnTimeout: 30 * time.Minute, MaxStepOutput: 1 << 20,
	}
}

func defaultWeb() Web {
	return Web{Chat: Chat{Enabled: true, Agent: "main", RequireMention: true, QueueMode: "followup", EditInterval: time.Second}}
}

func TestParseValid(t *testing.T) {
	dir := t.TempDir()
	env := MapEnv(map[string]string{
		"OPENAI_API_KEY":     "sk-test-123",
		"TELEGRAM_BOT_TOKEN": "4242:telegram-canary",
	})
	issueProvider := Provider{
		Name: "default", BaseURL: "http://127.0.0.1:11434/v1", APIKey: "sk-test-123",
		Model: "qwen3:8b", ContextWindow: 32768, MaxOutputTokens: 4096, StreamIdleTimeout: 2 * time.Minute,
	}
	issueAgent := defaultAgent(dir)
	issueAgent.Allow = []string{"Bash(go test:*)"}
	issueAgent.Deny = []string{}
	issueAgent.Ask = []string{}
	issueAgent.Env = map[string]string{}

	tests := []struct {
		name string
		doc  string
		want func(c *Config)
	}{
		{
			name: "issue 2 example",
			doc:  issue2Example,
			want: func(c *Config) {
				c.Providers = map[string]Provider{"default": issueProvider}
				c.Agents = map[string]Agent{"main": issueAgent}
			},
		},
		{
			name: "issue 2 example with the keys of issue 3",
			doc:  issue2Example + issue3Keys,
			want: func(c *Config) {
				a := issueAgent
				a.DisallowedTools = []string{}
				c.Providers = map[string]Provider{"default": issueProvider}
				c.Agents = map[string]Agent{"main": a}
			},
		},
		{
			name: "issue 5 example",
			doc:  issue5Example,
			want: func(c *Config) {
				a := defaultAgent(dir)
				a.Approvers = []string{}
				a.ApprovalRoutes = []string{}
				a.Env = map[string]string{}
				c.Agents = map[string]Agent{"main": a}
			},
		},
		{
			name: "issue 6 example",
			doc:  issue6Example,
			want: func(c *Config) {
				c.Channels.Telegram = &Telegram{
					Token: "4242:telegram-canary", APIURL: "https://api.telegram.org", Mode: "polling",
					Chat: Chat{Enabled: true, Agent: "main", AllowUsers: []string{"123456789"}, Admins: []string{"123456789"},
						RequireMention: true, QueueMode: "followup", EditInterval: time.Second},
				}
			},
		},
		{
			name: "every key set",
			doc: `
[providers.local]
base_url = "http://localhost:8080/v1/"
model = "llama"
context_window = 8192
max_output_tokens = 1024
vision = true

[agents.coder]
provider = "local"
model = "llama-big"
workspace = "/"
permission_mode = "acceptEdits"
allow = ["Read", "Edit(src/**)"]
deny = ["Bash(rm:*)"]
ask = ["Bash(git push:*)"]
disallowed_tools = ["WebFetch"]
sandbox = "bwrap"
network = false
env = { GOFLAGS = "-mod=mod", PRICE = "$$5" }
approvers = ["telegram:4242", "slack:U012ABCDEF"]
approval_routes = ["telegram:4242"]
max_steps = 7
system_prompt = """
Be brief."""

[http]
listen = ":9000"

[approvals]
timeout = "30m"

[channels.web]
enabled = false
token = "web-token"
queue_mode = "collect"
edit_interval = "500ms"

[channels.telegram]
token = "123:abc"
api_url = "http://127.0.0.1:8081/"
mode = "webhook"
webhook_url = "https://example.com/telegram/webhook"
webhook_secret = "s3cr3t_-"
allow_users = [123456789, "42"]
admins = []
require_mention = false
queue_mode = "interrupt"
edit_interval = "2s"
`,
			want: func(c *Config) {
				c.Providers = map[string]Provider{"local": {
					Name: "local", BaseURL: "http://localhost:8080/v1/", Model: "llama",
					ContextWindow: 8192, MaxOutputTokens: 1024, Vision: true, StreamIdleTimeout: 2 * time.Minute,
				}}
				c.Agents = map[string]Agent{"coder": {
					Name: "coder", Provider: "local", Model: "llama-big", Workspace: "/",
					PermissionMode: "acceptEdits", Allow: []string{"Read", "Edit(src/**)"},
					Deny: []string{"Bash(rm:*)"}, Ask: []string{"Bash(git push:*)"},
					DisallowedTools: []string{"WebFetch"}, Sandbox: "bwrap", Network: false,
					Env:       map[string]string{"GOFLAGS": "-mod=mod", "PRICE": "$5"},
					Approvers: []string{"telegram:4242", "slack:U012ABCDEF"}, ApprovalRoutes: []string{"telegram:4242"},
					MaxSteps: 7, MaxTasks: 4, SystemPrompt: "Be brief.",
					TurnTimeout: 30 * time.Minute, MaxStepOutput: 1 << 20,
				}}
				c.HTTP.Listen = ":9000"
				c.Approvals.Timeout = 30 * time.Minute
				c.Channels.Web = Web{Chat: Chat{Enabled: false, Agent: "coder", QueueMode: "collect", EditInterval: 500 * time.Millisecond, RequireMention: true}, Token: "web-token"}
				c.Channels.Telegram = &Telegram{
					Token: "123:abc", APIURL: "http://127.0.0.1:8081", Mode: "webhook",
					WebhookURL: "https://example.com/telegram/webhook", WebhookSecret: "s3cr3t_-",
					Chat: Chat{Enabled: true, Agent: "coder", AllowUsers: []string{"123456789", "42"}, Admins: []string{},
						RequireMention: false, QueueMode: "interrupt", EditInterval: 2 * time.Second},
				}
			},
		},
		{
			name: "provider without base_url: OpenAI with a key, else Ollama",
			doc: `
[providers.openai]
api_key = "sk-x"
[providers.ollama]
[agents.main]
provider = "ollama"
`,
			want: func(c *Config) {
				c.Providers = map[string]Provider{
					"openai": {Name: "openai", BaseURL: OpenAIBaseURL, APIKey: "sk-x", ContextWindow: 32768, MaxOutputTokens: 4096, StreamIdleTimeout: 2 * time.Minute},
					"ollama": {Name: "ollama", BaseURL: OllamaBaseURL, ContextWindow: 32768, MaxOutputTokens: 4096, StreamIdleTimeout: 2 * time.Minute},
				}
				a := defaultAgent(dir)
				a.Provider = "ollama"
				a.Env = map[string]string{}
				c.Agents = map[string]Agent{"main": a}
			},
		},
		{
			name: "comments are not expanded",
			doc:  "# ${NOT_SET} in a comment\n[http] # ${ALSO_NOT_SET}\nlisten = \"127.0.0.1:1\" # ${NOR_THIS}\n",
			want: func(c *Config) { c.HTTP.Listen = "127.0.0.1:1" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("switchboard.toml", []byte(tt.doc), dir, env)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := &Config{
				File:      "switchboard.toml",
				Providers: map[string]Provider{"default": {Name: "default", BaseURL: OpenAIBaseURL, APIKey: "sk-test-123", ContextWindow: 32768, MaxOutputTokens: 4096, StreamIdleTimeout: 2 * time.Minute}},
				Agents:    map[string]Agent{"main": defaultAgent(dir)},
				HTTP:      HTTP{Listen: "127.0.0.1:7700"},
				Approvals: Approvals{Timeout: 12 * time.Hour},
				Channels:  Channels{Web: defaultWeb()},
			}
			tt.want(want)
			if diff := cmp.Diff(want, got, ignoreSecrets); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := MapEnv(map[string]string{"EMPTY": "", "HOME": dir})
	tests := []struct {
		name string
		doc  string
		want []string // every line of the error, in order (prefix match per line)
	}{
		{"unknown key with suggestion", "[providers.default]\nbase_url = \"http://x\"\nmodle = \"m\"\n",
			[]string{"switchboard.toml:3: unknown key providers.default.modle (did you mean model?)"}},
		{"unknown top-level table", "\n[slack]\ntoken = \"x\"\n",
			[]string{"switchboard.toml:2: unknown key slack"}},
		{"unknown key in dotted form", "agents.main.permision_mode = \"strict\"\n",
			[]string{"switchboard.toml:1: unknown key agents.main.permision_mode (did you mean permission_mode?)"}},
		{"unknown key in inline table", "[channels]\nweb = { enabled = true, tokn = \"x\" }\n",
			[]string{"switchboard.toml:2: unknown key channels.web.tokn (did you mean token?)"}},
		{"bad permission mode", "[agents.main]\n\n\npermission_mode = \"yolo\"\n",
			[]string{`switchboard.toml:4: agents.main.permission_mode: "yolo" is not one of standard, acceptEdits, unrestricted, strict`}},
		{"bad sandbox", "[agents.main]\nsandbox = \"docker\"\n",
			[]string{`switchboard.toml:2: agents.main.sandbox: "docker" is not one of none, bwrap`}},
		{"bad queue mode", "[channels.web]\nqueue_mode = \"later\"\n",
			[]string{`switchboard.toml:2: channels.web.queue_mode: "later" is not one of followup, collect, steer, interrupt`}},
		{"wrong type", "[providers.default]\ncontext_window = \"big\"\n",
			[]string{`switchboard.toml:2: providers.default.context_window: expected an integer, got the string "big"`}},
		{"wrong type bool", "[agents.main]\nnetwork = \"no\"\n",
			[]string{`switchboard.toml:2: agents.main.network: expected true or false, got the string "no"`}},
		{"table expected", "agents = 3\n",
			[]string{`switchboard.toml:1: agents: expected a table, got the integer 3`}},
		{"array of tables", "[[agents]]\nname = \"x\"\n",
			[]string{`switchboard.toml:1: agents: expected a table, got an array`}},
		{"non-positive integer", "[agents.main]\nmax_steps = 0\n",
			[]string{`switchboard.toml:2: agents.main.max_steps: 0 is out of range`}},
		{"output larger than window", "[providers.p]\ncontext_window = 1000\nmax_output_tokens = 1000\n",
			[]string{`switchboard.toml:3: providers.p.max_output_tokens: max_output_tokens (1000) must be smaller than context_window (1000)`}},
		{"syntax error", "[agents.main]\nprovider = \n",
			[]string{`switchboard.toml:2: invalid TOML:`}},
		{"duplicate key", "[http]\nlisten = \":1\"\nlisten = \":2\"\n",
			[]string{`switchboard.toml:3:`}},
		{"unset variable", "[providers.default]\n\napi_key = \"${NOPE_KEY}\"\n",
			[]string{`switchboard.toml:3: providers.default.api_key: environment variable NOPE_KEY is not set (referenced as ${NOPE_KEY})`}},
		{"unset variable in array element", "[agents.main]\nallow = [\n  \"Read\",\n  \"Bash(${NOPE})\",\n]\n",
			[]string{`switchboard.toml:4: agents.main.allow[1]: environment variable NOPE is not set`}},
		{"unset variable in env table", "[agents.main.env]\nA = \"ok\"\nB = \"${NOPE}\"\n",
			[]string{`switchboard.toml:3: agents.main.env.B: environment variable NOPE is not set`}},
		{"unterminated reference", "[channels.web]\ntoken = \"${OOPS\"\n",
			[]string{`switchboard.toml:2: channels.web.token: unterminated ${`}},
		{"invalid reference", "[channels.web]\ntoken = \"${1A}\"\n",
			[]string{`switchboard.toml:2: channels.web.token: ${1A} is not a valid variable reference`}},
		{"missing provider", "[providers.local]\nbase_url = \"http://x\"\n[agents.main]\nprovider = \"remote\"\n",
			[]string{`switchboard.toml:4: agents.main.provider: "remote" is not a configured provider: use one of local, or add [providers.remote]`}},
		{"agent without provider among several", "[providers.a]\n[providers.b]\n[agents.main]\nmodel = \"x\"\n",
			[]string{`switchboard.toml:3: agents.main.provider: is missing and there is no provider named "default"`}},
		{"no agents among several providers", "[providers.a]\n[providers.b]\n",
			[]string{`switchboard.toml:1: providers: there is no [agents] table and no provider named "default"`}},
		{"bad rule", "[agents.main]\ndeny = [\"Bash(rm:*\", \"(x)\", \"Bash()\"]\n",
			[]string{
				`switchboard.toml:2: agents.main.deny[0]: "Bash(rm:*" is not a permission rule`,
				`switchboard.toml:2: agents.main.deny[1]: "(x)" is not a permission rule`,
				`switchboard.toml:2: agents.main.deny[2]: "Bash()" is not a permission rule`,
			}},
		{"bad qualified id", "[agents.main]\napprovers = [\"4242\"]\napproval_routes = [\"Telegram:1\", \"web:\"]\n",
			[]string{
				`switchboard.toml:2: agents.main.approvers[0]: "4242" is not a qualified user id: write CHANNEL:ID`,
				`switchboard.toml:3: agents.main.approval_routes[0]: "Telegram:1" is not a qualified user id`,
				`switchboard.toml:3: agents.main.approval_routes[1]: "web:" is not a qualified user id`,
			}},
		{"bad env name", "[agents.main]\nenv = { \"1X\" = \"a\", \"A B\" = \"c\" }\n",
			[]string{
				`switchboard.toml:2: agents.main.env.1X: is not a valid environment variable name`,
				`switchboard.toml:2: agents.main.env."A B": is not a valid environment variable name`,
			}},
		{"env value not a string", "[agents.main]\nenv = { X = 1 }\n",
			[]string{`switchboard.toml:2: agents.main.env.X: expected a string, got the integer 1`}},
		{"bad agent name", "[agents.\"../x\"]\n",
			[]string{`switchboard.toml:1: agents."../x": agent names may contain only`}},
		{"workspace missing", "[agents.main]\nworkspace = \"nope\"\n",
			[]string{`switchboard.toml:2: agents.main.workspace: directory ` + filepath.Join(dir, "nope") + ` does not exist`}},
		{"workspace is a file", "[agents.main]\nworkspace = \"~/afile\"\n",
			[]string{`switchboard.toml:2: agents.main.workspace: ` + filepath.Join(dir, "afile") + ` is not a directory`}},
		{"bad listen", "[http]\nlisten = \"localhost\"\n",
			[]string{`switchboard.toml:2: http.listen: "localhost" is not a listen address`}},
		{"bad base url", "[providers.default]\nbase_url = \"localhost:11434\"\n",
			[]string{`switchboard.toml:2: providers.default.base_url: "localhost:11434" is not an http(s) URL`}},
		{"bad duration", "[approvals]\ntimeout = \"12 hours\"\n",
			[]string{`switchboard.toml:2: approvals.timeout: "12 hours" is not a duration`}},
		{"integer duration", "[approvals]\ntimeout = 12\n",
			[]string{`switchboard.toml:2: approvals.timeout: expected a string, got the integer 12`}},
		{"negative duration", "[channels.web]\nedit_interval = \"-1s\"\n",
			[]string{`switchboard.toml:2: channels.web.edit_interval: "-1s" must be longer than zero`}},
		{"telegram empty token", "[channels.telegram]\ntoken = \"${EMPTY}\"\n",
			[]string{`switchboard.toml:2: channels.telegram.token: is empty: set token = "${TELEGRAM_BOT_TOKEN}"`}},
		{"telegram missing token", "\n[channels.telegram]\nmode = \"polling\"\n",
			[]string{`switchboard.toml:2: channels.telegram.token: is missing`}},
		{"telegram webhook without url and secret", "[channels.telegram]\ntoken = \"1:a\"\nmode = \"webhook\"\n",
			[]string{
				`switchboard.toml:3: channels.telegram.webhook_url: is required when mode = "webhook"`,
				`switchboard.toml:3: channels.telegram.webhook_secret: is required when mode = "webhook"`,
			}},
		{"telegram bad webhook secret", "[channels.telegram]\ntoken = \"1:a\"\nwebhook_secret = \"has space\"\n",
			[]string{`switchboard.toml:3: channels.telegram.webhook_secret: must be 1 to 256 characters`}},
		{"telegram bad user id", "[channels.telegram]\ntoken = \"1:a\"\nadmins = [\"@alice\", 1.5]\n",
			[]string{
				`switchboard.toml:3: channels.telegram.admins[0]: "@alice" is not a Telegram user id`,
				`switchboard.toml:3: channels.telegram.admins[1]: expected a string, got the number 1.5`,
			}},
		{"telegram unknown agent", "[channels.telegram]\ntoken = \"1:a\"\nagent = \"helper\"\n",
			[]string{`switchboard.toml:3: channels.telegram.agent: "helper" is not a configured agent: use one of main`}},
		{"several errors in line order", "[agents.main]\nsandbox = \"x\"\n[http]\nlisten = \"x\"\n[agents.main.env]\n",
			[]string{
				`switchboard.toml:2: agents.main.sandbox:`,
				`switchboard.toml:4: http.listen:`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("switchboard.toml", []byte(tt.doc), dir, env)
			if err == nil {
				t.Fatalf("Parse succeeded; want errors %q", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("error %d:\n got %s\nwant %s…", i, lines[i], want)
				}
			}
			var cfgErr *Error
			if !errors.As(err, &cfgErr) || cfgErr.File != "switchboard.toml" || cfgErr.Line < 1 {
				t.Errorf("error does not unwrap to a *Error with file and line: %#v", err)
			}
		})
	}
}

func TestParseEmptyIsZeroConfig(t *testing.T) {
	dir := t.TempDir()
	for _, doc := range []string{"", "# nothing\n", "[providers]\n[agents]\n"} {
		cfg, err := Parse("switchboard.toml", []byte(doc), dir, MapEnv(nil))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		if _, ok := cfg.Providers["default"]; !ok || cfg.Agents["main"].Workspace != dir {
			t.Errorf("Parse(%q) = %+v; want the zero-config provider and agent", doc, cfg)
		}
	}
}

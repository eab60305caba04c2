package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// parse is Parse; Load shares it.
func parse(name string, data []byte, baseDir string, env Env) (*Config, error) {
	if env == nil {
		env = MapEnv(nil)
	}
	base, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("resolve the base directory %q: %w", baseDir, err)
	}
	doc, err := parseDocument(name, data)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: name, env: env, doc: doc}
	root := d.table(nil, doc.root)
	cfg := &Config{File: name}

	d.providers(root, cfg)
	d.agents(root, cfg, base)
	d.http(root, cfg)
	d.approvals(root, cfg)
	d.channels(root, cfg)
	root.done()

	if len(d.errs) > 0 {
		slices.SortStableFunc(d.errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
		return nil, d.errs
	}
	cfg.secrets = d.secrets
	return cfg, nil
}

// sortedKeys returns the keys of a table in order, so errors come out stable.
func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// validName reports whether s may name a provider or an agent: agent names
// end up in paths and commands, so keep them plain.
func validName(s string) bool {
	if s == "" || len(s) > 64 || !isBareKey(s) {
		return false
	}
	return s[0] != '-' && s[0] != '_'
}

func (d *decoder) providers(root *table, cfg *Config) {
	cfg.Providers = map[string]Provider{}
	pt := root.sub("providers")
	if pt == nil || len(pt.m) == 0 {
		if pt != nil {
			pt.done()
		}
		cfg.Providers[DefaultProvider] = d.envProvider()
		return
	}
	for _, name := range sortedKeys(pt.m) {
		t := pt.sub(name)
		if t == nil {
			continue
		}
		if !validName(name) {
			d.errorf(t.path, "provider names may contain only letters, digits, - and _ (and start with a letter or digit)")
		}
		p := Provider{Name: name}
		p.APIKey, _ = t.str("api_key")
		if s, ok := t.str("base_url"); ok {
			if err := checkHTTPURL(s); err != nil {
				t.errorf("base_url", "%v", err)
			}
			p.BaseURL = s
		} else if !t.has("base_url") {
			p.BaseURL = defaultBaseURL(p.APIKey)
		}
		p.Model, _ = t.str("model")
		p.ContextWindow = t.positiveInt("context_window", DefaultContextWindow)
		p.MaxOutputTokens = t.positiveInt("max_output_tokens", DefaultMaxOutputTokens)
		if p.MaxOutputTokens >= p.ContextWindow {
			key := "max_output_tokens"
			if !t.has(key) {
				key = "context_window"
			}
			t.errorf(key, "max_output_tokens (%d) must be smaller than context_window (%d), or nothing is left for the conversation", p.MaxOutputTokens, p.ContextWindow)
		}
		p.Vision = t.boolean("vision", false)
		p.StreamIdleTimeout = t.duration("stream_idle_timeout", DefaultStreamIdle)
		t.done()
		cfg.Providers[name] = p
	}
	pt.done()
}

// defaultBaseURL is the endpoint used when none is given: OpenAI's API when
// there is a key, else a local Ollama.
func defaultBaseURL(apiKey string) string {
	if apiKey != "" {
		return OpenAIBaseURL
	}
	return OllamaBaseURL
}

// envProvider synthesizes the provider "default" from the environment for a
// config without [providers].
func (d *decoder) envProvider() Provider {
	p := Provider{
		Name:              DefaultProvider,
		ContextWindow:     DefaultContextWindow,
		MaxOutputTokens:   DefaultMaxOutputTokens,
		StreamIdleTimeout: DefaultStreamIdle,
	}
	p.APIKey, _ = d.env("OPENAI_API_KEY")
	p.Model, _ = d.env("SWITCHBOARD_MODEL")
	base, _ := d.env("OPENAI_BASE_URL")
	if base == "" {
		base = defaultBaseURL(p.APIKey)
	} else if err := checkHTTPURL(base); err != nil {
		d.errs = append(d.errs, &Error{Key: "OPENAI_BASE_URL", Msg: err.Error() + " (from the environment)"})
	}
	p.BaseURL = base
	return p
}

// defaultProviderName picks the provider of an agent that names none:
// "default", else the only provider.
func defaultProviderName(cfg *Config) (string, bool) {
	if _, ok := cfg.Providers[DefaultProvider]; ok {
		return DefaultProvider, true
	}
	if len(cfg.Providers) == 1 {
		for name := range cfg.Providers {
			return name, true
		}
	}
	return "", false
}

func (d *decoder) agents(root *table, cfg *Config, base string) {
	cfg.Agents = map[string]Agent{}
	at := root.sub("agents")
	if at == nil || len(at.m) == 0 {
		if at != nil {
			at.done()
		}
		provider, ok := defaultProviderName(cfg)
		if !ok {
			d.errorf([]string{"providers"}, "there is no [agents] table and no provider named %q to give the agent %q: add [agents.%s] with provider = one of %s", DefaultProvider, DefaultAgent, DefaultAgent, strings.Join(slices.Sorted(maps.Keys(cfg.Providers)), ", "))
		}
		cfg.agentsConfigured = false
		cfg.Agents[DefaultAgent] = Agent{
			Name:           DefaultAgent,
			Provider:       provider,
			Workspace:      base,
			PermissionMode: ModeStandard,
			Sandbox:        SandboxNone,
			Network:        true,
			MaxSteps:       DefaultMaxSteps,
			MaxTasks:       DefaultMaxTasks,
			TurnTimeout:    DefaultTurnTimeout,
			MaxStepOutput:  DefaultMaxStepOutput,
		}
		return
	}
	cfg.agentsConfigured = true
	for _, name := range sortedKeys(at.m) {
		t := at.sub(name)
		if t == nil {
			continue
		}
		if !validName(name) {
			d.errorf(t.path, "agent names may contain only letters, digits, - and _ (and start with a letter or digit)")
		}
		cfg.Agents[name] = d.agent(t, name, cfg, base)
		t.done()
	}
	at.done()
}

func (d *decoder) agent(t *table, name string, cfg *Config, base string) Agent {
	a := Agent{Name: name}
	if p, ok := t.str("provider"); ok {
		if _, exists := cfg.Providers[p]; !exists {
			t.errorf("provider", "%q is not a configured provider: use one of %s, or add [providers.%s]", p, strings.Join(slices.Sorted(maps.Keys(cfg.Providers)), ", "), p)
		}
		a.Provider = p
	} else if !t.has("provider") {
		p, ok := defaultProviderName(cfg)
		if !ok {
			t.errorf("provider", "is missing and there is no provider named %q: set provider = one of %s", DefaultProvider, strings.Join(slices.Sorted(maps.Keys(cfg.Providers)), ", "))
		}
		a.Provider = p
	}
	a.Model, _ = t.str("model")
	a.Workspace = d.workspace(t, base)
	a.PermissionMode = t.enum("permission_mode", ModeStandard, ModeStandard, ModeAcceptEdits, ModeUnrestricted, ModeStrict)
	rule := d.checkRule
	a.Allow = t.strings("allow", false, rule)
	a.Deny = t.strings("deny", false, rule)
	a.Ask = t.strings("ask", false, rule)
	a.DisallowedTools = t.strings("disallowed_tools", false, rule)
	a.Sandbox = t.enum("sandbox", SandboxNone, SandboxNone, SandboxBwrap)
	a.Network = t.boolean("network", true)
	a.Env = d.envTable(t)
	a.Approvers = t.strings("approvers", false, d.checkQualifiedID)
	a.ApprovalRoutes = t.strings("approval_routes", false, d.checkQualifiedID)
	a.MaxSteps = t.positiveInt("max_steps", DefaultMaxSteps)
	a.MaxTasks = t.positiveInt("max_tasks", DefaultMaxTasks)
	a.ACPClientTools = t.boolean("acp_client_tools", false)
	a.SystemPrompt, _ = t.str("system_prompt")
	a.TurnTimeout = t.duration("turn_timeout", DefaultTurnTimeout)
	a.MaxStepOutput = t.positiveInt("max_step_output", DefaultMaxStepOutput)
	if a.MaxStepOutput < MinMaxStepOutput {
		t.errorf("max_step_output", "%d bytes would cut ordinary answers: use at least %d (the default is %d, 1 MiB)", a.MaxStepOutput, MinMaxStepOutput, DefaultMaxStepOutput)
		a.MaxStepOutput = DefaultMaxStepOutput
	}
	return a
}

// workspace resolves agents.NAME.workspace: "~" against $HOME, relative
// paths against base; it must be an existing directory.
func (d *decoder) workspace(t *table, base string) string {
	ws, ok := t.str("workspace")
	if !ok {
		return base
	}
	if ws == "" {
		t.errorf("workspace", "is empty: use \".\" for the config file's directory, or a path")
		return base
	}
	if ws == "~" || strings.HasPrefix(ws, "~/") {
		home, ok := d.env("HOME")
		if !ok || home == "" {
			t.errorf("workspace", "%q starts with ~ but HOME is not set: write the full path", ws)
			return base
		}
		ws = filepath.Join(home, ws[1:])
	}
	if !filepath.IsAbs(ws) {
		ws = filepath.Join(base, ws)
	}
	ws = filepath.Clean(ws)
	info, err := os.Stat(ws)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.errorf("workspace", "directory %s does not exist: create it or fix the path (relative paths resolve against %s)", ws, base)
	case err != nil:
		t.errorf("workspace", "cannot use %s: %v", ws, err)
	case !info.IsDir():
		t.errorf("workspace", "%s is not a directory", ws)
	}
	return ws
}

// envTable reads agents.NAME.env: a table of string values.
func (d *decoder) envTable(t *table) map[string]string {
	et := t.sub("env")
	if et == nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(et.m))
	for _, k := range sortedKeys(et.m) {
		if !validEnvName(k) {
			et.known[k] = true
			et.errorf(k, "is not a valid environment variable name: use letters, digits and _, not starting with a digit")
			continue
		}
		if v, ok := et.str(k); ok {
			out[k] = v
		}
	}
	et.done()
	return out
}

// checkRule validates a permission rule shallowly: Name or Name(pattern).
// The permission checker owns the pattern syntax.
func (d *decoder) checkRule(path []string, s string) bool {
	name, pattern, hasPattern := strings.Cut(s, "(")
	ok := isRuleName(name)
	if hasPattern {
		ok = ok && strings.HasSuffix(pattern, ")") && len(pattern) > 1
	}
	if !ok {
		d.errorf(path, "%q is not a permission rule: write ToolName or ToolName(pattern), e.g. Bash(go test:*) or Edit(src/**)", s)
	}
	return ok
}

func isRuleName(s string) bool {
	if s == "" || !(s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	return isBareKey(s)
}

// checkQualifiedID validates "channel:id" (e.g. telegram:4242).
func (d *decoder) checkQualifiedID(path []string, s string) bool {
	channel, id, found := strings.Cut(s, ":")
	ok := found && channel != "" && id != "" && !strings.ContainsAny(id, " \t\r\n")
	for i := 0; ok && i < len(channel); i++ {
		c := channel[i]
		ok = c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-')
	}
	if !ok {
		d.errorf(path, "%q is not a qualified user id: write CHANNEL:ID, e.g. telegram:4242 or slack:U012ABCDEF", s)
	}
	return ok
}

// enum reads a string that must be one of values, returning def when it is
// absent or wrong.
func (t *table) enum(key, def string, values ...string) string {
	s, ok := t.str(key)
	if !ok {
		return def
	}
	if !slices.Contains(values, s) {
		t.errorf(key, "%q is not one of %s", s, strings.Join(values, ", "))
		return def
	}
	return s
}

// checkHTTPURL checks that s is an absolute http(s) URL.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL: write it like https://example.com/v1", s)
	}
	return nil
}

func (d *decoder) http(root *table, cfg *Config) {
	cfg.HTTP.Listen = DefaultListen
	t := root.sub("http")
	if t == nil {
		return
	}
	if s, ok := t.str("listen"); ok {
		host, port, err := net.SplitHostPort(s)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil || n < 0 || n > 65535 || strings.ContainsAny(host, " /") {
			t.errorf("listen", "%q is not a listen address: write HOST:PORT, e.g. 127.0.0.1:7700 (or :7700 for every interface)", s)
		} else {
			cfg.HTTP.Listen = s
		}
	}
	if s, ok := t.str("public_url"); ok && s != "" {
		u, err := publicURL(s)
		if err != nil {
			t.errorf("public_url", "%v", err)
		}
		cfg.HTTP.PublicURL = u
	}
	cfg.HTTP.AllowedHosts = t.strings("allowed_hosts", false, func(path []string, s string) bool {
		if !validHost(s) {
			d.errorf(path, "%q is not a host name: write a name or address without scheme, port or path, e.g. \"switchboard.lan\" or \"192.168.1.20\"", s)
			return false
		}
		return true
	})
	for i, h := range cfg.HTTP.AllowedHosts {
		cfg.HTTP.AllowedHosts[i] = canonicalHost(h)
	}
	cfg.HTTP.MetricsToken, _ = t.str("metrics_token")
	t.done()
}

// publicURL checks http.public_url: an https URL (http only for a
// loopback host, for local tests) without user info, query or fragment.
// It returns the URL without a trailing slash.
func publicURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return s, fmt.Errorf("%q is not a URL: write the https address that reaches this listener, e.g. https://bot.example.com", s)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return s, fmt.Errorf("%q is plain http: webhooks and logins need https (put a TLS proxy in front, e.g. https://bot.example.com); http is accepted only for localhost", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return s, fmt.Errorf("%q has user info, a query or a fragment: write only scheme, host, optional port and path", s)
	}
	if !validHost(u.Hostname()) {
		return s, fmt.Errorf("%q does not name a valid host", s)
	}
	u.Host = strings.ToLower(u.Host)
	return strings.TrimRight(u.String(), "/"), nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validHost reports whether s is a host name (letters, digits, '-', '_'
// and dots) or an IP address (IPv6 with or without brackets).
func validHost(s string) bool {
	if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); ip != nil {
		return true
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// canonicalHost lower-cases a host and drops IPv6 brackets and a final dot.
func canonicalHost(s string) string {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(s), "["), "]")
	return strings.TrimSuffix(s, ".")
}

func (d *decoder) approvals(root *table, cfg *Config) {
	cfg.Approvals.Timeout = DefaultApprovalTimeout
	t := root.sub("approvals")
	if t == nil {
		return
	}
	cfg.Approvals.Timeout = t.duration("timeout", DefaultApprovalTimeout)
	t.done()
}

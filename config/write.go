package config

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// masked replaces every secret in WriteMasked's output.
const masked = "****"

// The out* types mirror the file format for WriteMasked, so the printed
// config can be pasted back into a file.
type outFile struct {
	Providers map[string]outProvider `toml:"providers"`
	Agents    map[string]outAgent    `toml:"agents"`
	HTTP      outHTTP                `toml:"http"`
	Approvals outApprovals           `toml:"approvals"`
	Channels  outChannels            `toml:"channels"`
}

type outProvider struct {
	BaseURL         string `toml:"base_url"`
	APIKey          string `toml:"api_key"`
	Model           string `toml:"model"`
	ContextWindow   int    `toml:"context_window"`
	MaxOutputTokens int    `toml:"max_output_tokens"`
	Vision          bool   `toml:"vision"`
	StreamIdle      string `toml:"stream_idle_timeout"`
}

type outAgent struct {
	Provider        string            `toml:"provider"`
	Model           string            `toml:"model"`
	Workspace       string            `toml:"workspace"`
	PermissionMode  string            `toml:"permission_mode"`
	Allow           []string          `toml:"allow"`
	Deny            []string          `toml:"deny"`
	Ask             []string          `toml:"ask"`
	DisallowedTools []string          `toml:"disallowed_tools"`
	Sandbox         string            `toml:"sandbox"`
	Network         bool              `toml:"network"`
	Approvers       []string          `toml:"approvers"`
	ApprovalRoutes  []string          `toml:"approval_routes"`
	MaxSteps        int               `toml:"max_steps"`
	MaxTasks        int               `toml:"max_tasks"`
	ACPClientTools  bool              `toml:"acp_client_tools"`
	SystemPrompt    string            `toml:"system_prompt"`
	TurnTimeout     string            `toml:"turn_timeout"`
	MaxStepOutput   int               `toml:"max_step_output"`
	Env             map[string]string `toml:"env,omitempty"`
}

type outHTTP struct {
	Listen       string   `toml:"listen"`
	PublicURL    string   `toml:"public_url"`
	AllowedHosts []string `toml:"allowed_hosts"`
	MetricsToken string   `toml:"metrics_token"`
}

type outApprovals struct {
	Timeout string `toml:"timeout"`
}

type outChannels struct {
	Web      outWeb       `toml:"web"`
	Telegram *outTelegram `toml:"telegram,omitempty"`
	Slack    *outSlack    `toml:"slack,omitempty"`
	Discord  *outDiscord  `toml:"discord,omitempty"`
	API      *outAPI      `toml:"api,omitempty"`
}

// outChat is the common chat-channel keys.
type outChat struct {
	Enabled         bool     `toml:"enabled"`
	Agent           string   `toml:"agent"`
	AllowUsers      []string `toml:"allow_users"`
	Admins          []string `toml:"admins"`
	RequireMention  bool     `toml:"require_mention"`
	QueueMode       string   `toml:"queue_mode"`
	EditInterval    string   `toml:"edit_interval"`
	AllowedChannels []string `toml:"allowed_channels,omitempty"`
}

type outWeb struct {
	outChat
	Token string `toml:"token"`
}

type outTelegram struct {
	outChat
	Token         string `toml:"token"`
	APIURL        string `toml:"api_url"`
	Mode          string `toml:"mode"`
	WebhookURL    string `toml:"webhook_url"`
	WebhookSecret string `toml:"webhook_secret"`
}

type outSlack struct {
	outChat
	Mode          string `toml:"mode"`
	AppToken      string `toml:"app_token"`
	BotToken      string `toml:"bot_token"`
	SigningSecret string `toml:"signing_secret"`
	APIURL        string `toml:"api_url"`
}

type outDiscord struct {
	outChat
	Token         string   `toml:"token"`
	ApplicationID string   `toml:"application_id"`
	APIURL        string   `toml:"api_url"`
	AutoThread    bool     `toml:"auto_thread"`
	AllowBots     bool     `toml:"allow_bots"`
	AllowRoles    []string `toml:"allow_roles"`
	AdminRoles    []string `toml:"admin_roles"`
	Guilds        []string `toml:"guilds"`
}

type outAPI struct {
	Agent     string        `toml:"agent"`
	QueueMode string        `toml:"queue_mode"`
	Tokens    []outAPIToken `toml:"tokens"`
}

type outAPIToken struct {
	Name  string `toml:"name"`
	Token string `toml:"token"`
	Admin bool   `toml:"admin"`
}

// WriteMasked prints the resolved config as TOML (defaults filled in, ${VAR}
// expanded, paths absolute) with every secret replaced by "****": secret keys
// are masked whole, and so is any other value that contains a secret. Empty
// secrets stay empty, which reveals only that they are unset. It is what
// `switchboard config validate` shows.
func (c *Config) WriteMasked(w io.Writer) error {
	secrets := c.Secrets()
	mask := func(s string) string {
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				return masked
			}
		}
		return s
	}
	secret := func(s string) string {
		if s == "" {
			return ""
		}
		return masked
	}
	maskAll := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = mask(s)
		}
		return out
	}

	f := outFile{
		Providers: map[string]outProvider{},
		Agents:    map[string]outAgent{},
		HTTP: outHTTP{
			Listen:       mask(c.HTTP.Listen),
			PublicURL:    mask(c.HTTP.PublicURL),
			AllowedHosts: maskAll(c.HTTP.AllowedHosts),
			MetricsToken: secret(c.HTTP.MetricsToken),
		},
		Approvals: outApprovals{Timeout: formatDuration(c.Approvals.Timeout)},
	}
	chat := func(ch Chat) outChat {
		return outChat{
			Enabled:         ch.Enabled,
			Agent:           ch.Agent,
			AllowUsers:      maskAll(ch.AllowUsers),
			Admins:          maskAll(ch.Admins),
			RequireMention:  ch.RequireMention,
			QueueMode:       ch.QueueMode,
			EditInterval:    formatDuration(ch.EditInterval),
			AllowedChannels: maskAll(ch.AllowedChannels),
		}
	}
	f.Channels.Web = outWeb{outChat: chat(c.Channels.Web.Chat), Token: secret(c.Channels.Web.Token)}
	for name, p := range c.Providers {
		f.Providers[name] = outProvider{
			BaseURL:         mask(p.BaseURL),
			APIKey:          secret(p.APIKey),
			Model:           mask(p.Model),
			ContextWindow:   p.ContextWindow,
			MaxOutputTokens: p.MaxOutputTokens,
			Vision:          p.Vision,
			StreamIdle:      formatDuration(p.StreamIdleTimeout),
		}
	}
	for name, a := range c.Agents {
		env := make(map[string]string, len(a.Env))
		for k, v := range a.Env {
			if IsSecretName(k) {
				env[k] = secret(v)
			} else {
				env[k] = mask(v)
			}
		}
		f.Agents[name] = outAgent{
			Provider:        a.Provider,
			Model:           mask(a.Model),
			Workspace:       mask(a.Workspace),
			PermissionMode:  a.PermissionMode,
			Allow:           maskAll(a.Allow),
			Deny:            maskAll(a.Deny),
			Ask:             maskAll(a.Ask),
			DisallowedTools: maskAll(a.DisallowedTools),
			Sandbox:         a.Sandbox,
			Network:         a.Network,
			Approvers:       maskAll(a.Approvers),
			ApprovalRoutes:  maskAll(a.ApprovalRoutes),
			MaxSteps:        a.MaxSteps,
			MaxTasks:        a.MaxTasks,
			ACPClientTools:  a.ACPClientTools,
			SystemPrompt:    mask(a.SystemPrompt),
			TurnTimeout:     formatDuration(a.TurnTimeout),
			MaxStepOutput:   a.MaxStepOutput,
			Env:             env,
		}
	}
	if t := c.Channels.Telegram; t != nil {
		f.Channels.Telegram = &outTelegram{
			outChat:       chat(t.Chat),
			Token:         secret(t.Token),
			APIURL:        mask(t.APIURL),
			Mode:          t.Mode,
			WebhookURL:    mask(t.WebhookURL),
			WebhookSecret: secret(t.WebhookSecret),
		}
	}
	if sl := c.Channels.Slack; sl != nil {
		f.Channels.Slack = &outSlack{
			outChat:       chat(sl.Chat),
			Mode:          sl.Mode,
			AppToken:      secret(sl.AppToken),
			BotToken:      secret(sl.BotToken),
			SigningSecret: secret(sl.SigningSecret),
			APIURL:        mask(sl.APIURL),
		}
	}
	if dc := c.Channels.Discord; dc != nil {
		f.Channels.Discord = &outDiscord{
			outChat:       chat(dc.Chat),
			Token:         secret(dc.Token),
			ApplicationID: dc.ApplicationID,
			APIURL:        mask(dc.APIURL),
			AutoThread:    dc.AutoThread,
			AllowBots:     dc.AllowBots,
			AllowRoles:    maskAll(dc.AllowRoles),
			AdminRoles:    maskAll(dc.AdminRoles),
			Guilds:        maskAll(dc.Guilds),
		}
	}
	if a := c.Channels.API; a != nil {
		oa := &outAPI{Agent: a.Agent, QueueMode: a.QueueMode}
		for _, t := range a.Tokens {
			oa.Tokens = append(oa.Tokens, outAPIToken{Name: t.Name, Token: secret(t.Token), Admin: t.Admin})
		}
		f.Channels.API = oa
	}

	source := c.File
	if source == "" {
		source = "no config file (zero config from the environment)"
	}
	var header strings.Builder
	oneLine := strings.NewReplacer("\n", " ", "\r", " ")
	fmt.Fprintf(&header, "# switchboard configuration, resolved\n# source: %s\n", oneLine.Replace(mask(source)))
	if c.Home != "" {
		fmt.Fprintf(&header, "# home: %s\n", oneLine.Replace(mask(c.Home)))
	}
	header.WriteString("# secrets are shown as " + masked + "\n\n")
	if _, err := io.WriteString(w, header.String()); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	enc := toml.NewEncoder(w)
	enc.SetIndentTables(false)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// formatDuration prints d the way a user writes it: "12h", not "12h0m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

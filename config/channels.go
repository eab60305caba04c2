package config

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Chat holds the keys every chat channel shares ([channels.NAME]): they are
// decoded once, by one function, for every channel; each channel adds only
// its own keys.
type Chat struct {
	Enabled        bool          // enabled, default true when the table exists
	Agent          string        // agent, default "main" (or the only agent)
	AllowUsers     []string      // allow_users: bare platform user ids
	Admins         []string      // admins: bare platform user ids
	RequireMention bool          // require_mention, default true (in groups and channels)
	QueueMode      string        // queue_mode, default followup
	EditInterval   time.Duration // edit_interval, default 1s
	// AllowedChannels (allowed_channels) lists the platform channels the bot
	// answers in; empty means every channel it is in. Only channels whose
	// platform has channels (Slack, Discord) accept the key.
	AllowedChannels []string
}

// chatSpec says how one channel's common keys are checked.
type chatSpec struct {
	// userID checks one user id of allow_users and admins; nil accepts any
	// non-empty id.
	userID func(s string) (ok bool, hint string)
	// hasChannels: the platform has channels (allowed_channels is a key).
	hasChannels bool
	// editInterval is the default of edit_interval.
	editInterval time.Duration
}

// chat decodes the common keys of a channel table.
func (d *decoder) chat(t *table, cfg *Config, spec chatSpec) Chat {
	c := Chat{Enabled: t.boolean("enabled", true)}
	c.Agent = d.channelAgent(t, cfg)
	check := func(path []string, s string) bool {
		if s == "" {
			d.errorf(path, "is empty: write the user's platform id")
			return false
		}
		if spec.userID != nil {
			if ok, hint := spec.userID(s); !ok {
				d.errorf(path, "%q %s", s, hint)
				return false
			}
		}
		return true
	}
	c.AllowUsers = t.strings("allow_users", true, check)
	c.Admins = t.strings("admins", true, check)
	c.RequireMention = t.boolean("require_mention", true)
	c.QueueMode = t.queueMode()
	def := spec.editInterval
	if def == 0 {
		def = DefaultEditInterval
	}
	c.EditInterval = t.duration("edit_interval", def)
	if spec.hasChannels {
		c.AllowedChannels = t.strings("allowed_channels", true, func(path []string, s string) bool {
			if strings.TrimSpace(s) == "" {
				d.errorf(path, "is empty: write a channel id")
				return false
			}
			return true
		})
	}
	return c
}

// channelAgent reads the agent key of a channel table: a configured agent,
// by default "main" or the only agent.
func (d *decoder) channelAgent(t *table, cfg *Config) string {
	if s, ok := t.str("agent"); ok {
		if _, exists := cfg.Agents[s]; !exists {
			t.errorf("agent", "%q is not a configured agent: use one of %s", s, strings.Join(slices.Sorted(maps.Keys(cfg.Agents)), ", "))
		}
		return s
	} else if t.has("agent") {
		return ""
	}
	switch {
	case hasAgent(cfg, DefaultAgent):
		return DefaultAgent
	case len(cfg.Agents) == 1:
		for name := range cfg.Agents {
			return name
		}
	}
	d.errorf(t.keyPath("agent"), "is missing and there is no agent %q: set agent = one of %s", DefaultAgent, strings.Join(slices.Sorted(maps.Keys(cfg.Agents)), ", "))
	return ""
}

func hasAgent(cfg *Config, name string) bool {
	_, ok := cfg.Agents[name]
	return ok
}

// numericID accepts platform ids made of digits (Telegram, Discord).
func numericID(what, hint string) func(string) (bool, string) {
	return func(s string) (bool, string) {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false, "is not a " + what + " user id: " + hint
			}
		}
		return true, ""
	}
}

// requireSecret reads a required string key of an enabled channel that holds
// a credential; how says where to get it.
func (d *decoder) requireSecret(t *table, key, how string) string {
	s, ok := t.str(key)
	switch {
	case ok && s == "":
		t.errorf(key, "is empty: %s", how)
	case !ok && !t.has(key):
		d.errorf(t.keyPath(key), "is missing: %s", how)
	case ok && strings.ContainsAny(s, " \t\r\n"):
		t.errorf(key, "contains spaces or line breaks: copy it again (%s)", how)
	}
	return s
}

// apiURL reads an optional base URL key.
func apiURL(t *table, key, def string) string {
	s, ok := t.str(key)
	if !ok {
		return def
	}
	if s == "" {
		return def
	}
	if err := checkHTTPURL(s); err != nil {
		t.errorf(key, "%v", err)
		return def
	}
	return s
}

func (d *decoder) channels(root *table, cfg *Config) {
	cfg.Channels.Web = Web{Chat: Chat{Enabled: true, RequireMention: true, QueueMode: QueueFollowup, EditInterval: DefaultEditInterval, Agent: d.defaultAgentName(cfg)}}
	ct := root.sub("channels")
	if ct == nil {
		return
	}
	if t := ct.sub("web"); t != nil {
		cfg.Channels.Web = d.web(t, cfg)
		t.done()
	}
	if t := ct.sub("telegram"); t != nil {
		if tg := d.telegram(t, cfg); tg.Enabled {
			cfg.Channels.Telegram = tg
		}
		t.done()
	}
	if t := ct.sub("slack"); t != nil {
		if s := d.slack(t, cfg); s.Enabled {
			cfg.Channels.Slack = s
		}
		t.done()
	}
	if t := ct.sub("discord"); t != nil {
		if s := d.discord(t, cfg); s.Enabled {
			cfg.Channels.Discord = s
		}
		t.done()
	}
	if t := ct.sub("api"); t != nil {
		if s := d.api(t, cfg); s.Enabled {
			cfg.Channels.API = s
		}
		t.done()
	}
	ct.done()
}

// defaultAgentName is "main", else the first agent by name.
func (d *decoder) defaultAgentName(cfg *Config) string {
	if hasAgent(cfg, DefaultAgent) {
		return DefaultAgent
	}
	names := slices.Sorted(maps.Keys(cfg.Agents))
	if len(names) > 0 {
		return names[0]
	}
	return ""
}

func (d *decoder) web(t *table, cfg *Config) Web {
	w := Web{Chat: d.chat(t, cfg, chatSpec{})}
	w.Token, _ = t.str("token")
	return w
}

func (t *table) queueMode() string {
	return t.enum("queue_mode", QueueFollowup, QueueFollowup, QueueCollect, QueueSteer, QueueInterrupt)
}

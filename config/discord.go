package config

import "strings"

// Discord is the [channels.discord] table.
type Discord struct {
	Chat
	Token         string // token (the bot token), required
	ApplicationID string // application_id: numeric; needed for slash commands and the invite URL
	// APIURL (api_url) points REST (and so the gateway lookup) elsewhere; ""
	// means Discord.
	APIURL     string
	AutoThread bool     // auto_thread, default true: a mention in a channel opens a thread
	AllowRoles []string // allow_roles: role ids whose members may talk, besides allow_users
	AdminRoles []string // admin_roles: role ids whose members are admins
	Guilds     []string // guilds: server ids; empty = every server the bot is in
	AllowBots  bool     // allow_bots, default false: answer other bots too
}

func (d *decoder) discord(t *table, cfg *Config) *Discord {
	snowflake := numericID("Discord", "use the numeric id (Developer Mode → right-click → Copy User ID)")
	s := &Discord{Chat: d.chat(t, cfg, chatSpec{userID: snowflake, hasChannels: true})}
	if !s.Enabled {
		t.skipRest()
		return s
	}
	s.Token = d.requireSecret(t, "token", `set token = "${DISCORD_BOT_TOKEN}" (Developer Portal → your application → Bot → Reset Token)`)
	s.Token = strings.TrimPrefix(s.Token, "Bot ")
	if n, isInt := t.m["application_id"].(int64); isInt {
		t.known["application_id"] = true
		s.ApplicationID = formatInt(n)
	} else if v, ok := t.str("application_id"); ok && v != "" {
		if ok, _ := snowflake(v); !ok {
			t.errorf("application_id", "%q is not an application id: copy the numeric Application ID from the Developer Portal (General Information)", v)
		}
		s.ApplicationID = v
	}
	if v, ok := t.str("api_url"); ok && v != "" {
		if err := checkHTTPURL(v); err != nil {
			t.errorf("api_url", "%v", err)
		}
		s.APIURL = strings.TrimSuffix(v, "/")
	}
	s.AutoThread = t.boolean("auto_thread", true)
	s.AllowBots = t.boolean("allow_bots", false)
	ids := func(key string) []string {
		return t.strings(key, true, func(path []string, v string) bool {
			if ok, _ := snowflake(v); !ok || v == "" {
				d.errorf(path, "%q is not a Discord id: use the numeric id (Developer Mode → right-click → Copy ID)", v)
				return false
			}
			return true
		})
	}
	s.AllowRoles = ids("allow_roles")
	s.AdminRoles = ids("admin_roles")
	s.Guilds = ids("guilds")
	return s
}

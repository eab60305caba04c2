package config

import (
	"strconv"
	"strings"
)

// API is the [channels.api] table: the HTTP API for programs. It is off
// unless configured with at least one token.
type API struct {
	Enabled   bool
	Agent     string     // agent: the default agent of new conversations
	QueueMode string     // queue_mode, default followup
	Tokens    []APIToken // tokens: who may call the API
}

// APIToken is one bearer token of the API; the caller is "api:<Name>".
type APIToken struct {
	Name  string // name: [a-z0-9_-], unique
	Token string // token: a secret, at least 16 characters
	Admin bool   // admin, default false
}

func (d *decoder) api(t *table, cfg *Config) *API {
	a := &API{Enabled: t.boolean("enabled", true)}
	if !a.Enabled {
		t.skipRest()
		return a
	}
	a.Agent = d.channelAgent(t, cfg)
	a.QueueMode = t.queueMode()
	v, present := t.get("tokens")
	arr, ok := v.([]any)
	switch {
	case !present:
		d.errorf(t.keyPath("tokens"), `is missing: the API needs at least one token, e.g. tokens = [{ name = "ci", token = "${SWITCHBOARD_API_TOKEN}" }] (generate one with: openssl rand -hex 32)`)
	case !ok:
		t.errorf("tokens", "expected an array of tables, got %s", describe(v))
	case len(arr) == 0:
		t.errorf("tokens", "is empty: add at least one { name = \"…\", token = \"${…}\" }, or remove [channels.api]")
	}
	seen := map[string]bool{}
	for i, e := range arr {
		path := append(t.keyPath("tokens"), "#"+strconv.Itoa(i))
		m, isTable := e.(map[string]any)
		if !isTable {
			d.errorf(path, "expected a table { name = \"…\", token = \"…\" }, got %s", describe(e))
			continue
		}
		tt := d.table(path, m)
		tok := APIToken{Admin: tt.boolean("admin", false)}
		tok.Name, _ = tt.str("name")
		switch {
		case tok.Name == "":
			d.errorf(tt.keyPath("name"), "is missing or empty: name the caller (it becomes api:<name>)")
		case !validAPIName(tok.Name):
			tt.errorf("name", "%q may contain only a-z, 0-9, _ and -", tok.Name)
		case seen[tok.Name]:
			tt.errorf("name", "%q is used by two tokens", tok.Name)
		}
		seen[tok.Name] = true
		tok.Token, _ = tt.str("token")
		switch {
		case tok.Token == "" && !tt.has("token"):
			d.errorf(tt.keyPath("token"), `is missing: set token = "${SWITCHBOARD_API_TOKEN}" (generate one with: openssl rand -hex 32)`)
		case len(tok.Token) < 16:
			tt.errorf("token", "is too short (%d characters): use at least 16 random characters (openssl rand -hex 32)", len(tok.Token))
		case strings.ContainsAny(tok.Token, " \t\r\n"):
			tt.errorf("token", "contains spaces or line breaks")
		}
		tt.done()
		a.Tokens = append(a.Tokens, tok)
	}
	return a
}

func validAPIName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

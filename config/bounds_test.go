package config

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// issue9Keys are the keys issue 9 adds, as the README documents them.
const issue9Keys = `
[providers.default]
stream_idle_timeout = "45s"

[agents.main]
turn_timeout = "1h"
max_step_output = 262144

[http]
listen = "0.0.0.0:7700"
public_url = "https://Bot.Example.com/"
allowed_hosts = ["switchboard.lan", "192.168.1.20", "[fd00::1]", "NAS."]
metrics_token = "metrics-canary"
`

func TestParseBoundsAndHTTPKeys(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse("switchboard.toml", []byte(issue9Keys), dir, MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Providers["default"].StreamIdleTimeout; got != 45*time.Second {
		t.Errorf("stream_idle_timeout = %s", got)
	}
	a := cfg.Agents["main"]
	if a.TurnTimeout != time.Hour || a.MaxStepOutput != 256<<10 {
		t.Errorf("turn_timeout %s, max_step_output %d", a.TurnTimeout, a.MaxStepOutput)
	}
	want := HTTP{
		Listen:       "0.0.0.0:7700",
		PublicURL:    "https://bot.example.com",
		AllowedHosts: []string{"switchboard.lan", "192.168.1.20", "fd00::1", "nas"},
		MetricsToken: "metrics-canary",
	}
	if diff := cmp.Diff(want, cfg.HTTP); diff != "" {
		t.Errorf("http (-want +got):\n%s", diff)
	}
	if !slices.Contains(cfg.Secrets(), "metrics-canary") {
		t.Errorf("Secrets() = %q lacks the metrics token", cfg.Secrets())
	}
	var out bytes.Buffer
	if err := cfg.WriteMasked(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "canary") {
		t.Errorf("WriteMasked reveals the metrics token:\n%s", text)
	}
	for _, w := range []string{
		"stream_idle_timeout = '45s'", "turn_timeout = '1h'", "max_step_output = 262144",
		"public_url = 'https://bot.example.com'", "metrics_token = '****'", "'switchboard.lan'",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("WriteMasked lacks %q:\n%s", w, text)
		}
	}
}

func TestBoundsDefaults(t *testing.T) {
	for _, doc := range []string{"", "[providers.p]\n[agents.a]\nprovider = \"p\"\n"} {
		cfg, err := Parse("f.toml", []byte(doc), t.TempDir(), MapEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range cfg.Providers {
			if p.StreamIdleTimeout != 120*time.Second {
				t.Errorf("%q: provider %s stream_idle_timeout %s", doc, p.Name, p.StreamIdleTimeout)
			}
		}
		for _, a := range cfg.Agents {
			if a.TurnTimeout != 30*time.Minute || a.MaxStepOutput != 1<<20 {
				t.Errorf("%q: agent %s turn_timeout %s max_step_output %d", doc, a.Name, a.TurnTimeout, a.MaxStepOutput)
			}
		}
		if h := cfg.HTTP; h.PublicURL != "" || h.AllowedHosts != nil || h.MetricsToken != "" {
			t.Errorf("%q: http %+v", doc, h)
		}
		var out bytes.Buffer
		if err := cfg.WriteMasked(&out); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"stream_idle_timeout = '2m'", "turn_timeout = '30m'", "max_step_output = 1048576", "metrics_token = ''"} {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: WriteMasked lacks %q", doc, w)
			}
		}
	}
}

func TestParseBoundsAndHTTPErrors(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"idle not a duration", "[providers.p]\nstream_idle_timeout = \"2 minutes\"\n", `switchboard.toml:2: providers.p.stream_idle_timeout: "2 minutes" is not a duration`},
		{"idle zero", "[providers.p]\nstream_idle_timeout = \"0s\"\n", `switchboard.toml:2: providers.p.stream_idle_timeout: "0s" must be longer than zero`},
		{"turn timeout negative", "[agents.main]\nturn_timeout = \"-1m\"\n", `switchboard.toml:2: agents.main.turn_timeout: "-1m" must be longer than zero`},
		{"step output zero", "[agents.main]\nmax_step_output = 0\n", `switchboard.toml:2: agents.main.max_step_output: 0 is out of range`},
		{"step output tiny", "[agents.main]\nmax_step_output = 100\n", `switchboard.toml:2: agents.main.max_step_output: 100 bytes would cut ordinary answers: use at least 4096`},
		{"step output a string", "[agents.main]\nmax_step_output = \"1MiB\"\n", `switchboard.toml:2: agents.main.max_step_output: expected an integer`},
		{"public url plain http", "[http]\npublic_url = \"http://bot.example.com\"\n", `switchboard.toml:2: http.public_url: "http://bot.example.com" is plain http`},
		{"public url not a url", "[http]\npublic_url = \"bot.example.com\"\n", `switchboard.toml:2: http.public_url: "bot.example.com" is not a URL`},
		{"public url with query", "[http]\npublic_url = \"https://bot.example.com/?a=1\"\n", `switchboard.toml:2: http.public_url: "https://bot.example.com/?a=1" has user info, a query or a fragment`},
		{"public url with user", "[http]\npublic_url = \"https://u:p@bot.example.com\"\n", `switchboard.toml:2: http.public_url: "https://u:p@bot.example.com" has user info`},
		{"allowed host with scheme", "[http]\nallowed_hosts = [\"ok.lan\", \"https://x.lan\"]\n", `switchboard.toml:2: http.allowed_hosts[1]: "https://x.lan" is not a host name`},
		{"allowed host with port", "[http]\nallowed_hosts = [\"x.lan:80\"]\n", `switchboard.toml:2: http.allowed_hosts[0]: "x.lan:80" is not a host name`},
		{"allowed host empty", "[http]\nallowed_hosts = [\"\"]\n", `switchboard.toml:2: http.allowed_hosts[0]: "" is not a host name`},
		{"metrics token not a string", "[http]\nmetrics_token = 5\n", `switchboard.toml:2: http.metrics_token: expected a string`},
		{"misspelt key", "[http]\nallowed_host = []\n", `switchboard.toml:2: unknown key http.allowed_host (did you mean allowed_hosts?)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("switchboard.toml", []byte(tt.doc), t.TempDir(), MapEnv(nil))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v\nwant one error starting %s", err, tt.want)
			}
		})
	}
}

func TestPublicURLLoopbackHTTP(t *testing.T) {
	for _, s := range []string{"http://localhost:7700", "http://127.0.0.1:7700/", "http://[::1]:7700", "https://bot.example.com/switchboard/"} {
		cfg, err := Parse("f.toml", []byte("[http]\npublic_url = \""+s+"\"\n"), t.TempDir(), MapEnv(nil))
		if err != nil {
			t.Errorf("public_url %q: %v", s, err)
			continue
		}
		if strings.HasSuffix(cfg.HTTP.PublicURL, "/") {
			t.Errorf("public_url %q kept as %q", s, cfg.HTTP.PublicURL)
		}
	}
}

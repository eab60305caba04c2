package config

import (
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := MapEnv(map[string]string{"A": "alpha", "EMPTY": "", "B_1": "b"})
	tests := []struct {
		in, want string
		vars     []string
		err      string // substring of the error; "" means success
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "alpha", vars: []string{"A"}},
		{in: "x${A}y${B_1}z", want: "xalphaybz", vars: []string{"A", "B_1"}},
		{in: "$${A}", want: "${A}"},
		{in: "$$$${A}", want: "$${A}"},
		{in: "$$${A}", want: "$alpha", vars: []string{"A"}},
		{in: "cost $5", want: "cost $5"},
		{in: "$A", want: "$A"},
		{in: "end$", want: "end$"},
		{in: "${EMPTY}", want: "", vars: []string{"EMPTY"}},
		{in: "${MISSING}", err: "environment variable MISSING is not set"},
		{in: "${A", err: "unterminated ${"},
		{in: "${}", err: "${} is not a valid variable reference"},
		{in: "${A-B}", err: "${A-B} is not a valid variable reference"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, used, err := expand(tt.in, env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("expand(%q) error = %v; want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("expand(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("expand(%q) = %q; want %q", tt.in, got, tt.want)
			}
			var names []string
			for _, u := range used {
				names = append(names, u.name)
			}
			if !slices.Equal(names, tt.vars) {
				t.Errorf("expand(%q) used %v; want %v", tt.in, names, tt.vars)
			}
		})
	}
}

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"TELEGRAM_BOT_TOKEN": true, "OPENAI_API_KEY": true, "MY_SERVICE_SECRET": true,
		"DB_PASSWORD": true, "db_password": true, "TOKEN": true,
		"HOME": false, "KEYBOARD": false, "TOKENS": false, "MONKEY": false, "": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v; want %v", name, got, want)
		}
	}
}

// TestExpandInConfig checks that ${VAR} works in every kind of string place:
// plain values, array elements and the env table.
func TestExpandInConfig(t *testing.T) {
	dir := t.TempDir()
	env := MapEnv(map[string]string{"WS": dir, "TOOL": "Read", "GH_TOKEN": "ghp-canary", "MODEL": "m1"})
	doc := `
[providers.default]
model = "${MODEL}"
[agents.main]
workspace = "${WS}"
allow = ["${TOOL}", "Bash(echo $${HOME}:*)"]
env = { GH_TOKEN = "${GH_TOKEN}", LITERAL = "$${GH_TOKEN}" }
`
	cfg, err := Parse("switchboard.toml", []byte(doc), "/", env)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agents["main"]
	if cfg.Providers["default"].Model != "m1" || a.Workspace != dir {
		t.Errorf("model %q, workspace %q; want m1, %s", cfg.Providers["default"].Model, a.Workspace, dir)
	}
	if want := []string{"Read", "Bash(echo ${HOME}:*)"}; !slices.Equal(a.Allow, want) {
		t.Errorf("allow = %q; want %q", a.Allow, want)
	}
	if a.Env["GH_TOKEN"] != "ghp-canary" || a.Env["LITERAL"] != "${GH_TOKEN}" {
		t.Errorf("env = %q", a.Env)
	}
	if !slices.Contains(cfg.Secrets(), "ghp-canary") {
		t.Errorf("Secrets() = %q; want it to hold the value of ${GH_TOKEN}", cfg.Secrets())
	}
}

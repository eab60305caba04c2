package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	secret := []string{
		"TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY", "MY_SERVICE_SECRET", "DB_PASSWORD", "db_password",
		"GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "SLACK_APP_TOKEN",
		"api-key", "GOOGLE_APPLICATION_CREDENTIALS", "DB_PWD", "SSH_PASSPHRASE", "NPM_AUTH", "X_APIKEY",
		"GITHUBTOKEN", "Some_Secret", "token", "PRIVATE_KEY", "KEY",
	}
	harmless := []string{
		"PATH", "HOME", "PWD", "OLDPWD", "LANG", "LC_ALL", "TERM", "KEYBOARD_LAYOUT", "EDITOR",
		"TOKENIZERS_PARALLELISM", "GOPATH", "SHELL", "MONKEY",
	}
	for _, n := range secret {
		if !IsSecretName(n) {
			t.Errorf("IsSecretName(%q) = false, want true", n)
		}
	}
	for _, n := range harmless {
		if IsSecretName(n) {
			t.Errorf("IsSecretName(%q) = true, want false", n)
		}
	}
}

func TestScrubEnv(t *testing.T) {
	red := NewRedactor("sk-provider-123456", "bot-token-abcdef")
	environ := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/u",
		"LC_ALL=C.UTF-8",
		"TELEGRAM_BOT_TOKEN=bot-token-abcdef", // by name and value
		"OPENAI_API_KEY=sk-other",             // by name
		"LANG=sk-provider-123456",             // allowlisted name, secret value
		"DATABASE_URL=postgres://u:p@h/db",    // not allowlisted
		"SSH_AUTH_SOCK=/run/agent.sock",       // not allowlisted
		"TERM=xterm",
		"malformed",
		"TZ=UTC",
		"TZ=Europe/Berlin", // a later duplicate wins
	}
	extra := map[string]string{
		"GOFLAGS":      "-mod=mod",
		"DEPLOY_TOKEN": "agent-configured-token",    // configured on purpose: kept
		"LEAK":         "prefix-sk-provider-123456", // carries a gateway secret: dropped
		"HOME":         "/home/agent",               // overrides the inherited HOME
		"BAD=NAME":     "x",
		"NUL":          "a\x00b",
	}
	got := ScrubEnv(environ, extra, red)
	want := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/agent",
		"LC_ALL=C.UTF-8",
		"TERM=xterm",
		"TZ=Europe/Berlin",
		"DEPLOY_TOKEN=agent-configured-token",
		"GOFLAGS=-mod=mod",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ScrubEnv =\n%q\nwant\n%q", got, want)
	}
	for _, kv := range got {
		if red.Contains(kv) {
			t.Errorf("secret value passed: %q", kv)
		}
	}
	if env := ScrubEnv(nil, nil, nil); env == nil || len(env) != 0 {
		t.Fatalf("empty input must give an empty, non-nil environment, got %#v", env)
	}
	if strings.Join(ScrubEnv([]string{"PATH=/x"}, nil, nil), "") != "PATH=/x" {
		t.Fatal("a nil Redactor must not drop harmless variables")
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/config"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func TestInitRendersValidConfigs(t *testing.T) {
	ws := t.TempDir()
	tg := func(mut func(*telegramInit)) []initChannel {
		ch := &telegramInit{tokenEnv: "TELEGRAM_BOT_TOKEN", secretEnv: "TELEGRAM_WEBHOOK_SECRET"}
		mut(ch)
		return []initChannel{ch}
	}
	base := initAnswers{baseURL: config.OllamaBaseURL, model: "qwen3:8b", workspace: ws, permissionMode: "standard", sandbox: "none", listen: config.DefaultListen}
	for _, tc := range []struct {
		name    string
		mut     func(*initAnswers)
		want    []string // substrings of the file
		notWant []string
	}{
		{"local ollama, web only", func(a *initAnswers) {}, []string{`base_url = "http://127.0.0.1:11434/v1"`, "# token = "},
			[]string{"\napi_key", "[channels.telegram]"}},
		{"remote with key", func(a *initAnswers) {
			a.baseURL, a.apiKeyEnv = "https://api.openai.com/v1", "OPENAI_API_KEY"
		}, []string{`api_key = "${OPENAI_API_KEY}"`}, nil},
		{"telegram polling", func(a *initAnswers) {
			a.channels = tg(func(t *telegramInit) { t.enabled, t.users = true, []string{"4242", "17"} })
		}, []string{`token = "${TELEGRAM_BOT_TOKEN}"`, `mode = "polling"`, `allow_users = ["4242", "17"]`}, []string{"webhook_url"}},
		{"telegram webhook", func(a *initAnswers) {
			a.channels = tg(func(t *telegramInit) { t.webhookURL = "https://bot.example.com/telegram/webhook" })
		}, []string{`mode = "webhook"`, `webhook_secret = "${TELEGRAM_WEBHOOK_SECRET}"`, `allow_users = []`}, nil},
		{"slack socket mode", func(a *initAnswers) {
			sl := newSlackInit()
			sl.enabled, sl.users = true, []string{"U012ABCDEF"}
			a.channels = []initChannel{sl}
		}, []string{"[channels.slack]", `mode = "socket"`, `bot_token = "${SLACK_BOT_TOKEN}"`, `app_token = "${SLACK_APP_TOKEN}"`, `admins = ["U012ABCDEF"]`},
			[]string{"signing_secret"}},
		{"slack http mode", func(a *initAnswers) {
			sl := newSlackInit()
			sl.mode = "http"
			a.channels = []initChannel{sl}
		}, []string{`mode = "http"`, `signing_secret = "${SLACK_SIGNING_SECRET}"`, "public_url", `allow_users = []`}, []string{"app_token"}},
		{"discord", func(a *initAnswers) {
			a.channels = []initChannel{&discordInit{tokenEnv: "DISCORD_BOT_TOKEN", appID: "123456789012345678", users: []string{"80351110224678912"}}}
		}, []string{`token = "${DISCORD_BOT_TOKEN}"`, `application_id = "123456789012345678"`, `allow_users = ["80351110224678912"]`, "auto_thread = true"}, nil},
		{"discord without application id", func(a *initAnswers) {
			a.channels = []initChannel{&discordInit{tokenEnv: "DISCORD_BOT_TOKEN", enabled: true}}
		}, []string{"[channels.discord]", `# application_id = `, `admins = []`}, []string{"\napplication_id"}},
		{"container-style", func(a *initAnswers) {
			a.listen, a.webTokenEnv, a.sandbox, a.permissionMode = "0.0.0.0:7700", "SWITCHBOARD_WEB_TOKEN", "bwrap", "acceptEdits"
		}, []string{`token = "${SWITCHBOARD_WEB_TOKEN}"`, "reachable from other machines"}, nil},
		{"odd characters in paths", func(a *initAnswers) {
			dir := filepath.Join(ws, `we"ird\dir`)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			a.workspace = dir
		}, []string{`we\"ird\\dir`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			tc.mut(&a)
			data := a.render(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
			path := filepath.Join(t.TempDir(), "switchboard.toml")
			if err := validateInitConfig(path, data, a.envRefs(), config.MapEnv(nil)); err != nil {
				t.Fatalf("rendered config does not validate: %v\n%s", err, data)
			}
			// With the variables really set (and only then), config
			// itself accepts it.
			env := map[string]string{}
			for _, r := range a.envRefs() {
				env[r.name] = r.placeholder
			}
			cfg, err := config.Parse(path, []byte(data), filepath.Dir(path), config.MapEnv(env))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.Agents["main"].Workspace != a.workspace {
				t.Errorf("workspace = %q, want %q", cfg.Agents["main"].Workspace, a.workspace)
			}
			for _, w := range tc.want {
				if !strings.Contains(data, w) {
					t.Errorf("file lacks %q:\n%s", w, data)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(data, w) {
					t.Errorf("file has %q:\n%s", w, data)
				}
			}
		})
	}
}

func TestInitNonInteractive(t *testing.T) {
	e := newEnv(t)
	e.extra = append(e.extra, "SWITCHBOARD_MODEL=", "OPENAI_BASE_URL=")
	r := e.run("", "init", "--non-interactive", "--base-url", e.model.URL(), "--model", fakemodel.DefaultModel,
		"--listen", "127.0.0.1:0", "--web-token-env", "SB_WEB_TOKEN", "--telegram", "--telegram-user", "4242", "--telegram-token-env", "SB_TG_TOKEN")
	if r.code != 0 {
		t.Fatalf("init exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	path := filepath.Join(e.home, "switchboard.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", fi.Mode().Perm())
	}
	for _, w := range []string{"Wrote " + path, "SB_TG_TOKEN", "SB_WEB_TOKEN", "Checking the set-up", "FAIL  config"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("init output lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(string(data), "\napi_key") {
		t.Errorf("a key reference was written for a local endpoint:\n%s", data)
	}

	// With the variables set, config validate and doctor accept it.
	e.extra = append(e.extra, "SB_TG_TOKEN=1:abc", "SB_WEB_TOKEN=init-web-token-0123456789")
	if v := e.run("", "config", "validate"); v.code != 0 {
		t.Fatalf("config validate exit %d: %s", v.code, v.stderr)
	}
	if strings.Contains(string(data), "1:abc") {
		t.Error("a secret value ended up in the file")
	}

	again := e.run("", "init", "--non-interactive", "--model", "x")
	if again.code == 0 || !strings.Contains(again.stderr, "exists") || !strings.Contains(again.stderr, "--force") {
		t.Fatalf("second init: exit %d, %q; want a refusal naming --force", again.code, again.stderr)
	}
	if now, _ := os.ReadFile(path); string(now) != string(data) {
		t.Fatal("the refused init changed the file")
	}
	forced := e.run("", "init", "--non-interactive", "--force", "--skip-doctor", "--base-url", e.model.URL(), "--model", fakemodel.DefaultModel, "--listen", "127.0.0.1:0")
	if forced.code != 0 {
		t.Fatalf("init --force: exit %d %s", forced.code, forced.stderr)
	}
	if bak, _ := os.ReadFile(path + ".bak"); string(bak) != string(data) {
		t.Error("init --force did not keep the old file as .bak")
	}

	// serve starts on what init wrote (web only now; its page answers).
	p := e.startServe()
	if err := checkHealth(context.Background(), p.url()+"/healthz", 5*time.Second); err != nil {
		t.Fatalf("serve on init's config: %v", err)
	}
	if h := e.run("", "health", "--url", p.url()+"/healthz"); h.code != 0 || strings.TrimSpace(h.stdout) != "ok" {
		t.Errorf("health: exit %d %q %q", h.code, h.stdout, h.stderr)
	}
}

func TestInitFlagErrors(t *testing.T) {
	e := newEnv(t)
	e.extra = append(e.extra, "SWITCHBOARD_MODEL=")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"init", "--non-interactive"}, "--model"},
		{[]string{"init", "--non-interactive", "--model", "m", "--workspace", "/no/such/dir"}, "--workspace"},
		{[]string{"init", "--non-interactive", "--model", "m", "--base-url", "ftp://x"}, "--base-url"},
		{[]string{"init", "--non-interactive", "--model", "m", "--api-key-env", "NOT A NAME"}, "--api-key-env"},
		{[]string{"init", "--non-interactive", "--model", "m", "--telegram-user", "@alice"}, "user id"},
		{[]string{"init", "--non-interactive", "--model", "m", "--slack-user", "ada"}, "--slack-user"},
		{[]string{"init", "--non-interactive", "--model", "m", "--slack-mode", "rtm"}, "--slack-mode"},
	} {
		r := e.run("", tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %s", tc.args, r.code, r.stderr, tc.want)
		}
		if _, err := os.Stat(filepath.Join(e.home, "switchboard.toml")); err == nil {
			t.Fatalf("%v wrote a config", tc.args)
		}
	}
}

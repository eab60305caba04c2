package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

const doctorToken = "4321:doctor-test-token"

// doctorSetup is a set-up that doctor finds all green: the fake model
// serving the configured model, the fake Bot API knowing the token, a
// free port, a private data directory.
type doctorSetup struct {
	e      *env
	tg     *telegramtest.Server
	listen string
	// Config pieces a failure case may replace.
	baseURL, model, sandbox, telegram string
}

func newDoctorSetup(t *testing.T) *doctorSetup {
	t.Helper()
	e := newEnv(t)
	tg := telegramtest.New(t, doctorToken)
	d := &doctorSetup{e: e, tg: tg, listen: freePort(t), baseURL: e.model.URL(), model: fakemodel.DefaultModel, sandbox: "none"}
	d.telegram = fmt.Sprintf("[channels.telegram]\ntoken = \"${TELEGRAM_BOT_TOKEN}\"\napi_url = %q\n", tg.URL())
	e.extra = append(e.extra, "TELEGRAM_BOT_TOKEN="+doctorToken)
	return d
}

func (d *doctorSetup) write() {
	d.e.writeConfig(fmt.Sprintf(`[providers.default]
base_url = %q
model = %q

[agents.main]
workspace = %q
sandbox = %q

[http]
listen = %q

[channels.web]
token = "doctor-web-token-0123456789"

%s`, d.baseURL, d.model, d.e.workspace, d.sandbox, d.listen, d.telegram))
}

// freePort returns a 127.0.0.1 address nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// doctorLines maps each check to its text line.
func doctorLines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "ok" || f[0] == "warn" || f[0] == "FAIL" || f[0] == "skip") {
			m[f[1]] = l
		}
	}
	return m
}

func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is needed for this test")
		}
		t.Skip("bwrap not installed")
	}
}

func TestDoctorAllGreen(t *testing.T) {
	requireBwrap(t)
	d := newDoctorSetup(t)
	d.sandbox = "bwrap"
	d.write()
	r := d.e.run("", "doctor")
	if r.code != 0 {
		t.Fatalf("doctor exit %d on a good set-up:\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := doctorLines(r.stdout)
	for _, check := range []string{"config", "data", "model", "web", "telegram", "sandbox", "listen"} {
		if l, ok := lines[check]; !ok || !strings.HasPrefix(l, "ok") {
			t.Errorf("check %s: %q, want an ok line\n%s", check, l, r.stdout)
		}
	}
	if !strings.Contains(lines["telegram"], "@"+telegramtest.BotUsername) {
		t.Errorf("telegram line does not name the bot: %q", lines["telegram"])
	}
	if strings.Contains(r.stdout, doctorToken) {
		t.Errorf("the bot token leaked into doctor's output:\n%s", r.stdout)
	}

	r = d.e.run("", "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || !rep.OK {
		t.Fatalf("doctor --json: exit %d, %v, ok=%v\n%s", r.code, err, rep.OK, r.stdout)
	}
	if len(rep.Checks) < 7 {
		t.Errorf("doctor --json has %d checks", len(rep.Checks))
	}
}

func TestDoctorFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, d *doctorSetup)
		check string // the line that must fail
		want  string // in that line
	}{
		{"model down", func(t *testing.T, d *doctorSetup) {
			d.baseURL = "http://" + freePort(t) + "/v1"
		}, "model", "cannot reach"},
		{"model not served", func(t *testing.T, d *doctorSetup) {
			d.model = "no-such-model"
		}, "model", "does not list the model no-such-model"},
		{"bad token", func(t *testing.T, d *doctorSetup) {
			d.e.extra = append(d.e.extra, "TELEGRAM_BOT_TOKEN=4321:wrong-token")
		}, "telegram", "refused the bot token"},
		{"port in use", func(t *testing.T, d *doctorSetup) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			d.listen = ln.Addr().String()
		}, "listen", "in use by another program"},
		{"missing bwrap", func(t *testing.T, d *doctorSetup) {
			d.sandbox = "bwrap"
			d.e.extra = append(d.e.extra, "PATH="+t.TempDir())
		}, "sandbox", "bubblewrap (bwrap) is not installed"},
		{"data directory open to everyone", func(t *testing.T, d *doctorSetup) {
			t.Cleanup(func() { os.Chmod(d.e.home, 0o700) })
			if err := os.Chmod(d.e.home, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "data", "open to every user"},
		{"config invalid", func(t *testing.T, d *doctorSetup) {
			d.sandbox = "firejail"
		}, "config", `agents.main.sandbox: "firejail" is not one of none, bwrap`},
		{"token variable unset", func(t *testing.T, d *doctorSetup) {
			d.telegram = strings.Replace(d.telegram, "TELEGRAM_BOT_TOKEN", "MY_UNSET_TOKEN", 1)
		}, "config", "environment variable MY_UNSET_TOKEN is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoctorSetup(t)
			d.write()
			tc.setup(t, d)
			d.write()
			r := d.e.run("", "doctor")
			if r.code == 0 {
				t.Fatalf("doctor exit 0 with %s:\n%s", tc.name, r.stdout)
			}
			l := doctorLines(r.stdout)[tc.check]
			if !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, tc.want) {
				t.Fatalf("%s line = %q, want FAIL with %q\n%s", tc.check, l, tc.want, r.stdout)
			}
			if strings.Count("\n"+r.stdout, "\nFAIL") != 1 {
				t.Errorf("more than the one failure:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout+r.stderr, doctorToken) || strings.Contains(r.stdout+r.stderr, "wrong-token") {
				t.Errorf("a token leaked:\n%s", r.stdout)
			}
		})
	}
}

func TestDoctorWarningsDoNotFail(t *testing.T) {
	t.Run("ripgrep missing", func(t *testing.T) {
		d := newDoctorSetup(t)
		d.write()
		d.e.extra = append(d.e.extra, "PATH="+t.TempDir())
		r := d.e.run("", "doctor")
		l := doctorLines(r.stdout)["ripgrep"]
		if r.code != 0 || !strings.HasPrefix(l, "warn") || !strings.Contains(l, "built-in search") {
			t.Fatalf("exit %d, ripgrep line %q\n%s", r.code, l, r.stdout)
		}
	})
	t.Run("port held by a running switchboard", func(t *testing.T) {
		d := newDoctorSetup(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				_, _ = w.Write([]byte("ok\n"))
				return
			}
			http.NotFound(w, r)
		}))
		t.Cleanup(srv.Close)
		d.listen = srv.Listener.Addr().String()
		d.write()
		r := d.e.run("", "doctor")
		l := doctorLines(r.stdout)["listen"]
		if r.code != 0 || !strings.HasPrefix(l, "ok") || !strings.Contains(l, "held by a running switchboard") {
			t.Fatalf("exit %d, listen line %q\n%s", r.code, l, r.stdout)
		}
	})
}

func TestDoctorTelegramWebhook(t *testing.T) {
	const hook = "https://bot.example.com/telegram/webhook"
	d := newDoctorSetup(t)
	d.telegram += "mode = \"webhook\"\nwebhook_url = \"" + hook + "\"\nwebhook_secret = \"${TELEGRAM_WEBHOOK_SECRET}\"\n"
	d.e.extra = append(d.e.extra, "TELEGRAM_WEBHOOK_SECRET=s3cret-value")
	d.write()
	setWebhook := func(u string) {
		t.Helper()
		resp, err := http.PostForm(d.tg.URL()+"/bot"+doctorToken+"/setWebhook", url.Values{"url": {u}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, tc := range []struct {
		registered, status, want string
	}{
		{"", "warn", "no webhook is registered"},
		{"https://other.example.com/hook", "warn", "delivers to https://other.example.com/hook, not to webhook_url"},
		{hook, "ok", "Telegram delivers to " + hook},
	} {
		if tc.registered != "" {
			setWebhook(tc.registered)
		}
		r := d.e.run("", "doctor")
		l := doctorLines(r.stdout)["webhook"]
		if r.code != 0 || !strings.HasPrefix(l, tc.status) || !strings.Contains(l, tc.want) {
			t.Errorf("registered %q: exit %d, webhook line %q; want %s with %q\n%s", tc.registered, r.code, l, tc.status, tc.want, r.stdout)
		}
	}
}

// fakeOllama answers /v1/models without capabilities and /api/show with
// the capabilities of each model, as Ollama does.
func fakeOllama(t *testing.T, caps map[string][]string) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		var data []map[string]string
		for id := range caps {
			data = append(data, map[string]string{"id": id, "object": "model"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	})
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		c, ok := caps[req.Model]
		if !ok {
			http.Error(w, `{"error":"model not found"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"capabilities": c})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestDoctorToolCalling(t *testing.T) {
	base := fakeOllama(t, map[string][]string{"qwen3:8b": {"completion", "tools"}, "gemma:2b": {"completion"}})
	for _, tc := range []struct {
		model, status, want string
	}{
		{"qwen3:8b", "ok", "with tool calling"},
		{"gemma:2b", "FAIL", "cannot call tools"},
	} {
		d := newDoctorSetup(t)
		d.baseURL, d.model, d.telegram = base, tc.model, ""
		d.write()
		r := d.e.run("", "doctor")
		l := doctorLines(r.stdout)["model"]
		if !strings.HasPrefix(l, tc.status) || !strings.Contains(l, tc.want) {
			t.Errorf("model %s: line %q, want %s with %q", tc.model, l, tc.status, tc.want)
		}
		if (tc.status == "FAIL") != (r.code != 0) {
			t.Errorf("model %s: exit %d", tc.model, r.code)
		}
	}
}

func TestCapabilityTools(t *testing.T) {
	for _, tc := range []struct {
		entry string
		want  toolSupport
	}{
		{`{"id":"a"}`, toolsUnknown},
		{`{"id":"a","supported_parameters":["tools","temperature"]}`, toolsYes},
		{`{"id":"a","supported_parameters":["temperature"]}`, toolsNo},
		{`{"id":"a","capabilities":["completion","tools"]}`, toolsYes},
		{`{"id":"a","capabilities":["completion"]}`, toolsNo},
		{`{"id":"a","capabilities":[]}`, toolsUnknown},
		{`{"id":"a","capabilities":{"function_calling":true}}`, toolsYes},
		{`{"id":"a","capabilities":{"function_calling":false}}`, toolsNo},
		{`{"id":"a","capabilities":{"vision":true}}`, toolsUnknown},
		{`{"id":"a","capabilities":"weird"}`, toolsUnknown},
	} {
		var m modelEntry
		if err := json.Unmarshal([]byte(tc.entry), &m); err != nil {
			t.Fatal(err)
		}
		if got := m.tools(); got != tc.want {
			t.Errorf("%s: tools() = %v, want %v", tc.entry, got, tc.want)
		}
	}
}

// TestDoctorDataDirMissing: a home that does not exist yet is fine when
// it can be created.
func TestDoctorDataDirMissing(t *testing.T) {
	home := filepath.Join(t.TempDir(), "a", "b")
	if r := checkDataDir(home); r.Status != statusOK || !strings.Contains(r.Message, "does not exist yet") {
		t.Errorf("missing home: %+v", r)
	}
}

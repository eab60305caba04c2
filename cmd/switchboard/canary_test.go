package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// TestSecretCanaries plants secrets in the CLI's environment and config and
// in a workspace file, has the model run `env`, `cat` and Read on them and
// produce an output large enough to overflow, and proves that no secret
// reaches the tool processes, the model, stdout/stderr (events, logs) or
// any file in the data directory (DESIGN §5 "Secrets", issue 3).
func TestSecretCanaries(t *testing.T) {
	tg := "canary-tg-" + rand.Text()
	svc := "canary-svc-" + rand.Text()
	key := "canary-key-" + rand.Text()
	canaries := []string{tg, svc, key}

	big := `for i in $(seq 1 2000); do echo "padding line $i of a long tool output"; done; cat secrets.txt`
	steps := []fakemodel.Step{
		bashStep("call_env", "env"),
		bashStep("call_grep", "if env | grep -q canary-; then echo LEAKED; else echo CLEAN; fi"),
		bashStep("call_cat", "cat secrets.txt"),
		readStep("call_read", "secrets.txt"),
		bashStep("call_big", big),
		// A model may repeat a secret it learned elsewhere; hosts must not
		// show it.
		{Text: "All done. The bot token is " + tg + "."},
	}
	e := newEnv(t, steps...)
	e.extra = append(e.extra, "TELEGRAM_BOT_TOKEN="+tg, "MY_SERVICE_SECRET="+svc)
	cfgPath := e.writeConfig(fmt.Sprintf(`[providers.default]
base_url = %q
api_key = %q
model = "test-model"

[agents.main]
provider = "default"
workspace = %q
permission_mode = "standard"
`, e.model.URL(), key, e.workspace))
	secrets := fmt.Sprintf("telegram=%s\nservice=%s\nprovider=%s\n", tg, svc, key)
	if err := os.WriteFile(filepath.Join(e.workspace, "secrets.txt"), []byte(secrets), 0o600); err != nil {
		t.Fatal(err)
	}

	r := e.run("", "-v", "run", "-p", "inspect the environment", "--permission-mode", "unrestricted", "--output-format", "stream-json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	res := resultLine(t, r.stdout)
	if res["subtype"] != "success" {
		t.Fatalf("result = %v", res)
	}

	leak := func(where string, b []byte) {
		t.Helper()
		for _, c := range canaries {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("secret %s… found in %s", c[:12], where)
			}
		}
	}

	// The model: no secret in any request body; the provider key only in
	// the Authorization header, exactly.
	reqs := e.model.Requests()
	if len(reqs) != len(steps) {
		t.Fatalf("model got %d requests, want %d", len(reqs), len(steps))
	}
	for i, req := range reqs {
		leak(fmt.Sprintf("request %d body", i), req.Raw)
		if got := req.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("request %d Authorization = %q; want the configured key", i, got)
		}
		for name, vals := range req.Header {
			if name == "Authorization" {
				continue
			}
			leak(fmt.Sprintf("request %d header %s", i, name), []byte(strings.Join(vals, "\n")))
		}
	}

	// The tools: results the model saw are redacted, and the tool process
	// never had the secrets in its environment.
	results := map[string]string{}
	for _, m := range toolMessages(reqs[len(reqs)-1]) {
		results[m.ToolCallID] = contentText(m)
	}
	env := results["call_env"]
	if !strings.Contains(env, "PATH=") {
		t.Fatalf("env output does not look like env: %q", env)
	}
	for _, name := range []string{"TELEGRAM_BOT_TOKEN", "MY_SERVICE_SECRET", "OPENAI_", "SWITCHBOARD_"} {
		if strings.Contains(env, name) {
			t.Errorf("the tool process saw %s: %q", name, env)
		}
	}
	if got := strings.TrimSpace(results["call_grep"]); got != "CLEAN" {
		t.Errorf("a canary value was in the tool environment under some name: %q", got)
	}
	for _, id := range []string{"call_cat", "call_read", "call_big"} {
		if !strings.Contains(results[id], "[REDACTED]") {
			t.Errorf("%s shows no redaction: %.300q", id, results[id])
		}
	}
	if !strings.Contains(results["call_big"], "full output is in") {
		t.Fatalf("the big output was not clamped to an overflow file: %.300q", results["call_big"])
	}

	// What the host saw: stream-json events, the result, logs.
	leak("stdout", []byte(r.stdout))
	leak("stderr", []byte(r.stderr))
	if !strings.Contains(r.stdout, `"type":"tool_result"`) {
		t.Errorf("stdout has no tool_result events: %.500s", r.stdout)
	}

	// Every file in the data directory but the config that holds the key:
	// the database with its WAL, overflow files, run records, memory.
	var files, overflow int
	err := filepath.WalkDir(e.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path == cfgPath {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(path, string(filepath.Separator)+"overflow"+string(filepath.Separator)) {
			overflow++
			if !bytes.Contains(b, []byte("padding line 2000")) {
				t.Errorf("overflow file %s lacks the full output", path)
			}
		}
		leak(path, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if overflow == 0 {
		t.Errorf("no overflow file was written under %s", e.home)
	}
	if _, err := os.Stat(filepath.Join(e.home, "switchboard.db")); err != nil {
		t.Errorf("no database in %s: %v", e.home, err)
	}
	t.Logf("checked %d files (%d overflow) under SWITCHBOARD_HOME", files, overflow)
	validTranscript(t, e.transcript())
}

func readStep(id, path string) fakemodel.Step {
	args, _ := json.Marshal(map[string]string{"file_path": path})
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Read", Arguments: string(args)}}}
}

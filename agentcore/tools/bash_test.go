package tools

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/sandbox"
)

func TestBash(t *testing.T) {
	env := testEnv(t)
	env.Runner = sandbox.NewRunner(sandbox.Options{Grace: 200 * time.Millisecond})
	env.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "GREETING=hi there"}
	env.Redactor = sandbox.NewRedactor("canary-s3cr3t-value")
	tests := []struct {
		name  string
		args  string
		want  string // exact, or a regexp when it starts with "~"
		isErr bool
	}{
		{"stdout", `{"command":"echo hi","description":"say hi"}`, "hi", false},
		{"no output", `{"command":"true"}`, "(no output)", false},
		{"stderr labelled and exit code", `{"command":"echo out; echo err >&2; exit 3"}`, "out\n[stderr]\nerr\nexit code 3", true},
		{"only stderr", `{"command":"echo oops >&2; exit 1"}`, "[stderr]\noops\nexit code 1", true},
		{"workspace is the working directory", `{"command":"pwd"}`, env.Workspace, false},
		{"environment", `{"command":"echo \"$GREETING\""}`, "hi there", false},
		{"redacted", `{"command":"echo canary-s3cr3t-value"}`, sandbox.Redacted, false},
		{"timeout", `{"command":"sleep 30","timeout":200}`, "[timed out after 0.2s — the process group was killed]", true},
		{"timeout as string", `{"command":"sleep 30","timeout":"1000"}`, "[timed out after 1s — the process group was killed]", true},
		{"timeout above max", `{"command":"echo ok","timeout":9000000}`, "[timeout 9000000 ms is above the maximum; used 600000 ms]\nok", false},
		{"zero timeout", `{"command":"true","timeout":0}`, "~^Invalid arguments: timeout is in milliseconds", true},
		{"empty command", `{"command":"  "}`, "~^Invalid arguments: command is required", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, Bash(), env, tt.args)
			if res.IsError != tt.isErr {
				t.Errorf("IsError = %v, want %v", res.IsError, tt.isErr)
			}
			if strings.HasPrefix(tt.want, "~") {
				if !regexp.MustCompile(tt.want[1:]).MatchString(res.Content) {
					t.Fatalf("content %q does not match %s", res.Content, tt.want[1:])
				}
			} else if res.Content != tt.want {
				t.Fatalf("content = %q, want %q", res.Content, tt.want)
			}
		})
	}
}

func TestBashCancelled(t *testing.T) {
	env := testEnv(t)
	env.Runner = sandbox.NewRunner(sandbox.Options{Grace: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := Bash().Run(ctx, json.RawMessage(`{"command":"sleep 30"}`), env)
	if !res.IsError || !strings.Contains(res.Content, "[cancelled — the process group was killed]") {
		t.Fatalf("got %+v", res)
	}
}

func TestBashOverflow(t *testing.T) {
	env := testEnv(t)
	env.Runner = sandbox.NewRunner(sandbox.Options{})
	env.Redactor = sandbox.NewRedactor("canary-s3cr3t-value")
	res := run(t, Bash(), env, `{"command":"echo canary-s3cr3t-value; head -c 50000 /dev/zero | tr '\\0' a; echo; echo END"}`)
	if res.IsError {
		t.Fatal(res.Content)
	}
	if len([]rune(res.Content)) > MaxOutputChars+300 {
		t.Errorf("result has %d characters, above the clamp", len(res.Content))
	}
	m := regexp.MustCompile(`the full output is in (\S+) —`).FindStringSubmatch(res.Content)
	if m == nil {
		t.Fatalf("no overflow path in %q", clip(res.Content, 200)+"…"+res.Content[len(res.Content)-300:])
	}
	full := readFile(t, m[1])
	if !strings.HasSuffix(full, "END") || strings.Count(full, "a") < 50000 {
		t.Errorf("overflow file has %d bytes, ends %q", len(full), full[max(0, len(full)-10):])
	}
	if strings.Contains(full, "canary-s3cr3t-value") || strings.Contains(res.Content, "canary-s3cr3t-value") {
		t.Error("secret leaked into the overflow file or result")
	}
	if !strings.HasPrefix(m[1], env.OverflowDir) {
		t.Errorf("overflow file %s not in %s", m[1], env.OverflowDir)
	}
	if fi, err := os.Stat(m[1]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("overflow file mode: %v %v", fi, err)
	}
}

func TestBashWithoutRunner(t *testing.T) {
	env := testEnv(t)
	res := run(t, Bash(), env, `{"command":"echo hi"}`)
	if !res.IsError || !strings.Contains(res.Content, "no command runner") {
		t.Fatalf("got %+v", res)
	}
}

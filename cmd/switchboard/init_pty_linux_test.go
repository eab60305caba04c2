package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pseudo-terminals: %v", err)
		}
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

func TestInitInteractiveThroughATerminal(t *testing.T) {
	e := newEnv(t)
	e.extra = append(e.extra, "SWITCHBOARD_MODEL=", "OPENAI_BASE_URL=")
	master, slave := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "init", "--skip-doctor")
	var out syncBuffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	answers := []struct{ prompt, answer string }{
		{"Model endpoint", e.model.URL()},
		{"It lists: " + fakemodel.DefaultModel, ""},
		{"Model [" + fakemodel.DefaultModel + "]", ""}, // the listed model is the default
		{"API key", "-"},
		{"Directory the agent's tools work in [" + e.workspace + "]", ""},
		{"Enable Telegram", "y"},
		{"bot token [TELEGRAM_BOT_TOKEN]", ""},
		{"user id", "@me"}, // refused: not numeric, asked again
		{"is not a numeric user id", "4242"},
		{"polling or webhook [polling]", ""},
		{"Enable Slack", ""},   // the default: no
		{"Enable Discord", ""}, // the default: no
	}
	seen := 0
	for _, a := range answers {
		eventually(t, 30*time.Second, "the prompt "+a.prompt, func() bool {
			i := strings.Index(out.String()[seen:], a.prompt)
			if i >= 0 {
				seen += i + len(a.prompt)
				return true
			}
			select {
			case err := <-done:
				t.Fatalf("init exited (%v) before %q:\n%s", err, a.prompt, out.String())
			default:
			}
			return false
		})
		if a.prompt == "It lists: "+fakemodel.DefaultModel {
			continue // a hint, not a question
		}
		if _, err := master.Write([]byte(a.answer + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("init: %v\n%s", err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("init did not finish:\n%s", out.String())
	}
	data, err := os.ReadFile(filepath.Join(e.home, "switchboard.toml"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, w := range []string{
		"base_url = " + tomlString(e.model.URL()),
		`model = "` + fakemodel.DefaultModel + `"`,
		"workspace = " + tomlString(e.workspace),
		`token = "${TELEGRAM_BOT_TOKEN}"`,
		`allow_users = ["4242"]`,
	} {
		if !strings.Contains(string(data), w) {
			t.Errorf("file lacks %q:\n%s", w, data)
		}
	}
	e.extra = append(e.extra, "TELEGRAM_BOT_TOKEN=1:x")
	if v := e.run("", "config", "validate"); v.code != 0 {
		t.Fatalf("config validate: %s", v.stderr)
	}
}

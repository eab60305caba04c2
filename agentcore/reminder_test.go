package agentcore_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// reminders returns the <system-reminder> parts of a request's last
// message.
func reminders(r fakemodel.Request) []string {
	var out []string
	for _, p := range r.LastMessage().Parts() {
		if strings.HasPrefix(p.Text, "<system-reminder>") {
			out = append(out, p.Text)
		}
	}
	return out
}

func hasReminder(rs []string, sub string) bool {
	for _, r := range rs {
		if strings.Contains(r, sub) {
			return true
		}
	}
	return false
}

// TestReminderContextGitAndTime: volatile facts ride on user messages as
// reminders — context and git state on the first turn and when they
// change, the time on every message — and never as a system message.
func TestReminderContextGitAndTime(t *testing.T) {
	w := newMemWorld(t)
	realGit := false
	if _, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command("git", "init", "-q", "-b", "feature-x", w.ws)
		realGit = cmd.Run() == nil
	}
	if !realGit {
		// No git binary: the branch is still read from HEAD.
		if err := os.MkdirAll(filepath.Join(w.ws, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.ws, ".git", "HEAD"), []byte("ref: refs/heads/feature-x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 6 {
		w.model.Push(fakemodel.Step{Text: "ok"})
	}
	a := w.agent(memAgentOpts{})
	conv := w.conversation(a)
	ctx := context.Background()
	turn := func(a *agentcore.Agent, speaker, text string) []string {
		t.Helper()
		res, err := a.Turn(ctx, conv, agentcore.Input{Kind: agentcore.InputUser, Speaker: speaker, Origin: "Telegram DM",
			Parts: []agentcore.Part{{Type: agentcore.PartText, Text: text}}}, nil)
		if err != nil || res.StopReason != agentcore.StopEndTurn {
			t.Fatalf("turn %q: %v %s %s", text, err, res.StopReason, res.Error)
		}
		reqs := w.model.Requests()
		return reminders(reqs[len(reqs)-1])
	}

	r1 := turn(a, "alice (telegram:42)", "one")
	for _, want := range []string{"context:\nspeaker: alice (telegram:42)\nchannel: Telegram DM\npermission mode: standard", "workspace git:\nbranch: feature-x", "time: 2026-03-14 09:30 UTC (Saturday)"} {
		if !hasReminder(r1, want) {
			t.Errorf("first turn lacks reminder %q: %q", want, r1)
		}
	}
	if realGit && !hasReminder(r1, "## No commits yet on feature-x") {
		t.Errorf("first turn lacks the git status: %q", r1)
	}

	r2 := turn(a, "alice (telegram:42)", "two")
	if len(r2) != 1 || !hasReminder(r2, "time: ") {
		t.Errorf("an unchanged context was sent again: %q", r2)
	}

	r3 := turn(a, "bob (telegram:7)", "three")
	if !hasReminder(r3, "speaker: bob (telegram:7)") || hasReminder(r3, "workspace git:") {
		t.Errorf("a new speaker was not announced alone: %q", r3)
	}

	strict := w.agent(memAgentOpts{mode: permission.ModeAcceptEdits})
	r4 := turn(strict, "bob (telegram:7)", "four")
	if !hasReminder(r4, "permission mode: acceptEdits (changed from standard)") {
		t.Errorf("a mode change was not announced: %q", r4)
	}
	r5 := turn(strict, "bob (telegram:7)", "five")
	if hasReminder(r5, "context:") {
		t.Errorf("the mode change was announced twice: %q", r5)
	}

	if realGit {
		if err := os.WriteFile(filepath.Join(w.ws, "new.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		r6 := turn(strict, "bob (telegram:7)", "six")
		if !hasReminder(r6, "?? new.txt") || hasReminder(r6, "context:") {
			t.Errorf("a git status change was not announced alone: %q", r6)
		}
	}

	for i, r := range w.model.Requests() {
		for j, m := range r.Messages {
			if m.Role == "system" && j > 0 {
				t.Errorf("request %d has a system message at position %d", i+1, j)
			}
		}
	}
}

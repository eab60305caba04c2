package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// TestChatInterruptStopsTurn: in chat, Ctrl-C (SIGINT) during a turn stops
// that turn and brings back the prompt; the next message works; /exit
// quits cleanly.
func TestChatInterruptStopsTurn(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	e := newEnv(t, fakemodel.Step{Text: "never", Block: block}, fakemodel.Step{Text: "hello again"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "chat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "first\n")
	if err := e.model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the turn to stop", func() bool { return strings.Contains(out.String(), "⚠ stopped") })
	io.WriteString(stdin, "second\n")
	eventually(t, 30*time.Second, "the second answer", func() bool { return strings.Contains(out.String(), "hello again") })
	io.WriteString(stdin, "/exit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat exit: %v\nstdout: %s\nstderr: %s", err, out.String(), stderr.String())
	}
	validTranscript(t, e.transcript())
}

// TestChatCommands: the terminal chat answers /status, /memory and unknown
// commands itself; none reaches the model; a path still goes to it.
func TestChatCommands(t *testing.T) {
	e := newEnv(t, fakemodel.Step{Text: "about that path"})
	r := e.run("/status\n/memory\n/bogus\n/etc/hosts is a file\n/exit\n", "chat")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"Agent main · model test-model", "Memory history", "Create memory", "Unknown command /bogus", "about that path"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Fatalf("model got %d requests, want 1 (only the path)", n)
	}
}

// TestChatApprovalPrompts: in chat an ask is a prompt; "y" runs the call
// once, "a" stores the rule (the exact command: touch has no subcommands)
// so the same command runs without asking, "n" denies with the reason typed.
func TestChatApprovalPrompts(t *testing.T) {
	e := newEnv(t,
		bashStep("c1", "touch once-file"), fakemodel.Step{Text: "made once"},
		bashStep("c2", "touch always-file"), fakemodel.Step{Text: "made always"},
		bashStep("c3", "touch always-file"), fakemodel.Step{Text: "made again without asking"},
		bashStep("c4", "touch never-file"), fakemodel.Step{Text: "not made"},
	)
	input := strings.Join([]string{
		"make once", "y",
		"make always", "a",
		"make again",
		"make never", "n", "not today",
		"/exit",
	}, "\n") + "\n"
	r := e.run(input, "chat")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"made once", "made always", "made again without asking", "not made", "Bash(touch always-file)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "wants to run"); n != 3 {
		t.Errorf("asked %d times, want 3 (the stored rule covers the third call)", n)
	}
	for _, f := range []string{"once-file", "always-file"} {
		if _, err := os.Stat(filepath.Join(e.workspace, f)); err != nil {
			t.Errorf("%s was not made", f)
		}
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "never-file")); err == nil {
		t.Error("the denied call ran")
	}
	reqs := e.model.Requests()
	last := toolMessages(reqs[len(reqs)-1])
	if len(last) == 0 || !strings.Contains(contentText(last[len(last)-1]), "not today") {
		t.Errorf("the model was not told the reason: %+v", last)
	}
}

// TestChatNewConversation: after /new the terminal talks to the new
// conversation (the process works it).
func TestChatNewConversation(t *testing.T) {
	e := newEnv(t, fakemodel.Step{Text: "first answer"}, fakemodel.Step{Text: "answer in the new conversation"})
	r := e.run("hello\n/new\nhello again\n/exit\n", "chat")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"first answer", "Started a new conversation", "answer in the new conversation"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
}

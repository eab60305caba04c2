package agentcore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/memfs"
)

// TestMemoryUpdateReminderPersists is issue 4's first "done when": a
// memory fact committed by conversation A reaches A's very next request as
// a reminder that stays in every later request, A's system prompt never
// changes, a new conversation B has the fact in its system prompt, and an
// uncommitted hand edit reaches no prompt.
func TestMemoryUpdateReminderPersists(t *testing.T) {
	w := newMemWorld(t)
	factFile := filepath.Join(w.memDir, "notes", "colour.md")
	w.model.Push(
		// A, turn 1: write the fact into memory, then answer.
		fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "call-w1", Name: "Write",
			Arguments: mustJSON(t, map[string]string{"file_path": factFile, "content": "# Colour\nFavourite colour: teal-7731\n"})}}},
		fakemodel.Step{Text: "Noted."},
		fakemodel.Step{Text: "A turn 2."}, // A, turn 2
		fakemodel.Step{Text: "A turn 3."}, // A, turn 3
		fakemodel.Step{Text: "B turn 1."}, // B, turn 1
		fakemodel.Step{Text: "A turn 4."}, // A, turn 4
	)
	a := w.agent(memAgentOpts{})
	convA := w.conversation(a)
	if res := w.say(a, convA, "Remember: my favourite colour is teal-7731.", nil); res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("turn 1: %s %s", res.StopReason, res.Error)
	}
	log, err := w.repo.Log(context.Background(), 1)
	if err != nil || len(log) != 1 || !strings.Contains(log[0].Message, "notes/colour.md") {
		t.Fatalf("the Write was not committed to memory: %+v %v", log, err)
	}

	// A hand edit in the work tree, never committed.
	human := filepath.Join(w.memDir, "system", "human.md")
	old, err := os.ReadFile(human)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(human, append(old, "HAND-EDIT-9931 must stay out of prompts\n"...), 0o644); err != nil {
		t.Fatal(err)
	}

	w.say(a, convA, "What next?", nil)
	w.say(a, convA, "And then?", nil)
	convB := w.conversation(a)
	w.say(a, convB, "Hello from B.", nil)
	w.say(a, convA, "Back in A.", nil)

	reqs := w.model.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	aReqs := []int{0, 1, 2, 3, 5}
	sysA := splitRequest(t, reqs[0]).system
	if sysA == "" || strings.Contains(sysA, "teal-7731") {
		t.Fatalf("A's first system prompt is empty or already has the fact")
	}
	// The very next request of A (after the Write) carries the reminder
	// on the tool result.
	last := reqs[1].LastMessage()
	if last.Role != "tool" {
		t.Fatalf("request 2 ends with %q, want the tool result", last.Role)
	}
	rem := last.Text()
	for _, want := range []string{"<system-reminder>", "memory-update revision=", "added notes/colour.md", "teal-7731"} {
		if !strings.Contains(rem, want) {
			t.Errorf("the tool result after the memory write lacks %q:\n%s", want, rem)
		}
	}
	_, remBody, _ := strings.Cut(rem, "<system-reminder>")
	for _, i := range aReqs {
		r := splitRequest(t, reqs[i])
		if r.system != sysA {
			t.Errorf("request %d: A's system prompt changed", i+1)
		}
		if i >= 1 {
			if !strings.Contains(allText(reqs[i]), remBody) {
				t.Errorf("request %d of A lacks the memory reminder", i+1)
			}
			if n := strings.Count(allText(reqs[i]), "memory-update revision="); n != 1 {
				t.Errorf("request %d of A carries %d memory reminders, want exactly 1", i+1, n)
			}
		}
	}
	sysB := splitRequest(t, reqs[4]).system
	if !strings.Contains(sysB, "teal-7731") {
		t.Errorf("a new conversation's system prompt lacks the committed fact")
	}
	if strings.Contains(string(reqs[4].Raw), "memory-update") {
		t.Errorf("B got a memory reminder although its prompt was compiled at HEAD")
	}
	for i, r := range reqs {
		if strings.Contains(string(r.Raw), "HAND-EDIT-9931") {
			t.Errorf("request %d carries the uncommitted hand edit", i+1)
		}
	}
}

// allText joins the text of every message of a request.
func allText(r fakemodel.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Text())
		b.WriteString("\n")
	}
	return b.String()
}

// TestMemoryLogShowRevert drives the /memory operations and checks that a
// revert reaches a running conversation as a reminder.
func TestMemoryLogShowRevert(t *testing.T) {
	w := newMemWorld(t)
	ctx := context.Background()
	a := w.agent(memAgentOpts{})
	conv := w.conversation(a)
	w.model.Push(fakemodel.Step{Text: "hi"}, fakemodel.Step{Text: "seen"}, fakemodel.Step{Text: "again"})
	w.say(a, conv, "hello", nil)

	if err := os.WriteFile(filepath.Join(w.memDir, "notes.md"), []byte("Project code name: heron-5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.repo.CommitWorkTree(ctx, "Write notes.md"); err != nil {
		t.Fatal(err)
	}
	w.say(a, conv, "anything new?", nil)
	if text := w.model.Requests()[1].LastMessage().Text(); !strings.Contains(text, "+Project code name: heron-5") {
		t.Fatalf("the user message after a commit lacks the memory reminder:\n%s", text)
	}
	log, err := a.MemoryLog(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].Message != "Write notes.md" || log[1].Message != "Create memory" {
		t.Fatalf("log = %+v", log)
	}
	if line := log[0].Line(); !strings.Contains(line, "Write notes.md (notes.md)") || !strings.HasPrefix(line, log[0].Revision[:8]) {
		t.Errorf("Line() = %q", line)
	}
	c, diff, err := a.MemoryShow(ctx, log[0].Revision[:7])
	if err != nil {
		t.Fatal(err)
	}
	if c.Revision != log[0].Revision || !strings.Contains(diff, "+Project code name: heron-5") {
		t.Errorf("show = %+v\n%s", c, diff)
	}
	head, err := a.MemoryRevert(ctx, log[0].Revision)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.memDir, "notes.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after revert notes.md still exists: %v", err)
	}
	if _, _, err := a.MemoryShow(ctx, "deadbeef"); !errors.Is(err, memfs.ErrUnknownRevision) {
		t.Errorf("show of an unknown revision: %v, want ErrUnknownRevision", err)
	}
	w.say(a, conv, "what changed?", nil)
	reqs := w.model.Requests()
	text := reqs[len(reqs)-1].LastMessage().Text()
	if !strings.Contains(text, "memory-update revision="+head) || !strings.Contains(text, "-Project code name: heron-5") {
		t.Errorf("the user message after a revert lacks the memory reminder:\n%s", text)
	}

	bare := w.agent(memAgentOpts{noMemory: true})
	if _, err := bare.MemoryLog(ctx, 5); !errors.Is(err, agentcore.ErrNoMemoryHistory) {
		t.Errorf("MemoryLog without memory: %v", err)
	}
}

// A person's uncommitted hand edit stays out of every prompt even after the
// agent commits its own memory write: the harness commits only the path
// the tool wrote.
func TestAgentMemoryCommitLeavesHandEditsOut(t *testing.T) {
	w := newMemWorld(t)
	human := filepath.Join(w.memDir, "system", "human.md")
	old, err := os.ReadFile(human)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(human, append(old, "HAND-EDIT-5150 must stay out\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	factFile := filepath.Join(w.memDir, "notes", "city.md")
	w.model.Push(
		fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "call-w", Name: "Write",
			Arguments: mustJSON(t, map[string]string{"file_path": factFile, "content": "City: Lyon-4410\n"})}}},
		fakemodel.Step{Text: "Noted."},
		fakemodel.Step{Text: "New conversation."},
	)
	a := w.agent(memAgentOpts{})
	if res := w.say(a, w.conversation(a), "Remember Lyon-4410.", nil); res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("turn: %s %s", res.StopReason, res.Error)
	}
	w.say(a, w.conversation(a), "Hello.", nil)
	reqs := w.model.Requests()
	sys := splitRequest(t, reqs[len(reqs)-1]).system
	if !strings.Contains(sys, "Lyon-4410") {
		t.Fatal("the agent's committed fact is missing from a new conversation's prompt")
	}
	for i, r := range reqs {
		if strings.Contains(string(r.Raw), "HAND-EDIT-5150") {
			t.Errorf("request %d carries the uncommitted hand edit", i+1)
		}
	}
}

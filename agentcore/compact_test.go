package agentcore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// paddedPreset is the default preset grown so that system prompt + tool
// schemas come to about 3,000 tokens, as issue 4's small-window test asks.
func paddedPreset(w *memWorld, chars int) string {
	p := agentcore.DefaultPreset("main", w.ws, w.memDir) + "\n\n# Project handbook\n"
	line := "- Keep changes small, explain them briefly, and check results before reporting.\n"
	for len(p) < chars {
		p += line
	}
	return p
}

// TestCompactSmallWindow100Turns is issue 4's small-window "done when":
// a window of 8,000 tokens, 1,000 output tokens, ~3,000 tokens of system
// prompt and tools, tool outputs of ~20,000 characters. Over 100 turns no
// request exceeds the window (counting tokens the fake's way: request
// bytes/4), no turn ends in max_tokens or an error, the transcript keeps
// every message and Recall finds a fact from turn 3 at turn 100.
func TestCompactSmallWindow100Turns(t *testing.T) {
	const window, maxOut = 8000, 1000
	w := newMemWorld(t)
	var big strings.Builder
	for i := 0; big.Len() < 20000; i++ {
		fmt.Fprintf(&big, "record %05d: the quick brown fox jumps over the lazy dog, twice over, %06d\n", i, i*7)
	}
	if err := os.WriteFile(filepath.Join(w.ws, "big.txt"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	toolCalls, summaries := 0, 0
	w.model.SetResponder(func(r fakemodel.Request) fakemodel.Step {
		mu.Lock()
		defer mu.Unlock()
		n := lastTurn(r)
		if isSummarization(r) {
			summaries++
			return fakemodel.Step{Text: fmt.Sprintf("Up to turn %d the user asked for reads of big.txt and small talk; nothing is open. Search Recall for details.", n)}
		}
		if r.LastMessage().Role == "tool" {
			return fakemodel.Step{Text: fmt.Sprintf("Handled the tool output of turn %d. %s", n, strings.Repeat("Details follow. ", 20))}
		}
		id := fmt.Sprintf("call-%d", n)
		switch {
		case n == 100:
			toolCalls++
			return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Recall", Arguments: `{"query":"zebracorn"}`}}}
		case n%4 == 1:
			toolCalls++
			return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Read", Arguments: `{"file_path":"big.txt"}`}}}
		case n%4 == 2:
			toolCalls++
			return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Grep", Arguments: `{"pattern":"record 0000[0-9]","path":"big.txt"}`}}}
		default:
			return fakemodel.Step{Text: fmt.Sprintf("Answer to turn %d. %s", n, strings.Repeat("Some words to fill the window. ", 25))}
		}
	})
	a := w.agent(memAgentOpts{window: window, maxOut: maxOut, preset: paddedPreset(w, 6500)})
	if got := a.Config().ClampChars; got > window {
		t.Fatalf("ClampChars = %d, want at most the window (%d)", got, window)
	}
	conv := w.conversation(a)
	ctx := context.Background()
	var compactions []string
	sink := agentcore.SinkFunc(func(e agentcore.Event) {
		if e.Type == agentcore.EventCompaction {
			compactions = append(compactions, e.Text)
		}
	})
	var turn3ID string
	for n := 1; n <= 100; n++ {
		text := fmt.Sprintf("This is turn %d.", n)
		if n == 3 {
			text += " Please note: the vault word is zebracorn."
		}
		res := w.say(a, conv, text, sink)
		if res.StopReason != agentcore.StopEndTurn {
			t.Fatalf("turn %d ended with %s: %s", n, res.StopReason, res.Error)
		}
		if n == 3 {
			view, err := w.db.View(ctx, conv)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range view {
				if m.Role == agentcore.RoleUser && strings.Contains(m.Text(), "zebracorn") {
					turn3ID = m.ID
				}
			}
		}
	}

	reqs := w.model.Requests()
	first := splitRequest(t, reqs[0])
	fixed := (len(first.system) + len(joinRaw(first.tools))) / 4
	t.Logf("%d requests (%d summaries), %d compactions; system+tools ≈ %d tokens", len(reqs), summaries, len(compactions), fixed)
	if fixed < 2700 || fixed > 3500 {
		t.Errorf("system prompt + tools ≈ %d tokens, want about 3,000", fixed)
	}
	peak := 0
	for i, r := range reqs {
		need := len(r.Raw)/4 + r.MaxTokens
		peak = max(peak, need)
		if need > window {
			t.Errorf("request %d needs %d tokens (%d prompt + %d output), over the %d window", i+1, need, len(r.Raw)/4, r.MaxTokens, window)
		}
		if !isSummarization(r) {
			if r.MaxTokens != maxOut {
				t.Errorf("request %d asks for %d output tokens, want %d", i+1, r.MaxTokens, maxOut)
			}
			checkPairing(t, i, r)
		}
	}
	t.Logf("largest request: %d of %d tokens including the output reserve", peak, window)
	if len(compactions) == 0 || summaries != len(compactions) {
		t.Fatalf("%d compactions, %d summary requests", len(compactions), summaries)
	}
	t.Logf("first compaction: %s", compactions[0])

	// The transcript keeps every message: 100 user messages, one assistant
	// message per step, one result per tool call, one summary per
	// compaction, numbered without gaps.
	all, err := w.db.Messages(ctx, conv, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	steps := len(reqs) - summaries
	if want := 100 + steps + toolCalls + len(compactions); len(all) != want {
		t.Errorf("transcript has %d messages, want %d", len(all), want)
	}
	for i, m := range all {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
	overflowed := false
	for _, m := range all {
		if m.Role == agentcore.RoleTool && strings.Contains(m.Text(), "the full output is in") {
			overflowed = true
		}
	}
	entries, _ := os.ReadDir(w.overflow)
	if !overflowed || len(entries) == 0 {
		t.Errorf("no tool output was clamped to an overflow file (%d files)", len(entries))
	}

	// Recall at turn 100 found turn 3's message, long evicted from view.
	view, err := w.db.View(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range view {
		if m.ID == turn3ID {
			t.Errorf("turn 3's message is still in view; the test proves nothing about Recall")
		}
	}
	last := all[len(all)-2]
	if last.Role != agentcore.RoleTool || last.ToolName != "Recall" || turn3ID == "" || !strings.Contains(last.Text(), turn3ID) || !strings.Contains(last.Text(), "zebracorn") {
		t.Errorf("Recall at turn 100 did not find turn 3 (id %s):\n%s", turn3ID, last.Text())
	}
}

// TestCompactOnContextLengthError: a provider "context length exceeded"
// compacts the view and retries the step once.
func TestCompactOnContextLengthError(t *testing.T) {
	w := newMemWorld(t,
		fakemodel.Step{Text: "first answer"},
		fakemodel.Step{Text: "second answer"},
		fakemodel.ContextLengthError(),
		fakemodel.Step{Text: "Summary: two greetings were exchanged."},
		fakemodel.Step{Text: "third answer"},
	)
	a := w.agent(memAgentOpts{window: 32000, maxOut: 1000})
	conv := w.conversation(a)
	w.say(a, conv, "hello one", nil)
	w.say(a, conv, "hello two", nil)
	var notes []string
	res := w.say(a, conv, "hello three", agentcore.SinkFunc(func(e agentcore.Event) {
		if e.Type == agentcore.EventCompaction {
			notes = append(notes, e.Text)
		}
	}))
	if res.StopReason != agentcore.StopEndTurn || res.Text != "third answer" {
		t.Fatalf("turn 3: %s %q %s", res.StopReason, res.Text, res.Error)
	}
	if len(notes) != 1 {
		t.Fatalf("%d compaction events, want 1", len(notes))
	}
	reqs := w.model.Requests()
	if len(reqs) != 5 || !isSummarization(reqs[3]) {
		t.Fatalf("%d requests; the 4th should be the summary", len(reqs))
	}
	retry := reqs[4]
	if retry.Messages[1].Role != "user" || !strings.Contains(retry.Messages[1].Text(), "<conversation-summary>") ||
		!strings.Contains(retry.Messages[1].Text(), "two greetings were exchanged") {
		t.Errorf("the retried request does not start with the summary: %s", retry.Messages[1].Text())
	}
	if !strings.Contains(retry.LastMessage().Text(), "hello three") {
		t.Errorf("the retried request lost the new user message")
	}
	if strings.Contains(allText(retry), "hello one") && !strings.Contains(retry.Messages[1].Text(), "hello one") {
		t.Errorf("an evicted message is still in the retried request")
	}
	all, _ := w.db.Messages(context.Background(), conv, 0, 100)
	if len(all) != 7 { // 3 users, 3 assistants, 1 summary
		t.Errorf("transcript has %d messages, want 7", len(all))
	}
}

// TestCompactTwiceFailsClearly: a second context-length error after the
// retry ends the turn with the provider's message instead of looping.
func TestCompactTwiceFailsClearly(t *testing.T) {
	w := newMemWorld(t,
		fakemodel.Step{Text: "first answer"},
		fakemodel.ContextLengthError(),
		fakemodel.Step{Text: "Summary."},
		fakemodel.ContextLengthError(),
	)
	a := w.agent(memAgentOpts{window: 32000, maxOut: 1000})
	conv := w.conversation(a)
	w.say(a, conv, "hello one", nil)
	res := w.say(a, conv, "hello two", nil)
	if res.StopReason != agentcore.StopError || !strings.Contains(res.Error, "maximum context length") {
		t.Fatalf("turn 2: %s %s", res.StopReason, res.Error)
	}
	if n := len(w.model.Requests()); n != 4 {
		t.Errorf("%d requests, want 4 (no loop)", n)
	}
}

// TestCompactMessageTooBig: a single message that cannot fit ends the
// turn with a clear error before any request is sent.
func TestCompactMessageTooBig(t *testing.T) {
	w := newMemWorld(t)
	a := w.agent(memAgentOpts{window: 8000, maxOut: 1000})
	conv := w.conversation(a)
	res := w.say(a, conv, strings.Repeat("a long paste ", 3000), nil)
	if res.StopReason != agentcore.StopError || !strings.Contains(res.Error, "too big for the model's context window") {
		t.Fatalf("turn: %s %s", res.StopReason, res.Error)
	}
	if n := len(w.model.Requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// TestCompactCommand: /compact summarizes the view, keeps the transcript,
// recompiles the prompt and refuses while a turn holds the lease.
func TestCompactCommand(t *testing.T) {
	w := newMemWorld(t,
		fakemodel.Step{Text: "first answer"},
		fakemodel.Step{Text: "Summary: the user said hello."},
		fakemodel.Step{Text: "after compaction"},
	)
	ctx := context.Background()
	a := w.agent(memAgentOpts{})
	conv := w.conversation(a)
	w.say(a, conv, "hello", nil)

	ok, err := w.db.AcquireLease(ctx, conv, "someone-else", time.Minute)
	if err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	if _, err := a.Compact(ctx, conv); !errors.Is(err, agentcore.ErrBusy) {
		t.Fatalf("Compact on a busy conversation: %v, want ErrBusy", err)
	}
	if err := w.db.ReleaseLease(ctx, conv, "someone-else"); err != nil {
		t.Fatal(err)
	}
	res, err := a.Compact(ctx, conv)
	if err != nil || !res.Compacted || res.Evicted != 2 || res.Kept != 0 {
		t.Fatalf("Compact: %+v %v", res, err)
	}
	view, _ := w.db.View(ctx, conv)
	if len(view) != 1 || view[0].ID != res.SummaryID {
		t.Fatalf("view after /compact has %d messages", len(view))
	}
	w.say(a, conv, "and now?", nil)
	reqs := w.model.Requests()
	if got := reqs[2].Messages[1].Text(); !strings.Contains(got, "the user said hello") || !strings.Contains(got, "<system-reminder>\ncontext:") {
		t.Errorf("the request after /compact lacks the summary or the re-sent context reminder:\n%s", got)
	}
	if strings.Contains(reqs[2].LastMessage().Text(), "context:") {
		t.Errorf("the context reminder was sent again on the next user message although unchanged")
	}
	all, _ := w.db.Messages(ctx, conv, 0, 100)
	if len(all) != 5 {
		t.Errorf("transcript has %d messages, want 5", len(all))
	}
}

// checkPairing checks a request's view: it starts with a user message, and
// every tool call is answered right after its assistant message and every
// result follows its call (compaction never separates them).
func checkPairing(t *testing.T, i int, r fakemodel.Request) {
	t.Helper()
	msgs := r.Messages
	if len(msgs) < 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		t.Errorf("request %d does not start with system, user", i+1)
		return
	}
	open := map[string]bool{}
	for j, m := range msgs[1:] {
		switch m.Role {
		case "assistant":
			if len(open) > 0 {
				t.Errorf("request %d: message %d follows unanswered tool calls", i+1, j+1)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case "tool":
			if !open[m.ToolCallID] {
				t.Errorf("request %d: result %s has no call before it", i+1, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			if len(open) > 0 {
				t.Errorf("request %d: user message %d follows unanswered tool calls", i+1, j+1)
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("request %d ends with unanswered tool calls", i+1)
	}
}

// TestCompactCalibratedByReportedUsage: a provider whose tokens are denser
// than four characters (here 2.5 bytes a token) is learned from its usage
// reports, so requests still fit by the provider's own count.
func TestCompactCalibratedByReportedUsage(t *testing.T) {
	const window, maxOut = 12000, 1000
	w := newMemWorld(t)
	tokensOf := func(r fakemodel.Request) int { return len(r.Raw) * 10 / 25 }
	w.model.SetResponder(func(r fakemodel.Request) fakemodel.Step {
		text := fmt.Sprintf("Answer to turn %d. %s", lastTurn(r), strings.Repeat("Dense words here. ", 100))
		if isSummarization(r) {
			text = "Summary of the earlier turns."
		}
		return fakemodel.Step{Text: text, Usage: &fakemodel.Usage{PromptTokens: tokensOf(r), CompletionTokens: len(text) / 4}}
	})
	a := w.agent(memAgentOpts{window: window, maxOut: maxOut})
	conv := w.conversation(a)
	compactions := 0
	for n := 1; n <= 40; n++ {
		res := w.say(a, conv, fmt.Sprintf("This is turn %d.", n), agentcore.SinkFunc(func(e agentcore.Event) {
			if e.Type == agentcore.EventCompaction {
				compactions++
			}
		}))
		if res.StopReason != agentcore.StopEndTurn {
			t.Fatalf("turn %d: %s %s", n, res.StopReason, res.Error)
		}
	}
	if compactions == 0 {
		t.Fatal("no compaction happened; the test proves nothing")
	}
	peak := 0
	for i, r := range w.model.Requests() {
		need := tokensOf(r) + r.MaxTokens
		peak = max(peak, need)
		if need > window {
			t.Errorf("request %d needs %d tokens by the provider's count, over the %d window", i+1, need, window)
		}
	}
	t.Logf("%d compactions; largest request %d of %d tokens by the provider's count", compactions, peak, window)
}

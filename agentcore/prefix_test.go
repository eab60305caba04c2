package agentcore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/tools"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

var turnNumber = regexp.MustCompile(`\bturn (\d+)\b`)

// lastTurn is the number of the newest "turn N" user message of a request.
func lastTurn(r fakemodel.Request) int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		if m := turnNumber.FindAllStringSubmatch(r.Messages[i].Text(), -1); m != nil {
			n, _ := strconv.Atoi(m[len(m)-1][1])
			return n
		}
	}
	return 0
}

// TestPrefixStability30Turns is issue 4's prefix-stability "done when":
// over 30 scripted turns with tool calls and two memory commits, every
// request's system prompt, tool schemas and messages extend the previous
// request byte for byte, except exactly at a compaction (/compact after
// turn 20).
func TestPrefixStability30Turns(t *testing.T) {
	w := newMemWorld(t)
	if err := os.WriteFile(filepath.Join(w.ws, "plan.txt"), []byte("step one\nstep two\nstep three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.model.SetResponder(func(r fakemodel.Request) fakemodel.Step {
		if isSummarization(r) {
			return fakemodel.Step{Text: "Turns 1-20: the user asked for file reads and two memory notes (owl-17, lynx-42)."}
		}
		n := lastTurn(r)
		if r.LastMessage().Role == "tool" {
			return fakemodel.Step{Text: fmt.Sprintf("Done with turn %d.", n)}
		}
		id := fmt.Sprintf("call-%d", n)
		switch {
		case n == 5 || n == 15:
			fact := map[int]string{5: "owl-17", 15: "lynx-42"}[n]
			return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Write", Arguments: mustJSON(t, map[string]string{
				"file_path": filepath.Join(w.memDir, fmt.Sprintf("notes/turn%d.md", n)), "content": "Remember " + fact + ".\n"})}}}
		case n%3 == 1:
			return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Read", Arguments: `{"file_path":"plan.txt"}`}}}
		case n%3 == 2:
			return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Grep", Arguments: `{"pattern":"step"}`}}}
		default:
			return fakemodel.Step{Text: fmt.Sprintf("Answer to turn %d.", n)}
		}
	})
	a := w.agent(memAgentOpts{})
	conv := w.conversation(a)
	compactAt := -1
	var events []agentcore.Event
	for n := 1; n <= 30; n++ {
		res := w.say(a, conv, fmt.Sprintf("This is turn %d.", n), agentcore.SinkFunc(func(e agentcore.Event) { events = append(events, e) }))
		if res.StopReason != agentcore.StopEndTurn {
			t.Fatalf("turn %d: %s %s", n, res.StopReason, res.Error)
		}
		if n == 20 {
			compactAt = len(w.model.Requests())
			cr, err := a.Compact(context.Background(), conv)
			if err != nil || !cr.Compacted {
				t.Fatalf("Compact: %+v %v", cr, err)
			}
			t.Logf("/compact: %s", cr.Note)
		}
	}
	log, err := w.repo.Log(context.Background(), 0)
	if err != nil || len(log) != 3 {
		t.Fatalf("memory has %d commits, want 3 (layout + two notes): %v", len(log), err)
	}

	reqs := w.model.Requests()
	if !isSummarization(reqs[compactAt]) {
		t.Fatalf("request %d is not the summary request", compactAt+1)
	}
	var prev *wireRequest
	var shared, total, sharedAll, totalAll int
	breaks := 0
	for i, r := range reqs {
		if isSummarization(r) {
			continue
		}
		cur := splitRequest(t, r)
		if prev != nil {
			atCompaction := i == compactAt+1
			c := commonPrefix(prev.prefixBytes(), cur.prefixBytes())
			sharedAll += c
			totalAll += len(cur.prefixBytes())
			extends := cur.system == prev.system && len(cur.messages) >= len(prev.messages) && bytes.Equal(joinRaw(prev.tools), joinRaw(cur.tools))
			for j := 0; extends && j < len(prev.messages); j++ {
				extends = bytes.Equal(prev.messages[j], cur.messages[j])
			}
			switch {
			case atCompaction:
				if extends {
					t.Errorf("request %d after the compaction still extends the old prefix", i+1)
				}
				if !strings.Contains(cur.system, "owl-17") || !strings.Contains(cur.system, "lynx-42") {
					t.Errorf("the prompt recompiled at compaction lacks the committed memory")
				}
				breaks++
			case !extends:
				t.Errorf("request %d does not extend request %d byte for byte", i+1, i)
			default:
				shared += c
				total += len(cur.prefixBytes())
			}
		}
		p := cur
		prev = &p
	}
	if breaks != 1 {
		t.Errorf("%d prefix breaks, want exactly 1 (the compaction)", breaks)
	}
	if strings.Contains(splitRequest(t, reqs[compactAt-1]).system, "owl-17") {
		t.Errorf("memory committed mid-conversation reached the system prompt before the compaction")
	}
	var compactions int
	for _, e := range events {
		if e.Type == agentcore.EventCompaction {
			compactions++
		}
	}
	t.Logf("%d requests; outside the compaction every request reused 100%% of the previous one; unchanged prefix %d of %d prompt bytes (%.1f%%, the rest is new messages); including the compaction: %.1f%%",
		len(reqs), shared, total, 100*float64(shared)/float64(total), 100*float64(sharedAll)/float64(totalAll))
	if compactions != 0 {
		t.Errorf("%d compaction events during turns, want none (the window is unknown)", compactions)
	}
}

func joinRaw(rs []json.RawMessage) []byte {
	var b bytes.Buffer
	for _, r := range rs {
		b.Write(r)
	}
	return b.Bytes()
}

// TestPrefixPromptAndToolSizes measures the default agent's first request:
// the real preset, a fresh memfs repository and tools.Default() (issue 4's
// closing-note figures; goal under 12,000 characters together).
func TestPrefixPromptAndToolSizes(t *testing.T) {
	w := newMemWorld(t, fakemodel.Step{Text: "hi"})
	a := w.agent(memAgentOpts{})
	w.say(a, w.conversation(a), "hello", nil)
	r := splitRequest(t, w.model.Requests()[0])
	sys := utf8.RuneCountInString(r.system)
	wire := 0
	for _, tl := range r.tools {
		wire += utf8.RuneCount(tl)
	}
	specs := 0
	for _, tl := range tools.Default() {
		s := tl.Spec()
		specs += len(s.Name) + utf8.RuneCountInString(s.Description) + len(s.Parameters)
	}
	t.Logf("system prompt %d chars; tool schemas %d chars on the wire (%d in specs, %d tools); together %d",
		sys, wire, specs, len(r.tools), sys+wire)
	if sys+wire >= 12000 {
		t.Errorf("system prompt + tool schemas = %d characters, goal is under 12,000", sys+wire)
	}
}

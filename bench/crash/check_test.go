package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func user(seq int64, text string) agentcore.Message {
	return agentcore.Message{Seq: seq, Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: text}}}
}

func asst(seq int64, text string, calls ...string) agentcore.Message {
	m := agentcore.Message{Seq: seq, Role: agentcore.RoleAssistant}
	if text != "" {
		m.Parts = []agentcore.Part{{Type: agentcore.PartText, Text: text}}
	}
	for _, id := range calls {
		m.ToolCalls = append(m.ToolCalls, agentcore.ToolCall{ID: id, Name: "Bash"})
	}
	return m
}

func result(seq int64, call, text string) agentcore.Message {
	return agentcore.Message{Seq: seq, Role: agentcore.RoleTool, ToolCallID: call, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: text}}}
}

// TestCheckTranscripts: the checker accepts a valid transcript and names
// each way one can break.
func TestCheckTranscripts(t *testing.T) {
	eps := []*episode{{token: "A1"}, {token: "A2"}}
	tests := []struct {
		name string
		msgs []agentcore.Message
		want string // "" for valid
	}{
		{"valid", []agentcore.Message{
			user(1, "task A1: tool"), asst(2, "", "call_A1_1"), result(3, "call_A1_1", "ok"), asst(4, answerText("A1", 1)),
			user(5, "task A2: plain"), asst(6, answerText("A2", 0)),
		}, ""},
		{"call left open before the next message", []agentcore.Message{
			user(1, "task A1: tool"), asst(2, "", "call_A1_1"), user(3, "task A2: plain"),
		}, "follows unanswered tool calls"},
		{"result twice", []agentcore.Message{
			user(1, "task A1: tool"), asst(2, "", "call_A1_1"), result(3, "call_A1_1", "ok"), result(4, "call_A1_1", "ok"),
		}, "already answered call"},
		{"open at the end", []agentcore.Message{
			user(1, "task A1: tool"), asst(2, "", "call_A1_1"),
		}, "ends with unanswered tool calls"},
		{"input twice", []agentcore.Message{
			user(1, "task A1: plain"), user(2, "task A1: plain"), asst(3, answerText("A1", 0)),
		}, "input was appended 2 times"},
		{"answer stored twice", []agentcore.Message{
			user(1, "task A1: plain"), asst(2, answerText("A1", 0)), asst(3, answerText("A1", 0)),
		}, "final answer was stored 2 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &report{transcriptOK: true}
			checkTranscripts(r, &dbFacts{convs: map[string][]agentcore.Message{"c1": tt.msgs}}, eps)
			var got []string
			for _, p := range r.problems {
				got = append(got, p.what)
			}
			if tt.want == "" {
				if !r.transcriptOK || len(got) > 0 {
					t.Fatalf("valid transcript reported: %v", got)
				}
				return
			}
			if r.transcriptOK || !strings.Contains(strings.Join(got, "\n"), tt.want) {
				t.Fatalf("problems %v, want one containing %q", got, tt.want)
			}
		})
	}
}

// TestLostCause: the transcript tells where an unanswered turn stopped;
// the shape of issue 10 (a resumed turn killed between the tool result and
// the next model call) is named as such.
func TestLostCause(t *testing.T) {
	ep := &episode{token: "A1"}
	tests := []struct {
		msgs []agentcore.Message
		want string
	}{
		{[]agentcore.Message{user(1, "task A1: ask"), asst(2, "", "call_A1_1"), result(3, "call_A1_1", "asked A1")},
			"the turn ended after a tool result (call_A1_1) without a model call"},
		{[]agentcore.Message{user(1, "task A1: ask"), asst(2, "", "call_A1_1"), result(3, "call_A1_1", "Permission denied by telegram:101.")},
			"the turn ended after a denied tool's result"},
		{[]agentcore.Message{user(1, "task A1: ask"), asst(2, "", "call_A1_1"), result(3, "call_A1_1", "Outcome unknown: …"), user(4, "task A2: plain")},
			"outcome unknown"},
		{[]agentcore.Message{user(1, "task A1: plain"), asst(2, answerText("A1", 0))},
			"the answer is in the transcript"},
		{[]agentcore.Message{user(1, "task A1: ask"), asst(2, "", "call_A1_1")},
			"unanswered tool calls"},
		{nil, "its input is in no transcript"},
	}
	for _, tt := range tests {
		got := lostCause(ep, &dbFacts{convs: map[string][]agentcore.Message{"c1": tt.msgs}}, nil)
		if !strings.Contains(got, tt.want) {
			t.Errorf("lostCause = %q, want it to contain %q", got, tt.want)
		}
	}
}

// TestRespond: the fake model calls the episode's tools in order, then
// answers with the markers; the same request gets the same answer.
func TestRespond(t *testing.T) {
	c := &campaign{log: newEventLog(nil), episodes: map[string]*episode{}}
	ep := &episode{token: "B3", cmds: []string{"echo B3", "./mark.sh B3 1"}, delays: []time.Duration{0, 0, 0}}
	c.episodes["B3"] = ep
	msg := func(role, text, callID string) fakemodel.Message {
		m := fakemodel.Message{Role: role, ToolCallID: callID}
		m.Content, _ = json.Marshal(text)
		return m
	}
	reqs := [][]fakemodel.Message{
		{msg("system", "prompt", ""), msg("user", "task B3: two-tools", "")},
		{msg("system", "prompt", ""), msg("user", "task B3: two-tools", ""), msg("assistant", "", ""), msg("tool", "B3", "call_B3_1")},
		{msg("system", "prompt", ""), msg("user", "task B3: two-tools", ""), msg("assistant", "", ""), msg("tool", "B3", "call_B3_1"), msg("assistant", "", ""), msg("tool", "marked", "call_B3_2")},
	}
	for i, msgs := range reqs {
		for range 2 { // a retried step sees the same answer
			st := c.respond(fakemodel.Request{Messages: msgs})
			switch {
			case i < 2:
				if len(st.ToolCalls) != 1 || !strings.Contains(st.ToolCalls[0].Arguments, ep.cmds[i]) || st.ToolCalls[0].ID != "call_B3_"+string(rune('1'+i)) {
					t.Fatalf("step %d = %+v, want a call of %q", i+1, st.ToolCalls, ep.cmds[i])
				}
			default:
				if st.Text != answerText("B3", 2) || len(st.ToolCalls) != 0 {
					t.Fatalf("final step = %+v", st)
				}
			}
		}
	}
	if st := c.respond(fakemodel.Request{Messages: []fakemodel.Message{msg("user", "hello", "")}}); st.Text == "" {
		t.Fatal("a request naming no task got no text")
	}
}

// TestAnswerMarkers: the first streamed third of an answer carries the
// ANS marker, only the whole text the END one.
func TestAnswerMarkers(t *testing.T) {
	text := answerText("E12", 1)
	third := string([]rune(text)[:len([]rune(text))/3])
	if m := ansRE.FindStringSubmatch(third); m == nil || m[1] != "E12" {
		t.Fatalf("first third %q lacks the ANS marker", third)
	}
	if endRE.MatchString(third) || !endRE.MatchString(text) {
		t.Fatalf("END marker: third %q, whole %q", third, text)
	}
	if m := ansRE.FindStringSubmatch(answerText("E1", 0)); m[1] != "E1" {
		t.Fatal("E1 is read as another token")
	}
}

// TestStory: a message's story has its own events and the starts and kills
// around them, not the old-button presses of the final phase.
func TestStory(t *testing.T) {
	evs := []event{
		{Kind: "start"}, {Kind: "ready"},
		{Kind: "message", Token: "A1"}, {Kind: "message", Token: "B1"},
		{Kind: "model", Token: "A1"}, {Kind: "kill"}, {Kind: "start"}, {Kind: "ready"},
		{Kind: "kill"}, {Kind: "start"}, {Kind: "ready"},
		{Kind: "kill"}, {Kind: "start"}, {Kind: "ready"},
		{Kind: "old-press", Token: "A1"},
	}
	var kinds []string
	for _, e := range story(evs, "A1") {
		kinds = append(kinds, e.Kind)
	}
	want := "message model kill start ready kill start ready"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("story = %s, want %s", got, want)
	}
	// A related token (a superseded message's successor) joins the story.
	kinds = nil
	for _, e := range story(evs, "A1", "B1") {
		kinds = append(kinds, e.Kind+e.Token)
	}
	if got := strings.Join(kinds, " "); !strings.HasPrefix(got, "messageA1 messageB1 modelA1") {
		t.Fatalf("story with B1 = %s", got)
	}
}

func TestPct(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 3}, {100, 5}, {0, 1}, {90, 5}} {
		if got := pct(ds, tt.p); got != tt.want {
			t.Errorf("pct(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if pct(nil, 50) != 0 {
		t.Error("pct of nothing")
	}
}

// TestResumeDelays: a step of a turn cut by a kill is measured from the
// next ready; a turn waiting for a person is not.
func TestResumeDelays(t *testing.T) {
	s := time.Second
	evs := []event{
		{At: 0, Kind: "ready"},
		{At: 1 * s, Kind: "model", Token: "A1"},
		{At: 1 * s, Kind: "model", Token: "B1"},
		{At: 1 * s, Kind: "approval", Token: "B1"},
		{At: 2 * s, Kind: "kill"},
		{At: 2 * s, Kind: "start"},
		{At: 3 * s, Kind: "ready"},
		{At: 5 * s, Kind: "press", Token: "B1", Text: "telegram:101 presses Approve on message 9 (decide, update 4)"},
		{At: 5 * s, Kind: "model", Token: "B1"},
		{At: 14 * s, Kind: "model", Token: "A1"},
		{At: 15 * s, Kind: "model", Token: "A1"}, // its next step, no kill between
	}
	got := resumeDelays(evs)
	if len(got) != 1 || got[0] != 11*s {
		t.Fatalf("resumeDelays = %v, want [11s]", got)
	}
}

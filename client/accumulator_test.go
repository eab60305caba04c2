package client

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// row is an Entry as the tests compare it.
type row struct {
	Kind, UUID, OTID, Text string
	Streaming              bool
	Call                   string // tool call: id name raw-args | parsed-args -> result-uuid result-text outcome
}

func rows(es []Entry) []row {
	var out []row
	for _, e := range es {
		r := row{Kind: e.Kind, UUID: e.UUID, OTID: e.OTID, Text: e.Text, Streaming: e.Streaming}
		if tc := e.Tool; tc != nil {
			r.Call = fmt.Sprintf("%s %s %s | %s", tc.ID, tc.Name, tc.RawArguments, tc.Arguments)
			if tc.Result != nil {
				r.Call += fmt.Sprintf(" -> %s %s %s", tc.Result.UUID, tc.Result.Text, tc.Result.Outcome)
			}
		}
		out = append(out, r)
	}
	return out
}

// seq numbers events per run as the server does, so tests write only what
// matters.
func seq(evs ...Event) []Event {
	n := map[string]int64{}
	for i := range evs {
		if evs[i].RunID == "" {
			evs[i].RunID = "run-1"
		}
		if evs[i].SeqID == 0 {
			n[evs[i].RunID]++
			evs[i].SeqID = n[evs[i].RunID]
		} else {
			n[evs[i].RunID] = evs[i].SeqID
		}
	}
	return evs
}

func str(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

func TestAccumulatorIdentity(t *testing.T) {
	cases := []struct {
		name   string
		events []Event
		want   []row
	}{{
		// The seed's trap: one message, two slices sharing its uuid that
		// differ by type and otid. Keyed on (type, otid): two rows.
		name: "two slices share a uuid and differ by type and otid",
		events: seq(
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "r-1", Text: "think"},
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "a-1", Text: "hel"},
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "r-1", Text: "ing"},
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "a-1", Text: "lo"},
		),
		want: []row{
			{Kind: KindReasoning, UUID: "m1", OTID: "r-1", Text: "thinking", Streaming: true},
			{Kind: KindAssistant, UUID: "m1", OTID: "a-1", Text: "hello", Streaming: true},
		},
	}, {
		// A provider reuses an otid across kinds: keyed on otid alone the
		// answer would collapse into the reasoning.
		name: "an otid reused across kinds",
		events: seq(
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "x", Text: "hmm "},
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "x", Text: "answer"},
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "x", Text: "more"},
			Event{Type: EventAssistantMessage, UUID: "m1", OTID: "x", Text: "answer"},
		),
		want: []row{
			{Kind: KindReasoning, UUID: "m1", OTID: "x", Text: "hmm more"},
			{Kind: KindAssistant, UUID: "m1", OTID: "x", Text: "answer"},
		},
	}, {
		name: "without otids the uuid keys each family on its own",
		events: seq(
			Event{Type: EventReasoningDelta, UUID: "m1", Text: "r"},
			Event{Type: EventAssistantDelta, UUID: "m1", Text: "a"},
		),
		want: []row{
			{Kind: KindReasoning, UUID: "m1", Text: "r", Streaming: true},
			{Kind: KindAssistant, UUID: "m1", Text: "a", Streaming: true},
		},
	}, {
		name: "partial tool arguments stay raw until they parse",
		events: seq(
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Bash", Arguments: str(`{"command": "l`)},
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", Arguments: str(`s -la"}`)},
		),
		want: []row{{Kind: KindToolCall, UUID: "m1", Call: `c1 Bash {"command": "ls -la"} | {"command": "ls -la"}`}},
	}, {
		name: "a fragment alone is not parsed arguments",
		events: seq(
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Bash", Arguments: str(`{"command": "l`)},
		),
		want: []row{{Kind: KindToolCall, UUID: "m1", Call: `c1 Bash {"command": "l | `}},
	}, {
		name: "parsed arguments are never overwritten by a partial fragment",
		events: seq(
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", Arguments: str(`{"comm`)},
		),
		want: []row{{Kind: KindToolCall, UUID: "m1", Call: `c1 Bash {"command":"ls"} | {"command":"ls"}`}},
	}, {
		name: "arguments that never parse stay raw, also after the result",
		events: seq(
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Bash", Arguments: str(`{"command": ls}`)},
			Event{Type: EventToolResult, UUID: "t1", ToolCallID: "c1", Text: "Invalid arguments", Outcome: "error"},
		),
		want: []row{{Kind: KindToolCall, UUID: "m1", Call: `c1 Bash {"command": ls} |  -> t1 Invalid arguments error`}},
	}, {
		// Two calls of one message share its uuid: results join on the
		// toolCallId, whatever order they come in.
		name: "results join their calls on toolCallId",
		events: seq(
			Event{Type: EventAssistantMessage, UUID: "m1", OTID: "m1", Text: "two calls"},
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Read", Arguments: json.RawMessage(`{"path":"a"}`)},
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c2", ToolName: "Read", Arguments: json.RawMessage(`{"path":"b"}`)},
			Event{Type: EventToolResult, UUID: "t2", ToolCallID: "c2", Text: "B", Outcome: "ok"},
			Event{Type: EventToolResult, UUID: "t1", ToolCallID: "c1", Text: "A", Outcome: "ok"},
		),
		want: []row{
			{Kind: KindAssistant, UUID: "m1", OTID: "m1", Text: "two calls"},
			{Kind: KindToolCall, UUID: "m1", Call: `c1 Read {"path":"a"} | {"path":"a"} -> t1 A ok`},
			{Kind: KindToolCall, UUID: "m1", Call: `c2 Read {"path":"b"} | {"path":"b"} -> t2 B ok`},
		},
	}, {
		name: "the complete message replaces the deltas and marks the reasoning stored",
		events: seq(
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "m1", Text: "why"},
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "m1", Text: "hel"},
			Event{Type: EventAssistantMessage, UUID: "m1", OTID: "m1", Text: "hello"},
		),
		want: []row{
			{Kind: KindReasoning, UUID: "m1", OTID: "m1", Text: "why"},
			{Kind: KindAssistant, UUID: "m1", OTID: "m1", Text: "hello"},
		},
	}, {
		// seqId is compared only within its run: a replayed event is
		// dropped, a new run's low seqId is not.
		name: "replays are dropped per run",
		events: []Event{
			{Type: EventAssistantDelta, RunID: "run-a", SeqID: 1, UUID: "m1", OTID: "m1", Text: "a"},
			{Type: EventAssistantDelta, RunID: "run-a", SeqID: 2, UUID: "m1", OTID: "m1", Text: "b"},
			{Type: EventAssistantDelta, RunID: "run-a", SeqID: 2, UUID: "m1", OTID: "m1", Text: "b"},
			{Type: EventAssistantDelta, RunID: "run-a", SeqID: 1, UUID: "m1", OTID: "m1", Text: "a"},
			{Type: EventAssistantDelta, RunID: "run-b", SeqID: 1, UUID: "m2", OTID: "m2", Text: "c"},
		},
		want: []row{
			{Kind: KindAssistant, UUID: "m1", OTID: "m1", Text: "ab", Streaming: true},
			{Kind: KindAssistant, UUID: "m2", OTID: "m2", Text: "c", Streaming: true},
		},
	}, {
		name: "the user message comes with its turn's start, once",
		events: seq(
			Event{Type: EventUserMessage, RunID: "in-1", UUID: "in-1", InputID: "in-1", Text: "hi"},
			Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "hi"}},
			Event{Type: EventAssistantMessage, UUID: "m1", OTID: "m1", Text: "hello"},
			Event{Type: EventTurnEnd, RunID: "turn-1", InputID: "in-1", StopReason: "end_turn"},
			Event{Type: EventTurnStart, RunID: "turn-2", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "hi"}},
		),
		want: []row{
			{Kind: KindUser, UUID: "in-1", Text: "hi"},
			{Kind: KindAssistant, UUID: "m1", OTID: "m1", Text: "hello"},
		},
	}, {
		name: "a user message that arrives after its turn started goes before the turn",
		events: seq(
			Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-2"},
			Event{Type: EventAssistantMessage, UUID: "m2", OTID: "m2", Text: "answer"},
			Event{Type: EventUserMessage, RunID: "in-2", UUID: "in-2", InputID: "in-2", Text: "question"},
		),
		want: []row{
			{Kind: KindUser, UUID: "in-2", Text: "question"},
			{Kind: KindAssistant, UUID: "m2", OTID: "m2", Text: "answer"},
		},
	}, {
		// A step that failed mid-stream: its slice stays marked streaming
		// until a backfill says whether it was stored.
		name: "slices that never completed stay streaming after the turn's end",
		events: seq(
			Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "q"}},
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "m1", Text: "half an ans"},
			Event{Type: EventTurnEnd, RunID: "turn-1", InputID: "in-1", StopReason: "error"},
		),
		want: []row{{Kind: KindUser, UUID: "in-1", Text: "q"}, {Kind: KindAssistant, UUID: "m1", OTID: "m1", Text: "half an ans", Streaming: true}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewAccumulator()
			for _, ev := range c.events {
				a.Apply(ev)
			}
			if d := cmp.Diff(c.want, rows(a.Transcript())); d != "" {
				t.Errorf("transcript (-want +got):\n%s", d)
			}
		})
	}
}

func TestAccumulatorReplayCount(t *testing.T) {
	a := NewAccumulator()
	ev := Event{Type: EventAssistantDelta, RunID: "run-1", SeqID: 4, UUID: "m", OTID: "m", Text: "x"}
	if !a.Apply(ev) || a.Apply(ev) {
		t.Fatal("the first apply must apply, the second must be dropped")
	}
	if a.Replays() != 1 {
		t.Errorf("Replays = %d", a.Replays())
	}
}

// History never merges into a streaming turn: after a reset (or a turn
// whose process stopped), the fetched rows take the place of the slices
// in progress instead of following them as a second copy.
func TestAccumulatorBackfillRebases(t *testing.T) {
	history := []Message{
		{UUID: "in-1", Role: RoleUser, Text: "q1"},
		{UUID: "m1", OTID: "m1", Role: RoleAssistant, Reasoning: "because", Text: "a1", ToolCalls: []ToolCallInfo{{ToolCallID: "c1", ToolName: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
		{UUID: "t1", Role: RoleTool, ToolCallID: "c1", ToolName: "Bash", Text: "file", Outcome: "ok"},
		{UUID: "m2", OTID: "m2", Role: RoleAssistant, Text: "the whole second answer"},
	}
	want := []row{
		{Kind: KindUser, UUID: "in-1", Text: "q1"},
		{Kind: KindReasoning, UUID: "m1", OTID: "m1", Text: "because"},
		{Kind: KindAssistant, UUID: "m1", OTID: "m1", Text: "a1"},
		{Kind: KindToolCall, UUID: "m1", Call: `c1 Bash {"command":"ls"} | {"command":"ls"} -> t1 file ok`},
		{Kind: KindAssistant, UUID: "m2", OTID: "m2", Text: "the whole second answer"},
	}
	if d := cmp.Diff(want, rows(TranscriptOf(history))); d != "" {
		t.Fatalf("history alone (-want +got):\n%s", d)
	}

	t.Run("a failed step's slice is dropped when nothing was stored", func(t *testing.T) {
		a := NewAccumulator()
		for _, ev := range seq(
			Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "q1"}},
			Event{Type: EventAssistantDelta, UUID: "m9", OTID: "m9", Text: "half"},
			Event{Type: EventTurnEnd, RunID: "turn-1", InputID: "in-1", StopReason: "error"},
		) {
			a.Apply(ev)
		}
		if !a.NeedsBackfill() {
			t.Fatal("a turn that ended with a streaming slice needs a backfill")
		}
		a.Backfill(history[:1])
		if d := cmp.Diff(want[:1], rows(a.Transcript())); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})

	t.Run("the process stopped mid-turn", func(t *testing.T) {
		a := NewAccumulator()
		for _, ev := range seq(
			Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "q1"}},
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "m1", Text: "because"},
			Event{Type: EventAssistantMessage, UUID: "m1", OTID: "m1", Text: "a1"},
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			// The result and the second answer were stored, their events
			// lost with the process; the second answer was streaming.
			Event{Type: EventAssistantDelta, UUID: "m2", OTID: "m2", Text: "the whole"},
			Event{Type: EventTurnEnd, RunID: "turn-1", InputID: "in-1", StopReason: StopRestarted},
		) {
			a.Apply(ev)
		}
		if !a.NeedsBackfill() || a.LastStored() != "m1" {
			t.Fatalf("NeedsBackfill %v, LastStored %q; want true, m1", a.NeedsBackfill(), a.LastStored())
		}
		a.Backfill(history[2:]) // after LastStored
		// The streaming slice of m2 became the stored row: one m2, whole.
		if d := cmp.Diff(want, rows(a.Transcript())); d != "" {
			t.Errorf("after the backfill (-want +got):\n%s", d)
		}
		if a.NeedsBackfill() {
			t.Error("NeedsBackfill after Backfill")
		}
	})

	t.Run("a reset mid-turn rebases the slice in progress", func(t *testing.T) {
		a := NewAccumulator()
		run := seq(
			Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "q1"}},
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "m1", Text: "bec"},
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "m1", Text: "a"},    // seen
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "m1", Text: "ause"}, // missed
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "m1", Text: "1"},    // missed
			Event{Type: EventAssistantMessage, UUID: "m1", OTID: "m1", Text: "a1"}, // missed
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			Event{Type: EventToolResult, UUID: "t1", ToolCallID: "c1", ToolName: "Bash", Text: "file", Outcome: "ok"},
			Event{Type: EventAssistantDelta, RunID: "run-2", UUID: "m2", OTID: "m2", Text: "the whole"},
			Event{Type: EventAssistantDelta, RunID: "run-2", UUID: "m2", OTID: "m2", Text: " second answer"},
			Event{Type: EventAssistantMessage, RunID: "run-2", UUID: "m2", OTID: "m2", Text: "the whole second answer"},
			Event{Type: EventTurnEnd, RunID: "turn-1", InputID: "in-1", StopReason: "end_turn"},
		)
		for _, ev := range run[:3] {
			a.Apply(ev)
		}
		// The stream cannot resume: backfill what is stored (m1 is, by
		// now), then the stream replays the running turn from its start.
		a.Reset()
		a.Backfill(history[:2])
		for _, ev := range run {
			a.Apply(ev)
		}
		if d := cmp.Diff(want, rows(a.Transcript())); d != "" {
			t.Errorf("after the reset (-want +got):\n%s", d)
		}
		if a.Replays() != 3 {
			t.Errorf("Replays = %d, want the 3 events applied before the reset", a.Replays())
		}
	})

	t.Run("stored rows replayed by the stream are not added twice", func(t *testing.T) {
		a := NewAccumulator()
		a.Backfill(history)
		for _, ev := range seq(
			Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "q1"}},
			Event{Type: EventReasoningDelta, UUID: "m1", OTID: "m1", Text: "bec"},
			Event{Type: EventAssistantDelta, UUID: "m1", OTID: "m1", Text: "a"},
			Event{Type: EventAssistantMessage, UUID: "m1", OTID: "m1", Text: "a1"},
			Event{Type: EventToolCall, UUID: "m1", ToolCallID: "c1", ToolName: "Bash", Arguments: str(`{"comm`)},
			Event{Type: EventToolResult, UUID: "t1", ToolCallID: "c1", ToolName: "Bash", Text: "file", Outcome: "ok"},
			Event{Type: EventAssistantDelta, UUID: "m2", OTID: "m2", Text: "the whole"},
			Event{Type: EventAssistantMessage, UUID: "m2", OTID: "m2", Text: "the whole second answer"},
			Event{Type: EventTurnEnd, RunID: "turn-1", InputID: "in-1", StopReason: "end_turn"},
		) {
			a.Apply(ev)
		}
		if d := cmp.Diff(want, rows(a.Transcript())); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		if a.NeedsBackfill() {
			t.Error("a turn whose rows all arrived needs no backfill")
		}
	})
}

func TestAccumulatorAnswerAndTurns(t *testing.T) {
	a := NewAccumulator()
	for _, ev := range seq(
		Event{Type: EventTurnStart, RunID: "turn-1", InputID: "in-1", User: &EventUser{UUID: "in-1", Text: "q1"}},
		Event{Type: EventAssistantMessage, UUID: "m1", OTID: "m1", Text: "a1"},
		Event{Type: EventTurnEnd, RunID: "turn-1", InputID: "in-1", StopReason: "end_turn", Usage: &Usage{OutputTokens: 3}},
		Event{Type: EventTurnStart, RunID: "turn-2", InputID: "in-2", User: &EventUser{UUID: "in-2", Text: "q2"}},
		Event{Type: EventAssistantMessage, UUID: "m2", OTID: "m2", Text: "a2"},
	) {
		a.Apply(ev)
	}
	if got := a.Answer("in-1"); got != "a1" {
		t.Errorf("Answer(in-1) = %q", got)
	}
	if got := a.Answer("in-2"); got != "a2" {
		t.Errorf("Answer(in-2) = %q", got)
	}
	if tr, ok := a.Turn("in-1"); !ok || tr.Running || tr.StopReason != "end_turn" || tr.Usage.OutputTokens != 3 {
		t.Errorf("Turn(in-1) = %+v, %v", tr, ok)
	}
	if tr, ok := a.Running(); !ok || tr.InputID != "in-2" {
		t.Errorf("Running = %+v, %v", tr, ok)
	}
}

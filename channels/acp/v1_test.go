package acp

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
)

// wire is an update as the client reads it.
func wire(t *testing.T, us []sdk.SessionUpdate) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, u := range us {
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		// The client's own validation accepts it.
		var back sdk.SessionUpdate
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("the client cannot read %s: %v", b, err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("the client rejects %s: %v", b, err)
		}
		out = append(out, m)
	}
	return out
}

func TestUpdatesOfATurn(t *testing.T) {
	st := newV1State("/work/proj")
	diff := "--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n package main\n-var x = 1\n+var x = 2\n func main() {}"
	evs := []channels.LiveEvent{
		{Kind: channels.LiveTurnStart},
		{Kind: channels.LiveReasoning, Text: "thinking", OTID: "m1"},
		{Kind: channels.LiveText, Text: "Let me ", OTID: "m1"},
		{Kind: channels.LiveText, Text: "edit.", OTID: "m1"},
		{Kind: channels.LiveMessage, Text: "Let me edit.", OTID: "m1"},
		{Kind: channels.LiveTool, Tool: &channels.ToolActivity{ID: "c1", Title: "Edit `main.go`", Kind: "edit", Status: channels.StatusRunning},
			Wire: []byte(`{"type":"tool_call","arguments":{"file_path":"main.go"}}`)},
		{Kind: channels.LiveApproval, Approval: &channels.ApprovalCard{ID: "ap1", ToolCallID: "c1", Summary: "Edit main.go", Reason: "edits ask in standard mode", Diff: diff}},
		{Kind: channels.LiveTurnEnd, StopReason: "requires_approval"},
		{Kind: channels.LiveTool, Tool: &channels.ToolActivity{ID: "c1", Title: "Edit `main.go`", Kind: "edit", Status: channels.StatusDone, Outcome: channels.OutcomeOK, Diff: diff, Output: "Edited main.go"}},
		{Kind: channels.LiveMessage, Text: "Done without deltas.", OTID: "m2"},
		{Kind: channels.LivePlan, Plan: &channels.Plan{Items: []channels.PlanItem{{Content: "edit", Status: channels.PlanCompleted}, {Content: "test", Status: "weird", Priority: "high"}}}},
		{Kind: kindNotice, Text: "context compacted"},
	}
	var us []sdk.SessionUpdate
	for _, ev := range evs {
		us = append(us, st.updates(ev)...)
	}
	got := wire(t, us)
	var kinds []string
	for _, m := range got {
		k := m["sessionUpdate"].(string)
		if s, ok := m["status"].(string); ok {
			k += ":" + s
		}
		kinds = append(kinds, k)
	}
	want := []string{"agent_thought_chunk", "agent_message_chunk", "agent_message_chunk", "tool_call:in_progress",
		"tool_call_update:pending", "tool_call_update:completed", "agent_message_chunk", "plan", "agent_message_chunk"}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Fatalf("kinds (-want +got):\n%s", d)
	}
	call := got[3]
	if call["title"] != "Edit `main.go`" || call["kind"] != "edit" || call["rawInput"].(map[string]any)["file_path"] != "main.go" {
		t.Errorf("tool_call = %v", call)
	}
	pending := got[4]["content"].([]any)
	d0 := pending[0].(map[string]any)
	if d0["type"] != "diff" || d0["path"] != "/work/proj/main.go" || d0["oldText"] != "package main\nvar x = 1\nfunc main() {}" || d0["newText"] != "package main\nvar x = 2\nfunc main() {}" {
		t.Errorf("pending diff = %v", d0)
	}
	if !strings.Contains(pending[1].(map[string]any)["content"].(map[string]any)["text"].(string), "edits ask") {
		t.Errorf("pending reason = %v", pending[1])
	}
	done := got[5]["content"].([]any)
	if len(done) != 2 || done[0].(map[string]any)["type"] != "diff" || !strings.Contains(done[1].(map[string]any)["content"].(map[string]any)["text"].(string), "Edited main.go") {
		t.Errorf("completed content = %v", done)
	}
	if txt := got[6]["content"].(map[string]any)["text"]; txt != "Done without deltas." {
		t.Errorf("a message without deltas = %v", txt)
	}
	entries := got[7]["entries"].([]any)
	if e := entries[1].(map[string]any); e["status"] != "pending" || e["priority"] != "high" {
		t.Errorf("plan entry = %v", e)
	}
}

func TestTaskUpdates(t *testing.T) {
	st := newV1State("/ws")
	us := st.updates(channels.LiveEvent{Kind: channels.LiveTask, Task: &channels.TaskActivity{ID: "t1", Description: "explore the repo", Status: "running"}})
	us = append(us, st.updates(channels.LiveEvent{Kind: channels.LiveTask, Task: &channels.TaskActivity{ID: "t1", Status: "done", Progress: "found it"}})...)
	got := wire(t, us)
	if got[0]["sessionUpdate"] != "tool_call" || got[0]["toolCallId"] != "task-t1" || got[0]["kind"] != "think" || got[0]["title"] != "Task: explore the repo" {
		t.Errorf("task start = %v", got[0])
	}
	if got[1]["sessionUpdate"] != "tool_call_update" || got[1]["status"] != "completed" {
		t.Errorf("task end = %v", got[1])
	}
}

func TestToolStatusAndKind(t *testing.T) {
	for _, c := range []struct {
		t    channels.ToolActivity
		want sdk.ToolCallStatus
	}{
		{channels.ToolActivity{Status: channels.StatusRunning}, sdk.ToolCallStatusInProgress},
		{channels.ToolActivity{Status: channels.StatusPending}, sdk.ToolCallStatusPending},
		{channels.ToolActivity{Status: channels.StatusDone, Outcome: channels.OutcomeOK}, sdk.ToolCallStatusCompleted},
		{channels.ToolActivity{Status: channels.StatusDenied, Outcome: channels.OutcomeDeniedPerson}, sdk.ToolCallStatusFailed},
		{channels.ToolActivity{Status: channels.StatusDenied, Outcome: channels.OutcomeDeniedPolicy}, sdk.ToolCallStatusFailed},
		{channels.ToolActivity{Status: channels.StatusUnknown, Outcome: channels.OutcomeUnknown}, sdk.ToolCallStatusFailed},
		{channels.ToolActivity{Status: channels.StatusError, Outcome: channels.OutcomeError}, sdk.ToolCallStatusFailed},
	} {
		if got := statusV1(c.t); got != c.want {
			t.Errorf("statusV1(%+v) = %s, want %s", c.t, got, c.want)
		}
	}
	if kindV1("execute") != sdk.ToolKindExecute || kindV1("teleport") != sdk.ToolKindOther {
		t.Error("kinds are passed through only when ACP knows them")
	}
}

func TestPermissionOptions(t *testing.T) {
	ids := func(os []sdk.PermissionOption) []string {
		var out []string
		for _, o := range os {
			out = append(out, string(o.OptionId)+"="+o.Name)
		}
		return out
	}
	card := channels.ApprovalCard{ID: "a", Rule: "Bash(git push:*)"}
	if d := cmp.Diff([]string{"allow_once=Allow once", "allow_always=Always allow Bash(git push:*)", "reject_once=Reject"}, ids(permissionOptionsV1(card, true))); d != "" {
		t.Errorf("admin with a rule (-want +got):\n%s", d)
	}
	if got := ids(permissionOptionsV1(card, false)); len(got) != 2 {
		t.Errorf("not an admin: %v", got)
	}
	if got := ids(permissionOptionsV1(channels.ApprovalCard{ID: "a"}, true)); len(got) != 2 {
		t.Errorf("no rule: %v", got)
	}
	for id, want := range map[string]string{optAllow: channels.DecideAllow, optAlways: channels.DecideAlways, optReject: channels.DecideDeny} {
		if got, err := decisionV1(sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(id))); err != nil || got != want {
			t.Errorf("decision %s = %q, %v", id, got, err)
		}
	}
	if got, err := decisionV1(sdk.NewRequestPermissionOutcomeCancelled()); err != nil || got != "" {
		t.Errorf("cancelled = %q, %v", got, err)
	}
	if _, err := decisionV1(sdk.NewRequestPermissionOutcomeSelected("bogus")); err == nil {
		t.Error("an unknown option was accepted")
	}
}

func TestStopReasons(t *testing.T) {
	for stop, want := range map[string]sdk.StopReason{"end_turn": sdk.StopReasonEndTurn, "cancelled": sdk.StopReasonCancelled,
		"max_tokens": sdk.StopReasonMaxTokens, "max_steps": sdk.StopReasonMaxTurnRequests} {
		if got, err := stopV1(promptResult{Stop: stop}); err != nil || got != want {
			t.Errorf("%s → %s, %v", stop, got, err)
		}
	}
	_, err := stopV1(promptResult{Stop: "error", Error: "the model server is down"})
	if err == nil || !strings.Contains(err.Error(), "the model server is down") {
		t.Errorf("error stop = %v", err)
	}
}

func TestPromptContent(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	blocks := []sdk.ContentBlock{
		sdk.TextBlock("look at this"),
		sdk.ImageBlock(base64.StdEncoding.EncodeToString(png), "image/png"),
		sdk.ImageBlock("!!!not base64", "image/png"),
		{ResourceLink: &sdk.ContentBlockResourceLink{Name: "main.go", Uri: "file:///work/proj/main.go", MimeType: sdk.Ptr("text/x-go"), Size: sdk.Ptr(120)}},
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///work/proj/a.md", Text: "has ``` fences\n"}}),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{Uri: "file:///x.bin", Blob: "AAAA", MimeType: sdk.Ptr("application/octet-stream")}}),
		sdk.AudioBlock("AAAA", "audio/wav"),
	}
	text, atts := promptV1(blocks)
	if len(atts) != 1 || atts[0].MIME != "image/png" || string(atts[0].Data) != string(png) || atts[0].Name != "image-1.png" {
		t.Fatalf("attachments = %+v", atts)
	}
	for _, want := range []string{
		"look at this",
		"[The user attached an image that could not be decoded.]",
		"[The user referred to the file /work/proj/main.go (text/x-go, 120 bytes)]",
		"Contents of /work/proj/a.md:\n````\nhas ``` fences\n````",
		"/x.bin (application/octet-stream), binary content",
		"audio (audio/wav)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt text lacks %q:\n%s", want, text)
		}
	}
	big := strings.Repeat("é", maxResourceText)
	if got := resourceText("file:///big", big); len(got) > maxResourceText+200 || !strings.Contains(got, "[cut:") {
		t.Errorf("a big resource is not cut: %d bytes", len(got))
	}
}

func TestParseUnified(t *testing.T) {
	for _, c := range []struct {
		name, diff string
		want       []fileDiff
	}{
		{"two hunks", "--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -10,1 +10,2 @@\n j\n+k",
			[]fileDiff{{Path: "/ws/x.txt", Old: "a\nb\n" + hunkGap + "\nj", New: "a\nB\n" + hunkGap + "\nj\nk"}}},
		{"new file", "--- a/n.txt\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two", []fileDiff{{Path: "/ws/n.txt", New: "one\ntwo", NewFile: true}}},
		{"absolute path", "--- a//etc/hosts\n+++ b//etc/hosts\n@@ -1 +1 @@\n-x\n+y", []fileDiff{{Path: "/etc/hosts", Old: "x", New: "y"}}},
		{"cut", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x\n+y\n… (diff cut)", []fileDiff{{Path: "/ws/x", Old: "x\n" + hunkGap, New: "y\n" + hunkGap}}},
		{"no header", "@@ -1 +1 @@\n-x\n+y", nil},
		{"empty", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, parseUnified(c.diff, "/ws")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestConfigOptions(t *testing.T) {
	b, err := json.Marshal(configV1(Settings{Mode: "strict", Model: "qwen3:8b", Models: []string{"a", "qwen3:8b"}}))
	if err != nil {
		t.Fatal(err)
	}
	var back []sdk.SessionConfigOption
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].Select.CurrentValue != "strict" || back[1].Select.CurrentValue != "qwen3:8b" || len(*back[1].Select.Options.Ungrouped) != 2 {
		t.Errorf("config options = %s", b)
	}
	if m := modesV1(Settings{Mode: "acceptEdits"}); m.CurrentModeId != "acceptEdits" || len(m.AvailableModes) != 4 {
		t.Errorf("modes = %+v", m)
	}
}

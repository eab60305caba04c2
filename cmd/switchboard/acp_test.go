package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// TestACPPromptWithAsk: initialize → new → a prompt whose turn asks →
// the permission answered in the editor: the client sees, in the order the
// turn produced them, the text chunks, the tool call, its pending state,
// the permission request, the completed call, the final chunks, then the
// prompt's end_turn; the command ran in the session's directory (the
// editor's cwd, not the agent's configured workspace).
func TestACPPromptWithAsk(t *testing.T) {
	first := bashStep("call_1", "touch acp-made && echo made-it")
	first.Text = "Let me run it."
	e := newEnv(t, first, fakemodel.Step{Text: "All done: made-it."})
	e.setACPEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := e.startACP(&acpClient{})
	init := p.initialize(ctx, sdk.ClientCapabilities{})
	if init.ProtocolVersion != 1 || !init.AgentCapabilities.LoadSession || init.AgentCapabilities.SessionCapabilities.List == nil {
		t.Fatalf("initialize = %+v", init)
	}
	if init.AgentCapabilities.McpCapabilities.Http || init.AgentCapabilities.McpCapabilities.Sse {
		t.Errorf("MCP is advertised: %+v", init.AgentCapabilities.McpCapabilities)
	}
	cwd := mkdir(t, "project")
	sess := p.newSession(ctx, cwd)
	if !strings.HasPrefix(string(sess.SessionId), "conv-") {
		t.Fatalf("session id %q is not a conversation id", sess.SessionId)
	}
	if sess.Modes == nil || sess.Modes.CurrentModeId != "standard" {
		t.Errorf("modes = %+v", sess.Modes)
	}
	res := p.prompt(ctx, sess.SessionId, "make the file")
	if res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason = %s", res.StopReason)
	}
	got := squeeze(p.tap.events())
	// Commands are offered once, first; then the turn in order.
	want := []string{
		"update:available_commands_update",
		"update:agent_message_chunk",
		"update:tool_call:in_progress",
		"update:tool_call_update:pending",
		"request:session/request_permission",
		"update:tool_call_update:completed",
		"update:agent_message_chunk",
		"response:end_turn",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("wire order (-want +got):\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(cwd, "acp-made")); err != nil {
		t.Errorf("the approved command did not run in the session's directory: %v", err)
	}
	text := p.client.agentText(sess.SessionId)
	if !strings.Contains(text, "Let me run it.") || !strings.Contains(text, "All done: made-it.") {
		t.Errorf("agent text = %q", text)
	}
	// The tool call carries the tool's own title and kind; the finished
	// update its output.
	var call *sdk.SessionUpdateToolCall
	var done *sdk.SessionToolCallUpdate
	for _, n := range p.client.updates {
		if n.Update.ToolCall != nil {
			call = n.Update.ToolCall
		}
		if u := n.Update.ToolCallUpdate; u != nil && u.Status != nil && *u.Status == sdk.ToolCallStatusCompleted {
			done = u
		}
	}
	if call == nil || call.Kind != sdk.ToolKindExecute || !strings.Contains(call.Title, "touch acp-made") {
		t.Fatalf("tool_call = %+v", call)
	}
	if done == nil || len(done.Content) == 0 || done.Content[0].Content == nil || !strings.Contains(done.Content[0].Content.Content.Text.Text, "made-it") {
		t.Errorf("completed update lacks the output: %+v", done)
	}
	asked := p.client.asked
	if len(asked) != 1 || asked[0].ToolCall.ToolCallId != "call_1" {
		t.Fatalf("permission requests = %+v", asked)
	}
	var kinds []string
	for _, o := range asked[0].Options {
		kinds = append(kinds, string(o.Kind))
	}
	if !slices.Contains(kinds, "allow_once") || !slices.Contains(kinds, "reject_once") {
		t.Errorf("options = %v", kinds)
	}
	validTranscript(t, e.transcript())
}

// TestACPAlwaysAndReject: "allow always" is offered with the rule it
// stores when the call has one (the person is an admin) and stores it: the
// same command then runs without asking; "reject" denies the call.
func TestACPAlwaysAndReject(t *testing.T) {
	e := newEnv(t,
		bashStep("c1", "touch always-file"), fakemodel.Step{Text: "made"},
		bashStep("c2", "touch always-file"), fakemodel.Step{Text: "made again"},
		bashStep("c3", "touch never-file"), fakemodel.Step{Text: "not made"},
	)
	e.setACPEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := &acpClient{}
	client.answer = func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		for _, o := range r.Options {
			if o.Kind == sdk.PermissionOptionKindAllowAlways && strings.Contains(o.Name, "Bash(touch always-file)") {
				return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
			}
		}
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("reject_once")}, nil
	}
	p := e.startACP(client)
	p.initialize(ctx, sdk.ClientCapabilities{})
	cwd := mkdir(t, "ws")
	sess := p.newSession(ctx, cwd)
	for _, msg := range []string{"one", "two", "three"} {
		if res := p.prompt(ctx, sess.SessionId, msg); res.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("%s: stop = %s", msg, res.StopReason)
		}
	}
	if n := len(client.asked); n != 2 {
		t.Errorf("asked %d times, want 2 (the stored rule covers the second call)", n)
	}
	if _, err := os.Stat(filepath.Join(cwd, "always-file")); err != nil {
		t.Error("always-file was not made")
	}
	if _, err := os.Stat(filepath.Join(cwd, "never-file")); err == nil {
		t.Error("the rejected call ran")
	}
	var failed bool
	for _, n := range client.updates {
		if u := n.Update.ToolCallUpdate; u != nil && u.ToolCallId == "c3" && u.Status != nil && *u.Status == sdk.ToolCallStatusFailed {
			failed = true
		}
	}
	if !failed {
		t.Error("the rejected call is not shown as failed")
	}
}

// TestACPCancelMidTurn: session/cancel stops the running turn at once (the
// gateway's /stop), the prompt answers cancelled, and the session keeps
// working.
func TestACPCancelMidTurn(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	e := newEnv(t, fakemodel.Step{Text: "never", Block: block}, fakemodel.Step{Text: "hello again"})
	e.setACPEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := e.startACP(&acpClient{})
	p.initialize(ctx, sdk.ClientCapabilities{})
	sess := p.newSession(ctx, mkdir(t, "ws"))
	resc := make(chan sdk.PromptResponse, 1)
	go func() {
		res, err := p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("first")}})
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		resc <- res
	}()
	if err := e.model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.conn.Cancel(ctx, sdk.CancelNotification{SessionId: sess.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-resc:
		if res.StopReason != sdk.StopReasonCancelled {
			t.Fatalf("stop reason = %s, want cancelled", res.StopReason)
		}
	case <-ctx.Done():
		t.Fatal("the cancelled prompt did not answer")
	}
	if res := p.prompt(ctx, sess.SessionId, "second"); res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("after cancel: stop = %s", res.StopReason)
	}
	if text := p.client.agentText(sess.SessionId); !strings.Contains(text, "hello again") {
		t.Errorf("agent text after cancel = %q", text)
	}
	validTranscript(t, e.transcript())
}

// TestACPLoadListAndMode: a session created in one process is listed by
// the next (title, update time, the directory it was opened in), loads
// with its history replayed (the person's text, the tool call with its
// outcome, the answer) and continues; session/set_mode and the model
// config option go through /mode and /model (durable: the next session
// starts in them, and the model gets the new name).
func TestACPLoadListAndMode(t *testing.T) {
	e := newEnv(t,
		bashStep("c1", "echo listed"), fakemodel.Step{Text: "noted the thing"},
		fakemodel.Step{Text: "continued after load"},
		fakemodel.Step{Text: "on the other model"},
	)
	e.setACPEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cwd := mkdir(t, "proj")
	p := e.startACP(&acpClient{})
	p.initialize(ctx, sdk.ClientCapabilities{})
	sess := p.newSession(ctx, cwd)
	p.prompt(ctx, sess.SessionId, "remember the thing")
	p.close()

	client := &acpClient{}
	p2 := e.startACP(client)
	p2.initialize(ctx, sdk.ClientCapabilities{})
	list, err := p2.conn.ListSessions(ctx, sdk.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var found *sdk.SessionInfo
	for i, s := range list.Sessions {
		if s.SessionId == sess.SessionId {
			found = &list.Sessions[i]
		}
	}
	if found == nil {
		t.Fatalf("session/list = %+v, lacks %s", list.Sessions, sess.SessionId)
	}
	if found.Title == nil || *found.Title != "remember the thing" || found.UpdatedAt == nil || found.Cwd != cwd {
		t.Errorf("listed session = %+v", found)
	}
	if _, err := p2.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sess.SessionId, Cwd: cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	var replay []string
	for _, n := range client.updates {
		u := n.Update
		switch {
		case u.UserMessageChunk != nil:
			replay = append(replay, "user:"+u.UserMessageChunk.Content.Text.Text)
		case u.AgentMessageChunk != nil:
			replay = append(replay, "agent:"+strings.TrimSpace(u.AgentMessageChunk.Content.Text.Text))
		case u.ToolCall != nil:
			replay = append(replay, "tool:"+string(u.ToolCall.ToolCallId)+":"+string(u.ToolCall.Status))
		}
	}
	if d := cmp.Diff([]string{"user:remember the thing", "tool:c1:completed", "agent:noted the thing"}, replay); d != "" {
		t.Errorf("replayed history (-want +got):\n%s", d)
	}
	if res := p2.prompt(ctx, sess.SessionId, "go on"); res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("after load: %s", res.StopReason)
	}
	if !strings.Contains(client.agentText(sess.SessionId), "continued after load") {
		t.Errorf("no answer after load: %q", client.agentText(sess.SessionId))
	}
	// The continued turn saw the earlier history.
	reqs := e.model.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(string(last.Raw), "remember the thing") {
		t.Error("the turn after load did not carry the earlier history")
	}

	if _, err := p2.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "acceptEdits"}); err != nil {
		t.Fatalf("set_mode: %v", err)
	}
	if _, err := p2.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "bogus"}); err == nil {
		t.Error("set_mode accepted an unknown mode")
	}
	opts, err := p2.conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: sess.SessionId, ConfigId: "model", Value: "other-model"}})
	if err != nil {
		t.Fatalf("set model: %v", err)
	}
	b, _ := json.Marshal(opts.ConfigOptions)
	if !strings.Contains(string(b), `"currentValue":"other-model"`) || !strings.Contains(string(b), `"currentValue":"acceptEdits"`) {
		t.Errorf("config options after the changes: %s", b)
	}
	p2.prompt(ctx, sess.SessionId, "which model")
	reqs = e.model.Requests()
	if m := reqs[len(reqs)-1].Model; m != "other-model" {
		t.Errorf("model after set_config_option = %q", m)
	}
	again := p2.newSession(ctx, cwd)
	if again.Modes.CurrentModeId != "acceptEdits" {
		t.Errorf("a new session starts in mode %s; the mode is durable", again.Modes.CurrentModeId)
	}
}

// TestACPClientTools: with acp_client_tools = true and an editor that
// offers fs and terminal, Read sees the editor's unsaved buffer, Write
// goes to the editor (not the disk) and Bash runs in the editor's
// terminal — each still under the permission policy (Write and Bash ask).
// An agent confined with sandbox = "bwrap" never runs Bash in the editor.
func TestACPClientTools(t *testing.T) {
	readArgs, _ := json.Marshal(map[string]string{"file_path": "a.go"})
	writeArgs, _ := json.Marshal(map[string]string{"file_path": "b.txt", "content": "from the agent"})
	e := newEnv(t,
		fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "r1", Name: "Read", Arguments: string(readArgs)}}},
		fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "w1", Name: "Write", Arguments: string(writeArgs)}}},
		bashStep("b1", "touch t1 && echo in-terminal"),
		fakemodel.Step{Text: "all three done"},
		bashStep("b2", "echo confined-run"),
		fakemodel.Step{Text: "confined done"},
	)
	e.writeConfig(`[providers.default]
base_url = "` + e.model.URL() + `"
model = "test-model"

[agents.main]
acp_client_tools = true

[agents.confined]
acp_client_tools = true
sandbox = "bwrap"
`)
	e.setACPEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cwd := mkdir(t, "proj")
	if err := os.WriteFile(filepath.Join(cwd, "a.go"), []byte("saved on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	client := &acpClient{files: map[string]string{filepath.Join(cwd, "a.go"): "package a // unsaved in the editor\n"},
		term: func(cmd string) (string, int) { return "terminal ran: " + cmd + "\n", 0 }}
	p := e.startACP(client)
	p.initialize(ctx, sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true})
	sess := p.newSession(ctx, cwd)
	if res := p.prompt(ctx, sess.SessionId, "use the editor"); res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop = %s", res.StopReason)
	}
	reqs := e.model.Requests()
	results := map[string]string{}
	for _, m := range toolMessages(reqs[len(reqs)-1]) {
		results[m.ToolCallID] = contentText(m)
	}
	if !strings.Contains(results["r1"], "unsaved in the editor") {
		t.Errorf("Read did not see the editor's buffer: %q", results["r1"])
	}
	if client.files[filepath.Join(cwd, "b.txt")] != "from the agent" {
		t.Errorf("Write did not reach the editor: %v", client.files)
	}
	if _, err := os.Stat(filepath.Join(cwd, "b.txt")); err == nil {
		t.Error("Write went to the disk too")
	}
	if !strings.Contains(results["b1"], "terminal ran: /bin/sh -c touch t1 && echo in-terminal") {
		t.Errorf("Bash did not run in the editor's terminal: %q", results["b1"])
	}
	if _, err := os.Stat(filepath.Join(cwd, "t1")); err == nil {
		t.Error("Bash ran here too")
	}
	if n := len(client.asked); n != 2 {
		t.Errorf("asked %d times, want 2 (Write and Bash; Read inside the workspace is allowed)", n)
	}

	confined, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}, Meta: map[string]any{"agent": "confined"}})
	if err != nil {
		t.Fatal(err)
	}
	before := len(client.terminals)
	p.prompt(ctx, confined.SessionId, "run confined")
	if len(client.terminals) != before {
		t.Errorf("the bwrap agent's Bash ran in the editor's terminal: %+v", client.terminals[before:])
	}
	reqs = e.model.Requests()
	for _, m := range toolMessages(reqs[len(reqs)-1]) {
		if m.ToolCallID == "b2" && strings.Contains(contentText(m), "terminal ran") {
			t.Errorf("b2 result came from the editor: %q", contentText(m))
		}
	}
}

// TestACPImagesAndResources: with vision = true an image block reaches the
// model as an image; a resource link and an embedded resource reach it as
// text; initialize says images are accepted. Without vision the model
// hears only that an image was sent.
func TestACPImagesAndResources(t *testing.T) {
	for _, vision := range []bool{true, false} {
		t.Run(map[bool]string{true: "vision", false: "no vision"}[vision], func(t *testing.T) {
			e := newEnv(t, fakemodel.Step{Text: "seen"})
			e.writeConfig(fmt.Sprintf("[providers.default]\nbase_url = %q\nmodel = \"test-model\"\nvision = %v\n", e.model.URL(), vision))
			e.setACPEnv()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p := e.startACP(&acpClient{})
			init := p.initialize(ctx, sdk.ClientCapabilities{})
			if init.AgentCapabilities.PromptCapabilities.Image != vision || !init.AgentCapabilities.PromptCapabilities.EmbeddedContext {
				t.Errorf("prompt capabilities = %+v", init.AgentCapabilities.PromptCapabilities)
			}
			sess := p.newSession(ctx, mkdir(t, "ws"))
			png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n-pixels-"))
			res, err := p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{
				sdk.TextBlock("what is in it?"),
				sdk.ImageBlock(png, "image/png"),
				sdk.ResourceLinkBlock("notes.md", "file:///home/me/notes.md"),
				sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///home/me/a.go", Text: "package a"}}),
			}})
			if err != nil || res.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("prompt: %v %v", res, err)
			}
			raw := string(e.model.Requests()[0].Raw)
			for _, want := range []string{"what is in it?", "the file /home/me/notes.md", "Contents of /home/me/a.go", "package a"} {
				if !strings.Contains(raw, want) {
					t.Errorf("the model's request lacks %q", want)
				}
			}
			if got := strings.Contains(raw, "data:image/png;base64,"+png); got != vision {
				t.Errorf("image in the request = %v, want %v", got, vision)
			}
			if !vision && !strings.Contains(raw, "does not accept images") {
				t.Error("without vision the model is not told an image was sent")
			}
		})
	}
}

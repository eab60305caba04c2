package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// acpProc is an in-process `switchboard acp` (the real gateway, store and
// agents on the env's data directory and fake model) driven by the SDK's
// client side over two pipes.
type acpProc struct {
	t      *testing.T
	conn   *sdk.ClientSideConnection
	client *acpClient
	tap    *wireTap
	toACP  io.WriteCloser
	done   chan error
	stderr *syncBuffer
}

// setACPEnv points the in-process commands at the env (data directory,
// fake model) through the process environment, as the binary sees it.
func (e *env) setACPEnv() {
	e.t.Setenv("SWITCHBOARD_HOME", e.home)
	e.t.Setenv("SWITCHBOARD_CONFIG", "")
	e.t.Setenv("OPENAI_BASE_URL", e.model.URL())
	e.t.Setenv("SWITCHBOARD_MODEL", "test-model")
	e.t.Setenv("HOME", filepath.Dir(e.home))
}

// startACP runs runACP on pipes and connects a client to it.
func (e *env) startACP(client *acpClient) *acpProc {
	e.t.Helper()
	agentIn, toACP := io.Pipe()
	fromACP, agentOut := io.Pipe()
	p := &acpProc{t: e.t, client: client, toACP: toACP, done: make(chan error, 1), stderr: &syncBuffer{}}
	s := &streams{in: agentIn, out: agentOut, err: p.stderr}
	go func() {
		err := runACP(context.Background(), s, "main")
		agentOut.Close()
		agentIn.Close()
		p.done <- err
	}()
	p.tap = newWireTap(fromACP)
	p.conn = sdk.NewClientSideConnection(client, toACP, p.tap)
	// The SDK's SetLogger races with its reading goroutine unless nothing
	// was read yet: the tap holds reads until it is done.
	p.conn.SetLogger(slog.New(slog.DiscardHandler))
	close(p.tap.open)
	e.t.Cleanup(p.close)
	return p
}

// close ends the connection (the editor quits) and waits for the process.
func (p *acpProc) close() {
	if p.toACP == nil {
		return
	}
	p.toACP.Close()
	p.toACP = nil
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Errorf("acp: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		p.t.Errorf("acp did not stop after the client closed the connection\n%s", p.stderr.String())
	}
}

func (p *acpProc) initialize(ctx context.Context, caps sdk.ClientCapabilities) sdk.InitializeResponse {
	p.t.Helper()
	res, err := p.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps})
	if err != nil {
		p.t.Fatalf("initialize: %v\n%s", err, p.stderr.String())
	}
	return res
}

func (p *acpProc) newSession(ctx context.Context, cwd string) sdk.NewSessionResponse {
	p.t.Helper()
	res, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		p.t.Fatalf("session/new: %v\n%s", err, p.stderr.String())
	}
	return res
}

func (p *acpProc) prompt(ctx context.Context, id sdk.SessionId, text string) sdk.PromptResponse {
	p.t.Helper()
	res, err := p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		p.t.Fatalf("session/prompt %q: %v\n%s", text, err, p.stderr.String())
	}
	return res
}

// acpClient is the editor's side: it records updates and answers
// permission requests with answer (nil: allow once).
type acpClient struct {
	mu      sync.Mutex
	updates []sdk.SessionNotification
	asked   []sdk.RequestPermissionRequest
	answer  func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
	files   map[string]string // fs/* when the test offers them

	term      func(command string) (output string, exit int)
	terminals []sdk.CreateTerminalRequest
}

func (c *acpClient) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n)
	return nil
}

func (c *acpClient) RequestPermission(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, r)
	answer := c.answer
	c.mu.Unlock()
	if answer != nil {
		return answer(ctx, r)
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("allow_once")}, nil
}

// agentText is every agent_message_chunk of a session, joined.
func (c *acpClient) agentText(id sdk.SessionId) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, n := range c.updates {
		if n.SessionId == id && n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil {
			b.WriteString(n.Update.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

func (c *acpClient) ReadTextFile(ctx context.Context, r sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if text, ok := c.files[r.Path]; ok {
		return sdk.ReadTextFileResponse{Content: text}, nil
	}
	return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: -32002, Message: "Resource not found: " + r.Path}
}

func (c *acpClient) WriteTextFile(ctx context.Context, r sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		return sdk.WriteTextFileResponse{}, errors.New("no files here")
	}
	c.files[r.Path] = r.Content
	return sdk.WriteTextFileResponse{}, nil
}

// The client's terminal: term, when set, "runs" a command line and
// returns its output and exit code.
func (c *acpClient) CreateTerminal(ctx context.Context, r sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.term == nil {
		return sdk.CreateTerminalResponse{}, errors.New("no terminal in this client")
	}
	c.terminals = append(c.terminals, r)
	return sdk.CreateTerminalResponse{TerminalId: fmt.Sprintf("term-%d", len(c.terminals))}, nil
}

func (c *acpClient) lastCommand() string {
	r := c.terminals[len(c.terminals)-1]
	return strings.Join(append([]string{r.Command}, r.Args...), " ")
}

func (c *acpClient) KillTerminal(ctx context.Context, r sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, nil
}
func (c *acpClient) TerminalOutput(ctx context.Context, r sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, _ := c.term(c.lastCommand())
	return sdk.TerminalOutputResponse{Output: out}, nil
}
func (c *acpClient) ReleaseTerminal(ctx context.Context, r sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, nil
}
func (c *acpClient) WaitForTerminalExit(ctx context.Context, r sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, code := c.term(c.lastCommand())
	return sdk.WaitForTerminalExitResponse{ExitCode: sdk.Ptr(code)}, nil
}

// wireTap records every message the agent writes, in wire order (the
// SDK's client handles requests concurrently with notifications, so only
// the wire shows the order the agent produced).
type wireTap struct {
	r    io.Reader
	open chan struct{} // closed when the connection is set up

	mu      sync.Mutex
	partial []byte
	msgs    []map[string]any
}

func newWireTap(r io.Reader) *wireTap { return &wireTap{r: r, open: make(chan struct{})} }

func (w *wireTap) Read(p []byte) (int, error) {
	<-w.open
	n, err := w.r.Read(p)
	w.mu.Lock()
	w.partial = append(w.partial, p[:n]...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		var m map[string]any
		if json.Unmarshal(w.partial[:i], &m) == nil {
			w.msgs = append(w.msgs, m)
		}
		w.partial = w.partial[i+1:]
	}
	w.mu.Unlock()
	return n, err
}

// events names the agent's messages in wire order: "update:<kind>[:<tool
// status>]", "request:<method>" and "response:<stopReason>" for prompt
// answers.
func (w *wireTap) events() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, m := range w.msgs {
		method, _ := m["method"].(string)
		switch {
		case method == "session/update":
			params, _ := m["params"].(map[string]any)
			u, _ := params["update"].(map[string]any)
			name := "update:" + str(u["sessionUpdate"])
			if s := str(u["status"]); s != "" {
				name += ":" + s
			}
			out = append(out, name)
		case method != "":
			out = append(out, "request:"+method)
		default:
			if res, ok := m["result"].(map[string]any); ok && res["stopReason"] != nil {
				out = append(out, "response:"+str(res["stopReason"]))
			}
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// squeeze drops repeated neighbours (text arrives in several chunks).
func squeeze(evs []string) []string {
	var out []string
	for _, e := range evs {
		if len(out) == 0 || out[len(out)-1] != e {
			out = append(out, e)
		}
	}
	return out
}

// mkdir makes a directory under the test's temp dir.
func mkdir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

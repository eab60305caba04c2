package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// The end-to-end tests drive the built binary with a real external ACP
// client: testdata/acp_client.mjs on the official TypeScript SDK
// (@agentclientprotocol/sdk, pinned 2.4.0 in .ci/run, which installs it
// with npm and names its directory in SWITCHBOARD_ACP_SDK_DIR).

// jsClient is the scripted client process (which runs `switchboard acp`).
type jsClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  interface{ Write([]byte) (int, error) }
	stderr *syncBuffer

	mu     sync.Mutex
	events []map[string]any
	seen   int  // events next() has looked at
	ended  bool // stdout closed
	cond   chan struct{}
}

// startJSClient starts the client on the env's data directory and fake
// model, or skips (fails under CI=true) when node or the SDK is missing.
func (e *env) startJSClient(args ...string) *jsClient {
	t := e.t
	t.Helper()
	node, err := exec.LookPath("node")
	sdkDir := os.Getenv("SWITCHBOARD_ACP_SDK_DIR")
	if err == nil && sdkDir == "" {
		err = errors.New("SWITCHBOARD_ACP_SDK_DIR is not set")
	}
	if err == nil {
		if _, serr := os.Stat(filepath.Join(sdkDir, "node_modules", "@agentclientprotocol", "sdk", "package.json")); serr != nil {
			err = serr
		}
	}
	if err != nil {
		why := "node and @agentclientprotocol/sdk are needed (install with npm and set SWITCHBOARD_ACP_SDK_DIR; .ci/run does)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v", why, err)
		}
		t.Skip(why)
	}
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "acp_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sdkDir, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, "client.mjs"), binPath}, args...)...)
	cmd.Dir = e.workspace
	cmd.Env = e.environ()
	c := &jsClient{t: t, cmd: cmd, stderr: &syncBuffer{}, cond: make(chan struct{}, 1)}
	cmd.Stderr = c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			c.mu.Lock()
			c.events = append(c.events, m)
			c.mu.Unlock()
			signal1(c.cond)
		}
		c.mu.Lock()
		c.ended = true
		c.mu.Unlock()
		signal1(c.cond)
	}()
	t.Cleanup(func() {
		c.send(map[string]any{"op": "quit"})
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("the ACP client did not quit\n%s", c.stderr.String())
			cancel()
		}
	})
	return c
}

func signal1(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (c *jsClient) send(cmd map[string]any) {
	b, _ := json.Marshal(cmd)
	_, _ = c.stdin.Write(append(b, '\n'))
}

// next returns the first event after those already looked at that
// matches; the others passed on the way stay in the log.
func (c *jsClient) next(what string, match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		c.mu.Lock()
		for i := c.seen; i < len(c.events); i++ {
			if match(c.events[i]) {
				c.seen = i + 1
				ev := c.events[i]
				c.mu.Unlock()
				return ev
			}
		}
		ended := c.ended
		c.mu.Unlock()
		if ended {
			c.t.Fatalf("the client ended before %s\nstderr:\n%s\nevents: %v", what, c.stderr.String(), c.events)
		}
		select {
		case <-c.cond:
		case <-deadline:
			c.t.Fatalf("timed out waiting for %s\nstderr:\n%s\nevents: %v", what, c.stderr.String(), c.all())
		}
	}
}

func (c *jsClient) all() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.events...)
}

// call sends a command and waits for its result (failing on an error).
func (c *jsClient) call(cmd map[string]any) map[string]any {
	c.t.Helper()
	tag := cmd["op"].(string) + "-" + time.Now().Format("150405.000000000")
	cmd["tag"] = tag
	c.send(cmd)
	ev := c.next("the result of "+tag, func(m map[string]any) bool { return m["tag"] == tag })
	if ev["ev"] == "error" {
		c.t.Fatalf("%s failed: %v\nstderr:\n%s", cmd["op"], ev["message"], c.stderr.String())
	}
	res, _ := ev["result"].(map[string]any)
	return res
}

// start sends a command whose result comes later (a prompt); wait with
// result(tag).
func (c *jsClient) start(cmd map[string]any) string {
	tag := cmd["op"].(string) + "-" + time.Now().Format("150405.000000000")
	cmd["tag"] = tag
	c.send(cmd)
	return tag
}

// timeline names the events from index from on, as the client saw them:
// update:<kind>[:<status>], permission, permission_withdrawn, result:<stop>.
func (c *jsClient) timeline(from int) []string {
	var out []string
	for _, m := range c.all()[from:] {
		switch m["ev"] {
		case "update":
			s := "update:" + str(m["kind"])
			if st := str(m["status"]); st != "" {
				s += ":" + st
			}
			out = append(out, s)
		case "permission", "permission_withdrawn":
			out = append(out, str(m["ev"]))
		case "result":
			if res, _ := m["result"].(map[string]any); res["stopReason"] != nil {
				out = append(out, "result:"+str(res["stopReason"]))
			}
		}
	}
	return squeeze(out)
}

func (c *jsClient) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// text is the agent text of a session from index from on.
func (c *jsClient) text(session string, from int) string {
	var b strings.Builder
	for _, m := range c.all()[from:] {
		if m["ev"] == "update" && m["session"] == session && m["kind"] == "agent_message_chunk" {
			b.WriteString(str(m["text"]))
		}
	}
	return b.String()
}

// TestACPExternalClient: the official TypeScript client drives the built
// binary through initialize → new → a prompt whose turn asks → the
// permission answered: it sees the text, the tool call, the ask, the
// finished call, the answer, then end_turn; stdout carried nothing but
// protocol (the SDK would have failed on anything else).
func TestACPExternalClient(t *testing.T) {
	first := bashStep("call_e", "touch external-made && echo external-ran")
	first.Text = "Running it now."
	e := newEnv(t, first, fakemodel.Step{Text: "Finished: external-ran."})
	c := e.startJSClient()
	init := c.call(map[string]any{"op": "initialize"})
	if init["protocolVersion"] != float64(1) {
		t.Fatalf("initialize = %v", init)
	}
	cwd := mkdir(t, "editor-project")
	sess := str(c.call(map[string]any{"op": "new", "cwd": cwd})["sessionId"])
	from := c.mark()
	tag := c.start(map[string]any{"op": "prompt", "session": sess, "text": "make it"})
	c.next("the prompt's result", func(m map[string]any) bool { return m["tag"] == tag })
	want := []string{
		"update:available_commands_update",
		"update:agent_message_chunk",
		"update:tool_call:in_progress",
		"update:tool_call_update:pending",
		"permission",
		"update:tool_call_update:completed",
		"update:agent_message_chunk",
		"result:end_turn",
	}
	if d := cmp.Diff(want, c.timeline(from)); d != "" {
		t.Errorf("what the client saw (-want +got):\n%s", d)
	}
	if text := c.text(sess, from); !strings.Contains(text, "Running it now.") || !strings.Contains(text, "Finished: external-ran.") {
		t.Errorf("agent text = %q", text)
	}
	if _, err := os.Stat(filepath.Join(cwd, "external-made")); err != nil {
		t.Error("the approved command did not run in the editor's directory")
	}
}

// TestACPExternalWithServe: with `serve` running on the same data
// directory, a conversation started on the web page appears in
// session/list (with its title and channel), loads with its history and
// continues in the editor; and an ask raised in an ACP session is
// approved from the web page: the editor's permission request is
// withdrawn and the client sees the tool run and the answer.
func TestACPExternalWithServe(t *testing.T) {
	e := newEnv(t)
	e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
		last := req.LastMessage()
		switch {
		case last.Role == "tool":
			return fakemodel.Step{Text: "answer after the web approved: " + strings.TrimSpace(last.Text())}
		case strings.Contains(last.Text(), "hello from the web"):
			return fakemodel.Step{Text: "web answer"}
		case strings.Contains(last.Text(), "more from the editor"):
			return fakemodel.Step{Text: "editor continues the web thread"}
		case strings.Contains(last.Text(), "run it please"):
			return bashStep("call_w", "touch web-approved && echo ran-after-web")
		}
		return fakemodel.Step{Text: "?"}
	})
	e.writeServeConfig("")
	p := e.startServe()
	web := newWebClient(t, p.url())
	chat := web.newChat()
	w := web.watch(chat)
	web.say(chat, "w1", "hello from the web")
	w.waitFor(t, "web answer")

	c := e.startJSClient()
	c.call(map[string]any{"op": "initialize"})
	cwd := mkdir(t, "editor-project")
	var conv string
	eventually(t, 30*time.Second, "the web conversation in session/list", func() bool {
		list := c.call(map[string]any{"op": "list"})
		sessions, _ := list["sessions"].([]any)
		for _, s := range sessions {
			m, _ := s.(map[string]any)
			meta, _ := m["_meta"].(map[string]any)
			chans, _ := meta["channels"].([]any)
			if m["title"] == "hello from the web" && len(chans) == 1 && chans[0] == "web" && m["updatedAt"] != nil {
				conv = str(m["sessionId"])
				return true
			}
		}
		return false
	})
	from := c.mark()
	c.call(map[string]any{"op": "load", "session": conv, "cwd": cwd})
	var replay []string
	for _, m := range c.all()[from:] {
		if m["ev"] == "update" && (m["kind"] == "user_message_chunk" || m["kind"] == "agent_message_chunk") {
			replay = append(replay, str(m["kind"])+":"+strings.TrimSpace(str(m["text"])))
		}
	}
	if d := cmp.Diff([]string{"user_message_chunk:hello from the web", "agent_message_chunk:web answer"}, replay); d != "" {
		t.Errorf("history replayed by session/load (-want +got):\n%s", d)
	}
	from = c.mark()
	tag := c.start(map[string]any{"op": "prompt", "session": conv, "text": "more from the editor"})
	res := c.next("the continued prompt", func(m map[string]any) bool { return m["tag"] == tag })
	if r, _ := res["result"].(map[string]any); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt after load = %v", res)
	}
	if text := c.text(conv, from); !strings.Contains(text, "editor continues the web thread") {
		t.Errorf("answer after load = %q", text)
	}

	// An ask raised in the editor, approved on the web page.
	c.call(map[string]any{"op": "policy", "policy": "hold"})
	sess := str(c.call(map[string]any{"op": "new", "cwd": cwd})["sessionId"])
	from = c.mark()
	tag = c.start(map[string]any{"op": "prompt", "session": sess, "text": "run it please"})
	c.next("the permission request", func(m map[string]any) bool { return m["ev"] == "permission" })
	msgID, token := web.historyButton(sess, "Approval needed", "Approve")
	if reply := web.post("/api/actions", map[string]string{"token": token, "chat": sess, "message": msgID}); !strings.Contains(str(reply["text"]), "Approved") {
		t.Fatalf("press on the web = %v", reply)
	}
	c.next("the prompt's end", func(m map[string]any) bool { return m["tag"] == tag })
	want := []string{
		"update:available_commands_update", // the session's first prompt
		"update:tool_call:in_progress",
		"update:tool_call_update:pending",
		"permission",
		"permission_withdrawn",
		"update:tool_call_update:completed",
		"update:agent_message_chunk",
		"result:end_turn",
	}
	got := c.timeline(from)
	// The SDK sends $/cancel_request from its own goroutine, so the
	// withdrawal and the resumed tool's completion arrive in either order.
	if i := slices.Index(got, "update:tool_call_update:completed"); i >= 0 && i+1 < len(got) && got[i+1] == "permission_withdrawn" {
		got[i], got[i+1] = got[i+1], got[i]
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("what the editor saw of the web approval (-want +got):\n%s", d)
	}
	if text := c.text(sess, from); !strings.Contains(text, "answer after the web approved: ran-after-web") {
		t.Errorf("answer = %q", text)
	}
	if _, err := os.Stat(filepath.Join(cwd, "web-approved")); err != nil {
		t.Error("the command approved on the web did not run")
	}
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(line, "msg=turn") && strings.Contains(line, "conversation="+sess) {
			t.Errorf("serve worked the ACP session's conversation: %s", line)
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const webToken = "e2e-web-token-0123456789"

// writeServeConfig writes a config for serve: the fake model, a free
// port, a fixed web token and fast streaming edits.
func (e *env) writeServeConfig(extra string) {
	e.t.Helper()
	cfg := fmt.Sprintf(`[providers.default]
base_url = %q
model = "test-model"

[http]
listen = "127.0.0.1:0"

[approvals]
timeout = "12h"

[channels.web]
token = %q
edit_interval = "50ms"
%s`, e.model.URL(), webToken, extra)
	e.writeConfig(cfg)
	if err := os.WriteFile(filepath.Join(e.home, "switchboard.toml"), []byte(cfg), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// serveProc is a running `switchboard serve`.
type serveProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	done   chan error    // the exit, once
	exited chan struct{} // closed at the exit: kill may be called again
}

var servingRE = regexp.MustCompile(`serving on http://([0-9.:]+)`)

func (e *env) startServe() *serveProc {
	e.t.Helper()
	cmd := e.command(context.Background(), "serve", "--grace", "2s")
	p := &serveProc{t: e.t, cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait(); close(p.exited) }()
	e.t.Cleanup(func() { p.kill() })
	eventually(e.t, 30*time.Second, "serve to listen", func() bool {
		if m := servingRE.FindStringSubmatch(p.stderr.String()); m != nil {
			p.addr = m[1]
			return true
		}
		select {
		case err := <-p.done:
			e.t.Fatalf("serve exited: %v\n%s", err, p.stderr.String())
		default:
		}
		return false
	})
	eventually(e.t, 10*time.Second, "readyz", func() bool {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

func (p *serveProc) kill() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

func (p *serveProc) url() string { return "http://" + p.addr }

// webClient talks to the web channel's API like the page does.
type webClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newWebClient(t *testing.T, base string) *webClient {
	jar, _ := cookiejar.New(nil)
	w := &webClient{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	resp, err := w.c.Get(base + "/?token=" + webToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("login: %s", resp.Status)
	}
	return w
}

func (w *webClient) post(path string, body any) map[string]any {
	w.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", w.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Switchboard", "1")
	resp, err := w.c.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		w.t.Fatalf("POST %s: %s %s", path, resp.Status, data)
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func (w *webClient) newChat() string {
	return w.post("/api/chats", map[string]any{})["id"].(string)
}

func (w *webClient) say(chat, id, text string) {
	w.post("/api/chats/"+chat+"/messages", map[string]string{"id": id, "text": text})
}

// webMessage is one message as the event stream shows it.
type webMessage struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []struct {
		Type string `json:"type"`
		HTML string `json:"html"`
		Text string `json:"text"`
		Rows [][]struct {
			Label string `json:"label"`
			Token string `json:"token"`
		} `json:"rows"`
	} `json:"parts"`
}

func (m webMessage) text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.HTML)
		b.WriteString(p.Text)
	}
	return b.String()
}

// watch follows a chat's event stream and keeps every message's latest
// state.
type watch struct {
	mu     chanMutex
	latest map[string]webMessage
	cancel context.CancelFunc
}

type chanMutex chan struct{}

func (m chanMutex) lock()   { m <- struct{}{} }
func (m chanMutex) unlock() { <-m }

func (w *webClient) watch(chat string) *watch {
	ctx, cancel := context.WithCancel(context.Background())
	w.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", w.base+"/api/chats/"+chat+"/events", nil)
	c := *w.c
	c.Timeout = 0
	resp, err := c.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	wt := &watch{mu: make(chanMutex, 1), latest: map[string]webMessage{}, cancel: cancel}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "message":
				var m webMessage
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m) == nil {
					wt.mu.lock()
					wt.latest[m.ID] = m
					wt.mu.unlock()
				}
			}
		}
	}()
	return wt
}

// find returns the latest state of messages whose text contains s.
func (wt *watch) find(s string) []webMessage {
	wt.mu.lock()
	defer wt.mu.unlock()
	var out []webMessage
	for _, m := range wt.latest {
		if strings.Contains(m.text(), s) {
			out = append(out, m)
		}
	}
	return out
}

func (wt *watch) waitFor(t *testing.T, s string) webMessage {
	t.Helper()
	var found webMessage
	eventually(t, 60*time.Second, "a message containing "+s, func() bool {
		if ms := wt.find(s); len(ms) > 0 {
			found = ms[0]
			return true
		}
		return false
	})
	return found
}

// buttonToken returns the token of the labelled button of a message.
func buttonToken(t *testing.T, m webMessage, label string) string {
	t.Helper()
	for _, p := range m.Parts {
		for _, row := range p.Rows {
			for _, b := range row {
				if b.Label == label {
					return b.Token
				}
			}
		}
	}
	t.Fatalf("no %q button in %+v", label, m)
	return ""
}

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchboard-gw/switchboard/channels/web/webtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// get fetches a JSON document of the web API.
func (w *webClient) get(path string) map[string]any {
	w.t.Helper()
	resp, err := w.c.Get(w.base + path)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		w.t.Fatalf("GET %s: %v", path, err)
	}
	return m
}

// historyButton finds, in a chat's history, the message containing text
// and returns it with the token of its labelled button.
func (w *webClient) historyButton(chat, text, label string) (string, string) {
	w.t.Helper()
	var id, token string
	eventually(w.t, 30*time.Second, "an approval card in the history of "+chat, func() bool {
		items, _ := w.get("/api/chats/" + chat + "/history")["items"].([]any)
		for _, it := range items {
			b, _ := json.Marshal(it)
			var m webMessage
			if json.Unmarshal(b, &m) != nil || !strings.Contains(m.text(), text) {
				continue
			}
			for _, p := range m.Parts {
				for _, row := range p.Rows {
					for _, bt := range row {
						if bt.Label == label {
							id, token = m.ID, bt.Token
							return true
						}
					}
				}
			}
		}
		return false
	})
	return id, token
}

// An ask raised by `run --input-format stream-json` is approved from the web
// page of a `serve` on the same data directory: the run process prints the
// tool's result and the answer; serve never works that conversation's items.
func TestAskFromRunApprovedOnWeb(t *testing.T) {
	e := newEnv(t, bashStep("call_x", "touch cross-process && echo ran-it"), fakemodel.Step{Text: "answer after the web approved"})
	e.writeServeConfig("")
	p := e.startServe()
	web := newWebClient(t, p.url())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "run", "--input-format", "stream-json", "--output-format", "stream-json")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(stdout)
	next := func(typ string) map[string]any {
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("waiting for %s: %v\nrun stderr: %s\nserve stderr: %s", typ, err, stderr.String(), p.stderr.String())
			}
			if m["type"] == typ {
				return m
			}
		}
	}
	init := next("init")
	conv := init["conversationId"].(string)
	stdin.Write([]byte(`{"type":"user","content":"run it"}` + "\n"))
	next("approval_request")
	if res := next("result"); res["subtype"] != "requires_approval" {
		t.Fatalf("result = %v", res)
	}

	// The web page lists the conversation; opening it shows the ask with
	// working buttons.
	var chat string
	eventually(t, 30*time.Second, "the run's conversation in the web sidebar", func() bool {
		chats, _ := web.get("/api/chats")["chats"].([]any)
		for _, c := range chats {
			if m, _ := c.(map[string]any); m["id"] == conv {
				chat = conv
				return true
			}
		}
		return false
	})
	msgID, token := web.historyButton(chat, "Approval needed", "Approve")
	reply := web.post("/api/actions", map[string]string{"token": token, "chat": chat, "message": msgID})
	if !strings.Contains(reply["text"].(string), "Approved") {
		t.Fatalf("press = %v", reply)
	}
	tr := next("tool_result")
	if !strings.Contains(tr["text"].(string), "ran-it") {
		t.Fatalf("tool_result = %v", tr)
	}
	if res := next("result"); res["subtype"] != "success" || res["result"] != "answer after the web approved" {
		t.Fatalf("result = %v", res)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run exit: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "cross-process")); err != nil {
		t.Fatal("the approved command did not run")
	}
	if strings.Contains(p.stderr.String(), conv) && strings.Contains(p.stderr.String(), "level=INFO msg=turn") {
		t.Errorf("serve worked the run's conversation:\n%s", p.stderr.String())
	}
	validTranscript(t, e.transcript())
}

// The web page's headline promise across a restart (SIGTERM and SIGKILL):
// the reopened conversation shows the pending ask with working buttons and
// the tool as not yet run; /approve typed there works, and so does the
// button of the other ask; the answers arrive.
func TestWebAskSurvivesRestart(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
				last := req.LastMessage()
				switch {
				case last.Role == "tool":
					return fakemodel.Step{Text: "done after restart: " + last.Text()}
				case strings.Contains(last.Text(), "first"):
					return bashStep("call_1", "touch first-file && echo first-ran")
				case strings.Contains(last.Text(), "second"):
					return bashStep("call_2", "touch second-file && echo second-ran")
				}
				return fakemodel.Step{Text: "?"}
			})
			e.writeServeConfig("")
			p := e.startServe()
			web := newWebClient(t, p.url())
			chatA, chatB := web.newChat(), web.newChat()
			wa, wb := web.watch(chatA), web.watch(chatB)
			web.say(chatA, "a1", "first please")
			web.say(chatB, "b1", "second please")
			wa.waitFor(t, "Approval needed")
			wb.waitFor(t, "Approval needed")
			if sig == syscall.SIGTERM {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-p.done:
				case <-time.After(20 * time.Second):
					t.Fatal("serve did not stop on SIGTERM")
				}
			} else {
				p.kill()
			}
			p2 := e.startServe()
			web2 := newWebClient(t, p2.url())
			// The sidebar lists both chats under their own ids.
			chats, _ := web2.get("/api/chats")["chats"].([]any)
			ids := map[string]bool{}
			for _, c := range chats {
				ids[c.(map[string]any)["id"].(string)] = true
			}
			if !ids[chatA] || !ids[chatB] {
				t.Fatalf("sidebar after restart lists %v; want %s and %s", ids, chatA, chatB)
			}
			// The history shows the tool as waiting, not done, and the card.
			items, _ := web2.get("/api/chats/" + chatA + "/history")["items"].([]any)
			b, _ := json.Marshal(items)
			if !strings.Contains(string(b), `"status":"pending"`) || strings.Contains(string(b), `"status":"done"`) {
				t.Errorf("history of the parked chat does not show the call as pending:\n%s", b)
			}
			// A: the button from the history works.
			msgID, token := web2.historyButton(chatA, "Approval needed", "Approve")
			wa2 := web2.watch(chatA)
			if r := web2.post("/api/actions", map[string]string{"token": token, "chat": chatA, "message": msgID}); !strings.Contains(r["text"].(string), "Approved") {
				t.Fatalf("press after restart = %v", r)
			}
			wa2.waitFor(t, "done after restart")
			// B: /approve typed in the reopened chat works.
			wb2 := web2.watch(chatB)
			web2.say(chatB, "b2", "/approve")
			wb2.waitFor(t, "done after restart")
			for _, f := range []string{"first-file", "second-file"} {
				if _, err := os.Stat(filepath.Join(e.workspace, f)); err != nil {
					t.Errorf("%s was not made", f)
				}
			}
			validTranscript(t, e.transcript())
		})
	}
}

// The web restart scenario in a real browser (headless Chromium), for
// SIGTERM and SIGKILL: after the restart the old login session still
// works, the conversation reopened from the sidebar shows the pending
// approval with working buttons and the tool as not yet run, and Approve
// runs it and the answer arrives.
func TestWebRestartInBrowser(t *testing.T) {
	webtest.Require(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
				if last := req.LastMessage(); last.Role == "tool" {
					return fakemodel.Step{Text: "Made it after the restart."}
				}
				return bashStep("call_r", "touch made-after-restart")
			})
			e.writeServeConfig("")
			p := e.startServe()
			ctx := webtest.Browser(t)
			js := func(expr string) chromedp.Action[chromedp.Void] {
				return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := chromedp.Poll[bool](expr)(ctx, tg)
					return err
				})
			}
			has := func(s string) chromedp.Action[chromedp.Void] {
				return js("document.getElementById('messages').innerText.includes(" + jsString(s) + ")")
			}
			if err := chromedp.Do(ctx,
				chromedp.Navigate(p.url()+"/?token="+webToken),
				chromedp.WaitVisible(chromedp.ID("input")),
				chromedp.SendKeys(chromedp.ID("input"), "please make the file"+kb.Enter),
				has("Approval needed"),
			); err != nil {
				t.Fatalf("ask: %v\n%s", err, p.stderr.String())
			}
			if sig == syscall.SIGTERM {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				<-p.done
			} else {
				p.kill()
			}
			p2 := e.startServe()
			// Same origin as before (the cookie is for 127.0.0.1): no token in
			// the address, the stored session logs the page in.
			if err := chromedp.Do(ctx,
				chromedp.Navigate(p2.url()+"/"),
				chromedp.WaitVisible(chromedp.ID("chat-list")),
				js("[...document.querySelectorAll('#chat-list .chat-item')].some(b => b.innerText.includes('please make the file'))"),
				js("([...document.querySelectorAll('#chat-list .chat-item')].find(b => b.innerText.includes('please make the file')).click(), true)"),
				has("Approval needed"),
				js("document.querySelector('.tool.status-pending') !== null && document.querySelector('.tool.status-done') === null"),
			); err != nil {
				t.Fatalf("reopen after restart: %v\n%s", err, p2.stderr.String())
			}
			webtest.Screenshot(t, ctx, "restart-"+sig.String()+".png")
			if err := chromedp.Do(ctx,
				chromedp.Click(chromedp.CSS(".buttons button.primary")),
				has("Made it after the restart."),
			); err != nil {
				t.Fatalf("approve after restart: %v\n%s", err, p2.stderr.String())
			}
			if _, err := os.Stat(filepath.Join(e.workspace, "made-after-restart")); err != nil {
				t.Fatal("the approved command did not run")
			}
		})
	}
}

// SIGKILL after a resumed turn appended the decided tool's result but
// before the next model call: after restart the answer arrives exactly once
// (approve and deny variants).
func TestKillBetweenResultAndNextModelCall(t *testing.T) {
	for _, decision := range []string{"Approve", "Deny"} {
		t.Run(decision, func(t *testing.T) {
			hold := make(chan struct{})
			t.Cleanup(func() {
				select {
				case <-hold:
				default:
					close(hold)
				}
			})
			e := newEnv(t)
			e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
				if req.LastMessage().Role == "tool" {
					return fakemodel.Step{Text: "never sent", Block: hold}
				}
				return bashStep("call_k", "touch killed-between")
			})
			e.writeServeConfig("")
			p := e.startServe()
			web := newWebClient(t, p.url())
			chat := web.newChat()
			w := web.watch(chat)
			web.say(chat, "k1", "make it")
			ask := w.waitFor(t, "Approval needed")
			web.post("/api/actions", map[string]string{"token": buttonToken(t, ask, decision), "chat": chat, "message": ask.ID})
			// The resumed turn appended the result and now waits in its next model call.
			eventually(t, 30*time.Second, "the model call after the tool result", func() bool {
				for _, r := range e.model.Requests() {
					if r.LastMessage().Role == "tool" {
						return true
					}
				}
				return false
			})
			p.kill()
			e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
				return fakemodel.Step{Text: "the one answer after the restart"}
			})
			p2 := e.startServe()
			web2 := newWebClient(t, p2.url())
			w2 := web2.watch(chat)
			w2.waitFor(t, "the one answer after the restart")
			// Exactly once in the transcript, and once on the page.
			n := 0
			for _, m := range e.transcript() {
				if strings.Contains(m.Text(), "the one answer after the restart") {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("the answer is %d times in the transcript, want 1", n)
			}
			if ms := w2.find("the one answer after the restart"); len(ms) != 1 {
				t.Fatalf("the page shows the answer in %d messages, want 1", len(ms))
			}
			validTranscript(t, e.transcript())
		})
	}
}

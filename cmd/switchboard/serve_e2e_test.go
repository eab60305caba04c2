package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels/web/webtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// TestServeBrowser: headless chromium opens the page, logs in, sends a
// message, presses Approve and sees the answer.
func TestServeBrowser(t *testing.T) {
	webtest.Require(t)
	e := newEnv(t, bashStep("call_b", "touch from-browser"), fakemodel.Step{Text: "The file from the browser is made."})
	e.writeServeConfig("")
	p := e.startServe()

	ctx := webtest.Browser(t)
	pageHas := func(s string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool]("document.getElementById('messages').innerText.includes("+jsString(s)+")")(ctx, tg)
			return err
		})
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(p.url()+"/?token="+webToken),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "please make the file"+kb.Enter),
		pageHas("Approval needed"),
	); err != nil {
		t.Fatalf("send and wait for the ask: %v\nserve stderr:\n%s", err, p.stderr.String())
	}
	webtest.Screenshot(t, ctx, "serve-ask.png")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(".buttons button.primary")),
		pageHas("The file from the browser is made."),
	); err != nil {
		t.Fatalf("approve and wait for the answer: %v\nserve stderr:\n%s", err, p.stderr.String())
	}
	path := webtest.Screenshot(t, ctx, "serve-answer.png")
	t.Logf("screenshot: %s", path)
	if _, err := os.Stat(filepath.Join(e.workspace, "from-browser")); err != nil {
		t.Fatal("the approved command did not run")
	}
	// Metrics count the turn and the model calls.
	resp, err := http.Get(p.url() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`switchboard_turns_total{stop_reason="end_turn"} 1`, "switchboard_provider_seconds_count 2", "switchboard_approvals_asked_total 1", "switchboard_inbound_total"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	// Graceful shutdown on SIGTERM.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM\n%s", err, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20s of SIGTERM")
	}
	if strings.Contains(p.stderr.String(), webToken) {
		t.Error("the web token was printed although it came from the config")
	}
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// TestServeCrashRecovery kills serve (SIGKILL) with three messages queued
// behind a running turn and an approval pending, restarts it on the same
// data, and checks that each queued message yields exactly one completed
// turn and that the old approval button still works.
func TestServeCrashRecovery(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	e := newEnv(t,
		bashStep("call_ask", "touch approved-after-restart"), // chat A: parks on an ask
		fakemodel.Step{Text: "first answer", Block: hold},    // chat B: first message, held
	)
	e.writeServeConfig("")
	p := e.startServe()
	web := newWebClient(t, p.url())

	chatA := web.newChat()
	wa := web.watch(chatA)
	web.say(chatA, "a1", "please run it")
	ask := wa.waitFor(t, "Approval needed")
	token := buttonToken(t, ask, "Approve")

	chatB := web.newChat()
	web.say(chatB, "b1", "message one")
	if err := e.model.WaitRequests(web.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	web.say(chatB, "b2", "message two")
	web.say(chatB, "b3", "message three")
	p.kill()

	// Restart: the model answers every request from now on.
	e.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
		last := req.LastMessage()
		if last.Role == "tool" {
			return fakemodel.Step{Text: "approved and done"}
		}
		text := last.Text()
		for _, m := range []string{"message one", "message two", "message three"} {
			if strings.Contains(text, m) {
				return fakemodel.Step{Text: "answer to " + m}
			}
		}
		return fakemodel.Step{Text: "other"}
	})
	close(hold)
	p2 := e.startServe()
	web2 := newWebClient(t, p2.url())
	wb := web2.watch(chatB)
	for _, m := range []string{"message one", "message two", "message three"} {
		wb.waitFor(t, "answer to "+m)
	}
	// The old button still works after the restart.
	reply := web2.post("/api/actions", map[string]string{"token": token, "chat": chatA, "message": ask.ID})
	if !strings.Contains(reply["text"].(string), "Approved") {
		t.Fatalf("old approval button after restart: %v", reply)
	}
	wa2 := web2.watch(chatA)
	wa2.waitFor(t, "approved and done")
	if _, err := os.Stat(filepath.Join(e.workspace, "approved-after-restart")); err != nil {
		t.Fatal("the approved command did not run")
	}
	p2.kill()

	// Each queued message is in the transcript exactly once, answered.
	msgs := conversationWith(t, e, "message one")
	validTranscript(t, msgs)
	for _, m := range []string{"message one", "message two", "message three"} {
		n := 0
		for _, msg := range msgs {
			if msg.Role == agentcore.RoleUser && strings.Contains(msg.Text(), m) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q is in the transcript %d times, want once", m, n)
		}
	}
}

func (w *webClient) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	w.t.Cleanup(cancel)
	return ctx
}

// TestServeWithoutReachableModel: serve starts although the model endpoint
// is down; /status and every reply say what to set.
func TestServeWithoutReachableModel(t *testing.T) {
	e := newEnv(t)
	e.writeServeConfig("")
	cfg, _ := os.ReadFile(filepath.Join(e.home, "switchboard.toml"))
	cfg = []byte(strings.Replace(string(cfg), e.model.URL(), "http://127.0.0.1:1/v1", 1))
	e.writeConfig(string(cfg))
	p := e.startServe()
	web := newWebClient(t, p.url())
	chat := web.newChat()
	w := web.watch(chat)
	eventually(t, 30*time.Second, "the probe to report", func() bool {
		return strings.Contains(p.stderr.String(), "Cannot reach the model")
	})
	web.say(chat, "m1", "/status")
	w.waitFor(t, "Cannot reach the model at http://127.0.0.1:1/v1")
	web.say(chat, "m2", "hello?")
	if m := w.waitFor(t, "model call failed"); !strings.Contains(m.text(), "OPENAI_BASE_URL") {
		t.Fatalf("the failed reply does not say what to set: %s", m.text())
	}
}

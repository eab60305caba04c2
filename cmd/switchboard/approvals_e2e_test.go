package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

// `switchboard approvals approve ID` on a turn parked by serve resumes it
// through the one decide path: the Telegram chat gets the answer and the
// ask's message is edited to show the decision. An unknown id gets one
// line that names it and how to list the valid ones.
func TestApprovalsApproveFromCLI(t *testing.T) {
	e, tg := telegramEnv(t, bashStep("call_cli", "touch approved-from-cli"), fakemodel.Step{Text: "Done, approved from the shell."})
	e.startServe()
	tg.AddMessage(100, 100, "please make it")
	waitTG(t, tg, "the ask", textContains("sendMessage", "Approval needed"))

	db, err := store.Open(context.Background(), filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	pending, err := db.AllPendingApprovals(context.Background(), 0)
	db.Close()
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending approvals = %v, %v", pending, err)
	}
	r := e.run("", "approvals", "approve", pending[0].ID)
	if r.code != 0 || !strings.Contains(r.stdout, "Approved") {
		t.Fatalf("approvals approve: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitTG(t, tg, "the answer after the CLI approval", textContains("", "Done, approved from the shell."))
	waitTG(t, tg, "the ask edited to the decision", func(c telegramtest.Call) bool {
		return c.Method == "editMessageText" && c.Status == 200 && strings.Contains(c.Params["text"], "Approved")
	})
	if _, err := os.Stat(filepath.Join(e.workspace, "approved-from-cli")); err != nil {
		t.Fatal("the approved command did not run")
	}
	// Deciding again is refused, with the reason.
	if r := e.run("", "approvals", "deny", pending[0].ID); r.code == 0 || !strings.Contains(r.stderr, "Already decided") {
		t.Fatalf("a second decision: exit %d %s", r.code, r.stderr)
	}
	r = e.run("", "approvals", "approve", "ap-nope")
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 || !strings.Contains(r.stderr, "ap-nope") || !strings.Contains(r.stderr, "approvals list") {
		t.Fatalf("unknown id: exit %d stderr %q", r.code, r.stderr)
	}
}

// Channels fail alone: with a Telegram token the Bot API refuses, serve
// keeps running, the web page serves and answers, /readyz and the page's
// banner say the channel is down.
func TestRefusedTelegramTokenFailsAlone(t *testing.T) {
	e := newEnv(t, fakemodel.Step{Text: "The web still answers."})
	tg := telegramtest.New(t, tgToken)
	e.extra = append(e.extra, "TELEGRAM_BOT_TOKEN=999:a-token-the-bot-api-refuses")
	e.writeServeConfig(`
[channels.telegram]
token = "${TELEGRAM_BOT_TOKEN}"
api_url = "` + tg.URL() + `"
allow_users = ["100"]
`)
	p := e.startServe()
	web := newWebClient(t, p.url())
	chat := web.newChat()
	w := web.watch(chat)
	web.say(chat, "w1", "hello web")
	w.waitFor(t, "The web still answers.")
	eventually(t, 30*time.Second, "/readyz to name the telegram channel", func() bool {
		resp, err := http.Get(p.url() + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(body), "channel telegram down")
	})
	eventually(t, 30*time.Second, "the web banner", func() bool {
		notice, _ := web.get("/api/state")["notice"].(string)
		return strings.Contains(notice, "telegram channel is down")
	})
	if strings.Contains(p.stderr.String(), "a-token-the-bot-api-refuses") {
		t.Error("the refused token was logged")
	}
}

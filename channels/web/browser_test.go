package web

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/web/webtest"
)

// agentScript is a fake gateway for the browser test: on a message it
// streams a reply (a Send, then an Edit), then asks for approval with
// buttons; the Approve press edits the ask to say who approved.
type agentScript struct {
	fakeHandler
	a *Adapter
}

func newAgentScript(a *Adapter) *agentScript {
	s := &agentScript{a: a}
	s.onIn = func(ctx context.Context, in channels.Inbound) error {
		if in.Text == "" {
			return nil
		}
		ref, err := a.Send(ctx, in.Location, channels.TextMessage("Let me"))
		if err != nil {
			return err
		}
		if err := a.Typing(ctx, in.Location); err != nil {
			return err
		}
		reply := channels.Message{Parts: []channels.Part{
			channels.Text{Markdown: "Let me run the tests for **" + channels.EscapeMarkdown(in.Text) + "**.\n\n" +
				"<img src=x onerror=\"window.__xss=1\"> <script>window.__xss=2</script>"},
			channels.ToolActivity{ID: "call_1", Kind: "execute", Title: "Bash `go test ./...`", Status: channels.StatusDone},
			channels.Plan{Items: []channels.PlanItem{
				{Content: "run tests", Status: channels.PlanCompleted},
				{Content: "push", Status: channels.PlanInProgress},
			}},
		}}
		if err := a.Edit(ctx, ref, reply); err != nil {
			return err
		}
		_, err = a.Send(ctx, in.Location, channels.Message{Parts: []channels.Part{
			channels.Text{Markdown: "Allow `git push origin main`?"},
			channels.Buttons{Rows: [][]channels.Button{{
				{Label: "Approve", Style: channels.StylePrimary, Token: "tok-approve"},
				{Label: "Deny", Style: channels.StyleDanger, Token: "tok-deny"},
			}}},
		}})
		return err
	}
	s.onAction = func(ctx context.Context, act channels.Action) (channels.ActionReply, error) {
		if act.Token != "tok-approve" {
			return channels.ActionReply{Text: "denied"}, nil
		}
		err := a.Edit(ctx, act.Message, channels.TextMessage("Allow `git push origin main`?\n\n*Approved by "+act.User.Name+"*"))
		return channels.ActionReply{Text: "approved"}, err
	}
	return s
}

// pageHas waits until the messages pane's text contains s.
func pageHas(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool]("document.getElementById('messages').innerText.includes("+strconv.Quote(s)+")")(ctx, t)
		return err
	})
}

func TestBrowserApproveFlow(t *testing.T) {
	ctx := webtest.Browser(t)
	a := newTestAdapter()
	h := newAgentScript(a)
	s := startServer(t, a, h)
	a.SetNotice("no model configured: set SWITCHBOARD_MODEL")
	if err := a.RegisterCommands(context.Background(), []channels.Command{
		{Name: "new", Description: "Start a new conversation"},
		{Name: "stop", Description: "Stop the running turn"},
		{Name: "status", Description: "Show the agent and pending approvals"},
		{Name: "stats", Args: "[day]", Description: "Usage figures zq3", AdminOnly: true},
	}); err != nil {
		t.Fatal(err)
	}

	err := chromedp.Do(ctx,
		chromedp.Navigate(s.srv.URL+"/?token="+testToken),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.WaitVisible(chromedp.ID("notice")),
		chromedp.SendKeys(chromedp.ID("input"), "hello agent"+kb.Enter),
		pageHas("Let me run the tests for hello agent"),
		pageHas("go test ./..."),
		pageHas("Allow git push origin main?"),
	)
	if err != nil {
		t.Fatalf("send and wait for the reply: %v", err)
	}
	// The login link left no token in the address bar.
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if want := s.srv.URL + "/#"; len(url) <= len(want) || url[:len(want)] != want {
		t.Errorf("page address %q, want %s#<chat>", url, s.srv.URL)
	}
	in := h.gotInbound()
	if len(in) != 1 || in[0].Text != "hello agent" || in[0].User.ID != "owner" {
		t.Fatalf("inbound %+v", in)
	}

	if v, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("input"))); err != nil || v != "" {
		t.Errorf("composer after sending holds %q (%v), want empty", v, err)
	}
	webtest.Screenshot(t, ctx, "web-ask.png")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(".buttons button.primary")),
		pageHas("Approved by owner"),
		chromedp.WaitVisible(chromedp.CSS("#toasts .toast")),
	)
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	toast, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#toasts .toast")))
	if err != nil {
		t.Fatal(err)
	}
	if toast != "approved" {
		t.Errorf("toast %q, want approved", toast)
	}
	acts := h.gotActions()
	if len(acts) != 1 || acts[0].Token != "tok-approve" || acts[0].Location != in[0].Location {
		t.Errorf("actions %+v", acts)
	}

	// Typing "/" offers the registered commands; the text is sent as-is.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("input"), "/st"),
		chromedp.WaitVisible(chromedp.ID("cmd-hint")),
	)
	if err != nil {
		t.Fatalf("command hint: %v", err)
	}
	hint, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("cmd-hint")))
	if err != nil || !strings.Contains(hint, "/status") || !strings.Contains(hint, "/stop") || strings.Contains(hint, "/new") ||
		!strings.Contains(hint, "/stats [day] — Usage figures zq3 (admins)") {
		t.Errorf("hint %q (%v), want /stop, /status and /stats of the registered table", hint, err)
	}
	accepted := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error { // the gateway took both messages
		_, err := chromedp.Poll[bool]("document.querySelectorAll('article.role-user:not(.pending)').length === 2")(ctx, t)
		return err
	})
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("input"), "atus"+kb.Enter), pageHas("/status"), accepted); err != nil {
		t.Fatalf("send command: %v", err)
	}
	if in := h.gotInbound(); len(in) != 2 || in[1].Text != "/status" {
		t.Errorf("command inbound %+v", in)
	}

	// The model's markup stayed text: nothing ran, and it is visible.
	xss, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window.__xss === undefined && document.querySelectorAll('#messages img, #messages script').length === 0"))
	if err != nil {
		t.Fatal(err)
	}
	if !xss {
		t.Error("markup from the model became elements in the page")
	}
	if err := chromedp.Do(ctx, pageHas(`<img src=x onerror="window.__xss=1">`)); err != nil {
		t.Errorf("escaped markup not shown as text: %v", err)
	}

	// A reload shows the same conversation from the kept messages.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(rctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("input")), pageHas("Approved by owner"), pageHas("hello agent")); err != nil {
		t.Errorf("after reload: %v", err)
	}
	webtest.Screenshot(t, ctx, "web-approved.png")

	// On a phone the conversation list folds away behind the menu button.
	if err := chromedp.Do(rctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.WaitVisible(chromedp.ID("menu")),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool]("document.getElementById('sidebar').getBoundingClientRect().right <= 0")(ctx, t)
			return err
		})); err != nil {
		t.Errorf("phone layout: %v", err)
	}
	webtest.Screenshot(t, ctx, "web-phone.png")
}

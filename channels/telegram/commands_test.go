package telegram

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

func TestRegisterCommands(t *testing.T) {
	e := start(t, nil)
	long := strings.Repeat("word ", 60) // 300 characters
	err := e.a.RegisterCommands(e.ctx, []channels.Command{
		{Name: "status", Description: "Show agent, model and pending approvals"},
		{Name: "deny", Args: "[id] [reason]", Description: "Deny a pending\ntool call"},
		{Name: "mode", Args: "<mode>", Description: "Set the permission mode", AdminOnly: true},
		{Name: "pair", Description: "Approve a pairing code (admins)", AdminOnly: true},
		{Name: "memory", Description: long},
		{Name: "Status", Description: "capitals are refused"},
		{Name: "a-b", Description: "so is a dash"},
		{Name: strings.Repeat("x", 33), Description: "and 33 characters"},
		{Name: "empty", Description: "  "},
		{Name: "status", Description: "listed twice"},
	})
	if err == nil || !channels.IsPermanent(err) {
		t.Fatalf("RegisterCommands with invalid entries returned %v; want a permanent error", err)
	}
	for _, n := range []string{"/Status", "/a-b", "/xxx", "/empty", "twice"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("the error does not name %s: %v", n, err)
		}
	}
	got := e.srv.CommandList()
	var memDesc string
	if len(got) == 5 {
		memDesc = got[4].Description
		got[4].Description = "…"
	}
	want := []telegramtest.Command{
		{Command: "status", Description: "Show agent, model and pending approvals"},
		{Command: "deny", Description: "Deny a pending tool call"},
		{Command: "mode", Description: "Set the permission mode (admins)"},
		{Command: "pair", Description: "Approve a pairing code (admins)"},
		{Command: "memory", Description: "…"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registered (-want +got):\n%s", diff)
	}
	if n := len([]rune(memDesc)); n != 256 || !strings.HasSuffix(memDesc, "…") {
		t.Errorf("a 300-character description became %d characters: %q", n, memDesc)
	}

	// A valid table registers without error and replaces the last one.
	if err := e.a.RegisterCommands(e.ctx, []channels.Command{{Name: "help", Description: "List commands"}}); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.CommandList(); len(got) != 1 || got[0].Command != "help" {
		t.Errorf("after the second table: %v", got)
	}
	// An empty table removes the menu.
	if err := e.a.RegisterCommands(e.ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.CallsOf("deleteMyCommands")); n != 1 || e.srv.Commands() != "" {
		t.Errorf("empty table: %d deleteMyCommands calls, commands %q", n, e.srv.Commands())
	}
	// Telegram's refusals are classified like a send's.
	e.srv.FailNext("setMyCommands", 429, 5)
	err = e.a.RegisterCommands(e.ctx, []channels.Command{{Name: "help", Description: "List commands"}})
	if d, ok := channels.RetryAfter(err); !ok || d != 5*time.Second {
		t.Errorf("rate-limited registration returned %v", err)
	}
	e.srv.FailNext("setMyCommands", 502, 0)
	err = e.a.RegisterCommands(e.ctx, []channels.Command{{Name: "help", Description: "List commands"}})
	if err == nil || channels.IsPermanent(err) || strings.Contains(err.Error(), testToken) {
		t.Errorf("502 on registration returned %v; want a transient error without the token", err)
	}
}

func TestRegisterCommandsAtMost100(t *testing.T) {
	var cmds []channels.Command
	for i := range 101 {
		cmds = append(cmds, channels.Command{Name: "c" + strings.Repeat("x", i%30) + string(rune('a'+i%26)) + string(rune('a'+i/26)), Description: "d"})
	}
	list, skipped := botCommands(cmds)
	if len(list) != 100 || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "at most 100") {
		t.Errorf("101 commands: %d registered, skipped %v", len(list), skipped)
	}
}

func TestDirectLocationIsTheUsersDM(t *testing.T) {
	e := start(t, nil)
	loc, err := e.a.DirectLocation(e.ctx, "7")
	if err != nil {
		t.Fatal(err)
	}
	if want := dmLocation("7"); loc != want {
		t.Errorf("DirectLocation(7) = %+v, want %+v", loc, want)
	}
	e.srv.AddMessage(7, 7, "hi there")
	if in := e.rec.waitInbound(t, e.ctx, 1)[0]; in.Location != loc {
		t.Errorf("the user's DM is at %+v, DirectLocation says %+v", in.Location, loc)
	}
	for _, bad := range []string{"", "-100500", "ada", "7.5"} {
		if _, err := e.a.DirectLocation(e.ctx, bad); err == nil || !channels.IsPermanent(err) {
			t.Errorf("DirectLocation(%q) = %v; want a permanent error", bad, err)
		}
	}
	// Telegram refuses a user who never started the bot: a permanent error.
	e.srv.FailNextError("sendMessage", 403, "Forbidden: bot can't initiate conversation with a user", 0)
	if _, err := e.a.Send(e.ctx, loc, channels.TextMessage("approve?")); !channels.IsPermanent(err) {
		t.Errorf("send to a user who never started the bot: %v", err)
	}
}

func TestDirectLocationBeforeTheBotIsKnown(t *testing.T) {
	srv := telegramtest.New(t, "no-numeric-prefix")
	a := newAdapter(t, srv, newLogSink(), func(o *Options) { o.Token = "no-numeric-prefix" })
	_, err := a.DirectLocation(t.Context(), "7")
	if err == nil || channels.IsPermanent(err) {
		t.Errorf("DirectLocation before getMe with an unknown bot id: %v; want a transient error", err)
	}
}

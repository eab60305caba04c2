package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/config"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// An adapter costs its package plus one row: a toy adapter from its own
// package (channelstest's fake) joins serve's channel table with one row
// and runs a full turn with an approval — buttons, a press, the tool, the
// answer — with no other wiring.
func TestToyChannelIsOneRow(t *testing.T) {
	e := newEnv(t, bashStep("call_toy", "touch toy-file"), fakemodel.Step{Text: "The toy channel works."})
	e.writeConfig(fmt.Sprintf("[agents.main]\nworkspace = %q\n\n[channels.web]\nenabled = false\n", e.workspace))
	for _, kv := range e.environ() {
		k, v, _ := strings.Cut(kv, "=")
		if k != "PATH" && k != "HOME" {
			t.Setenv(k, v)
		}
	}
	toy := channelstest.New("toy", channels.Capabilities{MaxMessageLen: 1000, Edit: true, Buttons: true, Dialect: channels.Plain})
	row := channelRow{
		name: "toy",
		chat: func(*config.Config) (config.Chat, bool) {
			return config.Chat{Enabled: true, Agent: "main", AllowUsers: []string{"tina"}, QueueMode: "followup", EditInterval: time.Millisecond}, true
		},
		build: func(*app, *config.Config) (builtChannel, error) { return builtChannel{adapter: toy}, nil },
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := openApp(ctx, &streams{out: os.Stdout, err: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	plan, err := a.planServe(ctx, append(channelTable(), row))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- plan.g.Run(ctx, time.Second) }()
	defer func() { cancel(); <-done }()

	wait, stop := context.WithTimeout(ctx, 60*time.Second)
	defer stop()
	dm := channels.Location{Channel: "toy", ChatID: "dm-tina"}
	if err := toy.Inbound(wait, channels.Inbound{EventID: "t1", Location: dm, User: channels.User{ID: "tina"}, Text: "make the toy file", DirectMessage: true}); err != nil {
		t.Fatal(err)
	}
	recs, err := toy.WaitFor(wait, channelstest.Count(1, func(r channelstest.Record) bool {
		return r.Err == nil && r.Op == channelstest.OpSend && len(r.Message.ButtonRows()) > 0 && channelstest.Contains("Approval needed")(r)
	}))
	if err != nil {
		t.Fatal(err)
	}
	var ask channelstest.Record
	for _, r := range recs {
		if len(r.Message.ButtonRows()) > 0 && channelstest.Contains("Approval needed")(r) {
			ask = r
		}
	}
	token := ask.Message.ButtonRows()[0][0].Token
	reply, err := toy.Press(wait, channels.Action{EventID: "p1", Location: dm, User: channels.User{ID: "tina"}, Token: token, Message: ask.Ref})
	if err != nil || reply.Alert {
		t.Fatalf("press: %+v %v", reply, err)
	}
	if _, err := toy.WaitFor(wait, channelstest.Count(1, channelstest.Contains("The toy channel works."))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "toy-file")); err != nil {
		t.Fatal("the approved command did not run")
	}
}

package gateway_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// echo answers every request with the text of its last user message.
func echo(req fakemodel.Request) fakemodel.Step {
	last := req.LastMessage()
	var text string
	for _, p := range last.Parts() {
		if !strings.HasPrefix(p.Text, "<system-reminder>") {
			text = p.Text
		}
	}
	return fakemodel.Step{Text: "echo: " + text}
}

func TestManyConversationsInOrder(t *testing.T) {
	convs, perConv := 1000, 10
	if testing.Short() || raceEnabled {
		convs = 100
	}
	h := newHarness(t, harnessOpts{allowAll: true, noEdit: true})
	h.model.SetResponder(echo)
	ctx := h.longCtx()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, convs)
	for c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loc := channels.Location{Channel: "chat", Account: "bot", ChatID: fmt.Sprintf("user-%d", c)}
			for m := range perConv {
				in := inbound(fmt.Sprintf("ev-%d-%d", c, m), fmt.Sprintf("u%d", c), fmt.Sprintf("c%d m%d", c, m), loc)
				if err := h.chat.Inbound(ctx, in); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := convs * perConv
	recs, err := h.chat.WaitFor(h.longCtx(), channelstest.Count(want, channelstest.Contains("echo: ")))
	if err != nil {
		t.Fatalf("only %d of %d answers arrived", len(channelstest.Filter(recs, channelstest.Contains("echo: "))), want)
	}
	t.Logf("%d turns in %v (%.0f turns/s, intake and work overlapping)", want, time.Since(start), float64(want)/time.Since(start).Seconds())
	got := map[string][]string{}
	for _, r := range channelstest.Filter(recs, channelstest.Contains("echo: ")) {
		got[r.Location.ChatID] = append(got[r.Location.ChatID], strings.TrimSpace(r.Text()))
	}
	for c := range convs {
		answers := got[fmt.Sprintf("user-%d", c)]
		if len(answers) != perConv {
			t.Fatalf("conversation %d got %d answers, want %d: %q", c, len(answers), perConv, answers)
		}
		for m, a := range answers {
			if want := fmt.Sprintf("echo: c%d m%d", c, m); a != want {
				t.Fatalf("conversation %d answer %d = %q, want %q (all: %q)", c, m, a, want, answers)
			}
		}
	}
}

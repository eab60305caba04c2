package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
)

// The live message is edited at most once per edit interval, however fast
// the model streams, and the last state is always shown — checked on a fake
// clock (testing/synctest), not the wall clock.
func TestStreamEditThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ad := channelstest.New("chat", channels.Capabilities{MaxMessageLen: 4000, Edit: true, Dialect: channels.Plain})
		e := &env{
			opts:     Options{Channels: map[string]ChannelOptions{"chat": {EditInterval: time.Second}}},
			log:      slog.New(slog.DiscardHandler),
			metrics:  NewMetrics(nil),
			adapters: map[string]channels.Adapter{"chat": ad},
			channels: []string{"chat"},
			now:      time.Now,
		}
		loc := channels.Location{Channel: "chat", ChatID: "c1"}
		s := newStream(context.Background(), e, loc, "conv", "", "in-1", "", nil)
		// 10 simulated seconds of a delta every 10 ms.
		for i := range 1000 {
			s.Emit(agentcore.Event{Type: agentcore.EventAssistantDelta, Text: fmt.Sprint(i % 10)})
			time.Sleep(10 * time.Millisecond)
		}
		s.Emit(agentcore.Event{Type: agentcore.EventAssistantDelta, Text: " w999"})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		s.stop()
		recs := ad.Records()
		if n := len(recs); n < 8 || n > 12 {
			t.Errorf("%d platform calls in 12 simulated seconds at a 1s interval; want about 11", n)
		}
		for i := 1; i < len(recs); i++ {
			if gap := recs[i].At.Sub(recs[i-1].At); gap < time.Second {
				t.Errorf("calls %d and %d are %v apart, under the edit interval", i-1, i, gap)
			}
		}
		if last := recs[len(recs)-1]; last.Err != nil || !channelstest.Contains("w999")(last) {
			t.Errorf("the last edit does not show the last delta: %q", last.Text())
		}
	})
}

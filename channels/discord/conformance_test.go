package discord

import (
	"testing"

	"github.com/switchboard-gw/switchboard/channels/channelstest"
	dt "github.com/switchboard-gw/switchboard/channels/discord/discordtest"
)

func TestConformance(t *testing.T) {
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		srv := dt.New(t)
		logs := &logBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("adapter log:\n%s", logs.String())
			}
		})
		return channelstest.Subject{Adapter: newTestAdapter(t, srv, logs, func(o *Options) { o.ApplicationID = dt.AppID }), Platform: platform{S: srv}}
	})
}

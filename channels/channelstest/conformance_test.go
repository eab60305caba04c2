package channelstest_test

import (
	"testing"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
)

// The fake adapter passes the suite, for every mix of capabilities the
// gateway tests use.
func TestFakeConformance(t *testing.T) {
	for name, caps := range map[string]channels.Capabilities{
		"telegram-like": {MaxMessageLen: 4096, Edit: true, Buttons: true, Typing: true, Upload: true, Dialect: channels.TelegramHTML},
		"no-edit":       {MaxMessageLen: 2000, Dialect: channels.DiscordMarkdown},
		"unlimited":     {Edit: true, Buttons: true, Ephemeral: true, RichParts: true, Dialect: channels.HTML},
	} {
		t.Run(name, func(t *testing.T) {
			channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
				a := channelstest.New("fake", caps)
				p := channelstest.NewFakePlatform(a)
				t.Cleanup(p.Wait)
				return channelstest.Subject{Adapter: a, Platform: p}
			})
		})
	}
}

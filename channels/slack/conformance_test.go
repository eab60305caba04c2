package slack

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/channels/slack/slacktest"
)

// platform is the conformance suite's view of the fake Slack.
type platform struct{ srv *slacktest.Server }

var _ channelstest.Platform = platform{}

func (p platform) Chat() channels.Location {
	return channels.Location{Channel: Name, Account: slacktest.TeamID, ChatID: slacktest.General}
}

func (p platform) Users() (string, string) { return slacktest.Ada, slacktest.Grace }

// Deliver posts a mention, which emits app_mention and message events; the
// id is the app_mention's, which is acknowledged only once the gateway has
// the message (its own delivery or, after the message event's, as a
// duplicate).
func (p platform) Deliver(_ context.Context, loc channels.Location, user, text string) (string, error) {
	var opts []slacktest.PostOption
	if loc.ThreadID != "" {
		opts = append(opts, slacktest.InThread(loc.ThreadID))
	}
	posted := p.srv.Post(loc.ChatID, user, mention(text), opts...)
	return posted.EventIDs[0], nil
}

func (p platform) AcksEvents() bool { return true }

func (p platform) Acked(id string) bool { return p.srv.Acked(id) }

func (p platform) Shown(loc channels.Location) []channelstest.Shown {
	var out []channelstest.Shown
	for _, m := range p.srv.BotMessages(loc.ChatID, loc.ThreadID) {
		sh := channelstest.Shown{ID: m.TS, Text: m.Shown()}
		for _, b := range m.Buttons() {
			sh.Tokens = append(sh.Tokens, b.Value)
		}
		out = append(out, sh)
	}
	return out
}

func (p platform) Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error) {
	return p.srv.Press(ctx, loc.ChatID, msgID, token, user)
}

func (p platform) FailNext(retryAfter time.Duration) {
	f := slacktest.Failure{Error: "channel_not_found"}
	if retryAfter > 0 {
		f = slacktest.Failure{RateLimited: retryAfter}
	}
	p.srv.FailNext(f, "chat.postMessage", "chat.update")
}

func TestConformanceSocketMode(t *testing.T) {
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		e := setup(t, ModeSocket, nil)
		return channelstest.Subject{Adapter: e.a, Platform: platform{e.srv}}
	})
}

func TestConformanceHTTPMode(t *testing.T) {
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		e := setup(t, ModeHTTP, nil)
		return channelstest.Subject{Adapter: e.a, Platform: platform{e.srv}}
	})
}

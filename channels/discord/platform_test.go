package discord

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	dt "github.com/switchboard-gw/switchboard/channels/discord/discordtest"
)

// platform is the channelstest.Platform of the fake, for the conformance
// suite. Discord's gateway has no acknowledgements: AcksEvents is false.
type platform struct{ S *dt.Server }

var _ channelstest.Platform = platform{}

// Chat implements channelstest.Platform: the guild's text channel.
func (p platform) Chat() channels.Location {
	return channels.Location{Channel: "discord", Account: dt.BotID, ChatID: dt.TextChannelID}
}

// Users implements channelstest.Platform.
func (p platform) Users() (string, string) { return dt.UserID, dt.OtherUserID }

// Deliver implements channelstest.Platform: user posts text at loc,
// mentioning the bot. Discord dispatches only to a connected bot (what is
// posted before is for catch-up), so Deliver first waits until the gateway
// connection is live.
func (p platform) Deliver(ctx context.Context, loc channels.Location, user, text string) (string, error) {
	if err := p.S.WaitGateway(ctx, "a live gateway connection", func(s dt.GatewayStats) bool { return s.Live }); err != nil {
		return "", err
	}
	return p.S.Post(channelOf(loc), user, text, dt.Mention()), nil
}

func channelOf(loc channels.Location) string {
	if loc.ThreadID != "" {
		return loc.ThreadID
	}
	return loc.ChatID
}

// AcksEvents implements channelstest.Platform.
func (p platform) AcksEvents() bool { return false }

// Acked implements channelstest.Platform.
func (p platform) Acked(string) bool { return true }

// Shown implements channelstest.Platform: the bot's messages at loc.
func (p platform) Shown(loc channels.Location) []channelstest.Shown {
	var out []channelstest.Shown
	for _, m := range p.S.Messages(channelOf(loc)) {
		if m.Deleted || m.Author.ID != dt.BotID {
			continue
		}
		out = append(out, channelstest.Shown{ID: m.ID, Text: m.Content, Tokens: m.Tokens})
	}
	return out
}

// Press implements channelstest.Platform: it presses the button and
// returns the ephemeral followup the presser sees.
func (p platform) Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error) {
	m, ok := p.S.Message(msgID)
	if !ok {
		return "", fmt.Errorf("no message %s", msgID)
	}
	found := false
	for _, t := range m.Tokens {
		found = found || t == token
	}
	if !found {
		return "", fmt.Errorf("message %s has no button %q", msgID, token)
	}
	if err := p.S.WaitGateway(ctx, "a live gateway connection", func(s dt.GatewayStats) bool { return s.Live }); err != nil {
		return "", err
	}
	id := p.S.PressButton(channelOf(loc), msgID, token, user)
	in, err := p.S.WaitCallback(ctx, id)
	if err != nil {
		return "", err
	}
	if in.Callbacks[0] != 6 && in.Callbacks[0] != 7 {
		return "", fmt.Errorf("button press answered with response type %d", in.Callbacks[0])
	}
	return p.S.WaitFollowup(ctx, id)
}

// FailNext implements channelstest.Platform.
func (p platform) FailNext(retryAfter time.Duration) {
	if retryAfter < 0 {
		p.S.FailNextError(404, 10003, "Unknown Channel")
		return
	}
	p.S.FailNextRateLimited(retryAfter)
}

package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// authorize says whether the sender of an inbound may talk, and whether
// they are an admin: listed admins and allowed users, the platform's role
// facts, and paired users.
func (in *intake) authorize(ctx context.Context, channel string, msg channels.Inbound) (allowed, admin bool, err error) {
	co := in.env.channel(channel)
	userID := msg.User.ID
	if slices.Contains(co.Admins, userID) || msg.RoleAdmin {
		return true, true, nil
	}
	if co.AllowAll || slices.Contains(co.AllowUsers, userID) || msg.RoleAllowed {
		return true, co.AllowAll && len(co.Admins) == 0, nil
	}
	paired, err := in.env.opts.Store.Paired(ctx, channel, userID)
	if err != nil {
		return false, false, fmt.Errorf("check pairing: %w", err)
	}
	return paired, false, nil
}

// isAdmin says whether a qualified id is a configured admin of its channel
// (roles are known only from an inbound or a press: DecideRequest.Admin).
func isAdmin(e *env, who string) bool {
	ch, id, err := channels.ParseIdentity(who)
	if err != nil {
		return false
	}
	co, ok := e.opts.Channels[ch]
	if !ok {
		return false
	}
	return slices.Contains(co.Admins, id) || (co.AllowAll && len(co.Admins) == 0)
}

const (
	pairingTTL = time.Hour
	// maxPendingPairing bounds a channel's pending codes; a new stranger
	// evicts the oldest stranger's code rather than being refused.
	maxPendingPairing = 10
	// pairingNoticeEvery: a stranger gets at most one code message per
	// this interval, however often they write.
	pairingNoticeEvery = time.Hour
)

// startPairing answers an unknown user's DM with a one-time code — the
// same code while it is pending, and at most once an hour.
func (in *intake) startPairing(ctx context.Context, channel string, msg channels.Inbound) error {
	e := in.env
	now := e.now().UTC()
	p, notify, err := e.opts.Store.CreatePairing(ctx, Pairing{
		Code:     pairingCode(),
		Channel:  channel,
		UserID:   msg.User.ID,
		UserName: displayName(msg.User),
		Location: msg.Location.String(),
		Created:  now,
		Expires:  now.Add(pairingTTL),
	}, maxPendingPairing, pairingNoticeEvery, now)
	if err != nil {
		return fmt.Errorf("create pairing code: %w", err)
	}
	if !notify {
		e.log.Debug("unknown user wrote again; their pairing code was sent within the hour", "channel", channel, "user", msg.User.ID)
		return nil
	}
	e.log.Info("pairing code given", "channel", channel, "user", channels.QualifiedID(channel, msg.User.ID))
	in.outbox.post(ctx, msg.Location, channels.TextMessage(fmt.Sprintf(
		"Hi! I only talk to people my owner allowed.\n\nYour pairing code is **%s** (valid for one hour). Ask the owner to run `switchboard pair approve %s` or to send `/pair approve %s` to me.",
		p.Code, p.Code, p.Code)))
	return nil
}

// pairingCode is 8 characters from an alphabet without look-alikes.
func pairingCode() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 8)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}

func notice(text string) channels.Message {
	return channels.Message{Parts: []channels.Part{channels.Notice{Text: text}}}
}

package discord

import (
	"context"
	"net/http"
	"net/url"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-gw/switchboard/channels"
)

// Catch-up bounds.
const (
	catchUpPage         = 100 // Discord's largest page
	catchUpPages        = 5   // per channel
	catchUpMaxLocations = 500
)

// catchUp hands over what was posted in bound locations while the bot was
// not connected: for each location Options.Locations names, the messages
// after the newest one seen there (at most CatchUp ago), oldest first,
// through the same path as live messages. Messages handed over before are
// skipped here; after a crash, the gateway's dedupe on EventID (the message
// id) does the same.
func (a *Adapter) catchUp(ctx context.Context, h channels.Handler) {
	if a.opts.Locations == nil {
		return
	}
	locs, err := a.opts.Locations(ctx)
	if err != nil {
		a.log.Warn("discord catch-up skipped: bound locations unavailable", "err", err)
		return
	}
	floor := snowflakeAt(a.now().Add(-a.opts.CatchUp))
	seen := map[string]bool{}
	handed, checked := 0, 0
	for _, loc := range locs {
		if ctx.Err() != nil {
			return
		}
		if loc.Channel != Name {
			continue
		}
		id := loc.ThreadID
		if id == "" {
			id = loc.ChatID
		}
		if id == "" || seen[id] || !snowflakeSegment.MatchString(id) {
			continue
		}
		seen[id] = true
		if checked++; checked > catchUpMaxLocations {
			a.log.Warn("discord catch-up stopped: too many bound locations", "max", catchUpMaxLocations)
			break
		}
		after := floor
		if last, ok := a.received.last(id); ok && laterID(last, after) {
			after = last
		}
		n, err := a.catchUpChannel(ctx, h, id, after)
		handed += n
		if err != nil && ctx.Err() == nil {
			a.log.Warn("discord catch-up of a channel failed", "channel", id, "err", err)
		}
	}
	if handed > 0 {
		a.log.Info("discord catch-up handed over messages posted while disconnected", "messages", handed)
	}
}

// catchUpChannel reads one channel's messages after the id after, oldest
// first, and delivers them; it returns how many were handed over.
func (a *Adapter) catchUpChannel(ctx context.Context, h channels.Handler, id, after string) (int, error) {
	ch, err := a.channel(ctx, id)
	if err != nil {
		return 0, err
	}
	handed := 0
	for range catchUpPages {
		q := url.Values{"after": {after}, "limit": {"100"}}
		var page []message
		err := a.call(ctx, "catch-up messages", http.MethodGet, discordgo.EndpointChannelMessages(id)+"?"+q.Encode(), discordgo.EndpointChannelMessages(id), nil, &page)
		if err != nil {
			return handed, err
		}
		sortMessages(page)
		for _, m := range page {
			if !laterID(m.ID, after) {
				continue
			}
			if m.ChannelID == "" {
				m.ChannelID = id
			}
			if m.GuildID == "" {
				m.GuildID = ch.GuildID
			}
			if a.deliver(ctx, h, m, "catch-up") {
				handed++
			}
			after = m.ID
		}
		if len(page) < catchUpPage {
			break
		}
	}
	return handed, nil
}

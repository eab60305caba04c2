package discord

import (
	"context"
	"net/http"
	"net/url"
	"slices"

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
		var n int
		if last, ok := a.received.last(id); ok && laterID(last, floor) {
			// A reconnect: what came after the newest message seen.
			n, err = a.catchUpChannel(ctx, h, id, last)
		} else {
			// A fresh start: the newest messages back to the floor (a busy
			// thread has more than the pages read since the floor).
			n, err = a.catchUpNewest(ctx, h, id, floor)
		}
		handed += n
		if err != nil && ctx.Err() == nil {
			a.log.Warn("discord catch-up of a channel failed", "channel", id, "err", err)
		}
	}
	if handed > 0 {
		a.log.Info("discord catch-up handed over messages posted while disconnected", "messages", handed)
	}
}

// catchUpNewest reads one channel's newest messages, page by page back to
// the id floor (at most catchUpPages pages), and delivers those after floor
// oldest first; it returns how many were handed over. Messages already
// handed over are skipped by the gateway's dedupe on their id.
func (a *Adapter) catchUpNewest(ctx context.Context, h channels.Handler, id, floor string) (int, error) {
	ch, err := a.channel(ctx, id)
	if err != nil {
		return 0, err
	}
	var fresh []message
	before, reached := "", false
	for range catchUpPages {
		q := url.Values{"limit": {"100"}}
		if before != "" {
			q.Set("before", before)
		}
		var page []message
		err := a.call(ctx, "catch-up messages", http.MethodGet, discordgo.EndpointChannelMessages(id)+"?"+q.Encode(), discordgo.EndpointChannelMessages(id), nil, &page)
		if err != nil {
			return 0, err
		}
		sortMessages(page)
		for _, m := range page {
			if laterID(m.ID, floor) {
				fresh = append(fresh, m)
			} else {
				reached = true
			}
		}
		if reached || len(page) < catchUpPage {
			reached = true
			break
		}
		before = page[0].ID
	}
	if !reached {
		a.log.Warn("discord catch-up read only the newest messages of a channel", "channel", id, "messages", len(fresh))
	}
	sortMessages(fresh)
	handed := 0
	for _, m := range slices.CompactFunc(fresh, func(x, y message) bool { return x.ID == y.ID }) {
		if a.catchUpOne(ctx, h, ch, m) {
			handed++
		}
	}
	return handed, nil
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
			if a.catchUpOne(ctx, h, ch, m) {
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

// catchUpOne hands over one message read back from channel ch (read
// back, it may lack its channel and guild).
func (a *Adapter) catchUpOne(ctx context.Context, h channels.Handler, ch channelInfo, m message) bool {
	if m.ChannelID == "" {
		m.ChannelID = ch.ID
	}
	if m.GuildID == "" {
		m.GuildID = ch.GuildID
	}
	return a.deliver(ctx, h, m, "catch-up")
}

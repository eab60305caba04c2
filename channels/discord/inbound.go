package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-gw/switchboard/channels"
)

// work is the worker that hands messages over, one at a time in gateway
// order. A message the handler (or Discord, for a lookup it needs) does not
// accept is retried with backoff until it is accepted or ctx ends: the
// gateway does not redeliver, so giving up would lose it. Catch-up runs here
// too, after each READY, before later events.
func (a *Adapter) work(ctx context.Context, h channels.Handler) {
	for {
		var ev gwEvent
		select {
		case <-ctx.Done():
			return
		case ev = <-a.events:
		}
		switch ev.typ {
		case "READY":
			a.ready(ctx, h, ev.raw)
		case "RESUMED":
			a.log.Info("discord gateway resumed")
		case "MESSAGE_CREATE":
			var m message
			if err := json.Unmarshal(ev.raw, &m); err != nil {
				a.log.Warn("discord message ignored", "err", err)
				continue
			}
			a.deliver(ctx, h, m, "")
		}
	}
}

// ready records who the bot is and catches up: a fresh IDENTIFY (this
// READY) does not replay what was posted while the bot was away.
func (a *Adapter) ready(ctx context.Context, h channels.Handler, raw json.RawMessage) {
	var r struct {
		SessionID   string `json:"session_id"`
		User        user   `json:"user"`
		Application struct {
			ID string `json:"id"`
		} `json:"application"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		a.log.Warn("discord READY unreadable", "err", err)
		return
	}
	me := identity{ID: r.User.ID, Username: r.User.Username, AppID: r.Application.ID}
	if me.AppID == "" {
		me.AppID = a.opts.ApplicationID
	}
	if old := a.identity(); old.ID != "" && me.ID != "" && old.ID != me.ID {
		a.log.Warn("discord READY names another bot user than the token", "token", old.ID, "ready", me.ID)
	}
	if me.ID != "" {
		a.me.Store(&me)
	}
	a.identifiedOnce.Do(func() { close(a.identified) })
	a.log.Info("discord gateway ready", "bot", me.Username, "id", me.ID)
	a.catchUp(ctx, h)
}

// deliver converts one message and hands it over, retrying until accepted.
// via names the path for logs ("" for the gateway, "catch-up").
func (a *Adapter) deliver(ctx context.Context, h channels.Handler, m message, via string) bool {
	if m.ID == "" {
		return false
	}
	a.received.saw(m.ChannelID, m.ID)
	if a.received.handled(m.ID) {
		return false
	}
	bo := backoff{min: a.minBackoff / 4, max: a.maxBackoff / 4}
	for {
		handed, err := a.handle(ctx, h, m)
		if err == nil {
			a.received.done(m.ID)
			return handed
		}
		if ctx.Err() != nil {
			return false
		}
		wait := bo.next()
		if d, ok := channels.RetryAfter(err); ok && d > wait {
			wait = d
		}
		a.log.Warn("discord message not accepted; retrying", "message", m.ID, "via", via, "err", err, "wait", wait)
		if !sleep(ctx, wait) {
			return false
		}
	}
}

// handle does everything for one message that may fail: the channel
// lookup, the thread, the image downloads, OnInbound. It reports whether
// the message was handed over; an error means "try again".
func (a *Adapter) handle(ctx context.Context, h channels.Handler, m message) (bool, error) {
	me := a.identity()
	// Cheap checks first: no lookups for bots or the bot itself.
	if pre := convertMessage(m, channelInfo{ID: m.ChannelID, Type: chanDM}, me, filters{allowBots: a.filters.allowBots}); pre.ignore != "" {
		a.log.Debug("discord message ignored", "message", m.ID, "why", pre.ignore)
		return false, nil
	}
	ch := channelInfo{ID: m.ChannelID, Type: chanDM}
	if m.GuildID != "" || a.chans.known(m.ChannelID) {
		var err error
		if ch, err = a.channel(ctx, m.ChannelID); err != nil {
			if channels.IsPermanent(err) {
				a.log.Warn("discord message ignored: its channel cannot be read", "message", m.ID, "err", err)
				return false, nil
			}
			return false, err
		}
	}
	if m.GuildID == "" {
		m.GuildID = ch.GuildID
	}
	if m.Member == nil && m.GuildID != "" && len(a.filters.allowRoles)+len(a.filters.adminRds) > 0 {
		// Messages read back by catch-up carry no member; roles need it.
		mem, err := a.member(ctx, m.GuildID, m.Author.ID)
		if err != nil && !channels.IsPermanent(err) {
			return false, err
		}
		m.Member = mem
	}
	c := convertMessage(m, ch, me, a.filters)
	if c.ignore != "" {
		a.log.Debug("discord message ignored", "message", m.ID, "why", c.ignore)
		return false, nil
	}
	in := c.inbound
	if c.thread {
		id, err := a.startThread(ctx, m.ChannelID, m.ID, c.threadName)
		switch {
		case err == nil:
			in.Location.ThreadID = id
			in.ReplyToBot = true
		case channels.IsPermanent(err):
			// No right to open threads here: the conversation stays in the
			// channel.
			a.log.Warn("discord could not open a thread; answering in the channel", "channel", m.ChannelID, "err", err)
		default:
			return false, err
		}
	}
	for _, img := range c.images {
		a.attachImage(ctx, &in, img)
	}
	if err := h.OnInbound(ctx, in); err != nil {
		return false, fmt.Errorf("handle message %s: %w", m.ID, err)
	}
	return true, nil
}

// startThread opens a thread from message mid in channel cid. A thread
// started from a message has the message's id; when it exists already (a
// retry, a catch-up, another process), that id is the answer.
func (a *Adapter) startThread(ctx context.Context, cid, mid, name string) (string, error) {
	body := map[string]any{"name": name, "auto_archive_duration": 1440}
	var ch channelInfo
	err := a.call(ctx, "start thread", http.MethodPost, discordgo.EndpointChannelMessageThread(cid, mid), discordgo.EndpointChannelMessageThread(cid, ""), body, &ch)
	if apiCode(err) == codeThreadAlreadyExists {
		return mid, nil
	}
	if err != nil {
		return "", err
	}
	if ch.ID == "" {
		ch.ID = mid
	}
	if ch.ParentID == "" {
		ch.ParentID = cid
	}
	if ch.Type == 0 {
		ch.Type = chanPublicThread
	}
	a.chans.put(ch)
	return ch.ID, nil
}

// channel returns what the adapter knows of a channel, asking Discord once.
func (a *Adapter) channel(ctx context.Context, id string) (channelInfo, error) {
	if ch, ok := a.chans.get(id); ok {
		return ch, nil
	}
	var ch channelInfo
	if err := a.call(ctx, "get channel", http.MethodGet, discordgo.EndpointChannel(id), discordgo.EndpointChannels, nil, &ch); err != nil {
		return channelInfo{}, err
	}
	if ch.ID == "" {
		ch.ID = id
	}
	a.chans.put(ch)
	return ch, nil
}

// member reads a guild member (for its roles).
func (a *Adapter) member(ctx context.Context, guildID, userID string) (*member, error) {
	var m member
	if err := a.call(ctx, "get member", http.MethodGet, discordgo.EndpointGuildMember(guildID, userID), discordgo.EndpointGuildMembers(guildID), nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// attachImage downloads an image into an attachment; a failure becomes a
// note in the text, never a lost message.
func (a *Adapter) attachImage(ctx context.Context, in *channels.Inbound, at attachment) {
	data, err := a.download(ctx, at.URL)
	name := oneLine(at.Filename)
	if err != nil {
		a.log.Warn("discord image download failed", "err", a.red.string(err.Error()))
		in.Text = strings.TrimSpace(in.Text + "\n\n" + fmt.Sprintf(imageFailedNote, `"`+name+`"`))
		return
	}
	if name == "" {
		name = "image"
	}
	in.Attachments = append(in.Attachments, channels.Attachment{Name: name, MIME: at.ContentType, Data: data})
}

var errTooLarge = errors.New("file is larger than the download limit")

// download fetches a URL (the CDN, or the fake's), at most MaxDownload
// bytes. It sends no token: attachment URLs are signed.
func (a *Adapter) download(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download: HTTP %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.opts.MaxDownload+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > a.opts.MaxDownload {
		return nil, errTooLarge
	}
	return data, nil
}

// channelCache remembers channels (type, parent, guild, owner): at most
// max, least recently used out first, each for chanTTL (a channel nobody
// wrote in for that long is asked about again).
type channelCache struct {
	c *channels.Cache[string, channelInfo]
}

// chanTTL is how long the adapter remembers a channel it heard nothing of;
// dmTTL, a user's DM channel it did not open again.
const (
	chanTTL = time.Hour
	dmTTL   = 24 * time.Hour
)

func (c *channelCache) init(max int, now func() time.Time) {
	c.c = channels.NewCache[string, channelInfo](max, chanTTL, now)
}

func (c *channelCache) get(id string) (channelInfo, bool) { return c.c.Get(id) }

func (c *channelCache) known(id string) bool {
	_, ok := c.get(id)
	return ok
}

func (c *channelCache) put(ch channelInfo) { c.c.Put(ch.ID, ch) }

func (c *channelCache) drop(id string) { c.c.Delete(id) }

// receivedLog is what the worker has received: the messages handed over
// (or deliberately ignored) and, per channel, the newest message id seen,
// where catch-up starts. It lives in memory; after a crash the gateway's
// dedupe on EventID (the message id) keeps catch-up from handing a message
// over twice. Only the worker goroutine uses it.
type receivedLog struct {
	max      int
	doneSet  map[string]bool
	order    []string // doneSet's ids, oldest first
	lastSeen map[string]string
}

func newReceivedLog(max int) receivedLog {
	return receivedLog{max: max, doneSet: map[string]bool{}, lastSeen: map[string]string{}}
}

func (r *receivedLog) saw(channelID, id string) {
	if channelID == "" {
		return
	}
	if last, ok := r.lastSeen[channelID]; !ok || laterID(id, last) {
		if !ok && len(r.lastSeen) >= r.max {
			r.lastSeen = map[string]string{} // catch-up falls back to its window
		}
		r.lastSeen[channelID] = id
	}
}

func (r *receivedLog) handled(id string) bool { return r.doneSet[id] }

func (r *receivedLog) done(id string) {
	if r.doneSet[id] {
		return
	}
	r.doneSet[id] = true
	r.order = append(r.order, id)
	if len(r.order) > r.max {
		drop := len(r.order) - r.max
		for _, old := range r.order[:drop] {
			delete(r.doneSet, old)
		}
		r.order = append([]string(nil), r.order[drop:]...)
	}
}

func (r *receivedLog) last(channelID string) (string, bool) {
	id, ok := r.lastSeen[channelID]
	return id, ok
}

package slack

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/switchboard-gw/switchboard/channels"
)

// Catch-up: Slack drops events it could not deliver (the process was down,
// the socket was deaf). After every connection the adapter reads what was
// posted meanwhile in the conversations the gateway has bound — replies in
// bound threads (conversations.replies) and, for bound DMs, top-level
// messages (conversations.history) — within CatchUpWindow, and hands over
// what it never handed over. The EventID of a message is its channel+ts,
// as for live events, so the gateway's dedupe makes handing over a message
// it already has harmless; the adapter's memory of what it handed over only
// saves the calls. Nothing durable is kept here: after a restart the
// gateway's dedupe is what prevents a second turn — also for commands typed
// in a thread, which the gateway dedupes whether it queues them or acts at
// once (/stop, /approve), so a command typed while serve was down runs
// once and one it already ran does not run again.

// Catch-up limits per conversation.
const (
	catchUpPage  = 200
	catchUpPages = 5
)

// catchUpLoop runs one catch-up per request until the run ends.
func (a *Adapter) catchUpLoop(r *run) {
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.catchUp:
			a.catchUpAll(r.ctx, r)
		}
	}
}

func (a *Adapter) catchUpAll(ctx context.Context, r *run) {
	if a.opts.Threads == nil {
		r.behind.listed(nil)
		return
	}
	locs, err := a.opts.Threads(ctx)
	if err != nil {
		r.behind.listed(nil)
		if ctx.Err() == nil {
			a.log.Warn("slack catch-up: cannot list bound threads", "err", err)
		}
		return
	}
	var todo []channels.Location
	for _, loc := range locs {
		if loc.Channel != Name || !validID(loc.ChatID) || (loc.ThreadID != "" && !validTS(loc.ThreadID)) {
			continue
		}
		if loc.ThreadID == "" && !strings.HasPrefix(loc.ChatID, "D") {
			continue // a channel's top level is not a conversation: mentions start threads
		}
		if !a.channelAllowed(loc.ChatID, strings.HasPrefix(loc.ChatID, "D")) {
			continue
		}
		if len(todo) == a.opts.MaxCatchUpThreads {
			break
		}
		todo = append(todo, loc)
	}
	r.behind.listed(todo)
	handed := 0
	for _, loc := range todo {
		if ctx.Err() != nil {
			return
		}
		k := threadKey(loc.ChatID, loc.ThreadID)
		if r.behind.claim(k) {
			handed += a.catchUpOne(ctx, r.h, loc)
			r.behind.finish(k)
		}
	}
	if handed > 0 {
		a.log.Info("slack catch-up handed over messages missed while disconnected", "messages", handed)
	}
}

// catchUpOne catches up one bound conversation and returns how many
// messages it handed over.
func (a *Adapter) catchUpOne(ctx context.Context, h channels.Handler, loc channels.Location) int {
	me := a.identity()
	oldest := a.opts.Now().Add(-a.opts.CatchUpWindow)
	since := tsOf(oldest)
	// The newest message this process handed over from the conversation;
	// unknown after a start.
	last, known := a.lastSeen.Get(threadKey(loc.ChatID, loc.ThreadID))
	if known && tsLess(since, last) {
		since = last
	}
	msgs, err := a.fetch(ctx, loc, since)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("slack catch-up fetch failed", "location", loc.String(), "err", err)
		}
		return 0
	}
	sort.SliceStable(msgs, func(i, j int) bool { return tsLess(msgs[i].TS, msgs[j].TS) })
	start := 0
	dm := strings.HasPrefix(loc.ChatID, "D")
	if !known && !dm {
		// Fresh from a start: replies before the bot joined the thread (its
		// first mention or message) were not addressed to it.
		for i, m := range msgs {
			if m.User == me.UserID || (me.BotID != "" && m.BotID == me.BotID) || strings.Contains(m.Text, "<@"+me.UserID) {
				start = i
				break
			}
		}
	}
	handed := 0
	for _, m := range msgs[start:] {
		if !tsLess(since, m.TS) {
			continue
		}
		d, why := convertMessage(m, me, loc.ChatID, false)
		if why != "" || d.in.Location.ThreadID != loc.ThreadID {
			continue
		}
		if a.accepted.Has("message:" + d.in.EventID) {
			continue
		}
		if loc.ThreadID != "" {
			d.in.ReplyToBot = true // a bound thread is one the bot is in
		}
		if err := a.deliver(ctx, h, d); err != nil {
			a.log.Warn("slack catch-up message not accepted; the next catch-up tries again", "location", loc.String(), "err", err)
			return handed
		}
		handed++
	}
	return handed
}

// fetch reads the messages of a bound conversation after since: the
// thread's replies, or a DM's top-level messages.
func (a *Adapter) fetch(ctx context.Context, loc channels.Location, since string) ([]message, error) {
	msgs, err := a.read(ctx, loc.ChatID, loc.ThreadID, since, catchUpPage, catchUpPages, false)
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, fromAPI(m))
	}
	return out, err
}

// read reads a thread's replies (conversations.replies), or a channel's
// top-level messages (conversations.history), after oldest, at most pages
// pages of page messages, with their metadata when asked. A rate limit
// before anything was read is waited out once (up to a minute); on an
// error it returns what it read with the error.
func (a *Adapter) read(ctx context.Context, chat, thread, oldest string, page, pages int, metadata bool) ([]slack.Message, error) {
	var out []slack.Message
	cursor := ""
	for range pages {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		var msgs []slack.Message
		var more bool
		var err error
		if thread != "" {
			msgs, more, cursor, err = a.api.GetConversationRepliesContext(cctx, &slack.GetConversationRepliesParameters{
				ChannelID: chat, Timestamp: thread, Oldest: oldest, Limit: page, Cursor: cursor, IncludeAllMetadata: metadata,
			})
			err = a.red.classify("conversations.replies", err)
		} else {
			var r *slack.GetConversationHistoryResponse
			r, err = a.api.GetConversationHistoryContext(cctx, &slack.GetConversationHistoryParameters{
				ChannelID: chat, Oldest: oldest, Limit: page, Cursor: cursor, IncludeAllMetadata: metadata,
			})
			err = a.red.classify("conversations.history", err)
			if r != nil {
				msgs, more, cursor = r.Messages, r.HasMore, r.ResponseMetaData.NextCursor
			}
		}
		cancel()
		if err != nil {
			if d, ok := channels.RetryAfter(err); ok && d > 0 && d <= time.Minute && len(out) == 0 {
				if sleep(ctx, d) {
					continue
				}
			}
			return out, err
		}
		out = append(out, msgs...)
		if !more || cursor == "" {
			break
		}
	}
	return out, nil
}

// fromAPI converts the SDK's message to the shape events have.
func fromAPI(m slack.Message) message {
	out := message{
		Type: m.Type, Subtype: m.SubType, User: m.User, BotID: m.BotID, Text: m.Text,
		TS: m.Timestamp, ThreadTS: m.ThreadTimestamp, ParentUserID: m.ParentUserId, Hidden: m.Hidden,
	}
	for _, f := range m.Files {
		out.Files = append(out.Files, file{
			ID: f.ID, Name: f.Name, Mimetype: f.Mimetype, Size: int64(f.Size),
			URLPrivate: f.URLPrivate, URLPrivateDownload: f.URLPrivateDownload,
		})
	}
	return out
}

package slack

import (
	"context"
	"strconv"
	"time"
)

// Slack has no idempotency key for chat.postMessage, so a send retried
// after a crash (the process posted, then died before the outbox recorded
// it) would post a second copy — of an approval card, one whose buttons no
// decision edits. Every message the adapter posts for a keyed send carries
// the key in its metadata (event type sentEventType); a send the gateway
// marks as maybe sent already (Message.MaybeSentSince) first reads the
// conversation since then and reuses the bot's post with that key.

// sentEventType is the metadata event type of the adapter's keyed posts.
const sentEventType = "switchboard_message"

// Bounds of the lookup: a retried send is rare, and the post it looks for
// is recent.
const (
	findPostedPage  = 200
	findPostedPages = 3
	findPostedSlack = 10 * time.Second // clock skew between the item's time and Slack's ts
)

// partKey is the key of a send's i-th message.
func partKey(key string, i int) string {
	if key == "" {
		return ""
	}
	if i == 0 {
		return key
	}
	return key + "#" + strconv.Itoa(i)
}

// findPosted returns the keys of the bot's keyed posts in a thread (or at
// a channel's top level) since a time, with their ts. A failure returns
// what was found: the send then posts, as it would have without the check.
func (a *Adapter) findPosted(ctx context.Context, chat, thread string, since time.Time) map[string]string {
	me := a.identity()
	found := map[string]string{}
	msgs, err := a.read(ctx, chat, thread, tsOf(since.Add(-findPostedSlack)), findPostedPage, findPostedPages, true)
	if err != nil {
		a.log.Warn("slack: cannot check whether a retried message was posted already; posting what was not found", "chat", chat, "err", err)
	}
	for _, m := range msgs {
		mine := (me.BotID != "" && m.BotID == me.BotID) || (me.UserID != "" && m.User == me.UserID)
		if !mine || m.Metadata.EventType != sentEventType {
			continue
		}
		if k, ok := m.Metadata.EventPayload["key"].(string); ok && k != "" {
			if _, dup := found[k]; !dup {
				found[k] = m.Timestamp
			}
		}
	}
	return found
}

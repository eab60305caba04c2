package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

// RecentBindings returns the bindings of one channel's locations whose
// conversation was active (updated) at or after since, most recently
// active first, at most limit (<= 0: all). An adapter that must catch up
// after a reconnect (Discord) reads these to know where to look.
//
// A location key starts with its channel and ':' (channels.Location.String),
// so the channel's keys are one range of the primary key. A channel name
// that would be escaped in a key (':', '%', control characters) is refused.
func (db *DB) RecentBindings(ctx context.Context, channel string, since time.Time, limit int) ([]gateway.Binding, error) {
	if channel == "" || strings.ContainsFunc(channel, func(r rune) bool { return r == ':' || r == '%' || r < 0x20 || r == 0x7f }) {
		return nil, fmt.Errorf("recent bindings: %q is not a channel name", channel)
	}
	rows, err := db.r.QueryContext(ctx,
		`SELECT b.location, b.agent_id, b.conversation_id, b.created
		 FROM bindings b JOIN conversations c ON c.id = b.conversation_id
		 WHERE b.location >= ? AND b.location < ? AND c.updated >= ?
		 ORDER BY c.updated DESC, b.location LIMIT ?`,
		channel+":", channel+";", nanos(since), limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("recent bindings of %s: %w", channel, err)
	}
	defer rows.Close()
	var out []gateway.Binding
	for rows.Next() {
		var b gateway.Binding
		var created int64
		if err := rows.Scan(&b.Location, &b.AgentID, &b.ConversationID, &created); err != nil {
			return nil, fmt.Errorf("recent bindings of %s: %w", channel, err)
		}
		b.Created = fromNanos(created)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent bindings of %s: %w", channel, err)
	}
	return out, nil
}

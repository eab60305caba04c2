package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

func TestRecentBindings(t *testing.T) {
	ctx := t.Context()
	db := openTemp(t, "")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Conversations updated 1..5 hours before base.
	conv := func(hoursAgo int) agentcore.Conversation {
		c := agentcore.Conversation{ID: fmt.Sprintf("0190aaaa-0000-7000-8000-00000000000%d", hoursAgo), AgentID: "main",
			Created: base.Add(-48 * time.Hour), Updated: base.Add(-time.Duration(hoursAgo) * time.Hour)}
		if err := db.CreateConversation(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1, c2, c3, c5 := conv(1), conv(2), conv(3), conv(5)
	for _, b := range []struct {
		loc  string
		conv agentcore.Conversation
	}{
		{"discord:900:810:111", c2},
		{"discord:900:810:222", c1},
		{"discord:900:810", c3},
		{"discord:900:820:333", c5},  // too old
		{"telegram:1:42", c1},        // another channel
		{"discordx:900:810:444", c1}, // a channel whose name starts like it
		{"discord:900:810:555", agentcore.Conversation{ID: "gone", AgentID: "main"}}, // no such conversation
	} {
		if err := db.Bind(ctx, bindingFor(b.loc, b.conv)); err != nil {
			t.Fatal(err)
		}
	}
	locations := func(channel string, since time.Time, limit int) []string {
		t.Helper()
		bs, err := db.RecentBindings(ctx, channel, since, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range bs {
			out = append(out, b.Location)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		channel string
		since   time.Time
		limit   int
		want    []string
	}{
		{"active in the last 4h, newest first", "discord", base.Add(-4 * time.Hour), 0,
			[]string{"discord:900:810:222", "discord:900:810:111", "discord:900:810"}},
		{"limit keeps the newest", "discord", base.Add(-4 * time.Hour), 2,
			[]string{"discord:900:810:222", "discord:900:810:111"}},
		{"since bounds inclusively", "discord", base.Add(-2 * time.Hour), 0,
			[]string{"discord:900:810:222", "discord:900:810:111"}},
		{"zero since: every binding of the channel", "discord", time.Time{}, 0,
			[]string{"discord:900:810:222", "discord:900:810:111", "discord:900:810", "discord:900:820:333"}},
		{"another channel", "telegram", time.Time{}, 0, []string{"telegram:1:42"}},
		{"nothing", "slack", time.Time{}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := locations(tc.channel, tc.since, tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("RecentBindings(%q) = %q, want %q", tc.channel, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "disc:ord", "100%"} {
		if _, err := db.RecentBindings(ctx, bad, time.Time{}, 0); err == nil {
			t.Errorf("RecentBindings(%q) accepted a bad channel name", bad)
		}
	}
}

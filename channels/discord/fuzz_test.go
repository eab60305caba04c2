package discord

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var messageSeeds = []string{
	`{"id":"1577436609463189505","channel_id":"810000000000000001","guild_id":"800000000000000001","type":0,"content":"<@900000000000000001> hi <@!900000000000000001><@1>","author":{"id":"7","username":"ada"},"mentions":[{"id":"900000000000000001"}],"member":{"roles":["600000000000000002"]}}`,
	`{"id":"2","channel_id":"3","type":19,"content":"x","author":{"id":"7"},"message_reference":{"message_id":"1"},"referenced_message":{"author":{"id":"900000000000000001"}}}`,
	`{"id":"2","channel_id":"3","author":{"id":"7","bot":true},"webhook_id":"9"}`,
	`{"id":"2","channel_id":"3","author":{"id":"7"},"attachments":[{"filename":"a\nb.png","content_type":"image/png","url":"u","size":-1},{"content_type":"image/"}]}`,
	`{"id":"","channel_id":null,"author":null}`,
	`{"id":"99999999999999999999999","timestamp":"nope","content":"<@","author":{"id":"<@1>"}}`,
	`[]`, `null`, `{"mentions":[null],"attachments":[null]}`,
}

var interactionSeeds = []string{
	`{"id":"55","token":"tk","type":3,"channel_id":"830000000000000001","guild_id":"8","member":{"user":{"id":"7"},"roles":["1"]},"message":{"id":"66"},"data":{"custom_id":"tok-1","component_type":2}}`,
	`{"id":"1","token":"t","type":2,"channel_id":"2","user":{"id":"3"},"data":{"name":"deny","options":[{"name":"args","type":3,"value":"3 no"}]}}`,
	`{"id":"1","token":"t","type":2,"channel_id":"2","user":{"id":"3"},"data":{"name":"m","options":[{"name":"s","type":1,"options":[{"name":"s","type":1,"options":[{"name":"s","type":2,"options":[{"name":"s","type":1,"options":[{"name":"v","type":3,"value":"deep"}]}]}]}]}]}}`,
	`{"id":"1","token":"t","type":2,"data":{"name":"x","options":[{"value":{"a":[1,2]}},{"value":null},{"value":true}]}}`,
	`{"id":"1","token":"t","type":1}`, `{"data":null}`, `7`,
}

// FuzzConvertMessage checks that any MESSAGE_CREATE payload converts
// without panicking, and what a handed-over message always is: the event
// id is the message id, the location is this channel's, the bot's own
// mention is gone, and the bot's own messages never come back.
func FuzzConvertMessage(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add(s, 0, true)
	}
	f.Fuzz(func(t *testing.T, raw string, chType int, autoThread bool) {
		var m message
		if json.Unmarshal([]byte(raw), &m) != nil {
			return
		}
		ch := channelInfo{ID: m.ChannelID, Type: chType % 20, GuildID: m.GuildID, ParentID: "810000000000000001", OwnerID: botID}
		f := testFilters
		f.autoThread = autoThread
		c := convertMessage(m, ch, testMe, f)
		if c.ignore != "" {
			return
		}
		in := c.inbound
		if in.EventID == "" || in.EventID != m.ID || in.MessageID != m.ID {
			t.Fatalf("event id %q / message id %q for message %q", in.EventID, in.MessageID, m.ID)
		}
		if in.Location.Channel != Name || in.Location.ChatID == "" {
			t.Fatalf("location %+v", in.Location)
		}
		if in.User.ID == botID {
			t.Fatal("the bot's own message was handed over")
		}
		if strings.Contains(in.Text, "<@"+botID+">") || strings.Contains(in.Text, "<@!"+botID+">") {
			t.Fatalf("the bot's mention is still in %q", in.Text)
		}
		if c.thread && (in.DirectMessage || !in.Mentioned || in.Location.ThreadID != "") {
			t.Fatalf("a thread would be opened for %+v", in)
		}
		if c.thread && (c.threadName == "" || utf8.RuneCountInString(c.threadName) > 100) {
			t.Fatalf("thread name %q", c.threadName)
		}
		if len(c.images) > f.maxImages {
			t.Fatalf("%d images", len(c.images))
		}
		if in.RoleAdmin && !in.RoleAllowed {
			t.Fatal("an admin by role is not allowed by role")
		}
	})
}

// FuzzConvertInteraction checks that any INTERACTION_CREATE payload
// converts without panicking into at most one of an action or a command,
// each with the interaction id as event id, and that a command's text is
// one "/name …" line whose handle round-trips.
func FuzzConvertInteraction(f *testing.F) {
	for _, s := range interactionSeeds {
		f.Add(s, 11)
	}
	f.Fuzz(func(t *testing.T, raw string, chType int) {
		var i interaction
		if json.Unmarshal([]byte(raw), &i) != nil {
			return
		}
		ch := channelInfo{ID: i.ChannelID, Type: chType % 20, ParentID: "810000000000000001"}
		r := convertInteraction(i, ch, testMe, testFilters)
		n := 0
		if r.action != nil {
			n++
			if r.action.EventID != i.ID || r.action.Token == "" || r.action.Location.ChatID == "" {
				t.Fatalf("action %+v", r.action)
			}
		}
		if r.command != nil {
			n++
			in := r.command
			if in.EventID != i.ID || !strings.HasPrefix(in.Text, "/"+i.Data.Name) || strings.Contains(in.Text, "\n") {
				t.Fatalf("command %+v", in)
			}
			if id, ok := parseHandle(in.MessageID); !ok || id != i.ID {
				t.Fatalf("handle %q does not name interaction %q", in.MessageID, i.ID)
			}
		}
		if n == 0 && r.ignore == "" || n > 1 {
			t.Fatalf("result %+v", r)
		}
	})
}

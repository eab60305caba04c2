package discord

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
)

const (
	botID   = "900000000000000001"
	adaID   = "700000000000000001"
	guild   = "800000000000000001"
	text    = "810000000000000001"
	thread  = "830000000000000001"
	msgID   = "1577436609463189505"
	roleOK  = "600000000000000001"
	roleAdm = "600000000000000002"
)

var (
	testMe      = identity{ID: botID, Username: "switchboard-test", AppID: botID}
	textChannel = channelInfo{ID: text, Type: chanText, GuildID: guild}
	botThread   = channelInfo{ID: thread, Type: chanPublicThread, GuildID: guild, ParentID: text, OwnerID: botID}
	dmChannel   = channelInfo{ID: "840000000000000001", Type: chanDM}
	ada         = channels.User{ID: adaID, Name: "Ada Lovelace", Username: "ada"}
	testFilters = filters{autoThread: true, maxImages: 2, maxDownload: 100,
		allowRoles: set([]string{roleOK}), adminRds: set([]string{roleAdm})}
)

// msg builds a MESSAGE_CREATE payload with extra fields.
func msg(channel, extra string) message {
	raw := `{"id":"` + msgID + `","channel_id":"` + channel + `","type":0,"timestamp":"2026-12-01T10:00:00.5+00:00",` +
		`"author":{"id":"` + adaID + `","username":"ada","global_name":"Ada Lovelace"}` + extra + `}`
	var m message
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		panic(err)
	}
	return m
}

func TestConvertMessage(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 500e6, time.UTC)
	chanLoc := channels.Location{Channel: Name, Account: botID, ChatID: text}
	threadLoc := channels.Location{Channel: Name, Account: botID, ChatID: text, ThreadID: thread}
	mention := `,"guild_id":"` + guild + `","content":"<@` + botID + `> run the tests","mentions":[{"id":"` + botID + `","username":"switchboard-test","bot":true}]`
	inGuild := `,"guild_id":"` + guild + `"`
	tests := []struct {
		name   string
		m      message
		ch     channelInfo
		f      *filters // nil: testFilters
		want   channels.Inbound
		ignore string
		thread string // thread name when one is to be opened
		images int
	}{{
		name:   "mention in a text channel opens a thread",
		m:      msg(text, mention),
		ch:     textChannel,
		want:   channels.Inbound{EventID: msgID, Location: chanLoc, User: ada, Text: "run the tests", Mentioned: true, MessageID: msgID, At: at},
		thread: "run the tests",
	}, {
		name: "mention without auto_thread stays in the channel",
		m:    msg(text, mention),
		ch:   textChannel,
		f:    &filters{},
		want: channels.Inbound{EventID: msgID, Location: chanLoc, User: ada, Text: "run the tests", Mentioned: true, MessageID: msgID, At: at},
	}, {
		name:   "legacy nickname mention in the middle, another user shown by name",
		m:      msg(text, inGuild+`,"content":"hey <@!`+botID+`> ask <@123> and <@456>","mentions":[{"id":"123","username":"grace","global_name":"Grace"}]`),
		ch:     textChannel,
		want:   channels.Inbound{EventID: msgID, Location: chanLoc, User: ada, Text: "hey ask @Grace and <@456>", Mentioned: true, MessageID: msgID, At: at},
		thread: "hey ask @Grace and <@456>",
	}, {
		name: "message in the bot's thread: no mention needed",
		m:    msg(thread, inGuild+`,"content":"and now?"`),
		ch:   botThread,
		want: channels.Inbound{EventID: msgID, Location: threadLoc, User: ada, Text: "and now?", ReplyToBot: true, MessageID: msgID, At: at},
	}, {
		name: "reply to the bot, with a nickname and roles",
		m: msg(text, inGuild+`,"type":19,"content":"yes","member":{"nick":"Countess","roles":["`+roleAdm+`"]},`+
			`"message_reference":{"message_id":"42"},"referenced_message":{"author":{"id":"`+botID+`"}}`),
		ch: textChannel,
		want: channels.Inbound{EventID: msgID, Location: chanLoc, User: channels.User{ID: adaID, Name: "Countess", Username: "ada"},
			Text: "yes", ReplyToBot: true, ReplyTo: "42", MessageID: msgID, At: at, RoleAllowed: true, RoleAdmin: true},
	}, {
		name: "allow role",
		m:    msg(text, inGuild+`,"content":"hi","member":{"roles":["1","`+roleOK+`"]}`),
		ch:   textChannel,
		want: channels.Inbound{EventID: msgID, Location: chanLoc, User: ada, Text: "hi", MessageID: msgID, At: at, RoleAllowed: true},
	}, {
		name: "DM",
		m:    msg(dmChannel.ID, `,"content":"private"`),
		ch:   dmChannel,
		want: channels.Inbound{EventID: msgID, Location: channels.Location{Channel: Name, Account: botID, ChatID: dmChannel.ID}, User: ada,
			Text: "private", DirectMessage: true, MessageID: msgID, At: at},
	}, {
		name:   "images downloaded within limits, other files noted",
		m:      msg(text, inGuild+`,"content":"look","attachments":[{"filename":"a.png","content_type":"image/png","url":"u1","size":10},{"filename":"big.png","content_type":"image/png","url":"u2","size":1000},{"filename":"b.jpg","content_type":"image/jpeg","url":"u3","size":5},{"filename":"c.gif","content_type":"image/gif","url":"u4","size":5},{"filename":"x.zip","content_type":"application/zip","url":"u5","size":5}]`),
		ch:     textChannel,
		images: 2,
		want: channels.Inbound{EventID: msgID, Location: chanLoc, User: ada, MessageID: msgID, At: at,
			Text: "look\n\n" + `[The user attached the image "big.png", larger than the download limit; it was not read.]` + "\n" +
				`[The user attached more images than are read at once; "c.gif" was not read.]` + "\n" +
				`[The user attached "x.zip", which was not read: only images reach the model.]`},
	}, {
		name:   "own message",
		m:      msg(text, inGuild+`,"author":{"id":"`+botID+`","bot":true}`),
		ch:     textChannel,
		ignore: "own message",
	}, {
		name:   "other bot",
		m:      msg(text, inGuild+`,"author":{"id":"5","bot":true},"content":"<@`+botID+`>"`),
		ch:     textChannel,
		ignore: "message from a bot",
	}, {
		name:   "webhook",
		m:      msg(text, inGuild+`,"webhook_id":"77","content":"hook"`),
		ch:     textChannel,
		ignore: "message from a bot",
	}, {
		name: "other bot with allow_bots",
		m:    msg(text, inGuild+`,"author":{"id":"5","username":"b","global_name":"","bot":true},"content":"beep"`),
		ch:   textChannel,
		f:    &filters{allowBots: true},
		want: channels.Inbound{EventID: msgID, Location: chanLoc, User: channels.User{ID: "5", Username: "b"}, Text: "beep", MessageID: msgID, At: at},
	}, {
		name:   "system message",
		m:      msg(text, inGuild+`,"type":18`),
		ch:     textChannel,
		ignore: "system message",
	}, {
		name:   "guild not configured",
		m:      msg(text, `,"guild_id":"999"`),
		ch:     textChannel,
		f:      &filters{guilds: set([]string{guild})},
		ignore: "guild not in guilds",
	}, {
		name: "thread counts as its allowed parent",
		m:    msg(thread, inGuild+`,"content":"x"`),
		ch:   botThread,
		f:    &filters{channels: set([]string{text})},
		want: channels.Inbound{EventID: msgID, Location: threadLoc, User: ada, Text: "x", ReplyToBot: true, MessageID: msgID, At: at},
	}, {
		name:   "channel not allowed",
		m:      msg(text, inGuild+`,"content":"x"`),
		ch:     textChannel,
		f:      &filters{channels: set([]string{"1"})},
		ignore: "channel not in allowed_channels",
	}, {
		name:   "no author",
		m:      message{ID: msgID, ChannelID: text},
		ignore: "incomplete message",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testFilters
			if tt.f != nil {
				f = *tt.f
			}
			got := convertMessage(tt.m, tt.ch, testMe, f)
			if got.ignore != tt.ignore {
				t.Fatalf("ignore = %q, want %q", got.ignore, tt.ignore)
			}
			if tt.ignore != "" {
				return
			}
			if d := cmp.Diff(tt.want, got.inbound); d != "" {
				t.Errorf("inbound (-want +got):\n%s", d)
			}
			if got.thread != (tt.thread != "") || got.threadName != tt.thread {
				t.Errorf("thread %v %q, want %q", got.thread, got.threadName, tt.thread)
			}
			if len(got.images) != tt.images {
				t.Errorf("%d images to download, want %d", len(got.images), tt.images)
			}
		})
	}
}

func TestConvertInteraction(t *testing.T) {
	parse := func(raw string) interaction {
		var i interaction
		if err := json.Unmarshal([]byte(raw), &i); err != nil {
			t.Fatal(err)
		}
		return i
	}
	member := `"guild_id":"` + guild + `","member":{"user":{"id":"` + adaID + `","username":"ada","global_name":"Ada Lovelace"},"roles":["` + roleOK + `"]}`
	threadLoc := channels.Location{Channel: Name, Account: botID, ChatID: text, ThreadID: thread}

	press := convertInteraction(parse(`{"id":"55","token":"tk","type":3,"channel_id":"`+thread+`",`+member+
		`,"message":{"id":"66"},"data":{"custom_id":"tok-1","component_type":2}}`), botThread, testMe, testFilters)
	wantAction := &channels.Action{EventID: "55", Location: threadLoc, User: ada, Token: "tok-1", Message: channels.MessageRef{Location: threadLoc, ID: "66"},
		RoleAllowed: true}
	if d := cmp.Diff(wantAction, press.action); d != "" {
		t.Errorf("press (-want +got):\n%s", d)
	}
	// An admin by role presses: the gateway lets them decide others' asks.
	bossPress := convertInteraction(parse(`{"id":"56","token":"tk","type":3,"channel_id":"`+thread+`",`+
		strings.Replace(member, roleOK, roleAdm, 1)+`,"message":{"id":"66"},"data":{"custom_id":"tok-1","component_type":2}}`), botThread, testMe, testFilters)
	if bossPress.action == nil || !bossPress.action.RoleAdmin || !bossPress.action.RoleAllowed {
		t.Errorf("a press by an admin by role: %+v", bossPress.action)
	}

	cmd := convertInteraction(parse(`{"id":"1577436609463189505","token":"tk","type":2,"channel_id":"`+text+`",`+member+
		`,"data":{"name":"memory","options":[{"name":"log","type":1,"options":[{"name":"n","type":4,"value":5}]},{"name":"args","type":3,"value":" a  b "}]}}`),
		textChannel, testMe, testFilters)
	wantCmd := &channels.Inbound{EventID: "1577436609463189505", Location: channels.Location{Channel: Name, Account: botID, ChatID: text},
		User: ada, Text: "/memory log 5 a b", Mentioned: true, MessageID: "i:1577436609463189505", RoleAllowed: true}
	wantCmd.At, _ = snowflakeTime(wantCmd.EventID)
	if wantCmd.At.IsZero() {
		t.Fatal("no time in the snowflake")
	}
	if d := cmp.Diff(wantCmd, cmd.command); d != "" {
		t.Errorf("command (-want +got):\n%s", d)
	}

	dm := convertInteraction(parse(`{"id":"9","token":"tk","type":2,"channel_id":"`+dmChannel.ID+`","user":{"id":"`+adaID+`"},"data":{"name":"new"}}`),
		channelInfo{ID: dmChannel.ID}, testMe, filters{guilds: set([]string{"1"})})
	if dm.command == nil || !dm.command.DirectMessage || dm.command.Text != "/new" {
		t.Errorf("DM command %+v (%s)", dm.command, dm.ignore)
	}

	for raw, why := range map[string]string{
		`{"id":"1","type":3,"channel_id":"2","user":{"id":"3"},"data":{"custom_id":"x"}}`:                       "incomplete interaction",
		`{"id":"1","token":"t","type":3,"channel_id":"2","data":{"custom_id":"x"}}`:                             "interaction without a user",
		`{"id":"1","token":"t","type":3,"channel_id":"2","user":{"id":"3"},"data":{}}`:                          "component without a custom id",
		`{"id":"1","token":"t","type":2,"channel_id":"2","user":{"id":"3"},"data":{}}`:                          "command without a name",
		`{"id":"1","token":"t","type":5,"channel_id":"2","user":{"id":"3"},"data":{}}`:                          "interaction type 5",
		`{"id":"1","token":"t","type":2,"channel_id":"2","guild_id":"9","user":{"id":"3"},"data":{"name":"x"}}`: "guild not in guilds",
	} {
		got := convertInteraction(parse(raw), channelInfo{}, testMe, filters{guilds: set([]string{guild})})
		if got.ignore != why {
			t.Errorf("%s: ignore %q, want %q", raw, got.ignore, why)
		}
	}
}

func TestSnowflakes(t *testing.T) {
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	id := snowflakeAt(now)
	if got, ok := snowflakeTime(id); !ok || !got.Equal(now) {
		t.Errorf("snowflakeTime(snowflakeAt(t)) = %v, want %v", got, now)
	}
	if !laterID(snowflakeAt(now.Add(time.Millisecond)), id) || laterID(id, id) || !laterID("10", "9") {
		t.Error("laterID orders wrongly")
	}
	ms := []message{{ID: "30"}, {ID: "100"}, {ID: "4"}}
	sortMessages(ms)
	if ms[0].ID != "4" || ms[2].ID != "100" {
		t.Errorf("sorted %v", ms)
	}
}

func TestThreadName(t *testing.T) {
	long := strings.Repeat("é", 150)
	for in, want := range map[string]string{
		"fix it\nplease":    "fix it",
		"   ":               "Conversation with Ada Lovelace",
		long:                strings.Repeat("é", 99) + "…",
		"  many   spaces  ": "many spaces",
	} {
		if got := threadName(in, ada); got != want {
			t.Errorf("threadName(%q) = %q, want %q", in, got, want)
		}
	}
}

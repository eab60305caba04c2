package telegram

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
)

var me = identity{ID: botID, Username: "switchboard_test_bot"}

const (
	ada   = `"from":{"id":7,"is_bot":false,"first_name":"Ada","last_name":"Lovelace","username":"ada"}`
	dm    = `"chat":{"id":7,"type":"private"}`
	group = `"chat":{"id":-100500,"type":"supergroup"}`
)

func msgUpdate(fields string) string {
	return `{"update_id":31,"message":{"message_id":9,"date":1700000000,` + fields + `}}`
}

func TestConvertMessages(t *testing.T) {
	at := time.Unix(1700000000, 0).UTC()
	adaUser := channels.User{ID: "7", Name: "Ada Lovelace", Username: "ada"}
	dmLoc := channels.Location{Channel: "telegram", Account: "424242", ChatID: "7"}
	groupLoc := channels.Location{Channel: "telegram", Account: "424242", ChatID: "-100500"}
	tests := []struct {
		name  string
		raw   string
		want  channels.Inbound
		kind  eventKind
		photo string // file id to download
	}{{
		name: "direct message",
		raw:  msgUpdate(ada + `,` + dm + `,"text":"  hello there "`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "hello there", DirectMessage: true, At: at},
	}, {
		name: "group mention at the start is removed",
		raw:  msgUpdate(ada + `,` + group + `,"text":"@Switchboard_Test_Bot run the tests","entities":[{"type":"mention","offset":0,"length":21}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "run the tests", Mentioned: true, At: at},
	}, {
		name: "mention in the middle after an emoji (UTF-16 offsets)",
		raw:  msgUpdate(ada + `,` + group + `,"text":"hi 🙂 @switchboard_test_bot please","entities":[{"type":"mention","offset":6,"length":21}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "hi 🙂 please", Mentioned: true, At: at},
	}, {
		name: "someone else's mention stays and does not count",
		raw:  msgUpdate(ada + `,` + group + `,"text":"@otherbot hi","entities":[{"type":"mention","offset":0,"length":9}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "@otherbot hi", At: at},
	}, {
		name: "text mention of the bot",
		raw:  msgUpdate(ada + `,` + group + `,"text":"Switchboard do it","entities":[{"type":"text_mention","offset":0,"length":11,"user":{"id":424242,"is_bot":true,"first_name":"Switchboard"}}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "do it", Mentioned: true, At: at},
	}, {
		name: "command addressed to the bot is normalized",
		raw:  msgUpdate(ada + `,` + group + `,"text":"/status@switchboard_test_bot now","entities":[{"type":"bot_command","offset":0,"length":28}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "/status now", Mentioned: true, At: at},
	}, {
		name: "command for another bot is ignored",
		raw:  msgUpdate(ada + `,` + group + `,"text":"/status@otherbot","entities":[{"type":"bot_command","offset":0,"length":16}]`),
		kind: kindIgnore,
	}, {
		name: "command for another bot is ignored in a DM too",
		raw:  msgUpdate(ada + `,` + dm + `,"text":"/status@otherbot","entities":[{"type":"bot_command","offset":0,"length":16}]`),
		kind: kindIgnore,
	}, {
		name: "command with arguments addressed to the bot in a DM",
		raw:  msgUpdate(ada + `,` + dm + `,"text":"/deny@Switchboard_Test_Bot a1 too risky","entities":[{"type":"bot_command","offset":0,"length":26}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "/deny a1 too risky", Mentioned: true, DirectMessage: true, At: at},
	}, {
		name: "command to the bot without entities is normalized",
		raw:  msgUpdate(ada + `,` + group + `,"text":"/status@switchboard_test_bot now"`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "/status now", Mentioned: true, At: at},
	}, {
		name: "command for another bot without entities is ignored",
		raw:  msgUpdate(ada + `,` + group + `,"text":"/status@otherbot now"`),
		kind: kindIgnore,
	}, {
		name: "a path is not a command",
		raw:  msgUpdate(ada + `,` + dm + `,"text":"/etc/hosts@x looks odd"`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "/etc/hosts@x looks odd", DirectMessage: true, At: at},
	}, {
		name: "plain command in a DM",
		raw:  msgUpdate(ada + `,` + dm + `,"text":"/start","entities":[{"type":"bot_command","offset":0,"length":6}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "/start", DirectMessage: true, At: at},
	}, {
		name: "reply to the bot",
		raw:  msgUpdate(ada + `,` + group + `,"text":"yes","reply_to_message":{"message_id":5,"from":{"id":424242,"is_bot":true,"first_name":"B"},"chat":{"id":-100500,"type":"supergroup"}}`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "yes", ReplyToBot: true, ReplyTo: "5", At: at},
	}, {
		name: "reply to someone else",
		raw:  msgUpdate(ada + `,` + group + `,"text":"yes","reply_to_message":{"message_id":5,"from":{"id":8,"first_name":"Bob"},"chat":{"id":-100500,"type":"supergroup"}}`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "yes", ReplyTo: "5", At: at},
	}, {
		name: "forum topic; the topic's root message is not a reply",
		raw: msgUpdate(ada + `,"chat":{"id":-100500,"type":"supergroup","is_forum":true},"message_thread_id":77,"is_topic_message":true,"text":"in topic",` +
			`"reply_to_message":{"message_id":77,"from":{"id":424242,"is_bot":true,"first_name":"B"},"chat":{"id":-100500,"type":"supergroup"},"forum_topic_created":{"name":"ops"}}`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: channels.Location{Channel: "telegram", Account: "424242", ChatID: "-100500", ThreadID: "77"}, User: adaUser, Text: "in topic", At: at},
	}, {
		name: "thread id without is_topic_message is a reply chain, not a topic",
		raw:  msgUpdate(ada + `,` + group + `,"message_thread_id":12,"text":"x"`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: groupLoc, User: adaUser, Text: "x", At: at},
	}, {
		name: "messages from bots are ignored",
		raw:  msgUpdate(`"from":{"id":99,"is_bot":true,"first_name":"Other"},` + group + `,"text":"hello"`),
		kind: kindIgnore,
	}, {
		name: "sticker without text is ignored",
		raw:  msgUpdate(ada + `,` + dm + `,"sticker":{"file_id":"s"}`),
		kind: kindIgnore,
	}, {
		name:  "photo with caption: the largest size within the limit",
		raw:   msgUpdate(ada + `,` + dm + `,"caption":"what is this?","photo":[{"file_id":"small","width":90,"height":90,"file_size":1000},{"file_id":"mid","width":800,"height":800,"file_size":90000},{"file_id":"huge","width":2560,"height":2560,"file_size":9000000}]`),
		kind:  kindInbound,
		photo: "mid",
		want:  channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "what is this?", DirectMessage: true, At: at},
	}, {
		name: "photo too large becomes a note",
		raw:  msgUpdate(ada + `,` + dm + `,"photo":[{"file_id":"huge","width":2560,"height":2560,"file_size":9000000}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "[The user sent an image larger than the 5 MiB download limit; it was not read.]", DirectMessage: true, At: at},
	}, {
		name: "document becomes a note",
		raw:  msgUpdate(ada + `,` + dm + `,"caption":"see","document":{"file_id":"d","file_name":"report.pdf"}`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "see\n\n[The user sent \"report.pdf\", which this channel cannot read yet.]", DirectMessage: true, At: at},
	}, {
		name: "entities out of range are ignored",
		raw:  msgUpdate(ada + `,` + dm + `,"text":"hi","entities":[{"type":"mention","offset":1,"length":50},{"type":"mention","offset":-3,"length":2}]`),
		kind: kindInbound,
		want: channels.Inbound{EventID: "31", Location: dmLoc, User: adaUser, Text: "hi", DirectMessage: true, At: at},
	}, {
		name: "edited messages and other update kinds are ignored",
		raw:  `{"update_id":31,"edited_message":{"message_id":9,"chat":{"id":7,"type":"private"},"text":"x"}}`,
		kind: kindIgnore,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := parseUpdate([]byte(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			ev := convert(u, me, DefaultMaxDownload)
			if ev.kind != tt.kind {
				t.Fatalf("kind = %d, want %d (why: %s)", ev.kind, tt.kind, ev.why)
			}
			if tt.kind != kindInbound {
				return
			}
			// Every message built by msgUpdate has message_id 9: replies
			// are threaded to it.
			tt.want.MessageID = "9"
			if diff := cmp.Diff(tt.want, ev.inbound); diff != "" {
				t.Errorf("inbound (-want +got):\n%s", diff)
			}
			got := ""
			if ev.photo != nil {
				got = ev.photo.FileID
			}
			if got != tt.photo {
				t.Errorf("photo to download = %q, want %q", got, tt.photo)
			}
		})
	}
}

func TestConvertCallbacks(t *testing.T) {
	topic := channels.Location{Channel: "telegram", Account: "424242", ChatID: "-100500", ThreadID: "77"}
	u, err := parseUpdate([]byte(`{"update_id":40,"callback_query":{"id":"cbq1",` + ada + `,"data":"tok-abc",` +
		`"message":{"message_id":12,"date":1,"chat":{"id":-100500,"type":"supergroup"},"message_thread_id":77,"is_topic_message":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := convert(u, me, DefaultMaxDownload)
	want := channels.Action{
		EventID:  "cbq1",
		Location: topic,
		User:     channels.User{ID: "7", Name: "Ada Lovelace", Username: "ada"},
		Token:    "tok-abc",
		Message:  channels.MessageRef{Location: topic, ID: "12"},
	}
	if ev.kind != kindAction || ev.callbackID != "cbq1" {
		t.Fatalf("kind %d id %q", ev.kind, ev.callbackID)
	}
	if diff := cmp.Diff(want, ev.action); diff != "" {
		t.Errorf("action (-want +got):\n%s", diff)
	}

	// A press on an inline-mode message (no message) is only answered.
	u, _ = parseUpdate([]byte(`{"update_id":41,"callback_query":{"id":"cbq2",` + ada + `,"data":"x","inline_message_id":"im"}}`))
	ev = convert(u, me, DefaultMaxDownload)
	if ev.kind != kindAnswer || ev.callbackID != "cbq2" || ev.answer == "" {
		t.Errorf("press without message: %+v", ev)
	}
}

func TestCleanTextCases(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hi @switchboard_test_bot there", "hi there"},
		{"hi @switchboard_test_bot", "hi"},
		{"@switchboard_test_bot\nline two", "line two"},
		{"hey @switchboard_test_bot, look", "hey , look"},
	}
	for _, tt := range tests {
		var ents []entity
		for i := 0; i+1 < len(tt.in); i++ {
			if tt.in[i] == '@' {
				ents = append(ents, entity{Type: "mention", Offset: i, Length: len("@switchboard_test_bot")})
			}
		}
		got, mentioned, _ := cleanText(tt.in, ents, me)
		if got != tt.want || !mentioned {
			t.Errorf("cleanText(%q) = %q, %v; want %q, true", tt.in, got, mentioned, tt.want)
		}
	}
}

func FuzzConvert(f *testing.F) {
	f.Add([]byte(msgUpdate(ada + `,` + dm + `,"text":"hello"`)))
	f.Add([]byte(msgUpdate(ada + `,` + group + `,"text":"@switchboard_test_bot 🙂 /x@switchboard_test_bot","entities":[{"type":"mention","offset":0,"length":21},{"type":"bot_command","offset":25,"length":24}]`)))
	f.Add([]byte(msgUpdate(ada + `,"chat":{"id":-1,"type":"supergroup"},"message_thread_id":3,"is_topic_message":true,"caption":"c","photo":[{"file_id":"a","width":1,"height":1}]`)))
	f.Add([]byte(`{"update_id":2,"callback_query":{"id":"q","from":{"id":1},"data":"t","message":{"message_id":1,"chat":{"id":5}}}}`))
	f.Add([]byte(`{"update_id":3,"message":{"reply_to_message":{"reply_to_message":{}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, err := parseUpdate(raw)
		if err != nil {
			return
		}
		ev := convert(u, me, 1<<20)
		switch ev.kind {
		case kindInbound:
			in := ev.inbound
			if in.EventID != strconv.FormatInt(u.UpdateID, 10) {
				t.Errorf("EventID %q for update %d", in.EventID, u.UpdateID)
			}
			if !utf8.ValidString(in.Text) {
				t.Errorf("invalid UTF-8 text %q", in.Text)
			}
			if in.Text == "" && ev.photo == nil {
				t.Error("inbound with neither text nor image")
			}
			if ev.photo != nil && ev.photo.FileSize > 1<<20 {
				t.Errorf("picked a photo over the limit: %d", ev.photo.FileSize)
			}
			back, err := channels.ParseLocation(in.Location.String())
			if err != nil || back != in.Location {
				t.Errorf("location %+v does not round-trip: %v", in.Location, err)
			}
			if in.User.ID == "" {
				t.Error("inbound without a user")
			}
		case kindAction:
			if ev.action.Token == "" || ev.callbackID == "" || ev.action.Message.ID == "" {
				t.Errorf("incomplete action %+v", ev.action)
			}
		case kindAnswer:
			if ev.callbackID == "" {
				t.Error("answer without a callback id")
			}
		}
		// The conversion is deterministic.
		again, _ := parseUpdate(raw)
		if ev2 := convert(again, me, 1<<20); !cmp.Equal(ev, ev2, cmp.AllowUnexported(event{}), cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })) {
			t.Error("convert is not deterministic")
		}
	})
}

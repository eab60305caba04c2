package slack

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
)

var testMe = identity{UserID: "U0BOT", BotID: "B0BOT", TeamID: "T0TEAM"}

func eventJSON(t *testing.T, inner map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": "event_callback", "team_id": "T0TEAM", "event_id": "Ev1", "event": inner})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConvertEvent(t *testing.T) {
	at := time.Unix(1700000000, 123456000).UTC()
	loc := func(chat, thread string) channels.Location {
		return channels.Location{Channel: Name, Account: "T0TEAM", ChatID: chat, ThreadID: thread}
	}
	for _, tc := range []struct {
		name  string
		inner map[string]any
		want  channels.Inbound
		why   string
	}{
		{
			name:  "app_mention at the top level starts a thread rooted at itself",
			inner: map[string]any{"type": "app_mention", "user": "U0ADA", "text": "<@U0BOT> deploy please", "ts": "1700000000.123456", "channel": "C0GEN"},
			want: channels.Inbound{EventID: "C0GEN:1700000000.123456", Location: loc("C0GEN", "1700000000.123456"),
				User: channels.User{ID: "U0ADA"}, Text: "deploy please", Mentioned: true, MessageID: "1700000000.123456", At: at},
		},
		{
			name: "the message event of the same post converts identically",
			inner: map[string]any{"type": "message", "user": "U0ADA", "text": "<@U0BOT> deploy please", "ts": "1700000000.123456",
				"channel": "C0GEN", "channel_type": "channel"},
			want: channels.Inbound{EventID: "C0GEN:1700000000.123456", Location: loc("C0GEN", "1700000000.123456"),
				User: channels.User{ID: "U0ADA"}, Text: "deploy please", Mentioned: true, MessageID: "1700000000.123456", At: at},
		},
		{
			name: "a reply in the bot's thread carries the root and ReplyToBot",
			inner: map[string]any{"type": "message", "user": "U0ADA", "text": "and staging?", "ts": "1700000000.123456",
				"thread_ts": "1699999999.000100", "parent_user_id": "U0BOT", "channel": "C0GEN", "channel_type": "channel"},
			want: channels.Inbound{EventID: "C0GEN:1700000000.123456", Location: loc("C0GEN", "1699999999.000100"),
				User: channels.User{ID: "U0ADA"}, Text: "and staging?", ReplyToBot: true, ReplyTo: "1699999999.000100",
				MessageID: "1700000000.123456", At: at},
		},
		{
			name:  "a direct message is the chat itself, no mention needed",
			inner: map[string]any{"type": "message", "user": "U0ADA", "text": "hi", "ts": "1700000000.123456", "channel": "D0ADA", "channel_type": "im"},
			want: channels.Inbound{EventID: "D0ADA:1700000000.123456", Location: loc("D0ADA", ""), User: channels.User{ID: "U0ADA"},
				Text: "hi", DirectMessage: true, MessageID: "1700000000.123456", At: at},
		},
		{
			name: "markup becomes readable text",
			inner: map[string]any{"type": "message", "user": "U0ADA", "ts": "1700000000.123456", "channel": "C0GEN",
				"text": "hey <@U0BOT>, ask <@U0GRACE|grace> in <#C0OPS|ops> about <https://x.test/a?b=1&amp;c=2|the doc> &lt;now&gt; <!here> <mailto:a@b.test|a@b.test>"},
			want: channels.Inbound{EventID: "C0GEN:1700000000.123456", Location: loc("C0GEN", "1700000000.123456"), User: channels.User{ID: "U0ADA"},
				Text: "hey , ask @grace in #ops about the doc (https://x.test/a?b=1&c=2) <now> @here a@b.test", Mentioned: true,
				MessageID: "1700000000.123456", At: at},
		},
		{name: "the bot's own message", inner: map[string]any{"type": "message", "user": "U0BOT", "bot_id": "B0BOT", "text": "x", "ts": "1.2", "channel": "C0GEN"}, why: "a bot's message"},
		{name: "another bot", inner: map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B9", "text": "x", "ts": "1.2", "channel": "C0GEN"}, why: "message subtype bot_message"},
		{name: "an edit", inner: map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "ts": "1.2", "channel": "C0GEN"}, why: "message subtype message_changed"},
		{name: "a join", inner: map[string]any{"type": "message", "subtype": "channel_join", "user": "U0ADA", "text": "joined", "ts": "1.2", "channel": "C0GEN"}, why: "message subtype channel_join"},
		{name: "a reaction", inner: map[string]any{"type": "reaction_added", "user": "U0ADA"}, why: "event type reaction_added"},
		{name: "only the bot's mention", inner: map[string]any{"type": "app_mention", "user": "U0ADA", "text": "<@U0BOT>", "ts": "1.2", "channel": "C0GEN"}, why: "empty message"},
		{name: "bad ts", inner: map[string]any{"type": "message", "user": "U0ADA", "text": "x", "ts": "1.2; drop", "channel": "C0GEN"}, why: "bad ts"},
		{name: "bad channel", inner: map[string]any{"type": "message", "user": "U0ADA", "text": "x", "ts": "1.2", "channel": "c:0"}, why: "bad channel id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cb, err := parseCallback(eventJSON(t, tc.inner))
			if err != nil {
				t.Fatal(err)
			}
			d, why := convertEvent(cb, testMe)
			if why != tc.why {
				t.Fatalf("why = %q, want %q", why, tc.why)
			}
			if tc.why != "" {
				return
			}
			if diff := cmp.Diff(tc.want, d.in); diff != "" {
				t.Errorf("inbound (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlainTextNames(t *testing.T) {
	text, mentioned, users := plainText("<@U0BOT> ping <@U0GRACE> and <@U0ADA|ada>", "U0BOT", map[string]string{"U0GRACE": "Grace Hopper"})
	if text != "ping @Grace Hopper and @ada" || !mentioned {
		t.Errorf("text %q mentioned %v", text, mentioned)
	}
	if diff := cmp.Diff([]string{"U0GRACE", "U0ADA"}, users); diff != "" {
		t.Errorf("users (-want +got):\n%s", diff)
	}
	// Escaped angle brackets a person typed stay text.
	if text, mentioned, _ := plainText("&lt;@U0BOT&gt; is not a mention", "U0BOT", nil); mentioned || text != "<@U0BOT> is not a mention" {
		t.Errorf("typed brackets: %q %v", text, mentioned)
	}
}

func TestConvertAction(t *testing.T) {
	raw := []byte(`{"type":"block_actions","user":{"id":"U0GRACE","username":"grace","name":"grace"},
		"channel":{"id":"C0GEN"},"container":{"type":"message","message_ts":"1700000001.000200","channel_id":"C0GEN","thread_ts":"1700000000.000100"},
		"message":{"ts":"1700000001.000200","thread_ts":"1700000000.000100"},"response_url":"https://hooks.slack.com/actions/x",
		"trigger_id":"1.2.abc","actions":[{"action_id":"tok-1","block_id":"sb-actions-0-0","value":"tok-1","action_ts":"1700000002.000300"}]}`)
	it, err := parseInteraction(raw)
	if err != nil {
		t.Fatal(err)
	}
	a, responseURL, why := convertAction(it, testMe)
	if why != "" {
		t.Fatal(why)
	}
	loc := channels.Location{Channel: Name, Account: "T0TEAM", ChatID: "C0GEN", ThreadID: "1700000000.000100"}
	want := channels.Action{EventID: "action:C0GEN:1700000001.000200:1700000002.000300:U0GRACE", Location: loc,
		User: channels.User{ID: "U0GRACE", Name: "grace", Username: "grace"}, Token: "tok-1",
		Message: channels.MessageRef{Location: loc, ID: "1700000001.000200"}}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("action (-want +got):\n%s", diff)
	}
	if responseURL != "https://hooks.slack.com/actions/x" {
		t.Errorf("response_url %q", responseURL)
	}
	for name, mut := range map[string]string{
		"view_submission":   `{"type":"view_submission","user":{"id":"U0GRACE"}}`,
		"no actions":        `{"type":"block_actions","user":{"id":"U0GRACE"},"channel":{"id":"C0GEN"},"actions":[]}`,
		"token too long":    `{"type":"block_actions","user":{"id":"U0GRACE"},"channel":{"id":"C0GEN"},"actions":[{"value":"` + strings.Repeat("x", channels.MaxTokenLen+1) + `"}]}`,
		"no user":           `{"type":"block_actions","channel":{"id":"C0GEN"},"actions":[{"value":"t"}]}`,
		"bad message ts":    `{"type":"block_actions","user":{"id":"U0GRACE"},"channel":{"id":"C0GEN"},"container":{"message_ts":"x"},"actions":[{"value":"t"}]}`,
		"bad channel id":    `{"type":"block_actions","user":{"id":"U0GRACE"},"channel":{"id":"general"},"actions":[{"value":"t"}]}`,
		"bad thread ts":     `{"type":"block_actions","user":{"id":"U0GRACE"},"channel":{"id":"C0GEN"},"message":{"thread_ts":"1"},"actions":[{"value":"t"}]}`,
		"no channel at all": `{"type":"block_actions","user":{"id":"U0GRACE"},"actions":[{"value":"t"}]}`,
	} {
		it, err := parseInteraction([]byte(mut))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, _, why := convertAction(it, testMe); why == "" {
			t.Errorf("%s: converted", name)
		}
	}
}

func TestConvertCommand(t *testing.T) {
	form := url.Values{"team_id": {"T0TEAM"}, "channel_id": {"C0GEN"}, "user_id": {"U0ADA"}, "user_name": {"ada"},
		"command": {"/switchboard"}, "text": {"Status  now please"}, "response_url": {"https://hooks.slack.com/commands/1"}, "trigger_id": {"13.45.ab"}}
	in, sub, why := convertCommand(commandFromForm(form), testMe)
	if why != "" || sub != "status" {
		t.Fatalf("sub %q why %q", sub, why)
	}
	want := channels.Inbound{EventID: "command:13.45.ab", Location: channels.Location{Channel: Name, Account: "T0TEAM", ChatID: "C0GEN"},
		User: channels.User{ID: "U0ADA", Username: "ada"}, Text: "/status now please", Mentioned: true}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("inbound (-want +got):\n%s", diff)
	}
	// The Socket Mode payload, with Slack's string booleans.
	c, err := parseCommandJSON([]byte(`{"channel_id":"D0ADA","user_id":"U0ADA","text":"","trigger_id":"t1","is_enterprise_install":"false"}`))
	if err != nil {
		t.Fatal(err)
	}
	in, sub, why = convertCommand(c, testMe)
	if why != "" || sub != "help" || in.Text != "/help" || !in.DirectMessage {
		t.Errorf("empty command: %+v %q %q", in, sub, why)
	}
	for _, text := range []string{"stat;us", "/../x", "ÄÖ"} {
		c.Text = text
		if _, _, why := convertCommand(c, testMe); why != "unknown command" {
			t.Errorf("%q: why %q", text, why)
		}
	}
}

func TestTimestamps(t *testing.T) {
	if !tsLess("999.9", "1000.1") || tsLess("1000.1", "999.9") || !tsLess("1.000100", "1.0002") || tsLess("1.5", "1.5") {
		t.Error("tsLess orders wrongly")
	}
	at := time.Unix(1700000000, 250000000)
	if got := tsOf(at); got != "1700000000.250000" {
		t.Errorf("tsOf = %q", got)
	}
	if got := tsTime("1700000000.250000"); !got.Equal(at) {
		t.Errorf("tsTime = %v", got)
	}
	for _, bad := range []string{"", "1", ".1", "1.", "a.1", "1.2.3", "1234567890123.1"} {
		if validTS(bad) {
			t.Errorf("validTS(%q)", bad)
		}
	}
}

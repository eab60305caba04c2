package slack

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

// checkInbound fails when a converted inbound breaks what the gateway
// relies on.
func checkInbound(t *testing.T, in channels.Inbound) {
	t.Helper()
	loc := in.Location
	switch {
	case in.EventID == "":
		t.Error("no EventID")
	case loc.Channel != Name || loc.Account != testMe.TeamID || !validID(loc.ChatID):
		t.Errorf("bad location %+v", loc)
	case loc.ThreadID != "" && !validTS(loc.ThreadID):
		t.Errorf("bad thread %q", loc.ThreadID)
	case !validID(in.User.ID) || in.User.ID == testMe.UserID:
		t.Errorf("bad user %q", in.User.ID)
	case !utf8.ValidString(in.Text) || !utf8.ValidString(in.User.Name) || !utf8.ValidString(in.User.Username):
		t.Error("invalid UTF-8 handed over")
	}
	if _, err := channels.ParseLocation(loc.String()); err != nil {
		t.Errorf("location %+v does not round-trip: %v", loc, err)
	}
}

func FuzzConvertEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention","user":"U0ADA","text":"<@U0BOT> hi <@U0GRACE|g> <#C1|x> <http://a|b>","ts":"1.2","channel":"C0GEN"}}`,
		`{"type":"event_callback","event":{"type":"message","user":"U0ADA","text":"x","ts":"1.2","thread_ts":"1.1","parent_user_id":"U0BOT","channel":"C0GEN","channel_type":"channel"}}`,
		`{"type":"event_callback","event":{"type":"message","user":"U0ADA","text":"","ts":"1.2","channel":"D0ADA","channel_type":"im","files":[{"id":"F1","mimetype":"image/png","size":3,"url_private":"https://files.slack.com/x"}]}}`,
		`{"type":"event_callback","event":{"type":"message","subtype":"message_changed","hidden":true,"message":{"text":"x"},"channel":"C1","ts":"1.2"}}`,
		`{"type":"event_callback","event":{"type":"message","bot_id":"B1","text":"x","ts":"1.2","channel":"C1"}}`,
		`{"type":"url_verification","challenge":"abc"}`,
		`{"type":"event_callback","event":[]}`, `null`, `{"event":{"type":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cb, err := parseCallback(raw)
		if err != nil {
			return
		}
		d, why := convertEvent(cb, testMe)
		if why != "" {
			return
		}
		checkInbound(t, d.in)
		if strings.TrimSpace(d.in.Text) == "" && len(d.files) == 0 {
			t.Error("an empty message was handed over")
		}
		if len(d.files) > maxFiles || len(d.users) > maxMentions {
			t.Errorf("%d files, %d users: unbounded", len(d.files), len(d.users))
		}
		// Rendering with names cannot break the text either.
		names := map[string]string{}
		for _, u := range d.users {
			names[u] = "Name \xff"
		}
		text, _, _ := plainText(d.raw, testMe.UserID, names)
		if !utf8.ValidString(strings.ReplaceAll(text, "\xff", "")) {
			t.Error("names render invalid text")
		}
	})
}

func FuzzConvertAction(f *testing.F) {
	for _, s := range []string{
		`{"type":"block_actions","user":{"id":"U0GRACE","name":"g"},"channel":{"id":"C0GEN"},"container":{"message_ts":"1.2","thread_ts":"1.1"},"message":{"ts":"1.2","thread_ts":"1.1"},"response_url":"https://hooks.slack.com/x","actions":[{"action_id":"t","value":"tok","action_ts":"1.3"}]}`,
		`{"type":"block_actions","user":{"id":"U0GRACE"},"container":{"channel_id":"D1","message_ts":"1.2"},"actions":[{"action_id":"only-id"}]}`,
		`{"type":"view_submission"}`, `{"actions":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		it, err := parseInteraction(raw)
		if err != nil {
			return
		}
		a, _, why := convertAction(it, testMe)
		if why != "" {
			return
		}
		switch {
		case a.Token == "" || len(a.Token) > channels.MaxTokenLen || !utf8.ValidString(a.Token):
			t.Errorf("bad token %q", a.Token)
		case a.EventID == "" || !utf8.ValidString(a.EventID):
			t.Errorf("bad event id %q", a.EventID)
		case !validID(a.User.ID) || !validID(a.Location.ChatID) || a.Location.Channel != Name:
			t.Errorf("bad action %+v", a)
		case a.Location.ThreadID != "" && !validTS(a.Location.ThreadID):
			t.Errorf("bad thread %q", a.Location.ThreadID)
		case a.Message.ID != "" && !validTS(a.Message.ID):
			t.Errorf("bad message id %q", a.Message.ID)
		}
	})
}

func FuzzConvertCommand(f *testing.F) {
	f.Add([]byte("team_id=T0TEAM&channel_id=C0GEN&user_id=U0ADA&command=%2Fswitchboard&text=status+now&trigger_id=1.2.3"), false)
	f.Add([]byte("channel_id=D0ADA&user_id=U0ADA&text=&trigger_id=t"), false)
	f.Add([]byte(`{"channel_id":"C0GEN","user_id":"U0ADA","text":"/approve 12 <@U0BOT>","trigger_id":"t","is_enterprise_install":"false"}`), true)
	f.Add([]byte(`{"channel_id":5}`), true)
	f.Fuzz(func(t *testing.T, raw []byte, isJSON bool) {
		var c command
		if isJSON {
			var err error
			if c, err = parseCommandJSON(raw); err != nil {
				return
			}
		} else {
			form, err := url.ParseQuery(string(raw))
			if err != nil {
				return
			}
			c = commandFromForm(form)
		}
		in, sub, why := convertCommand(c, testMe)
		if why != "" {
			return
		}
		checkInbound(t, in)
		if !validCommandName(sub) || !strings.HasPrefix(in.Text, "/"+sub) || !in.Mentioned {
			t.Errorf("command %q from %q: sub %q", in.Text, c.Text, sub)
		}
		if in.Location.ThreadID != "" {
			t.Errorf("a slash command has thread %q", in.Location.ThreadID)
		}
	})
}

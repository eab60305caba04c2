package slack

import (
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

// The conversion from Slack payloads to the contract's types. Everything in
// this file is a pure function of the payload bytes and the bot's identity,
// so it is table-tested and fuzzed; network lookups (display names, file
// downloads) happen afterwards in dispatch.go.

// identity is who the bot is in its workspace (auth.test).
type identity struct {
	UserID string // the bot user, U…
	BotID  string // the bot, B…
	TeamID string // the workspace, T… (Location.Account)
}

// callback is the part of an Events API body we read: an event_callback
// (or url_verification) as Slack posts it, or the payload of a Socket Mode
// events_api envelope.
type callback struct {
	Type      string          `json:"type"`
	TeamID    string          `json:"team_id"`
	EventID   string          `json:"event_id"`
	Event     json.RawMessage `json:"event"`
	Challenge string          `json:"challenge"`
}

// message is a Slack message as an event (message, app_mention) or
// conversations.replies/history carries it.
type message struct {
	Type         string `json:"type"`
	Subtype      string `json:"subtype"`
	User         string `json:"user"`
	BotID        string `json:"bot_id"`
	Text         string `json:"text"`
	TS           string `json:"ts"`
	ThreadTS     string `json:"thread_ts"`
	ParentUserID string `json:"parent_user_id"`
	Channel      string `json:"channel"`
	ChannelType  string `json:"channel_type"`
	Hidden       bool   `json:"hidden"`
	Files        []file `json:"files"`
}

// file is a file shared with a message.
type file struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Mimetype           string `json:"mimetype"`
	Size               int64  `json:"size"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
}

// draft is an inbound message before the adapter's lookups: the Inbound
// with bare user ids in its text, plus what is still to fetch.
type draft struct {
	in    channels.Inbound
	files []file // shared files (images are downloaded into attachments)
	// raw is the message's Slack markup; users are the ids it mentions
	// (other than the bot). dispatch looks their names up and renders the
	// text again with them (plainText).
	raw   string
	users []string
}

// message subtypes that are new messages a person wrote; every other
// subtype (edits, deletions, joins, bot messages, …) is not.
var personSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true, "me_message": true}

func parseCallback(raw []byte) (callback, error) {
	var cb callback
	if err := json.Unmarshal(raw, &cb); err != nil {
		return callback{}, errors.New("slack event is not JSON")
	}
	return cb, nil
}

// convertEvent turns one event_callback into a draft, or says why it is
// not a message for the gateway.
func convertEvent(cb callback, me identity) (draft, string) {
	if cb.Type != "event_callback" {
		return draft{}, "not an event_callback: " + clip(cb.Type)
	}
	var m message
	if len(cb.Event) == 0 || json.Unmarshal(cb.Event, &m) != nil {
		return draft{}, "event is not a message object"
	}
	switch m.Type {
	case "app_mention", "message":
	default:
		return draft{}, "event type " + clip(m.Type)
	}
	return convertMessage(m, me, m.Channel, m.Type == "app_mention")
}

// convertMessage converts a message posted in channelID. mention says the
// event was an app_mention (the text is checked for the mention too, so a
// message event for the same post converts identically).
func convertMessage(m message, me identity, channelID string, mention bool) (draft, string) {
	switch {
	case !personSubtypes[m.Subtype]:
		return draft{}, "message subtype " + clip(m.Subtype)
	case m.Hidden:
		return draft{}, "hidden message"
	case m.BotID != "" || (me.BotID != "" && m.BotID == me.BotID):
		return draft{}, "a bot's message"
	case m.User == "" || m.User == me.UserID:
		return draft{}, "not written by a person"
	case !validID(m.User):
		return draft{}, "bad user id"
	case !validID(channelID):
		return draft{}, "bad channel id"
	case !validTS(m.TS):
		return draft{}, "bad ts"
	case m.ThreadTS != "" && !validTS(m.ThreadTS):
		return draft{}, "bad thread_ts"
	}
	dm := m.ChannelType == "im" || (m.ChannelType == "" && strings.HasPrefix(channelID, "D"))
	loc := channels.Location{Channel: Name, Account: me.TeamID, ChatID: channelID}
	reply := m.ThreadTS != "" && m.ThreadTS != m.TS
	switch {
	case reply:
		loc.ThreadID = m.ThreadTS
	case !dm:
		// A top-level post in a channel starts a thread conversation whose
		// root is the post itself; the answer goes into that thread.
		loc.ThreadID = m.TS
	}
	text, mentioned, users := plainText(m.Text, me.UserID, nil)
	d := draft{
		in: channels.Inbound{
			EventID:       eventID(channelID, m.TS),
			Location:      loc,
			User:          channels.User{ID: m.User},
			Text:          text,
			Mentioned:     mention || mentioned,
			DirectMessage: dm,
			ReplyToBot:    reply && me.UserID != "" && m.ParentUserID == me.UserID,
			MessageID:     m.TS,
			At:            tsTime(m.TS),
		},
		raw:   m.Text,
		users: users,
	}
	if reply {
		d.in.ReplyTo = m.ThreadTS
	}
	for _, f := range m.Files {
		if len(d.files) < maxFiles {
			d.files = append(d.files, f)
		}
	}
	if strings.TrimSpace(d.in.Text) == "" && len(d.files) == 0 {
		return draft{}, "empty message"
	}
	return d, ""
}

// maxFiles bounds the files of one message the adapter looks at.
const maxFiles = 8

// eventID is the dedupe id of a message: the app_mention and the message
// event of one post, Slack's retries of either, and a catch-up fetch of
// it all carry the same one.
func eventID(channelID, ts string) string { return channelID + ":" + ts }

// plainText turns Slack's message markup into the text a person sees: the
// bot's own mention removed, other user mentions as @name (names[id], else
// the id), channel links as #name, special mentions as @here, links as
// "label (url)", and &amp; &lt; &gt; decoded. It reports whether the bot
// was mentioned and which users were.
func plainText(s, botUser string, names map[string]string) (text string, mentioned bool, users []string) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	seen := map[string]bool{}
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(unescape(s))
			break
		}
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			b.WriteString(unescape(s))
			break
		}
		b.WriteString(unescape(s[:i]))
		tok := s[i+1 : i+j]
		s = s[i+j+1:]
		target, label, _ := strings.Cut(tok, "|")
		label = unescape(label)
		switch {
		case strings.HasPrefix(target, "@"):
			id := target[1:]
			switch {
			case botUser != "" && id == botUser:
				mentioned = true
			case validID(id):
				if !seen[id] && len(users) < maxMentions {
					seen[id] = true
					users = append(users, id)
				}
				if n := names[id]; n != "" {
					b.WriteString("@" + n)
				} else if label != "" {
					b.WriteString("@" + strings.TrimPrefix(label, "@"))
				} else {
					b.WriteString("@" + id)
				}
			default:
				b.WriteString("@" + unescape(id))
			}
		case strings.HasPrefix(target, "#"):
			if label == "" {
				label = target[1:]
			}
			b.WriteString("#" + label)
		case strings.HasPrefix(target, "!"):
			b.WriteString(special(target[1:], label))
		default:
			u := unescape(target)
			switch {
			case label == "" || label == u:
				b.WriteString(u)
			case strings.HasPrefix(u, "mailto:"):
				b.WriteString(label)
			default:
				b.WriteString(label + " (" + u + ")")
			}
		}
	}
	return tidy(b.String()), mentioned, users
}

// maxMentions bounds the users of one message whose names are looked up.
const maxMentions = 10

// special renders <!here>, <!channel>, <!subteam^ID|@team>, <!date^…|text>.
func special(target, label string) string {
	switch target {
	case "here", "channel", "everyone":
		return "@" + target
	}
	if label != "" {
		return label
	}
	if strings.HasPrefix(target, "subteam^") {
		return "@team"
	}
	return ""
}

var unescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

func unescape(s string) string { return unescaper.Replace(s) }

// tidy trims the text and the spaces a removed mention leaves behind.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.FieldsFunc(l, func(r rune) bool { return r == ' ' }), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// validID accepts Slack object ids (U…, C…, D…, G…, T…, B…, W…).
func validID(s string) bool {
	if len(s) < 2 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validTS accepts a message timestamp: digits, a dot, digits.
func validTS(s string) bool {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(sec) == 0 || len(sec) > 12 || len(frac) == 0 || len(frac) > 8 {
		return false
	}
	for _, part := range []string{sec, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return false
			}
		}
	}
	return true
}

// tsTime is the time a message ts names (zero if it names none).
func tsTime(ts string) time.Time {
	sec, frac, ok := strings.Cut(ts, ".")
	if !ok || !validTS(ts) {
		return time.Time{}
	}
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	frac = (frac + "000000000")[:9]
	ns, _ := strconv.ParseInt(frac, 10, 64)
	return time.Unix(s, ns).UTC()
}

// tsOf formats t as a Slack ts (for the oldest bound of a fetch).
func tsOf(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10) + "." + strconv.FormatInt(int64(t.Nanosecond()/1000)+1_000_000, 10)[1:]
}

// tsLess orders two valid message timestamps.
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	if as != bs {
		return as < bs
	}
	w := max(len(af), len(bf))
	return padRight(af, w) < padRight(bf, w)
}

func padRight(s string, n int) string { return s + strings.Repeat("0", n-len(s)) }

func clip(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.ToValidUTF8(s, "?")
}

// interaction is the part of an interactivity payload we read.
type interaction struct {
	Type string `json:"type"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"user"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		MessageTS   string `json:"message_ts"`
		ChannelID   string `json:"channel_id"`
		ThreadTS    string `json:"thread_ts"`
		IsEphemeral bool   `json:"is_ephemeral"`
	} `json:"container"`
	Message struct {
		TS       string `json:"ts"`
		ThreadTS string `json:"thread_ts"`
	} `json:"message"`
	ResponseURL string `json:"response_url"`
	TriggerID   string `json:"trigger_id"`
	Actions     []struct {
		ActionID string `json:"action_id"`
		BlockID  string `json:"block_id"`
		Value    string `json:"value"`
		ActionTS string `json:"action_ts"`
	} `json:"actions"`
}

func parseInteraction(raw []byte) (interaction, error) {
	var it interaction
	if err := json.Unmarshal(raw, &it); err != nil {
		return interaction{}, errors.New("slack interaction is not JSON")
	}
	return it, nil
}

// convertAction turns a block_actions press into an Action, with the
// response_url to answer the presser at (may be empty).
func convertAction(it interaction, me identity) (channels.Action, string, string) {
	if it.Type != "block_actions" {
		return channels.Action{}, "", "interaction type " + clip(it.Type)
	}
	if len(it.Actions) == 0 {
		return channels.Action{}, "", "no action"
	}
	act := it.Actions[0]
	token := act.Value
	if token == "" {
		token = act.ActionID
	}
	chat := it.Channel.ID
	if chat == "" {
		chat = it.Container.ChannelID
	}
	ts := it.Container.MessageTS
	if ts == "" {
		ts = it.Message.TS
	}
	thread := it.Message.ThreadTS
	if thread == "" {
		thread = it.Container.ThreadTS
	}
	switch {
	case token == "" || len(token) > channels.MaxTokenLen || !utf8.ValidString(token):
		return channels.Action{}, "", "bad token"
	case !validID(it.User.ID):
		return channels.Action{}, "", "bad user id"
	case !validID(chat):
		return channels.Action{}, "", "bad channel id"
	case ts != "" && !validTS(ts):
		return channels.Action{}, "", "bad message ts"
	case thread != "" && !validTS(thread):
		return channels.Action{}, "", "bad thread ts"
	}
	loc := channels.Location{Channel: Name, Account: me.TeamID, ChatID: chat}
	if thread != "" && thread != ts {
		loc.ThreadID = thread
	}
	stamp := act.ActionTS
	if !validTS(stamp) {
		stamp = it.TriggerID
	}
	a := channels.Action{
		EventID:  "action:" + chat + ":" + ts + ":" + clip(stamp) + ":" + it.User.ID,
		Location: loc,
		User:     channels.User{ID: it.User.ID, Name: validText(it.User.Name), Username: validText(it.User.Username)},
		Token:    token,
		Message:  channels.MessageRef{Location: loc, ID: ts},
	}
	return a, it.ResponseURL, ""
}

func validText(s string) string { return strings.ToValidUTF8(s, "") }

// command is a slash command invocation.
type command struct {
	TeamID      string
	ChannelID   string
	UserID      string
	UserName    string
	Command     string
	Text        string
	ResponseURL string
	TriggerID   string
}

// commandFromForm reads the form Slack posts to the commands URL.
func commandFromForm(f url.Values) command {
	return command{
		TeamID: f.Get("team_id"), ChannelID: f.Get("channel_id"), UserID: f.Get("user_id"),
		UserName: f.Get("user_name"), Command: f.Get("command"), Text: f.Get("text"),
		ResponseURL: f.Get("response_url"), TriggerID: f.Get("trigger_id"),
	}
}

// parseCommandJSON reads a Socket Mode slash_commands payload. Values are
// read as strings whatever their JSON type (Slack sends some booleans as
// "false"), so an odd field never loses the command.
func parseCommandJSON(raw []byte) (command, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return command{}, errors.New("slack slash command is not a JSON object")
	}
	str := func(k string) string {
		s, _ := m[k].(string)
		return s
	}
	return command{
		TeamID: str("team_id"), ChannelID: str("channel_id"), UserID: str("user_id"),
		UserName: str("user_name"), Command: str("command"), Text: str("text"),
		ResponseURL: str("response_url"), TriggerID: str("trigger_id"),
	}, nil
}

// convertCommand turns "/switchboard status now" into an Inbound whose text
// is "/status now". sub is the command name ("help" when none was given).
func convertCommand(c command, me identity) (in channels.Inbound, sub string, why string) {
	switch {
	case !validID(c.UserID):
		return channels.Inbound{}, "", "bad user id"
	case !validID(c.ChannelID):
		return channels.Inbound{}, "", "bad channel id"
	}
	text, _, _ := plainText(c.Text, me.UserID, nil)
	sub, args, _ := strings.Cut(strings.TrimSpace(text), " ")
	sub = strings.ToLower(strings.TrimPrefix(sub, "/"))
	if sub == "" {
		sub = "help"
	}
	if !validCommandName(sub) {
		return channels.Inbound{}, sub, "unknown command"
	}
	stamp := c.TriggerID
	if stamp == "" || len(stamp) > 100 || !utf8.ValidString(stamp) {
		return channels.Inbound{}, sub, "no trigger id"
	}
	line := "/" + sub
	if args = strings.TrimSpace(args); args != "" {
		line += " " + args
	}
	in = channels.Inbound{
		EventID:       "command:" + stamp,
		Location:      channels.Location{Channel: Name, Account: me.TeamID, ChatID: c.ChannelID},
		User:          channels.User{ID: c.UserID, Username: validText(c.UserName)},
		Text:          line,
		Mentioned:     true, // addressed to the bot by name
		DirectMessage: strings.HasPrefix(c.ChannelID, "D"),
	}
	return in, sub, ""
}

func validCommandName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// PostOption changes a message a person posts.
type PostOption func(*postSpec)

type postSpec struct {
	thread string
	files  []fileSpec
	quiet  bool
	late   bool
	botID  string
}

type fileSpec struct {
	name, mime string
	data       []byte
}

// InThread posts the message as a reply in the thread rooted at rootTS.
func InThread(rootTS string) PostOption { return func(p *postSpec) { p.thread = rootTS } }

// WithFile shares a file with the message.
func WithFile(name, mimeType string, data []byte) PostOption {
	return func(p *postSpec) { p.files = append(p.files, fileSpec{name, mimeType, data}) }
}

// Quietly stores the message without emitting any event, as if Slack lost
// them: only the Web API (catch-up) finds it.
func Quietly() PostOption { return func(p *postSpec) { p.quiet = true } }

// Late stores the message at once but holds its events until Release:
// Slack does not promise order, so events posted after it may arrive first.
func Late() PostOption { return func(p *postSpec) { p.late = true } }

// ByBot makes the message another app's bot message.
func ByBot(botID string) PostOption { return func(p *postSpec) { p.botID = botID } }

// Posted is what a post created.
type Posted struct {
	TS string
	// EventIDs are the events emitted: app_mention first when the bot was
	// mentioned in a channel, then message.
	EventIDs []string
}

// Post makes user post text in channel (Slack markup: "<@U0BOT> hi" mentions
// the bot) and emits the events Slack would: message, and app_mention when
// the bot is mentioned outside a DM.
func (s *Server) Post(channel, user, text string, opts ...PostOption) Posted {
	var spec postSpec
	for _, o := range opts {
		o(&spec)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[channel]
	if c == nil {
		s.t.Errorf("slacktest: post to unknown channel %s", channel)
		return Posted{}
	}
	m := &Message{Channel: c.id, TS: s.nextTS(), ThreadTS: spec.thread, User: user, BotID: spec.botID, Text: text}
	for _, f := range spec.files {
		m.Files = append(m.Files, s.addFile(f.name, f.mime, f.data))
	}
	var parent string
	if spec.thread != "" {
		root, err := s.find(c.id, spec.thread)
		if err != nil {
			s.t.Errorf("slacktest: reply to unknown thread %s in %s", spec.thread, c.id)
			return Posted{}
		}
		parent = root.User
	}
	c.msgs = append(c.msgs, m)
	s.notify()
	out := Posted{TS: m.TS}
	if spec.quiet {
		return out
	}
	s.holding = spec.late
	defer func() { s.holding = false }()
	ev := map[string]any{"channel": c.id, "user": user, "text": text, "ts": m.TS, "event_ts": m.TS}
	if spec.thread != "" {
		ev["thread_ts"] = spec.thread
		ev["parent_user_id"] = parent
	}
	if len(m.Files) > 0 {
		ev["files"] = s.wireFiles(m.Files)
		ev["upload"] = false
	}
	if spec.botID != "" {
		ev["bot_id"] = spec.botID
		ev["subtype"] = "bot_message"
	}
	if !c.im && strings.Contains(text, "<@"+BotUserID+">") {
		mention := cloneMap(ev)
		mention["type"] = "app_mention"
		delete(mention, "parent_user_id")
		delete(mention, "subtype")
		out.EventIDs = append(out.EventIDs, s.emit(mention))
	}
	msg := cloneMap(ev)
	msg["type"] = "message"
	msg["channel_type"] = channelType(c)
	msg["client_msg_id"] = s.nextID("cm-")
	if len(m.Files) > 0 && spec.botID == "" {
		msg["subtype"] = "file_share"
	}
	out.EventIDs = append(out.EventIDs, s.emit(msg))
	return out
}

func channelType(c *channel) string {
	if c.im {
		return "im"
	}
	return "channel"
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// botMessageEvent emits the message event Slack sends for the bot's own
// post; call with s.mu held.
func (s *Server) botMessageEvent(c *channel, m *Message) {
	ev := map[string]any{"type": "message", "channel": c.id, "user": BotUserID, "bot_id": BotID, "text": m.Text,
		"ts": m.TS, "event_ts": m.TS, "channel_type": channelType(c)}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	s.emit(ev)
}

// Click presses the button whose value is value on message ts in channel,
// as user, and returns once the press was acknowledged.
func (s *Server) Click(ctx context.Context, channel, ts, value, user string) error {
	_, err := s.click(ctx, channel, ts, value, user)
	return err
}

// Press is Click, then waits for what the presser is shown (an ephemeral
// message, through the response_url or chat.postEphemeral) and returns it.
func (s *Server) Press(ctx context.Context, channel, ts, value, user string) (string, error) {
	before, err := s.click(ctx, channel, ts, value, user)
	if err != nil {
		return "", err
	}
	var text string
	err = s.WaitFor(ctx, "the presser's ephemeral reply", func() bool {
		for _, e := range s.Ephemerals()[before:] {
			if e.User == user {
				text = e.Text
				return true
			}
		}
		return false
	})
	return text, err
}

func (s *Server) click(ctx context.Context, channel, ts, value, user string) (int, error) {
	s.mu.Lock()
	m, err := s.find(channel, ts)
	if err != nil {
		s.mu.Unlock()
		return 0, fmt.Errorf("slacktest: press on %s/%s: %w", channel, ts, err)
	}
	var blockID string
	var btn *Button
	for _, b := range m.Blocks {
		for _, x := range b.Buttons {
			if x.Value == value {
				blockID, btn = b.BlockID, &x
				break
			}
		}
	}
	if btn == nil {
		s.mu.Unlock()
		return 0, fmt.Errorf("slacktest: message %s has no button with value %q", ts, value)
	}
	u := s.users[user]
	hook := s.nextID("r")
	s.responses[hook] = responseHook{user: user, channel: channel, thread: m.ThreadTS}
	container := map[string]any{"type": "message", "message_ts": m.TS, "channel_id": channel, "is_ephemeral": false}
	msg := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "bot_id": m.BotID, "user": m.User}
	if m.ThreadTS != "" {
		container["thread_ts"] = m.ThreadTS
		msg["thread_ts"] = m.ThreadTS
	}
	now := time.Now()
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "api_app_id": AppID, "token": "fake-verification-token",
		"user":      map[string]any{"id": user, "username": u.Name, "name": u.Name, "team_id": TeamID},
		"team":      map[string]any{"id": TeamID, "domain": "fake"},
		"channel":   map[string]any{"id": channel, "name": channel},
		"container": container, "message": msg,
		"trigger_id":   s.nextID("trig."),
		"response_url": s.base() + "/response/" + hook,
		"actions": []map[string]any{{"type": "button", "action_id": btn.ActionID, "block_id": blockID, "value": btn.Value,
			"text": map[string]any{"type": "plain_text", "text": btn.Text}, "action_ts": fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000)}},
	})
	before := len(s.ephemerals)
	s.mu.Unlock()
	_, err = s.deliverRequest(ctx, "interactive", payload, url.Values{"payload": {string(payload)}})
	return before, err
}

// Command runs "/switchboard text" as user in channel and returns Slack's
// immediate answer: the ack payload (Socket Mode) or the response body
// (HTTP), "" for an empty acknowledgement.
func (s *Server) Command(ctx context.Context, channel, user, text string) (string, error) {
	s.mu.Lock()
	u := s.users[user]
	hook := s.nextID("r")
	s.responses[hook] = responseHook{user: user, channel: channel}
	fields := map[string]string{
		"token": "fake-verification-token", "team_id": TeamID, "team_domain": "fake", "channel_id": channel,
		"channel_name": channel, "user_id": user, "user_name": u.Name, "command": "/switchboard", "text": text,
		"api_app_id": AppID, "is_enterprise_install": "false", "response_url": s.base() + "/response/" + hook,
		"trigger_id": s.nextID("trig."),
	}
	s.mu.Unlock()
	payload, _ := json.Marshal(fields)
	form := url.Values{}
	for k, v := range fields {
		form.Set(k, v)
	}
	return s.deliverRequest(ctx, "slash_commands", payload, form)
}

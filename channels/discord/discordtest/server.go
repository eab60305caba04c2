package discordtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Fixed ids of the fake's world.
const (
	BotID         = "900000000000000001"
	AppID         = BotID // as for applications created today
	BotUsername   = "switchboard-test"
	GuildID       = "800000000000000001"
	TextChannelID = "810000000000000001" // a text channel in GuildID
	ForumID       = "810000000000000002" // a forum channel in GuildID
	VoiceID       = "810000000000000003" // a voice channel (its text chat)
	OtherGuildID  = "800000000000000002"
	OtherGuildCh  = "810000000000000009" // a text channel in OtherGuildID
	UserID        = "700000000000000001"
	OtherUserID   = "700000000000000002"
	OtherBotID    = "700000000000000099"
)

// Channel types (Discord's numbers).
const (
	TypeText         = 0
	TypeDM           = 1
	TypeVoice        = 2
	TypePublicThread = 11
	TypeForum        = 15
)

// Token returns a bot token for BotID in Discord's shape: the user id in
// base64, a timestamp and a signature.
func Token() string {
	return base64.RawStdEncoding.EncodeToString([]byte(BotID)) + ".GfakeT.s3cr3t-signature-part_xyz"
}

// User is a Discord user of the fake.
type User struct {
	ID, Username, GlobalName string
	Bot                      bool
}

// Channel is a channel of the fake (a DM, text channel, forum, thread).
type Channel struct {
	ID, GuildID, ParentID, OwnerID, Name string
	Type                                 int
}

// Message is a message as the fake stores it, in its current state.
type Message struct {
	ID, ChannelID string
	Author        User
	Content       string
	Tokens        []string // custom ids of its buttons, in order
	Components    json.RawMessage
	Nonce         string
	ReferenceID   string // message_reference.message_id
	Mentions      []string
	Roles         []string // the author's roles (for MESSAGE_CREATE's member)
	Attachments   []File   // files sent with it (uploads) or to download (users')
	Flags         int
	Edits         int
	Deleted       bool
	// AllowedMentions is the allowed_mentions JSON the bot sent.
	AllowedMentions json.RawMessage
	Time            time.Time
}

// File is an attachment.
type File struct {
	Name, ContentType string
	Data              []byte
}

// Interaction is an interaction the fake dispatched and what the bot did
// with it.
type Interaction struct {
	ID, Token, ChannelID string
	Type                 int
	User                 User
	// Callbacks are the response types the bot sent to /callback (one is
	// allowed; a second is refused and recorded too).
	Callbacks []int
	Original  *Message   // the response message (types 4 and 5), after edits
	Followups []*Message // followup messages
}

// Call is one REST request the fake received.
type Call struct {
	Method, Path string // path without /api/v9, with the query
	Body         json.RawMessage
	Status       int
	At           time.Time // when the fake answered
}

type failure struct {
	status     int
	retryAfter time.Duration
	code       int
	message    string
}

// Server is a fake Discord: REST under /api/v9 and the gateway websocket
// under /gw/. Create it with New.
type Server struct {
	t        testing.TB
	token    string
	srv      *httptest.Server
	upgrader websocket.Upgrader

	mu           sync.Mutex
	changed      chan struct{}
	lastID       uint64
	users        map[string]User
	channels     map[string]*Channel
	order        map[string][]*Message // channel id → messages, oldest first
	byID         map[string]*Message
	nonces       map[string]*Message
	dms          map[string]string // user id → DM channel id
	interactions map[string]*Interaction
	commands     map[string]json.RawMessage // "global" or guild id → body
	calls        []Call
	failures     []failure
	exhaust      float64 // seconds: next successful send says the bucket is exhausted
	files        map[string]File
	holds        []*Hold // message creates to hold, in order (see HoldCreate)
	noContent    bool    // the application lacks the message content intent

	gw gateway
}

// Option configures a Server.
type Option func(*Server)

// HeartbeatInterval sets the heartbeat interval the gateway's hello asks
// for (default 41.25 s, Discord's).
func HeartbeatInterval(d time.Duration) Option {
	return func(s *Server) { s.gw.heartbeat = d }
}

// NoMessageContentIntent makes the application lack the privileged message
// content intent (not enabled in the Developer Portal): GET
// /applications/@me says so in its flags and an IDENTIFY asking for it is
// closed with 4014, as on Discord.
func NoMessageContentIntent() Option { return func(s *Server) { s.noContent = true } }

// New starts a fake Discord on 127.0.0.1 and closes it when the test ends.
// The world has one guild with a text channel, a forum and a voice channel,
// another guild with a text channel, two users and another bot.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		t:            t,
		token:        Token(),
		upgrader:     websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }},
		changed:      make(chan struct{}),
		users:        map[string]User{},
		channels:     map[string]*Channel{},
		order:        map[string][]*Message{},
		byID:         map[string]*Message{},
		nonces:       map[string]*Message{},
		dms:          map[string]string{},
		interactions: map[string]*Interaction{},
		commands:     map[string]json.RawMessage{},
		files:        map[string]File{},
	}
	s.gw.init()
	for _, o := range opts {
		o(s)
	}
	for _, u := range []User{
		{ID: BotID, Username: BotUsername, Bot: true},
		{ID: UserID, Username: "ada", GlobalName: "Ada Lovelace"},
		{ID: OtherUserID, Username: "grace", GlobalName: "Grace Hopper"},
		{ID: OtherBotID, Username: "otherbot", Bot: true},
	} {
		s.users[u.ID] = u
	}
	for _, c := range []Channel{
		{ID: TextChannelID, GuildID: GuildID, Name: "general", Type: TypeText},
		{ID: ForumID, GuildID: GuildID, Name: "help", Type: TypeForum},
		{ID: VoiceID, GuildID: GuildID, Name: "voice", Type: TypeVoice},
		{ID: OtherGuildCh, GuildID: OtherGuildID, Name: "elsewhere", Type: TypeText},
	} {
		s.channels[c.ID] = &c
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL is the server's base URL, for the adapter's api_url.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server and its gateway connections. It is safe to call
// more than once.
func (s *Server) Close() {
	s.releaseHolds()
	s.gw.closeAll(s)
	s.srv.Close()
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Wait blocks until cond (called with the server locked, so it may call
// no other method of the server) holds, or ctx ends.
func (s *Server) Wait(ctx context.Context, what string, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-ch:
		}
	}
}

// nextIDLocked returns a new snowflake for time t, after every earlier one.
func (s *Server) nextIDLocked(t time.Time) string {
	id := uint64(t.UnixMilli()-1420070400000) << 22
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return strconv.FormatUint(id, 10)
}

// AddChannel adds (or replaces) a channel.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = &c
	s.notifyLocked()
}

// NewForumPost opens a post (a thread) in the forum, by user, and posts
// its first message; it returns the thread id (= the first message's id,
// as on Discord).
func (s *Server) NewForumPost(user, title, content string, opts ...PostOption) string {
	s.mu.Lock()
	id := s.nextIDLocked(time.Now())
	s.channels[id] = &Channel{ID: id, GuildID: GuildID, ParentID: ForumID, OwnerID: user, Name: title, Type: TypePublicThread}
	s.gw.dispatchLocked(s, "THREAD_CREATE", channelJSON(s.channels[id]))
	s.mu.Unlock()
	s.post(id, id, user, content, opts...)
	return id
}

// Channel returns a copy of the channel with id.
func (s *Server) Channel(id string) (Channel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[id]
	if !ok {
		return Channel{}, false
	}
	return *c, true
}

// Messages returns the messages of a channel (or thread), oldest first,
// deleted ones included.
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.order[channelID] {
		out = append(out, *m)
	}
	return out
}

// Message returns a message by id.
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byID[id]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// Interaction returns what happened to an interaction.
func (s *Server) Interaction(id string) (Interaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.interactions[id]
	if !ok {
		return Interaction{}, false
	}
	c := *i
	c.Callbacks = slices.Clone(i.Callbacks)
	c.Followups = nil
	for _, f := range i.Followups {
		fc := *f
		c.Followups = append(c.Followups, &fc)
	}
	if i.Original != nil {
		oc := *i.Original
		c.Original = &oc
	}
	return c, true
}

// Commands returns the application commands registered for scope
// ("global" or a guild id), as the JSON sent.
func (s *Server) Commands(scope string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands[scope]
}

// Calls returns the REST calls so far whose "METHOD /path" starts with
// prefix ("" for all), in order.
func (s *Server) Calls(prefix string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if strings.HasPrefix(c.Method+" "+c.Path, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// FailNextRateLimited makes the next message create or edit answer 429
// with retry_after (in the JSON body and the Retry-After and
// X-RateLimit-Reset-After headers). Failures queue.
func (s *Server) FailNextRateLimited(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// FailNextError makes the next message create or edit fail with status and
// a Discord JSON error code, e.g. 404 and 10003 (Unknown Channel).
func (s *Server) FailNextError(status, code int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{status: status, code: code, message: message})
}

// ExhaustBucket makes the next successful message create say the bucket is
// exhausted (X-RateLimit-Remaining: 0) until resetAfter has passed.
func (s *Server) ExhaustBucket(resetAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exhaust = resetAfter.Seconds()
}

// PostOption changes a message a user posts.
type PostOption func(*Message)

// Mention mentions the bot (the content starts with <@bot>).
func Mention() PostOption {
	return func(m *Message) {
		m.Content = "<@" + BotID + "> " + m.Content
		m.Mentions = append(m.Mentions, BotID)
	}
}

// WithRoles gives the author these roles in the message's member.
func WithRoles(roles ...string) PostOption { return func(m *Message) { m.Roles = roles } }

// ReplyTo makes the message a reply to message id.
func ReplyTo(id string) PostOption { return func(m *Message) { m.ReferenceID = id } }

// Attach attaches a file the adapter can download.
func Attach(name, contentType string, data []byte) PostOption {
	return func(m *Message) {
		m.Attachments = append(m.Attachments, File{Name: name, ContentType: contentType, Data: data})
	}
}

// PostedAt dates the message (and its id) at t, e.g. two hours ago.
func PostedAt(t time.Time) PostOption { return func(m *Message) { m.Time = t } }

// Post makes user post content in a channel or thread and dispatches
// MESSAGE_CREATE (delivered at once, or replayed on resume, or lost when
// the session is invalid: catch-up must find it). It returns the message
// id.
func (s *Server) Post(channelID, user, content string, opts ...PostOption) string {
	return s.post(channelID, "", user, content, opts...)
}

func (s *Server) post(channelID, id, user, content string, opts ...PostOption) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[user]
	if !ok {
		u = User{ID: user, Username: "user" + user}
	}
	m := &Message{ChannelID: channelID, Author: u, Content: content, Time: time.Now()}
	for _, o := range opts {
		o(m)
	}
	if id == "" {
		id = s.nextIDLocked(m.Time)
	}
	m.ID = id
	s.storeLocked(m)
	s.gw.dispatchLocked(s, "MESSAGE_CREATE", s.messageJSONLocked(m, true))
	return m.ID
}

// Redispatch sends MESSAGE_CREATE for an existing message again (a
// duplicate delivery).
func (s *Server) Redispatch(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.byID[id]; ok {
		s.gw.dispatchLocked(s, "MESSAGE_CREATE", s.messageJSONLocked(m, true))
	}
}

func (s *Server) storeLocked(m *Message) {
	s.byID[m.ID] = m
	s.order[m.ChannelID] = append(s.order[m.ChannelID], m)
	for i, f := range m.Attachments {
		s.files[m.ID+"-"+strconv.Itoa(i)] = f
	}
	s.notifyLocked()
}

// messageJSONLocked is a message as Discord sends it: on the gateway with
// guild_id and member, over REST without.
func (s *Server) messageJSONLocked(m *Message, gateway bool) map[string]any {
	var mentions []map[string]any
	for _, id := range m.Mentions {
		mentions = append(mentions, userJSON(s.users[id]))
	}
	out := map[string]any{
		"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "type": 0,
		"author": userJSON(m.Author), "timestamp": m.Time.UTC().Format(time.RFC3339Nano),
		"mentions": mentions, "attachments": s.attachmentsJSONLocked(m),
	}
	if m.ReferenceID != "" {
		out["type"] = 19
		out["message_reference"] = map[string]any{"message_id": m.ReferenceID, "channel_id": m.ChannelID}
		if r, ok := s.byID[m.ReferenceID]; ok {
			out["referenced_message"] = map[string]any{"id": r.ID, "author": userJSON(r.Author), "content": r.Content}
		}
	}
	if len(m.Components) > 0 {
		out["components"] = m.Components
	}
	if m.Nonce != "" {
		out["nonce"] = m.Nonce
	}
	if gateway {
		if c, ok := s.channels[m.ChannelID]; ok && c.GuildID != "" {
			out["guild_id"] = c.GuildID
			out["member"] = map[string]any{"roles": nonNil(m.Roles), "nick": nil}
		}
	}
	return out
}

func (s *Server) attachmentsJSONLocked(m *Message) []map[string]any {
	out := []map[string]any{}
	for i, f := range m.Attachments {
		out = append(out, map[string]any{
			"id": m.ID + strconv.Itoa(i), "filename": f.Name, "content_type": f.ContentType, "size": len(f.Data),
			"url": s.srv.URL + "/files/" + m.ID + "-" + strconv.Itoa(i),
		})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func userJSON(u User) map[string]any {
	out := map[string]any{"id": u.ID, "username": u.Username, "bot": u.Bot}
	if u.GlobalName != "" {
		out["global_name"] = u.GlobalName
	}
	return out
}

func channelJSON(c *Channel) map[string]any {
	out := map[string]any{"id": c.ID, "type": c.Type, "name": c.Name}
	if c.GuildID != "" {
		out["guild_id"] = c.GuildID
	}
	if c.ParentID != "" {
		out["parent_id"] = c.ParentID
	}
	if c.OwnerID != "" {
		out["owner_id"] = c.OwnerID
	}
	return out
}

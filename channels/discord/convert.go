package discord

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

// The subset of Discord's objects this adapter reads. Own types rather than
// discordgo's: the conversion must survive arbitrary JSON (it is fuzzed)
// and needs only these fields.

type message struct {
	ID               string        `json:"id"`
	ChannelID        string        `json:"channel_id"`
	GuildID          string        `json:"guild_id"`
	Author           *user         `json:"author"`
	Member           *member       `json:"member"`
	Content          string        `json:"content"`
	Timestamp        string        `json:"timestamp"`
	Type             int           `json:"type"`
	WebhookID        string        `json:"webhook_id"`
	Mentions         []user        `json:"mentions"`
	Attachments      []attachment  `json:"attachments"`
	MessageReference *reference    `json:"message_reference"`
	Referenced       *referencedTo `json:"referenced_message"`
}

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name"`
	Bot        bool   `json:"bot"`
}

type member struct {
	Nick  string   `json:"nick"`
	Roles []string `json:"roles"`
	User  *user    `json:"user"`
}

type attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	URL         string `json:"url"`
	Size        int64  `json:"size"`
}

type reference struct {
	MessageID string `json:"message_id"`
	ChannelID string `json:"channel_id"`
}

type referencedTo struct {
	Author *user `json:"author"`
}

// channelInfo is what the adapter needs to know about a channel: whether it
// is a DM, a thread (and of which channel), a forum.
type channelInfo struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	GuildID  string `json:"guild_id"`
	ParentID string `json:"parent_id"`
	OwnerID  string `json:"owner_id"`
}

// Discord channel types.
const (
	chanText         = 0
	chanDM           = 1
	chanVoice        = 2
	chanGroupDM      = 3
	chanAnnouncement = 5
	chanNewsThread   = 10
	chanPublicThread = 11
	chanPrivThread   = 12
	chanForum        = 15
	chanMedia        = 16
)

func isThread(t int) bool { return t == chanNewsThread || t == chanPublicThread || t == chanPrivThread }

// Message types that are people writing (default and reply); the rest are
// system messages (joins, pins, thread notices, command responses).
const (
	msgDefault = 0
	msgReply   = 19
)

type interaction struct {
	ID            string           `json:"id"`
	ApplicationID string           `json:"application_id"`
	Type          int              `json:"type"`
	Token         string           `json:"token"`
	GuildID       string           `json:"guild_id"`
	ChannelID     string           `json:"channel_id"`
	Channel       *channelInfo     `json:"channel"`
	Member        *member          `json:"member"`
	User          *user            `json:"user"`
	Message       *message         `json:"message"`
	Data          *interactionData `json:"data"`
}

type interactionData struct {
	Name          string   `json:"name"`
	Type          int      `json:"type"`
	CustomID      string   `json:"custom_id"`
	ComponentType int      `json:"component_type"`
	Options       []option `json:"options"`
}

type option struct {
	Name    string          `json:"name"`
	Type    int             `json:"type"`
	Value   json.RawMessage `json:"value"`
	Options []option        `json:"options"`
}

// Interaction types.
const (
	interactionPing         = 1
	interactionCommand      = 2
	interactionComponent    = 3
	interactionAutocomplete = 4
)

// identity is who the bot is.
type identity struct {
	ID       string // the bot's user id
	Username string
	AppID    string // the application id
}

// filters are the checks only the adapter can make (the gateway applies
// allow_users, admins and require_mention).
type filters struct {
	guilds, channels     map[string]bool // empty: all
	allowRoles, adminRds map[string]bool
	allowBots            bool
	autoThread           bool
	maxImages            int
	maxDownload          int64
}

func set(ids []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			m[id] = true
		}
	}
	return m
}

// Notes put into the text when a user's file is not handed over.
const (
	fileSkippedNote = "[The user attached %s, which was not read: only images reach the model.]"
	imageTooBigNote = "[The user attached the image %s, larger than the download limit; it was not read.]"
	imageFailedNote = "[The user attached the image %s, which could not be downloaded.]"
	tooManyNote     = "[The user attached more images than are read at once; %s was not read.]"
)

// converted is what one message becomes.
type converted struct {
	// ignore: why the message is dropped ("" when it is handed over).
	ignore  string
	inbound channels.Inbound
	// thread: open a thread from this message before handing it over
	// (auto_thread, a mention in a text channel).
	thread     bool
	threadName string
	images     []attachment // to download into inbound.Attachments
}

// convertMessage turns a message into an Inbound, or says why it is
// ignored. ch describes the message's channel (a DM when the message has no
// guild). It is a pure function.
func convertMessage(m message, ch channelInfo, me identity, f filters) converted {
	switch {
	case m.ID == "" || m.ChannelID == "" || m.Author == nil || m.Author.ID == "":
		return converted{ignore: "incomplete message"}
	case m.Type != msgDefault && m.Type != msgReply:
		return converted{ignore: "system message"}
	case me.ID != "" && m.Author.ID == me.ID:
		return converted{ignore: "own message"}
	case (m.Author.Bot || m.WebhookID != "") && !f.allowBots:
		return converted{ignore: "message from a bot"}
	}
	if m.GuildID == "" {
		m.GuildID = ch.GuildID
	}
	dm := m.GuildID == "" || ch.Type == chanDM || ch.Type == chanGroupDM
	loc := channels.Location{Channel: Name, Account: me.ID, ChatID: m.ChannelID}
	replyToBot := m.Referenced != nil && m.Referenced.Author != nil && me.ID != "" && m.Referenced.Author.ID == me.ID
	if !dm {
		if len(f.guilds) > 0 && !f.guilds[m.GuildID] {
			return converted{ignore: "guild not in guilds"}
		}
		base := m.ChannelID
		if isThread(ch.Type) && ch.ParentID != "" {
			base = ch.ParentID
			loc.ChatID, loc.ThreadID = ch.ParentID, m.ChannelID
			if me.ID != "" && ch.OwnerID == me.ID {
				replyToBot = true // a thread the bot opened
			}
		}
		if len(f.channels) > 0 && !f.channels[base] && !f.channels[m.ChannelID] {
			return converted{ignore: "channel not in allowed_channels"}
		}
	}
	mentioned := mentions(m, me.ID)
	text := cleanText(m, me.ID)
	in := channels.Inbound{
		EventID:       m.ID,
		Location:      loc,
		User:          author(m.Author, m.Member),
		Text:          text,
		Mentioned:     mentioned,
		DirectMessage: dm,
		ReplyToBot:    replyToBot,
		MessageID:     m.ID,
		At:            messageTime(m),
	}
	if m.MessageReference != nil && m.MessageReference.MessageID != "" {
		in.ReplyTo = m.MessageReference.MessageID
	}
	if !dm && m.Member != nil {
		in.RoleAllowed, in.RoleAdmin = roleFacts(m.Member.Roles, f)
	}
	c := converted{inbound: in}
	var notes []string
	for _, at := range m.Attachments {
		name := oneLine(at.Filename)
		if name == "" {
			name = "a file"
		}
		switch {
		case !strings.HasPrefix(at.ContentType, "image/"):
			notes = append(notes, fmt.Sprintf(fileSkippedNote, strconv.Quote(name)))
		case f.maxDownload > 0 && at.Size > f.maxDownload:
			notes = append(notes, fmt.Sprintf(imageTooBigNote, strconv.Quote(name)))
		case len(c.images) >= f.maxImages:
			notes = append(notes, fmt.Sprintf(tooManyNote, strconv.Quote(name)))
		case at.URL == "":
			notes = append(notes, fmt.Sprintf(imageFailedNote, strconv.Quote(name)))
		default:
			c.images = append(c.images, at)
		}
	}
	if len(notes) > 0 {
		c.inbound.Text = strings.TrimSpace(c.inbound.Text + "\n\n" + strings.Join(notes, "\n"))
	}
	if f.autoThread && !dm && mentioned && (ch.Type == chanText || ch.Type == chanAnnouncement) {
		c.thread = true
		c.threadName = threadName(text, in.User)
	}
	return c
}

// roleFacts says whether roles grant talking and admin rights; an admin
// role also allows talking.
func roleFacts(roles []string, f filters) (allowed, admin bool) {
	for _, r := range roles {
		if f.adminRds[r] {
			admin = true
		}
		if f.allowRoles[r] {
			allowed = true
		}
	}
	return allowed || admin, admin
}

func author(u *user, m *member) channels.User {
	if u == nil && m != nil {
		u = m.User
	}
	if u == nil {
		return channels.User{}
	}
	name := u.GlobalName
	if m != nil && m.Nick != "" {
		name = m.Nick
	}
	return channels.User{ID: u.ID, Name: oneLine(name), Username: u.Username}
}

// mentionRE matches user mentions: <@id> and the legacy nickname form
// <@!id>.
var mentionRE = regexp.MustCompile(`<@!?([0-9]{1,20})>`)

func mentions(m message, botID string) bool {
	if botID == "" {
		return false
	}
	for _, u := range m.Mentions {
		if u.ID == botID {
			return true
		}
	}
	for _, sub := range mentionRE.FindAllStringSubmatch(m.Content, -1) {
		if sub[1] == botID {
			return true
		}
	}
	return false
}

// cleanText removes the bot's own mention and shows other user mentions as
// @name, so the model reads who is meant.
func cleanText(m message, botID string) string {
	names := map[string]string{}
	for _, u := range m.Mentions {
		n := u.GlobalName
		if n == "" {
			n = u.Username
		}
		if n != "" {
			names[u.ID] = "@" + oneLine(n)
		}
	}
	var b strings.Builder
	last := 0
	for _, ix := range mentionRE.FindAllStringSubmatchIndex(m.Content, -1) {
		b.WriteString(m.Content[last:ix[0]])
		last = ix[1]
		id := m.Content[ix[2]:ix[3]]
		switch n, ok := names[id]; {
		case id == botID:
			// Drop the mention and one space after it, so "hi <@bot> there"
			// reads "hi there".
			if last < len(m.Content) && m.Content[last] == ' ' {
				last++
			}
		case ok:
			b.WriteString(n)
		default:
			b.WriteString(m.Content[ix[0]:ix[1]])
		}
	}
	b.WriteString(m.Content[last:])
	return strings.TrimSpace(b.String())
}

// messageTime is the message's timestamp, or the time in its snowflake.
func messageTime(m message) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, m.Timestamp); err == nil {
		return t.UTC()
	}
	if t, ok := snowflakeTime(m.ID); ok {
		return t
	}
	return time.Time{}
}

// threadName is the name of a thread opened for a message: its first line,
// at most 100 characters (Discord's limit).
func threadName(text string, u channels.User) string {
	line, _, _ := strings.Cut(text, "\n")
	line = oneLine(line)
	if line == "" {
		who := u.Name
		if who == "" {
			who = u.Username
		}
		if who == "" {
			return "Conversation"
		}
		line = "Conversation with " + who
	}
	if utf8.RuneCountInString(line) > 100 {
		line = string([]rune(line)[:99]) + "…"
	}
	return line
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// actionOrCommand is what an interaction becomes.
type actionOrCommand struct {
	ignore  string
	action  *channels.Action
	command *channels.Inbound
}

// interactionHandle is the Inbound.MessageID of a command, so the reply that
// comes back with it as Message.ReplyTo becomes the interaction's response.
func interactionHandle(id string) string { return "i:" + id }

func parseHandle(s string) (string, bool) {
	id, ok := strings.CutPrefix(s, "i:")
	return id, ok && id != ""
}

// convertInteraction turns a button press into an Action and an
// application command into an Inbound "/name args". ch describes the
// interaction's channel. It is a pure function.
func convertInteraction(i interaction, ch channelInfo, me identity, f filters) actionOrCommand {
	if i.ID == "" || i.Token == "" || i.Data == nil {
		return actionOrCommand{ignore: "incomplete interaction"}
	}
	u := author(i.User, i.Member)
	if u.ID == "" {
		return actionOrCommand{ignore: "interaction without a user"}
	}
	dm := i.GuildID == ""
	loc := channels.Location{Channel: Name, Account: me.ID, ChatID: i.ChannelID}
	if !dm && isThread(ch.Type) && ch.ParentID != "" {
		loc.ChatID, loc.ThreadID = ch.ParentID, i.ChannelID
	}
	if loc.ChatID == "" {
		return actionOrCommand{ignore: "interaction without a channel"}
	}
	switch i.Type {
	case interactionComponent:
		if i.Data.CustomID == "" {
			return actionOrCommand{ignore: "component without a custom id"}
		}
		a := &channels.Action{EventID: i.ID, Location: loc, User: u, Token: i.Data.CustomID}
		if i.Message != nil {
			a.Message = channels.MessageRef{Location: loc, ID: i.Message.ID}
		}
		if !dm && i.Member != nil {
			a.RoleAllowed, a.RoleAdmin = roleFacts(i.Member.Roles, f)
		}
		return actionOrCommand{action: a}
	case interactionCommand:
		if i.Data.Name == "" {
			return actionOrCommand{ignore: "command without a name"}
		}
		if !dm {
			if len(f.guilds) > 0 && !f.guilds[i.GuildID] {
				return actionOrCommand{ignore: "guild not in guilds"}
			}
			base := i.ChannelID
			if loc.ThreadID != "" {
				base = loc.ChatID
			}
			if len(f.channels) > 0 && !f.channels[base] && !f.channels[i.ChannelID] {
				return actionOrCommand{ignore: "channel not in allowed_channels"}
			}
		}
		text := "/" + i.Data.Name
		if args := optionArgs(i.Data.Options, 0); len(args) > 0 {
			text += " " + strings.Join(args, " ")
		}
		in := &channels.Inbound{
			EventID:       i.ID,
			Location:      loc,
			User:          u,
			Text:          text,
			Mentioned:     true, // addressed to the bot
			DirectMessage: dm,
			MessageID:     interactionHandle(i.ID),
		}
		if t, ok := snowflakeTime(i.ID); ok {
			in.At = t
		}
		if !dm && i.Member != nil {
			in.RoleAllowed, in.RoleAdmin = roleFacts(i.Member.Roles, f)
		}
		return actionOrCommand{command: in}
	}
	return actionOrCommand{ignore: fmt.Sprintf("interaction type %d", i.Type)}
}

// optionArgs flattens command options into words: subcommand names, then
// values (strings as given, other values as JSON).
func optionArgs(opts []option, depth int) []string {
	if depth > 3 {
		return nil
	}
	var out []string
	for _, o := range opts {
		if o.Type == 1 || o.Type == 2 { // subcommand, subcommand group
			out = append(out, o.Name)
			out = append(out, optionArgs(o.Options, depth+1)...)
			continue
		}
		if len(o.Value) == 0 {
			continue
		}
		var s string
		if json.Unmarshal(o.Value, &s) != nil {
			s = string(o.Value)
		}
		if s = oneLine(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Snowflakes: 64-bit ids whose top 42 bits are milliseconds since the
// Discord epoch.
const discordEpochMS = 1420070400000

func snowflakeTime(id string) (time.Time, bool) {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(n>>22) + discordEpochMS).UTC(), true
}

// snowflakeAt is the smallest snowflake of time t, for "messages after t".
func snowflakeAt(t time.Time) string {
	ms := t.UnixMilli() - discordEpochMS
	if ms < 0 {
		ms = 0
	}
	return strconv.FormatUint(uint64(ms)<<22, 10)
}

// laterID reports whether snowflake a is after b (numerically; ids of
// different lengths compare by length).
func laterID(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// sortIDs orders messages oldest first.
func sortMessages(ms []message) {
	slices.SortFunc(ms, func(x, y message) int {
		switch {
		case laterID(x.ID, y.ID):
			return 1
		case laterID(y.ID, x.ID):
			return -1
		}
		return 0
	})
}

package discord

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-gw/switchboard/channels"
)

// Limits of the API.
const (
	maxFilesPerMessage = 10
	maxButtonsPerRow   = 5
	maxRows            = 5
	maxLabel           = 80
	maxNonce           = 25
	placeholder        = "…" // text of a message that has only buttons
)

// Message component types and button styles.
const (
	componentRow    = 1
	componentButton = 2
	stylePrimary    = 1
	styleSecondary  = 2
	styleDanger     = 4
)

type outMessage struct {
	Content         string          `json:"content"`
	Nonce           string          `json:"nonce,omitempty"`
	EnforceNonce    bool            `json:"enforce_nonce,omitempty"`
	Components      []row           `json:"components"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
	Reference       *outReference   `json:"message_reference,omitempty"`
	Flags           int             `json:"flags,omitempty"`
	Attachments     []outAttachment `json:"attachments,omitempty"`
}

type row struct {
	Type       int      `json:"type"`
	Components []button `json:"components"`
}

type button struct {
	Type     int    `json:"type"`
	Style    int    `json:"style"`
	Label    string `json:"label"`
	CustomID string `json:"custom_id"`
}

type allowedMentions struct {
	Parse       []string `json:"parse"`
	RepliedUser bool     `json:"replied_user"`
}

type outReference struct {
	MessageID       string `json:"message_id"`
	FailIfNotExists bool   `json:"fail_if_not_exists"`
}

type outAttachment struct {
	ID       int    `json:"id"`
	Filename string `json:"filename"`
}

type sentMessage struct {
	ID         string `json:"id"`
	ChannelID  string `json:"channel_id"`
	Content    string `json:"content"`
	Components []row  `json:"components"`
}

// shows reports whether a message Discord answered a create with shows
// om's text and buttons. A create with a nonce Discord has seen answers
// with the message made then, which may show an earlier state (the first
// page of an answer that was streaming when the process died).
func (sent sentMessage) shows(om outMessage) bool {
	if strings.TrimSpace(sent.Content) != strings.TrimSpace(om.Content) {
		return false
	}
	var got, want []button
	for _, r := range sent.Components {
		got = append(got, r.Components...)
	}
	for _, r := range om.Components {
		want = append(want, r.Components...)
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].CustomID != want[i].CustomID || got[i].Label != want[i].Label {
			return false
		}
	}
	return true
}

// noMentions lets no text ping anyone: model text cannot reach @everyone,
// @here, roles or users (the renderer also breaks the syntax).
func noMentions() allowedMentions { return allowedMentions{Parse: []string{}} }

// components builds action rows of buttons whose custom_id is the opaque
// token; no rows give an empty list, which removes buttons when editing.
func components(rows [][]channels.Button) []row {
	out := []row{}
	for _, r := range rows {
		for len(r) > 0 && len(out) < maxRows {
			n := min(len(r), maxButtonsPerRow)
			var bs []button
			for _, b := range r[:n] {
				style := styleSecondary
				switch b.Style {
				case channels.StylePrimary:
					style = stylePrimary
				case channels.StyleDanger:
					style = styleDanger
				}
				bs = append(bs, button{Type: componentButton, Style: style, Label: cut(b.Label, maxLabel), CustomID: b.Token})
			}
			out = append(out, row{Type: componentRow, Components: bs})
			r = r[n:]
		}
	}
	return out
}

// nonce derives Discord's message nonce from the outbound's idempotency key
// and the platform message's index within it: the same outbox item always
// sends the same nonces, and with enforce_nonce Discord returns the message
// it already created instead of posting again (for a few minutes).
func nonce(key string, index int) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key + "\x00" + strconv.Itoa(index)))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])[:maxNonce]
}

// target is the channel a location's messages go to: its thread, or the
// chat.
func target(loc channels.Location) (string, error) {
	id := loc.ThreadID
	if id == "" {
		id = loc.ChatID
	}
	if !snowflakeSegment.MatchString(id) {
		return "", channels.Permanent(fmt.Errorf("discord: location %s has no channel id", loc))
	}
	return id, nil
}

// Send implements channels.Adapter. The rendered text goes out as one
// message per chunk (normally one: the gateway paginates), the buttons and
// the attachments on the first one, whose reference is returned so Edit can
// change or remove them. Each message carries a nonce derived from m.Key
// with enforce_nonce, so a retried Send posts nothing twice. A reply to a
// command's interaction handle (m.ReplyTo) replaces the interaction's
// ephemeral acknowledgement while its token is valid.
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	if err := m.Validate(); err != nil {
		return channels.MessageRef{}, channels.Permanent(err)
	}
	cid, err := target(loc)
	if err != nil {
		return channels.MessageRef{}, err
	}
	chunks := channels.RenderMessage(m, a.Capabilities())
	rows := components(m.ButtonRows())
	atts := m.Attachments()
	if len(chunks) == 0 && (len(rows) > 0 || len(atts) > 0) {
		chunks = []string{""}
		if len(atts) == 0 {
			chunks[0] = placeholder
		}
	}
	if len(chunks) == 0 {
		return channels.MessageRef{}, channels.Permanent(errors.New("discord send: the message has nothing to show"))
	}
	if id, ok := parseHandle(m.ReplyTo); ok && len(atts) == 0 {
		if bi, ok := a.inter.get(id, a.now()); ok {
			return a.sendInteraction(ctx, loc, bi, chunks, rows)
		}
	}
	var first channels.MessageRef
	for i, text := range chunks {
		om := outMessage{Content: text, Components: []row{}, AllowedMentions: noMentions()}
		if n := nonce(m.Key, i); n != "" {
			om.Nonce, om.EnforceNonce = n, true
		}
		var files []*discordgo.File
		if i == 0 {
			om.Components = rows
			if ref := m.ReplyTo; snowflakeSegment.MatchString(ref) && ref != loc.ThreadID {
				// Thread the answer to the question; a thread opened from
				// the question (same id) needs no reference.
				om.Reference = &outReference{MessageID: ref, FailIfNotExists: false}
				om.AllowedMentions.RepliedUser = true
			}
			if files, err = a.files(atts, &om); err != nil {
				return first, err
			}
		}
		var sent sentMessage
		if len(files) > 0 {
			err = a.callFiles(ctx, "send message", http.MethodPost, discordgo.EndpointChannelMessages(cid), discordgo.EndpointChannelMessages(cid), om, files, &sent)
		} else {
			err = a.call(ctx, "send message", http.MethodPost, discordgo.EndpointChannelMessages(cid), discordgo.EndpointChannelMessages(cid), om, &sent)
		}
		if err != nil {
			return first, err
		}
		if om.Nonce != "" && sent.ID != "" && !sent.shows(om) {
			// The nonce named a message made earlier for this key: make it
			// show what this send shows.
			body := map[string]any{"content": om.Content, "components": om.Components, "allowed_mentions": om.AllowedMentions}
			if err := a.call(ctx, "edit message", http.MethodPatch, discordgo.EndpointChannelMessage(cid, sent.ID), discordgo.EndpointChannelMessages(cid), body, nil); err != nil {
				return first, err
			}
		}
		if i == 0 {
			first = channels.MessageRef{Location: loc, ID: sent.ID}
		}
	}
	return first, nil
}

// files opens the attachments (at most maxFilesPerMessage; the rest are
// named in the text).
func (a *Adapter) files(atts []channels.Attachment, om *outMessage) ([]*discordgo.File, error) {
	var files []*discordgo.File
	var skipped []string
	for _, att := range atts {
		name := att.Name
		if name == "" {
			name = filepath.Base(att.Path)
		}
		if len(files) >= maxFilesPerMessage {
			skipped = append(skipped, name)
			continue
		}
		var r io.Reader
		if att.Data != nil {
			r = bytes.NewReader(att.Data)
		} else {
			data, err := os.ReadFile(att.Path)
			if err != nil {
				return nil, channels.Permanent(fmt.Errorf("discord send: attachment %s: %w", name, err))
			}
			r = bytes.NewReader(data)
		}
		om.Attachments = append(om.Attachments, outAttachment{ID: len(files), Filename: name})
		files = append(files, &discordgo.File{Name: name, ContentType: att.MIME, Reader: r})
	}
	if len(skipped) > 0 {
		om.Content = cut(strings.TrimSpace(om.Content+"\n"+"(not attached: "+strings.Join(skipped, ", ")+")"), maxMessageLen)
	}
	return files, nil
}

// sendInteraction answers a command: the first chunk replaces the ephemeral
// acknowledgement, further chunks are ephemeral followups.
func (a *Adapter) sendInteraction(ctx context.Context, loc channels.Location, bi bookedInteraction, chunks []string, rows []row) (channels.MessageRef, error) {
	app := bi.app
	if app == "" {
		app = a.appID()
	}
	var first channels.MessageRef
	for i, text := range chunks {
		body := outMessage{Content: text, Components: []row{}, AllowedMentions: noMentions()}
		if i == 0 {
			body.Components = rows
		}
		var sent sentMessage
		var err error
		if i == 0 {
			err = a.call(ctx, "interaction reply", http.MethodPatch, discordgo.EndpointInteractionResponseActions(app, bi.token), "webhooks", body, &sent)
		} else {
			body.Flags = flagEphemeral
			err = a.call(ctx, "interaction reply", http.MethodPost, discordgo.EndpointFollowupMessage(app, bi.token)+"?wait=true", "webhooks", body, &sent)
		}
		if err != nil {
			return first, err
		}
		if sent.ID != "" {
			a.inter.sent(sent.ID, bi)
		}
		if i == 0 {
			first = channels.MessageRef{Location: loc, ID: sent.ID}
		}
	}
	return first, nil
}

// Edit implements channels.Adapter: the first rendered chunk (the gateway
// paginates, so there is one) and the buttons, none removing them.
// Attachments stay as they are. An edit that changes nothing succeeds.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	if err := m.Validate(); err != nil {
		return channels.Permanent(err)
	}
	if !snowflakeSegment.MatchString(ref.ID) {
		return channels.Permanent(fmt.Errorf("discord edit: %q is not a message id", ref.ID))
	}
	text := placeholder
	if chunks := channels.RenderMessage(m, a.Capabilities()); len(chunks) > 0 {
		text = chunks[0]
	}
	body := map[string]any{"content": text, "components": components(m.ButtonRows()), "allowed_mentions": noMentions()}
	if bi, ok := a.inter.message(ref.ID, a.now()); ok {
		app := bi.app
		if app == "" {
			app = a.appID()
		}
		return a.call(ctx, "interaction edit", http.MethodPatch, discordgo.EndpointFollowupMessageActions(app, bi.token, ref.ID), "webhooks", body, nil)
	}
	cid, err := target(ref.Location)
	if err != nil {
		return err
	}
	return a.call(ctx, "edit message", http.MethodPatch, discordgo.EndpointChannelMessage(cid, ref.ID), discordgo.EndpointChannelMessages(cid), body, nil)
}

// Delete implements channels.Deleter.
func (a *Adapter) Delete(ctx context.Context, ref channels.MessageRef) error {
	cid, err := target(ref.Location)
	if err != nil {
		return err
	}
	if !snowflakeSegment.MatchString(ref.ID) {
		return channels.Permanent(fmt.Errorf("discord delete: %q is not a message id", ref.ID))
	}
	err = a.call(ctx, "delete message", http.MethodDelete, discordgo.EndpointChannelMessage(cid, ref.ID), discordgo.EndpointChannelMessages(cid)+"/delete", nil, nil)
	if apiCode(err) == codeUnknownMessage {
		return nil // already gone
	}
	return err
}

// Typing implements channels.Typer: "typing…" for about 10 seconds.
func (a *Adapter) Typing(ctx context.Context, loc channels.Location) error {
	cid, err := target(loc)
	if err != nil {
		return err
	}
	return a.call(ctx, "typing", http.MethodPost, discordgo.EndpointChannelTyping(cid), discordgo.EndpointChannelTyping(cid), nil, nil)
}

// DirectLocation implements channels.DirectMessenger: it opens (or finds)
// the DM channel with the user. Discord refuses when the user shares no
// server with the bot or closed DMs (a permanent error).
func (a *Adapter) DirectLocation(ctx context.Context, userID string) (channels.Location, error) {
	if !snowflakeSegment.MatchString(userID) {
		return channels.Location{}, channels.Permanent(fmt.Errorf("discord: %q is not a user id", userID))
	}
	loc := channels.Location{Channel: Name, Account: a.Account()}
	if id, ok := a.dms.Get(userID); ok {
		loc.ChatID = id
		return loc, nil
	}
	var ch channelInfo
	err := a.call(ctx, "open DM", http.MethodPost, discordgo.EndpointUserChannels("@me"), discordgo.EndpointUserChannels("@me"), map[string]string{"recipient_id": userID}, &ch)
	if err != nil {
		return channels.Location{}, err
	}
	if ch.ID == "" {
		return channels.Location{}, errors.New("discord open DM: no channel in the answer")
	}
	ch.Type = chanDM
	a.chans.put(ch)
	a.dms.Put(userID, ch.ID)
	loc.ChatID = ch.ID
	return loc, nil
}

// RegisterCommands implements channels.CommandRegistrar: it overwrites the
// application's slash commands with the gateway's table, per configured
// guild (instant) or globally when no guilds are configured. A command with
// arguments takes one optional text option, "args". Without a configured
// application id it waits for the gateway's READY (Start connects), which
// names the application, as long as ctx allows.
func (a *Adapter) RegisterCommands(ctx context.Context, cmds []channels.Command) error {
	app := a.appID()
	if app == "" {
		select {
		case <-a.identified:
			app = a.appID()
		case <-ctx.Done():
		}
	}
	if app == "" {
		return errors.New("discord: the application id is not known yet: set channels.discord.application_id, or wait for the gateway to connect")
	}
	body := commandPayload(cmds)
	if len(a.opts.Guilds) == 0 {
		return a.call(ctx, "register commands", http.MethodPut, discordgo.EndpointApplicationGlobalCommands(app), "", body, nil)
	}
	var errs []error
	for _, g := range a.opts.Guilds {
		if err := a.call(ctx, "register commands", http.MethodPut, discordgo.EndpointApplicationGuildCommands(app, g), "", body, nil); err != nil {
			errs = append(errs, fmt.Errorf("guild %s: %w", g, err))
		}
	}
	return errors.Join(errs...)
}

type appCommand struct {
	Name         string          `json:"name"`
	Type         int             `json:"type"`
	Description  string          `json:"description"`
	Options      []commandOption `json:"options,omitempty"`
	DMPermission bool            `json:"dm_permission"`
}

type commandOption struct {
	Type        int    `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

func commandPayload(cmds []channels.Command) []appCommand {
	out := []appCommand{}
	seen := map[string]bool{}
	for _, c := range cmds {
		name := strings.ToLower(c.Name)
		if !validCommandName(name) || seen[name] {
			continue
		}
		seen[name] = true
		desc := cut(oneLine(c.Description), 100)
		if desc == "" {
			desc = name
		}
		ac := appCommand{Name: name, Type: 1, Description: desc, DMPermission: true}
		if args := cut(oneLine(c.Args), 100); args != "" {
			ac.Options = []commandOption{{Type: 3, Name: "args", Description: args}}
		}
		out = append(out, ac)
	}
	return out
}

func validCommandName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// cut shortens s to at most n characters, ending in "…" when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

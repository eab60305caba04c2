package slack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/switchboard-gw/switchboard/channels"
)

// Block Kit limits the adapter keeps to.
const (
	maxSectionText = 3000 // characters of a section's text
	maxButtonText  = 75   // characters of a button's label
	maxRowButtons  = 25   // elements of one actions block
	placeholder    = "…"  // text of a message that has only buttons
)

// blocks renders a message's text chunks as section blocks followed by its
// button rows as actions blocks. Every block has a block_id (without one,
// Slack's block_actions payload does not name the block the SDK expects).
// Button action_ids are the tokens (made unique within the message) and
// values are the tokens.
func blocks(sections []string, rows [][]channels.Button) []slack.Block {
	var out []slack.Block
	for i, s := range sections {
		for j, part := range sectionParts(s) {
			id := "sb-text-" + strconv.Itoa(i)
			if j > 0 {
				id += "-" + strconv.Itoa(j)
			}
			out = append(out, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, part, false, false), nil, nil, slack.SectionBlockOptionBlockID(id)))
		}
	}
	used := map[string]bool{}
	for r, row := range rows {
		for start := 0; start < len(row); start += maxRowButtons {
			var els []slack.BlockElement
			for _, b := range row[start:min(start+maxRowButtons, len(row))] {
				id := b.Token
				for n := 2; used[id]; n++ {
					id = b.Token + "#" + strconv.Itoa(n)
				}
				used[id] = true
				btn := slack.NewButtonBlockElement(id, b.Token, slack.NewTextBlockObject(slack.PlainTextType, cutRunes(b.Label, maxButtonText), true, false))
				switch b.Style {
				case channels.StylePrimary:
					btn = btn.WithStyle(slack.StylePrimary)
				case channels.StyleDanger:
					btn = btn.WithStyle(slack.StyleDanger)
				}
				els = append(els, btn)
			}
			out = append(out, slack.NewActionBlock("sb-actions-"+strconv.Itoa(r)+"-"+strconv.Itoa(start), els...))
		}
	}
	return out
}

// sectionParts splits a chunk whose UTF-16 length exceeds a section's limit
// (Slack may count characters outside the BMP twice; Chunk counts runes).
func sectionParts(s string) []string {
	if len(utf16.Encode([]rune(s))) <= maxSectionText {
		return []string{s}
	}
	return channels.Chunk(s, maxSectionText/2, channels.SlackMrkdwn)
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// groups puts each rendered chunk in a message of its own, so that every
// message is at most MaxMessageLen (the gateway paginates, so there is
// normally one chunk); no chunks is one message for the buttons alone.
func groups(chunks []string) [][]string {
	if len(chunks) == 0 {
		return [][]string{nil}
	}
	out := make([][]string, len(chunks))
	for i, c := range chunks {
		out[i] = []string{c}
	}
	return out
}

func chatOf(loc channels.Location) (string, error) {
	if loc.ChatID == "" || !validID(loc.ChatID) {
		return "", channels.Permanent(fmt.Errorf("slack: location %s has no Slack channel id", loc))
	}
	if loc.ThreadID != "" && !validTS(loc.ThreadID) {
		return "", channels.Permanent(fmt.Errorf("slack: location %s: thread id is not a message ts", loc))
	}
	return loc.ChatID, nil
}

// Send implements channels.Adapter: the rendered text as section blocks
// (one message normally; Paginate keeps a page under MaxMessageLen), the
// buttons as actions blocks on the first message, then each attachment
// uploaded into the same thread. A location with a ThreadID posts into that
// thread (its root ts); when Slack refuses a threaded reply
// (cannot_reply_to_message), the message is posted in the channel with a
// link to the thread instead of being lost. It returns the first message's
// reference, which carries the buttons, so Edit can change or remove them.
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	if err := m.Validate(); err != nil {
		return channels.MessageRef{}, channels.Permanent(err)
	}
	chat, err := chatOf(loc)
	if err != nil {
		return channels.MessageRef{}, err
	}
	chunks := channels.RenderMessage(m, a.Capabilities())
	rows := m.ButtonRows()
	atts := m.Attachments()
	if len(chunks) == 0 && len(rows) == 0 && len(atts) == 0 {
		return channels.MessageRef{}, channels.Permanent(fmt.Errorf("slack send: the message has nothing to show"))
	}
	var first channels.MessageRef
	var posted map[string]string // part key → ts of an earlier attempt's post
	if m.Key != "" && !m.MaybeSentSince.IsZero() {
		posted = a.findPosted(ctx, chat, loc.ThreadID, m.MaybeSentSince)
	}
	if len(chunks) > 0 || len(rows) > 0 {
		for i, g := range groups(chunks) {
			var r [][]channels.Button
			if i == 0 {
				r = rows
			}
			key := partKey(m.Key, i)
			ts, ok := posted[key]
			if ok {
				a.log.Debug("slack message posted by an earlier attempt; not posting it again", "chat", chat, "ts", ts)
			} else if ts, err = a.post(ctx, chat, loc.ThreadID, g, r, key); err != nil {
				return first, err
			}
			if i == 0 {
				first = channels.MessageRef{Location: loc, ID: ts}
			}
		}
	}
	for _, att := range atts {
		id, err := a.upload(ctx, chat, loc.ThreadID, att)
		if err != nil {
			return first, err
		}
		if first.ID == "" {
			first = channels.MessageRef{Location: loc, ID: id}
		}
	}
	return first, nil
}

// post sends one message and returns its ts. A key goes into the message's
// metadata, so a retry can find the post (findPosted).
func (a *Adapter) post(ctx context.Context, chat, thread string, sections []string, rows [][]channels.Button, key string) (string, error) {
	opts := []slack.MsgOption{
		slack.MsgOptionText(fallback(sections), false),
		slack.MsgOptionBlocks(blocks(sections, rows)...),
	}
	if key != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: sentEventType, EventPayload: map[string]any{"key": key}}))
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if thread == "" {
		_, ts, err := a.api.PostMessageContext(cctx, chat, opts...)
		return ts, a.red.classify("chat.postMessage", err)
	}
	_, ts, err := a.api.PostMessageContext(cctx, chat, append(opts, slack.MsgOptionTS(thread))...)
	if err == nil {
		a.botThreads.Put(threadKey(chat, thread), struct{}{})
		return ts, nil
	}
	if slackCode(err) != "cannot_reply_to_message" {
		return "", a.red.classify("chat.postMessage", err)
	}
	// The thread cannot take replies (its root was deleted, or is a kind
	// of message without threads): post in the channel, pointing at it.
	a.log.Warn("slack refused a threaded reply; posting it in the channel with a link", "chat", chat, "thread", thread)
	note := "↪ _reply to a thread_"
	if link, err := a.api.GetPermalinkContext(cctx, &slack.PermalinkParameters{Channel: chat, Ts: thread}); err == nil && a.trustedLink(link) {
		note = "↪ _reply to <" + link + "|this thread>_"
	}
	sections = append([]string{note}, sections...)
	opts = []slack.MsgOption{
		slack.MsgOptionText(fallback(sections), false),
		slack.MsgOptionBlocks(blocks(sections, rows)...),
	}
	if key != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: sentEventType, EventPayload: map[string]any{"key": key}}))
	}
	_, ts, err = a.api.PostMessageContext(cctx, chat, opts...)
	return ts, a.red.classify("chat.postMessage", err)
}

// trustedLink accepts a permalink to put into mrkdwn (no '|' or '>' that
// would end the link).
func (a *Adapter) trustedLink(s string) bool {
	for _, c := range s {
		if c == '|' || c == '>' || c == '<' || c < 0x20 {
			return false
		}
	}
	return s != ""
}

// fallback is the message's notification text: its first section.
func fallback(sections []string) string {
	if len(sections) == 0 {
		return placeholder
	}
	return sections[0]
}

// Edit implements channels.Adapter with chat.update: the first rendered
// chunk (the gateway paginates, so there is normally one) and the
// message's buttons; an edit without buttons removes them. Attachments
// cannot be added by an edit and are left out. An edit that changes nothing
// succeeds (Slack accepts it).
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	if err := m.Validate(); err != nil {
		return channels.Permanent(err)
	}
	chat, err := chatOf(ref.Location)
	if err != nil {
		return err
	}
	if !validTS(ref.ID) {
		return channels.Permanent(fmt.Errorf("slack edit: %q is not a message ts", ref.ID))
	}
	chunks := channels.RenderMessage(m, a.Capabilities())
	if len(chunks) == 0 {
		chunks = []string{placeholder}
	}
	sections := groups(chunks)[0]
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, _, _, err = a.api.UpdateMessageContext(ctx, chat, ref.ID,
		slack.MsgOptionText(fallback(sections), false),
		slack.MsgOptionBlocks(blocks(sections, m.ButtonRows())...),
	)
	return a.red.classify("chat.update", err)
}

// Delete implements channels.Deleter with chat.delete.
func (a *Adapter) Delete(ctx context.Context, ref channels.MessageRef) error {
	chat, err := chatOf(ref.Location)
	if err != nil {
		return err
	}
	if !validTS(ref.ID) {
		return channels.Permanent(fmt.Errorf("slack delete: %q is not a message ts", ref.ID))
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, _, err = a.api.DeleteMessageContext(ctx, chat, ref.ID)
	if slackCode(err) == "message_not_found" {
		return nil
	}
	return a.red.classify("chat.delete", err)
}

// SendEphemeral implements channels.EphemeralSender with chat.postEphemeral,
// in the location's thread.
func (a *Adapter) SendEphemeral(ctx context.Context, loc channels.Location, userID string, m channels.Message) error {
	if err := m.Validate(); err != nil {
		return channels.Permanent(err)
	}
	chat, err := chatOf(loc)
	if err != nil {
		return err
	}
	if !validID(userID) {
		return channels.Permanent(fmt.Errorf("slack ephemeral: %q is not a user id", userID))
	}
	chunks := channels.RenderMessage(m, a.Capabilities())
	if len(chunks) == 0 && len(m.ButtonRows()) == 0 {
		return channels.Permanent(fmt.Errorf("slack ephemeral: the message has nothing to show"))
	}
	sections := groups(chunks)[0]
	opts := []slack.MsgOption{
		slack.MsgOptionText(fallback(sections), false),
		slack.MsgOptionBlocks(blocks(sections, m.ButtonRows())...),
	}
	if loc.ThreadID != "" {
		opts = append(opts, slack.MsgOptionTS(loc.ThreadID))
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err = a.api.PostEphemeralContext(ctx, chat, userID, opts...)
	return a.red.classify("chat.postEphemeral", err)
}

// DirectLocation implements channels.DirectMessenger with
// conversations.open: the location of the bot's DM with the user.
func (a *Adapter) DirectLocation(ctx context.Context, userID string) (channels.Location, error) {
	if !validID(userID) {
		return channels.Location{}, channels.Permanent(fmt.Errorf("slack: %q is not a Slack member id", userID))
	}
	me, err := a.whoAmI(ctx)
	if err != nil {
		return channels.Location{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	ch, _, _, err := a.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{userID}})
	if err != nil {
		return channels.Location{}, a.red.classify("conversations.open", err)
	}
	if ch == nil || !validID(ch.ID) {
		return channels.Location{}, channels.Permanent(fmt.Errorf("slack conversations.open: no channel id for %s", userID))
	}
	return channels.Location{Channel: Name, Account: me.TeamID, ChatID: ch.ID}, nil
}

// upload shares an attachment into the channel (thread) with the external
// upload API (files.getUploadURLExternal, the upload, then
// files.completeUploadExternal) and returns the file id.
func (a *Adapter) upload(ctx context.Context, chat, thread string, att channels.Attachment) (string, error) {
	var r io.Reader
	var size int64
	name := att.Name
	if att.Data != nil {
		r, size = bytes.NewReader(att.Data), int64(len(att.Data))
	} else {
		f, err := os.Open(att.Path)
		if err != nil {
			return "", channels.Permanent(fmt.Errorf("slack upload: %w", err))
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return "", channels.Permanent(fmt.Errorf("slack upload: %w", err))
		}
		r, size = f, st.Size()
		if name == "" {
			name = filepath.Base(att.Path)
		}
	}
	if size == 0 {
		return "", channels.Permanent(fmt.Errorf("slack upload: %s is empty; Slack does not take empty files", name))
	}
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	sum, err := a.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader:          r,
		FileSize:        int(size),
		Filename:        name,
		Title:           name,
		InitialComment:  channels.Render(channels.EscapeMarkdown(att.Caption), channels.SlackMrkdwn),
		Channel:         chat,
		ThreadTimestamp: thread,
	})
	if err != nil {
		return "", a.red.classify("file upload", err)
	}
	return sum.ID, nil
}

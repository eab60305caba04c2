package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf16"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-gw/switchboard/channels"
)

// Limits of the Bot API.
const (
	maxCaption  = 1024 // UTF-16 code units, after entity parsing
	maxAnswer   = 200  // answerCallbackQuery text
	placeholder = "…"  // text of a message that has only buttons
)

// inlineKeyboard is our own minimal reply markup. The library's button type
// always serializes copy_text, which makes Telegram reject the keyboard.
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// keyboard builds the markup for rows; no rows give an empty keyboard,
// which removes buttons when editing.
func keyboard(rows [][]channels.Button) *inlineKeyboard {
	kb := &inlineKeyboard{InlineKeyboard: [][]inlineButton{}}
	for _, row := range rows {
		var r []inlineButton
		for _, b := range row {
			r = append(r, inlineButton{Text: b.Label, CallbackData: b.Token})
		}
		if len(r) > 0 {
			kb.InlineKeyboard = append(kb.InlineKeyboard, r)
		}
	}
	return kb
}

// target is where a location's messages go.
type target struct {
	chatID   any // int64, or a "@channel" username
	threadID int
}

func targetOf(loc channels.Location) (target, error) {
	if loc.ChatID == "" {
		return target{}, channels.Permanent(fmt.Errorf("telegram: location %s has no chat id", loc))
	}
	var t target
	if id, err := strconv.ParseInt(loc.ChatID, 10, 64); err == nil {
		t.chatID = id
	} else {
		t.chatID = loc.ChatID
	}
	if loc.ThreadID != "" {
		n, err := strconv.Atoi(loc.ThreadID)
		if err != nil || n <= 0 {
			return target{}, channels.Permanent(fmt.Errorf("telegram: location %s: thread id is not a topic id", loc))
		}
		t.threadID = n
	}
	return t, nil
}

// Send implements channels.Adapter. The rendered text goes out as one
// message per chunk, the buttons on the first one; then each attachment as
// a document. It returns the first message's reference, which is also the
// one carrying the buttons, so that Edit can change or remove them. When a
// later part fails, Send returns the error and the outbox sends everything
// again (at least once: earlier parts may then appear twice).
func (a *Adapter) Send(ctx context.Context, loc channels.Location, m channels.Message) (channels.MessageRef, error) {
	if err := m.Validate(); err != nil {
		return channels.MessageRef{}, channels.Permanent(err)
	}
	t, err := targetOf(loc)
	if err != nil {
		return channels.MessageRef{}, err
	}
	chunks := channels.RenderMessage(m, a.Capabilities())
	rows := m.ButtonRows()
	atts := m.Attachments()
	if len(chunks) == 0 && len(rows) > 0 {
		chunks = []string{placeholder}
	}
	if len(chunks) == 0 && len(atts) == 0 {
		return channels.MessageRef{}, channels.Permanent(errors.New("telegram send: the message has nothing to show"))
	}
	var first channels.MessageRef
	for i, text := range chunks {
		p := &bot.SendMessageParams{
			ChatID:          t.chatID,
			MessageThreadID: t.threadID,
			Text:            text,
			ParseMode:       models.ParseModeHTML,
		}
		if i == 0 && len(rows) > 0 {
			p.ReplyMarkup = keyboard(rows)
		}
		if id, err := strconv.Atoi(m.ReplyTo); i == 0 && err == nil && id > 0 {
			// Thread the answer to the question; if that message is gone,
			// send anyway.
			p.ReplyParameters = &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		msg, err := a.bot.SendMessage(cctx, p)
		cancel()
		if err != nil {
			return first, a.red.classify("sendMessage", err)
		}
		if i == 0 {
			first = channels.MessageRef{Location: loc, ID: strconv.Itoa(msg.ID)}
			if len(rows) > 0 && !m.MaybeSentSince.IsZero() {
				a.disarmLostCopies(ctx, t, msg.ID, m)
			}
		}
	}
	for _, att := range atts {
		id, err := a.sendDocument(ctx, t, att)
		if err != nil {
			return first, err
		}
		if first.ID == "" {
			first = channels.MessageRef{Location: loc, ID: strconv.Itoa(id)}
		}
	}
	return first, nil
}

// maxLostProbes bounds the messages disarmLostCopies looks at.
const maxLostProbes = 30

// disarmLostCopies removes the buttons of what an earlier attempt at m may
// have posted before the process died (the send-then-crash window): the
// Bot API has no idempotency key and no history to find that copy by, so
// its buttons would stay pressable beside the new one's. Message ids grow
// within a chat, so that copy is one of the bot's messages between the
// gateway's newest post from before the attempt (m.PostedBefore) and the
// new one (newID); the gateway's own posts since (m.PostedSince) are
// skipped. Removing the buttons is harmless for whatever else is there:
// the users' messages are not the bot's to edit, and a message without
// buttons is not modified. A message that had buttons then says it was
// posted again (lostCopyText). Failures only leave a copy pressable (a
// press on it answers that the approval was decided), so they are not
// errors.
func (a *Adapter) disarmLostCopies(ctx context.Context, t target, newID int, m channels.Message) {
	if m.PostedSince == nil {
		return // no record: every message of the bot's could be a live one
	}
	lo, err := strconv.Atoi(m.PostedBefore)
	if err != nil || lo < 0 {
		lo = 0
	}
	known := make(map[int]bool, len(m.PostedSince))
	for _, id := range m.PostedSince {
		if n, err := strconv.Atoi(id); err == nil {
			known[n] = true
		}
	}
	for id := newID - 1; id > lo && id >= newID-maxLostProbes; id-- {
		if known[id] {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := a.bot.EditMessageReplyMarkup(cctx, &bot.EditMessageReplyMarkupParams{
			ChatID: t.chatID, MessageID: id, ReplyMarkup: keyboard(nil),
		})
		cancel()
		if err != nil {
			continue // not the bot's, or it had no buttons
		}
		// It had buttons and nothing records it: the lost copy. Say where
		// the live one is (only the bot's own messages with buttons get
		// here, so no answer or person's message is ever rewritten).
		cctx, cancel = context.WithTimeout(ctx, callTimeout)
		_, err = a.bot.EditMessageText(cctx, &bot.EditMessageTextParams{
			ChatID: t.chatID, MessageID: id, Text: lostCopyText, ReplyMarkup: keyboard(nil),
		})
		cancel()
		a.log.Info("telegram: disarmed a copy an earlier attempt posted", "message", id, "chat", fmt.Sprint(t.chatID), "text_replaced", err == nil)
	}
}

// lostCopyText replaces a disarmed lost copy.
const lostCopyText = "(This message was posted again below.)"

func (a *Adapter) sendDocument(ctx context.Context, t target, att channels.Attachment) (int, error) {
	var r io.Reader
	name := att.Name
	if att.Data != nil {
		r = bytes.NewReader(att.Data)
	} else {
		f, err := os.Open(att.Path)
		if err != nil {
			return 0, channels.Permanent(fmt.Errorf("telegram sendDocument: %w", err))
		}
		defer f.Close()
		r = f
		if name == "" {
			name = filepath.Base(att.Path)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	msg, err := a.bot.SendDocument(ctx, &bot.SendDocumentParams{
		ChatID:          t.chatID,
		MessageThreadID: t.threadID,
		Document:        &models.InputFileUpload{Filename: name, Data: r},
		Caption:         cutUTF16(att.Caption, maxCaption),
	})
	if err != nil {
		return 0, a.red.classify("sendDocument", err)
	}
	return msg.ID, nil
}

// Edit implements channels.Adapter with editMessageText: the first rendered
// chunk (longer content is cut there; the gateway sends continuations
// itself) and the message's buttons, an empty keyboard removing them.
// Attachments cannot be added by an edit and are left out. An edit that
// changes nothing succeeds.
func (a *Adapter) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) error {
	if err := m.Validate(); err != nil {
		return channels.Permanent(err)
	}
	t, err := targetOf(ref.Location)
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(ref.ID)
	if err != nil || id <= 0 {
		return channels.Permanent(fmt.Errorf("telegram edit: %q is not a message id", ref.ID))
	}
	text := placeholder
	if chunks := channels.RenderMessage(m, a.Capabilities()); len(chunks) > 0 {
		text = chunks[0]
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err = a.bot.EditMessageText(ctx, &bot.EditMessageTextParams{
		ChatID:      t.chatID,
		MessageID:   id,
		Text:        text,
		ParseMode:   models.ParseModeHTML,
		ReplyMarkup: keyboard(m.ButtonRows()),
	})
	if isNotModified(err) {
		return nil
	}
	return a.red.classify("editMessageText", err)
}

// Typing implements channels.Typer with sendChatAction, in the location's
// topic.
func (a *Adapter) Typing(ctx context.Context, loc channels.Location) error {
	t, err := targetOf(loc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err = a.bot.SendChatAction(ctx, &bot.SendChatActionParams{
		ChatID:          t.chatID,
		MessageThreadID: t.threadID,
		Action:          models.ChatActionTyping,
	})
	return a.red.classify("sendChatAction", err)
}

// cutUTF16 shortens plain text to at most n UTF-16 code units (Telegram's
// measure), ending in "…" when cut, never inside a character.
func cutUTF16(s string, n int) string {
	rs := []rune(s)
	if len(utf16.Encode(rs)) <= n {
		return s
	}
	units := 0
	for i, r := range rs {
		w := utf16.RuneLen(r)
		if w < 0 {
			w = 1
		}
		if units+w > n-1 { // leave room for "…"
			return string(rs[:i]) + "…"
		}
		units += w
	}
	return s
}

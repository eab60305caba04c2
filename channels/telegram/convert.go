package telegram

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/switchboard-gw/switchboard/channels"
)

// The subset of the Bot API's Update this adapter reads. Own types rather
// than the library's models: the conversion must survive arbitrary JSON
// (it is fuzzed), and it needs only these fields.
type update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *message       `json:"message"`
	CallbackQuery *callbackQuery `json:"callback_query"`
}

type message struct {
	MessageID         int64           `json:"message_id"`
	MessageThreadID   int64           `json:"message_thread_id"`
	IsTopicMessage    bool            `json:"is_topic_message"`
	From              *user           `json:"from"`
	Chat              chat            `json:"chat"`
	Date              int64           `json:"date"`
	Text              string          `json:"text"`
	Entities          []entity        `json:"entities"`
	Caption           string          `json:"caption"`
	CaptionEntities   []entity        `json:"caption_entities"`
	Photo             []photoSize     `json:"photo"`
	Document          *document       `json:"document"`
	ReplyToMessage    *message        `json:"reply_to_message"`
	ForumTopicCreated json.RawMessage `json:"forum_topic_created"`
}

type user struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

type chat struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
}

type entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"` // UTF-16 code units
	Length int    `json:"length"`
	User   *user  `json:"user"` // text_mention
}

type photoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	FileSize     int64  `json:"file_size"`
}

type document struct {
	FileName string `json:"file_name"`
	MimeType string `json:"mime_type"`
}

type callbackQuery struct {
	ID      string   `json:"id"`
	From    user     `json:"from"`
	Message *message `json:"message"`
	Data    string   `json:"data"`
}

// identity is who the bot is, from getMe.
type identity struct {
	ID       int64
	Username string
}

type eventKind int

const (
	kindIgnore  eventKind = iota // acknowledge and drop
	kindInbound                  // a message for OnInbound
	kindAction                   // a button press for OnAction
	kindAnswer                   // a press to answer without OnAction
)

// event is what one update means for the gateway.
type event struct {
	kind    eventKind
	inbound channels.Inbound
	action  channels.Action
	// photo is the size to download into an attachment (kindInbound).
	photo *photoSize
	// callbackID and answer are for kindAction and kindAnswer.
	callbackID string
	answer     string
	// why says why an update is ignored, for debug logs.
	why string
}

// parseUpdate decodes one update. A value of the wrong JSON type anywhere is
// an error: such an update is acknowledged and dropped.
func parseUpdate(raw []byte) (update, error) {
	var u update
	if err := json.Unmarshal(raw, &u); err != nil {
		return update{}, fmt.Errorf("decode update: %w", err)
	}
	return u, nil
}

// convert turns an update into an event. It is pure: downloading a photo is
// left to the caller (event.photo).
func convert(u update, me identity, maxDownload int64) event {
	switch {
	case u.Message != nil:
		return convertMessage(u.UpdateID, u.Message, me, maxDownload)
	case u.CallbackQuery != nil:
		return convertCallback(u.CallbackQuery, me)
	}
	return event{why: "unhandled update type"}
}

func locationOf(m *message, me identity) channels.Location {
	loc := channels.Location{
		Channel: Name,
		Account: accountOf(me),
		ChatID:  strconv.FormatInt(m.Chat.ID, 10),
	}
	if m.IsTopicMessage && m.MessageThreadID > 0 {
		loc.ThreadID = strconv.FormatInt(m.MessageThreadID, 10)
	}
	return loc
}

func userOf(u *user) channels.User {
	return channels.User{
		ID:       strconv.FormatInt(u.ID, 10),
		Name:     strings.TrimSpace(strings.TrimSpace(u.FirstName) + " " + strings.TrimSpace(u.LastName)),
		Username: u.Username,
	}
}

func convertMessage(updateID int64, m *message, me identity, maxDownload int64) event {
	if m.From == nil || m.From.IsBot {
		return event{why: "message from a bot or without a sender"}
	}
	if m.Chat.ID == 0 {
		return event{why: "message without a chat"}
	}
	text, ents := m.Text, m.Entities
	if text == "" {
		text, ents = m.Caption, m.CaptionEntities
	}
	text, mentioned, elsewhere := cleanText(text, ents, me)
	if elsewhere {
		return event{why: "command for another bot"}
	}
	in := channels.Inbound{
		EventID:       strconv.FormatInt(updateID, 10),
		Location:      locationOf(m, me),
		User:          userOf(m.From),
		Text:          text,
		Mentioned:     mentioned,
		DirectMessage: m.Chat.Type == "private",
		MessageID:     strconv.FormatInt(m.MessageID, 10),
		At:            time.Unix(m.Date, 0).UTC(),
	}
	if r := m.ReplyToMessage; r != nil && !isTopicRoot(m, r) {
		in.ReplyTo = strconv.FormatInt(r.MessageID, 10)
		in.ReplyToBot = r.From != nil && r.From.ID == me.ID
	}
	ev := event{kind: kindInbound}
	var notes []string
	if len(m.Photo) > 0 {
		if p, ok := pickPhoto(m.Photo, maxDownload); ok {
			ev.photo = &p
		} else {
			notes = append(notes, fmt.Sprintf("[The user sent an image larger than the %s download limit; it was not read.]", sizeString(maxDownload)))
		}
	}
	if d := m.Document; d != nil {
		name := strings.TrimSpace(d.FileName)
		if name == "" {
			name = "a file"
		}
		notes = append(notes, fmt.Sprintf("[The user sent %s, which this channel cannot read yet.]", strconv.Quote(name)))
	}
	if len(notes) > 0 {
		in.Text = strings.TrimSpace(in.Text + "\n\n" + strings.Join(notes, "\n"))
	}
	if in.Text == "" && ev.photo == nil {
		return event{why: "message without text or image"}
	}
	ev.inbound = in
	return ev
}

// isTopicRoot reports whether r is only the forum topic's creation message,
// which Telegram puts in reply_to_message of every message in a topic that
// is not a real reply.
func isTopicRoot(m, r *message) bool {
	return len(r.ForumTopicCreated) > 0 || (m.IsTopicMessage && r.MessageID == m.MessageThreadID)
}

// pickPhoto chooses the largest size within the limit; sizes of unknown
// byte size count as fitting (the download is limited anyway).
func pickPhoto(sizes []photoSize, limit int64) (photoSize, bool) {
	var best photoSize
	found := false
	for _, s := range sizes {
		if s.FileID == "" || s.FileSize > limit {
			continue
		}
		if !found || s.Width*s.Height > best.Width*best.Height ||
			(s.Width*s.Height == best.Width*best.Height && s.FileSize > best.FileSize) {
			best, found = s, true
		}
	}
	return best, found
}

func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d-byte", n)
}

// edit is one change to a message's UTF-16 text.
type edit struct {
	off, end int
	repl     []uint16
}

// cleanText removes the bot's own mentions (reporting mentioned) and
// normalizes /command@thisbot to /command. elsewhere reports a leading
// command addressed to another bot. Entity offsets are UTF-16 code units;
// out-of-range entities are ignored.
func cleanText(text string, ents []entity, me identity) (out string, mentioned, elsewhere bool) {
	u16 := utf16.Encode([]rune(text))
	if n := leadingCommand(u16); n > 0 && !hasEntityAt(ents, "bot_command", 0) {
		// Telegram marks a leading command with a bot_command entity; treat
		// one without it (a client or relay that left entities out) alike,
		// so "/status@bot" never reaches the gateway unnormalized.
		ents = append(slices.Clone(ents), entity{Type: "bot_command", Offset: 0, Length: n})
	}
	if len(ents) == 0 {
		return strings.TrimSpace(text), false, false
	}
	var edits []edit
	for _, e := range ents {
		if e.Offset < 0 || e.Length <= 0 || e.Offset > len(u16) || e.Length > len(u16)-e.Offset {
			continue
		}
		end := e.Offset + e.Length
		seg := string(utf16.Decode(u16[e.Offset:end]))
		switch e.Type {
		case "mention":
			if me.Username != "" && strings.EqualFold(seg, "@"+me.Username) {
				mentioned = true
				edits = append(edits, edit{off: e.Offset, end: end})
			}
		case "text_mention":
			if e.User != nil && e.User.ID == me.ID {
				mentioned = true
				edits = append(edits, edit{off: e.Offset, end: end})
			}
		case "bot_command":
			name, at, ok := strings.Cut(seg, "@")
			switch {
			case !ok:
			case me.Username != "" && strings.EqualFold(at, me.Username):
				mentioned = true
				edits = append(edits, edit{off: e.Offset, end: end, repl: utf16.Encode([]rune(name))})
			case e.Offset == 0:
				elsewhere = true
			}
		}
	}
	// Apply from the end so earlier offsets stay valid; skip overlaps.
	slices.SortFunc(edits, func(a, b edit) int { return b.off - a.off })
	limit := len(u16)
	for _, e := range edits {
		if e.end > limit {
			continue
		}
		limit = e.off
		end := e.end
		if e.repl == nil && end < len(u16) && isSpace(u16[end]) && (e.off == 0 || isSpace(u16[e.off-1])) {
			end++ // "@bot hello" → "hello", "hi @bot there" → "hi there"
		}
		u16 = slices.Concat(u16[:e.off], e.repl, u16[end:])
	}
	return strings.TrimSpace(string(utf16.Decode(u16))), mentioned, elsewhere
}

func isSpace(c uint16) bool { return c == ' ' || c == '\n' || c == '\t' }

// leadingCommand returns the length in UTF-16 units of a command at the
// start of the text, "/name" or "/name@bot" as Telegram recognizes them
// (letters, digits and '_'), or 0 when the text does not start with one.
func leadingCommand(u16 []uint16) int {
	word := func(from int) int {
		i := from
		for i < len(u16) && (u16[i] == '_' || '0' <= u16[i] && u16[i] <= '9' || 'a' <= u16[i] && u16[i] <= 'z' || 'A' <= u16[i] && u16[i] <= 'Z') {
			i++
		}
		return i
	}
	if len(u16) < 2 || u16[0] != '/' {
		return 0
	}
	end := word(1)
	if end == 1 {
		return 0
	}
	if end < len(u16) && u16[end] == '@' {
		if at := word(end + 1); at > end+1 {
			end = at
		}
	}
	if end < len(u16) && !isSpace(u16[end]) {
		return 0 // "/etc/hosts" is a path, not a command
	}
	return end
}

func hasEntityAt(ents []entity, typ string, offset int) bool {
	for _, e := range ents {
		if e.Type == typ && e.Offset == offset {
			return true
		}
	}
	return false
}

func convertCallback(q *callbackQuery, me identity) event {
	ev := event{kind: kindAnswer, callbackID: q.ID}
	if q.ID == "" {
		return event{why: "callback without an id"}
	}
	if q.Message == nil || q.Message.Chat.ID == 0 || q.Data == "" {
		ev.answer = "This button no longer works."
		return ev
	}
	loc := locationOf(q.Message, me)
	ev.kind = kindAction
	ev.action = channels.Action{
		EventID:  q.ID,
		Location: loc,
		User:     userOf(&q.From),
		Token:    q.Data,
		Message:  channels.MessageRef{Location: loc, ID: strconv.FormatInt(q.Message.MessageID, 10)},
	}
	return ev
}

package telegramtest

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// getUpdates answers pending updates at or above the offset, waiting up to
// the timeout parameter for one to arrive.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, params map[string]string) {
	offset, _ := strconv.ParseInt(params["offset"], 10, 64)
	timeout, _ := strconv.Atoi(params["timeout"])
	limit, _ := strconv.Atoi(params["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	waiting := false // counted in s.pollers
	defer func() {
		if waiting {
			s.mu.Lock()
			s.pollers--
			s.notifyLocked()
			s.mu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		if offset > s.offset {
			s.offset = offset
			s.notifyLocked()
		}
		// Updates below the offset are acknowledged: Telegram forgets them;
		// every other update is answered again to each call until one
		// confirms it (a client that died before confirming gets it again).
		// A redelivered update (added again after it was acknowledged, like
		// a platform retry) is answered whatever the offset, until a call
		// made after it was answered carries an offset above its id.
		kept := s.updates[:0]
		var out []json.RawMessage
		for _, u := range s.updates {
			if u.redeliver {
				if u.delivered && offset > u.id {
					continue
				}
			} else if u.id < s.offset {
				continue
			}
			if (u.id >= offset || u.redeliver) && len(out) < limit {
				out = append(out, u.raw)
				u.delivered = true
			}
			kept = append(kept, u)
		}
		s.updates = kept
		ch, closed := s.changed, s.closed
		if len(out) == 0 && timeout > 0 && !waiting {
			waiting = true
			s.pollers++
			s.notifyLocked()
		}
		s.mu.Unlock()
		if len(out) > 0 || timeout <= 0 {
			if out == nil {
				out = []json.RawMessage{}
			}
			s.finish(w, r, "getUpdates", params, nil, http.StatusOK, apiReply{Result: out})
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			timeout = 0
		case <-closed:
			timeout = 0
		case <-r.Context().Done():
			return
		}
	}
}

// call runs every method but getUpdates.
func (s *Server) call(method string, p map[string]string, files map[string]File) (int, apiReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "getMe":
		return ok(map[string]any{"id": s.botID, "is_bot": true, "first_name": "Switchboard Test", "username": BotUsername})
	case "setMyCommands":
		if err := checkCommands(p["commands"]); err != nil {
			return bad(err.Error())
		}
		s.commands = p["commands"]
		return ok(true)
	case "deleteMyCommands":
		s.commands = ""
		return ok(true)
	case "setWebhook":
		if p["url"] == "" {
			return bad("bad webhook: an HTTPS URL must be provided for webhook")
		}
		s.webhookURL, s.secret = p["url"], p["secret_token"]
		return ok(true)
	case "deleteWebhook":
		s.webhookURL, s.secret = "", ""
		return ok(true)
	case "getWebhookInfo":
		return ok(map[string]any{"url": s.webhookURL, "has_custom_certificate": false, "pending_update_count": len(s.updates)})
	case "sendChatAction":
		if _, err := chatID(p); err != nil {
			return bad(err.Error())
		}
		return ok(true)
	case "answerCallbackQuery":
		if p["callback_query_id"] == "" {
			return bad("Bad Request: query is too old and response timeout expired or query ID is invalid")
		}
		return ok(true)
	case "getFile":
		f, found := s.files[p["file_id"]]
		if !found {
			return bad("Bad Request: invalid file_id")
		}
		return ok(map[string]any{"file_id": p["file_id"], "file_unique_id": "u" + p["file_id"], "file_size": len(f.data), "file_path": f.path})
	case "sendMessage":
		return s.sendMessage(p)
	case "editMessageText":
		return s.editMessageText(p)
	case "editMessageReplyMarkup":
		return s.editMessageReplyMarkup(p)
	case "sendDocument":
		return s.sendDocument(p, files)
	}
	return http.StatusNotFound, apiReply{ErrorCode: 404, Description: "Not Found: method not found"}
}

func ok(result any) (int, apiReply) { return http.StatusOK, apiReply{Result: result} }

func bad(desc string) (int, apiReply) {
	if !strings.HasPrefix(desc, "Bad Request") {
		desc = "Bad Request: " + desc
	}
	return http.StatusBadRequest, apiReply{ErrorCode: 400, Description: desc}
}

func chatID(p map[string]string) (int64, error) {
	id, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%s: chat not found", badRequest)
	}
	return id, nil
}

func (s *Server) sendMessage(p map[string]string) (int, apiReply) {
	chat, err := chatID(p)
	if err != nil {
		return bad(err.Error())
	}
	if err := checkText(p["text"], p["parse_mode"], 4096); err != nil {
		return bad(err.Error())
	}
	if err := checkMarkup(p["reply_markup"]); err != nil {
		return bad(err.Error())
	}
	m := &Message{ChatID: chat, ThreadID: parseInt(p["message_thread_id"]), ID: s.nextMsgID, Text: p["text"], Markup: p["reply_markup"]}
	s.store(m)
	return ok(messageJSON(m))
}

// Telegram's answers to an edit of a message that is not the bot's (or
// does not exist), and to one that changes nothing.
const (
	errEditNotFound = "Bad Request: message to edit not found"
	errNotModified  = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
)

func (s *Server) editMessageText(p map[string]string) (int, apiReply) {
	chat, err := chatID(p)
	if err != nil {
		return bad(err.Error())
	}
	if err := checkText(p["text"], p["parse_mode"], 4096); err != nil {
		return bad(err.Error())
	}
	if err := checkMarkup(p["reply_markup"]); err != nil {
		return bad(err.Error())
	}
	m, found := s.messages[[2]int64{chat, parseInt(p["message_id"])}]
	if !found {
		return bad(errEditNotFound)
	}
	if m.Document != nil {
		return bad("Bad Request: there is no text in the message to edit")
	}
	markup := p["reply_markup"]
	if sameMarkup(markup, m.Markup) && p["text"] == m.Text {
		return bad(errNotModified)
	}
	m.Text, m.Markup = p["text"], markup
	m.Edits++
	return ok(messageJSON(m))
}

// editMessageReplyMarkup changes only the buttons of a message the bot
// sent; as Telegram, it refuses a message it cannot find in the chat (the
// users' messages are not the bot's to edit) and an edit that changes
// nothing.
func (s *Server) editMessageReplyMarkup(p map[string]string) (int, apiReply) {
	chat, err := chatID(p)
	if err != nil {
		return bad(err.Error())
	}
	if err := checkMarkup(p["reply_markup"]); err != nil {
		return bad(err.Error())
	}
	m, found := s.messages[[2]int64{chat, parseInt(p["message_id"])}]
	if !found {
		return bad(errEditNotFound)
	}
	if sameMarkup(p["reply_markup"], m.Markup) {
		return bad(errNotModified)
	}
	m.Markup = p["reply_markup"]
	m.Edits++
	return ok(messageJSON(m))
}

func (s *Server) sendDocument(p map[string]string, files map[string]File) (int, apiReply) {
	chat, err := chatID(p)
	if err != nil {
		return bad(err.Error())
	}
	f, found := files["document"]
	if !found {
		return bad("Bad Request: there is no document in the request")
	}
	if utf16Len(p["caption"]) > 1024 {
		return bad("Bad Request: message caption is too long")
	}
	m := &Message{ChatID: chat, ThreadID: parseInt(p["message_thread_id"]), ID: s.nextMsgID, Document: &f, Caption: p["caption"]}
	s.store(m)
	return ok(messageJSON(m))
}

func (s *Server) store(m *Message) {
	m.Sent = time.Now()
	s.nextMsgID++
	k := [2]int64{m.ChatID, m.ID}
	s.messages[k] = m
	s.order = append(s.order, k)
}

func messageJSON(m *Message) map[string]any {
	chatType := "private"
	if m.ChatID < 0 {
		chatType = "supergroup"
	}
	out := map[string]any{
		"message_id": m.ID,
		"date":       time.Now().Unix(),
		"chat":       map[string]any{"id": m.ChatID, "type": chatType},
		"text":       m.Text,
	}
	if m.ThreadID != 0 {
		out["message_thread_id"] = m.ThreadID
		out["is_topic_message"] = true
	}
	return out
}

func parseInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// sameMarkup treats an absent markup and an empty inline keyboard alike, as
// Telegram does.
func sameMarkup(a, b string) bool {
	norm := func(s string) string {
		if s == "" || strings.ReplaceAll(s, " ", "") == `{"inline_keyboard":[]}` {
			return ""
		}
		return s
	}
	return norm(a) == norm(b)
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

var allowedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
	"strike": true, "del": true, "code": true, "pre": true, "a": true, "blockquote": true,
	"tg-spoiler": true, "span": true, "tg-emoji": true,
}

// checkText rejects what Telegram rejects: empty text, text over the limit
// after entity parsing, and unsupported HTML tags.
func checkText(text, parseMode string, limit int) error {
	visible := text
	if strings.EqualFold(parseMode, "HTML") {
		for _, tag := range tagRE.FindAllString(text, -1) {
			name := strings.TrimPrefix(strings.Trim(tag, "<>/ "), "/")
			name, _, _ = strings.Cut(name, " ")
			if !allowedTags[strings.ToLower(name)] {
				return fmt.Errorf("%s: can't parse entities: unsupported start tag %q", badRequest, name)
			}
		}
		visible = html.UnescapeString(tagRE.ReplaceAllString(text, ""))
	}
	if strings.TrimSpace(visible) == "" {
		return fmt.Errorf("%s: message text is empty", badRequest)
	}
	if utf16Len(visible) > limit {
		return fmt.Errorf("%s: message is too long", badRequest)
	}
	return nil
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// checkMarkup validates an inline keyboard the way switchboard needs it
// checked: known fields only (copy_text is refused, as reported for the real
// API), callback_data of 1..64 bytes, a text on every button.
func checkMarkup(markup string) error {
	if markup == "" {
		return nil
	}
	var kb struct {
		InlineKeyboard [][]map[string]json.RawMessage `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(markup), &kb); err != nil {
		return fmt.Errorf("%s: can't parse reply keyboard markup JSON object", badRequest)
	}
	if kb.InlineKeyboard == nil {
		return fmt.Errorf("%s: field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array", badRequest)
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			for k := range b {
				if k != "text" && k != "callback_data" {
					return fmt.Errorf("%s: can't parse inline keyboard button: unexpected field %q", badRequest, k)
				}
			}
			var text, data string
			_ = json.Unmarshal(b["text"], &text)
			_ = json.Unmarshal(b["callback_data"], &data)
			if text == "" {
				return fmt.Errorf("%s: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard", badRequest)
			}
			if len(data) < 1 || len(data) > 64 {
				return fmt.Errorf("%s: BUTTON_DATA_INVALID", badRequest)
			}
		}
	}
	return nil
}

var commandNameRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// checkCommands validates a setMyCommands list as Telegram does: at most 100
// commands, names of 1..32 lowercase letters, digits and '_', descriptions
// of 1..256 characters.
func checkCommands(raw string) error {
	var cmds []Command
	if err := json.Unmarshal([]byte(raw), &cmds); err != nil || cmds == nil {
		return fmt.Errorf("%s: can't parse commands JSON array", badRequest)
	}
	if len(cmds) > 100 {
		return fmt.Errorf("%s: BOT_COMMANDS_TOO_MUCH", badRequest)
	}
	for _, c := range cmds {
		if !commandNameRE.MatchString(c.Command) {
			return fmt.Errorf("%s: BOT_COMMAND_INVALID", badRequest)
		}
		if n := utf16Len(strings.TrimSpace(c.Description)); n < 1 || n > 256 {
			return fmt.Errorf("%s: BOT_COMMAND_DESCRIPTION_INVALID", badRequest)
		}
	}
	return nil
}

// badRequest starts the descriptions the Bot API gives for 400 errors.
const badRequest = "Bad Request"

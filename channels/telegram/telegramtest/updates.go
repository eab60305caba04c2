package telegramtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf16"
)

// User is a Telegram user in the updates a test adds.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// AddUpdate queues a raw update (a JSON object). Without an update_id it
// gets the next one; with one, that id is kept, and an id the client already
// acknowledged is delivered once more (a platform retry). It returns the
// update id.
func (s *Server) AddUpdate(update json.RawMessage) int64 {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(update, &m); err != nil {
		panic(fmt.Sprintf("telegramtest: AddUpdate needs a JSON object: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var id int64
	if raw, ok := m["update_id"]; ok {
		if err := json.Unmarshal(raw, &id); err != nil {
			panic(fmt.Sprintf("telegramtest: bad update_id: %v", err))
		}
	} else {
		id = s.nextUpdate
		m["update_id"] = json.RawMessage(fmt.Sprint(id))
		update, _ = json.Marshal(m)
	}
	return s.addLocked(id, update)
}

// addLocked queues update under id (s.mu held).
func (s *Server) addLocked(id int64, update json.RawMessage) int64 {
	if id >= s.nextUpdate {
		s.nextUpdate = id + 1
	}
	s.updates = append(s.updates, pendingUpdate{id: id, raw: update, redeliver: id < s.offset})
	s.notifyLocked()
	return id
}

// MessageOption changes a message AddMessage builds.
type MessageOption func(msg map[string]any)

// InGroup makes the chat a supergroup (chat ids of groups are negative).
func InGroup() MessageOption {
	return func(msg map[string]any) {
		chat := msg["chat"].(map[string]any)
		chat["type"] = "supergroup"
		chat["title"] = "Test group"
	}
}

// InTopic puts the message in forum topic threadID of a supergroup.
func InTopic(threadID int64) MessageOption {
	return func(msg map[string]any) {
		chat := msg["chat"].(map[string]any)
		chat["type"] = "supergroup"
		chat["is_forum"] = true
		msg["message_thread_id"] = threadID
		msg["is_topic_message"] = true
	}
}

// ReplyTo makes the message a reply to message id written by user fromID.
func ReplyTo(id, fromID int64) MessageOption {
	return func(msg map[string]any) {
		msg["reply_to_message"] = map[string]any{
			"message_id": id,
			"date":       time.Now().Unix(),
			"chat":       msg["chat"],
			"from":       map[string]any{"id": fromID, "is_bot": false, "first_name": "Someone"},
			"text":       "earlier",
		}
	}
}

// From sets the sender (default: a user with the given id named "Ada
// Lovelace", username "ada").
func From(u User) MessageOption {
	return func(msg map[string]any) { msg["from"] = u }
}

// WithPhoto attaches photo sizes (file ids from AddFile, smallest first) and
// moves the text to the caption.
func WithPhoto(sizes ...PhotoSize) MessageOption {
	return func(msg map[string]any) {
		msg["photo"] = sizes
		if t, ok := msg["text"]; ok {
			msg["caption"] = t
			delete(msg, "text")
		}
		if e, ok := msg["entities"]; ok {
			msg["caption_entities"] = e
			delete(msg, "entities")
		}
	}
}

// PhotoSize is one size of a photo.
type PhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	FileSize     int    `json:"file_size,omitempty"`
}

// AddMessage queues a message update from user userID in chat chatID and
// returns its update id. Entities are generated as Telegram does: @mentions
// anywhere and a /command at the start. Without options the chat is a
// private chat.
func (s *Server) AddMessage(chatID, userID int64, text string, opts ...MessageOption) int64 {
	s.mu.Lock()
	msgID := s.nextMsgID
	s.nextMsgID++
	s.mu.Unlock()
	msg := map[string]any{
		"message_id": msgID,
		"date":       time.Now().Unix(),
		"chat":       map[string]any{"id": chatID, "type": "private", "first_name": "Ada"},
		"from":       User{ID: userID, FirstName: "Ada", LastName: "Lovelace", Username: "ada"},
		"text":       text,
	}
	if ents := Entities(text); len(ents) > 0 {
		msg["entities"] = ents
	}
	for _, o := range opts {
		o(msg)
	}
	raw, err := json.Marshal(map[string]any{"message": msg})
	if err != nil {
		panic(err)
	}
	return s.AddUpdate(raw)
}

// CallbackOption changes a callback query AddCallback builds.
type CallbackOption func(msg map[string]any)

// CallbackInTopic says the message carrying the button is in forum topic
// threadID.
func CallbackInTopic(threadID int64) CallbackOption {
	return func(msg map[string]any) {
		msg["message_thread_id"] = threadID
		msg["is_topic_message"] = true
		msg["chat"].(map[string]any)["type"] = "supergroup"
	}
}

// AddCallback queues a button press by user userID on message messageID in
// chat chatID carrying callback data, and returns the update id. The
// callback query id is "cb<update id>".
func (s *Server) AddCallback(chatID, userID, messageID int64, data string, opts ...CallbackOption) int64 {
	chatType := "private"
	if chatID < 0 {
		chatType = "supergroup"
	}
	msg := map[string]any{
		"message_id": messageID,
		"date":       time.Now().Unix(),
		"chat":       map[string]any{"id": chatID, "type": chatType},
		"from":       User{ID: s.botID, IsBot: true, FirstName: "Switchboard Test", Username: BotUsername},
		"text":       "an approval",
	}
	for _, o := range opts {
		o(msg)
	}
	// The id is taken and the update queued under one lock: another
	// goroutine's AddMessage in between took the same id, and the press
	// was then a platform retry of an update already acknowledged.
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextUpdate
	raw, err := json.Marshal(map[string]any{
		"update_id": id,
		"callback_query": map[string]any{
			"id":            fmt.Sprintf("cb%d", id),
			"from":          User{ID: userID, FirstName: "Ada", LastName: "Lovelace", Username: "ada"},
			"message":       msg,
			"chat_instance": "ci",
			"data":          data,
		},
	})
	if err != nil {
		panic(err)
	}
	return s.addLocked(id, raw)
}

// AnswerFor returns the answerCallbackQuery call for the callback query of
// update id, if there was one.
func (s *Server) AnswerFor(updateID int64) (Call, bool) {
	for _, c := range s.CallsOf("answerCallbackQuery") {
		if c.Params["callback_query_id"] == fmt.Sprintf("cb%d", updateID) {
			return c, true
		}
	}
	return Call{}, false
}

// Entity is a message entity with UTF-16 offsets.
type Entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

var (
	mentionRE = regexp.MustCompile(`@[A-Za-z0-9_]{3,32}`)
	commandRE = regexp.MustCompile(`^/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]{3,32})?`)
)

// Entities computes the mention and bot_command entities Telegram would
// send for text, with offsets and lengths in UTF-16 code units.
func Entities(text string) []Entity {
	var out []Entity
	u16 := func(s string) int { return len(utf16.Encode([]rune(s))) }
	cmdEnd := 0
	if loc := commandRE.FindStringIndex(text); loc != nil {
		out = append(out, Entity{Type: "bot_command", Offset: 0, Length: u16(text[:loc[1]])})
		cmdEnd = loc[1]
	}
	for _, loc := range mentionRE.FindAllStringIndex(text, -1) {
		if loc[0] < cmdEnd {
			continue
		}
		if loc[0] > 0 && !strings.ContainsAny(text[loc[0]-1:loc[0]], " \n\t(") {
			continue
		}
		out = append(out, Entity{Type: "mention", Offset: u16(text[:loc[0]]), Length: u16(text[loc[0]:loc[1]])})
	}
	return out
}

package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

const (
	maxImages         = 8
	maxTextBytes      = 256 << 10
	maxIdempotencyLen = 128
)

// postMessage is the body of POST /v1/conversations/{id}/messages.
type postMessage struct {
	Text   string      `json:"text"`
	Images []postImage `json:"images"`
}

// postImage is an image sent with a message, base64 in JSON.
type postImage struct {
	MIME string `json:"mime"`
	Data string `json:"data"` // standard base64
	Name string `json:"name"`
}

// errCommand refuses a /command as message text: the API has routes for
// what commands do.
var errCommand = errors.New("text is a /command; the API does not run commands (use POST /v1/conversations/{id}/cancel and /v1/approvals)")

// input checks a posted message and returns its text and attachments.
func (p postMessage) input() (string, []channels.Attachment, error) {
	if !utf8.ValidString(p.Text) {
		return "", nil, errors.New("text is not UTF-8")
	}
	if len(p.Text) > maxTextBytes {
		return "", nil, fmt.Errorf("text is longer than %d bytes", maxTextBytes)
	}
	if channels.CommandName(p.Text) != "" {
		return "", nil, errCommand
	}
	if len(p.Images) > maxImages {
		return "", nil, fmt.Errorf("at most %d images per message", maxImages)
	}
	var atts []channels.Attachment
	for i, im := range p.Images {
		if !strings.HasPrefix(im.MIME, "image/") || len(im.MIME) > 64 || strings.ContainsAny(im.MIME, " ;\r\n") {
			return "", nil, fmt.Errorf("images[%d]: mime must be an image type such as image/png", i)
		}
		data, err := base64.StdEncoding.DecodeString(im.Data)
		if err != nil || len(data) == 0 {
			return "", nil, fmt.Errorf("images[%d]: data must be non-empty standard base64", i)
		}
		name := im.Name
		if name == "" || len(name) > 128 || !utf8.ValidString(name) || strings.ContainsAny(name, "/\\\x00\r\n") {
			name = fmt.Sprintf("image-%d", i+1)
		}
		atts = append(atts, channels.Attachment{Name: name, MIME: im.MIME, Data: data})
	}
	if strings.TrimSpace(p.Text) == "" && len(atts) == 0 {
		return "", nil, errors.New("empty message: send text or images")
	}
	return p.Text, atts, nil
}

// validIdempotencyKey accepts 1..128 visible ASCII characters.
func validIdempotencyKey(s string) bool {
	if s == "" || len(s) > maxIdempotencyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// queuedJSON answers a posted message.
type queuedJSON struct {
	InputID        string `json:"inputId"`
	ConversationID string `json:"conversationId"`
	Duplicate      bool   `json:"duplicate,omitempty"`
}

// handlePostMessage queues a turn. It answers 202 once the gateway durably
// queued the input (OnInbound returned nil), with the input's id, which the
// turn's events name. With an Idempotency-Key, a retry of the same request
// queues nothing new and answers with the first input's id.
func (a *Adapter) handlePostMessage(w http.ResponseWriter, r *http.Request) {
	conv, ok := a.ownConversation(w, r)
	if !ok {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key != "" && !validIdempotencyKey(key) {
		writeError(w, http.StatusBadRequest, "bad_idempotency_key", "Idempotency-Key must be 1..128 visible ASCII characters")
		return
	}
	var body postMessage
	if !a.readJSON(w, r, &body) {
		return
	}
	text, atts, err := body.input()
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_message", err.Error())
		return
	}
	h := a.gateway(w)
	if h == nil {
		return
	}
	ctx := r.Context()
	c := callerOf(ctx)
	eventID := "req:" + randomID()
	if key != "" {
		eventID = "key:" + c.name + ":" + conv.ID + ":" + key
	}
	in := channels.Inbound{EventID: eventID, Location: location(conv.Account, conv.ID), User: c.user(),
		Text: text, Attachments: atts, DirectMessage: true, Mentioned: true, At: a.now()}

	// The input's user_message goes into the log before its turn's
	// turn_start: the turn cannot start before the input is queued, and
	// its turn_start waits for this lock.
	unlock := a.locks.lock(conv.ID)
	var q channels.Queued
	if qr, ok := h.(channels.Queuer); ok {
		q, err = qr.Queue(ctx, in)
	} else {
		err = h.OnInbound(ctx, in)
		q.ConversationID = conv.ID
	}
	if err == nil && q.InputID != "" {
		err = a.logInput(r, conv.ID, q.InputID, text, len(atts))
		if err != nil {
			// Queued all the same: the turn runs and its events come.
			a.log.Warn("log a queued input", "conversation", conv.ID, "input", q.InputID, "err", err)
			err = nil
		}
	}
	unlock()
	if err != nil {
		a.log.Warn("message not queued", "conversation", conv.ID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "not_queued", "the message was not queued; send it again (with the same Idempotency-Key)")
		return
	}
	if _, isQueuer := h.(channels.Queuer); isQueuer && q.InputID == "" && !q.Duplicate {
		writeError(w, http.StatusServiceUnavailable, "not_queued", "the gateway did not queue the message; its notice is in the stream (is a model configured?)")
		return
	}
	writeJSON(w, http.StatusAccepted, queuedJSON{InputID: q.InputID, ConversationID: conv.ID, Duplicate: q.Duplicate})
}

// logInput records a queued input as a user_message event, once.
func (a *Adapter) logInput(r *http.Request, conv, inputID, text string, images int) error {
	ctx := r.Context()
	_, err := a.store.LastEvent(ctx, EventQuery{ConversationID: conv, Types: []string{TypeUserMessage}, InputID: inputID})
	if err == nil {
		return nil // a retry: logged the first time
	}
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	body, _ := json.Marshal(map[string]any{"uuid": inputID, "text": text, "images": images})
	_, err = a.appendEvent(ctx, Event{ConversationID: conv, RunID: inputID, Type: TypeUserMessage, InputID: inputID, Data: body})
	return err
}

// handleCancel stops the conversation's running turn: /stop through the
// gateway's one command path (its reply comes as a chat_message event).
func (a *Adapter) handleCancel(w http.ResponseWriter, r *http.Request) {
	conv, ok := a.ownConversation(w, r)
	if !ok {
		return
	}
	h := a.gateway(w)
	if h == nil {
		return
	}
	ctx := r.Context()
	c := callerOf(ctx)
	in := channels.Inbound{EventID: "cancel:" + randomID(), Location: location(conv.Account, conv.ID), User: c.user(),
		Text: "/stop", DirectMessage: true, Mentioned: true, At: a.now()}
	if err := h.OnInbound(ctx, in); err != nil {
		a.log.Warn("cancel not accepted", "conversation", conv.ID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the cancel was not accepted; try again")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"conversationId": conv.ID, "cancel": "requested"})
}

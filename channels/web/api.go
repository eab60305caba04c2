package web

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

//go:embed assets
var assets embed.FS

// maxJSONBody bounds a JSON request body.
const maxJSONBody = 1 << 20

func (a *Adapter) routes() http.Handler {
	mux := http.NewServeMux()
	api := http.NewServeMux()
	api.HandleFunc("GET /api/state", a.handleState)
	api.HandleFunc("POST /api/logout", a.handleLogout)
	api.HandleFunc("GET /api/chats", a.handleChats)
	api.HandleFunc("POST /api/chats", a.handleNewChat)
	api.HandleFunc("GET /api/chats/{chat}/history", a.handleHistory)
	api.HandleFunc("GET /api/chats/{chat}/events", a.handleEvents)
	api.HandleFunc("POST /api/chats/{chat}/messages", a.handleMessage)
	api.HandleFunc("POST /api/actions", a.handleAction)
	api.HandleFunc("GET /api/files/{id}", a.handleFile)
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "no such API route")
	})
	mux.Handle("/api/", a.requireSession(api))
	mux.HandleFunc("GET /static/{name}", func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, r, r.PathValue("name"))
	})
	mux.HandleFunc("POST /login", a.handleLogin)
	mux.HandleFunc("GET /{$}", a.handleIndex)
	return securityHeaders(mux)
}

func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	if strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	data, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}

func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// readJSON decodes a JSON request body into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		apiError(w, http.StatusUnsupportedMediaType, "send application/json")
		return false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJSONBody)).Decode(v); err != nil {
		apiError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return false
	}
	return true
}

// currentHandler returns the handler Start stored, or answers 503.
func (a *Adapter) currentHandler(w http.ResponseWriter) channels.Handler {
	a.mu.Lock()
	h := a.handler
	a.mu.Unlock()
	if h == nil {
		apiError(w, http.StatusServiceUnavailable, "the gateway is not running")
	}
	return h
}

func (a *Adapter) who() string { return channels.QualifiedID(Name, a.user) }

func (a *Adapter) person() channels.User { return channels.User{ID: a.user, Name: a.user} }

func (a *Adapter) handleState(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	_, history := a.handler.(channels.HistoryHandler)
	st := map[string]any{"user": a.user, "identity": a.who(), "notice": a.notice,
		"history": history, "max_upload": a.maxUpload, "commands": a.commands}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

// chatInfo is one entry of the sidebar.
type chatInfo struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Agent     string    `json:"agent,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// handleChats lists the person's conversations from the HistoryHandler, or
// else the chats of this process.
func (a *Adapter) handleChats(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	hh, _ := a.handler.(channels.HistoryHandler)
	a.mu.Unlock()
	if hh != nil {
		convs, err := hh.Conversations(r.Context(), a.who())
		if err != nil {
			a.log.Warn("list conversations", "err", err)
			apiError(w, http.StatusBadGateway, "list conversations: "+err.Error())
			return
		}
		list := make([]chatInfo, 0, len(convs))
		for _, c := range convs {
			// Reopen a conversation where it lives on this page (its
			// binding), so its commands, asks and buttons keep working;
			// one that lives elsewhere opens under its own id.
			id := c.ID
			if c.Location.Channel == Name && validID(c.Location.ChatID) {
				id = c.Location.ChatID
			}
			if validID(id) {
				list = append(list, chatInfo{ID: id, Title: c.Title, Agent: c.Agent, UpdatedAt: c.UpdatedAt})
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"chats": list})
		return
	}
	a.mu.Lock()
	list := make([]chatInfo, 0, len(a.chats))
	for _, c := range a.chats {
		list = append(list, chatInfo{ID: c.id, Title: c.title, UpdatedAt: c.updated})
	}
	a.mu.Unlock()
	slices.SortFunc(list, func(x, y chatInfo) int { return cmp.Or(y.UpdatedAt.Compare(x.UpdatedAt), strings.Compare(x.ID, y.ID)) })
	writeJSON(w, http.StatusOK, map[string]any{"chats": list})
}

func (a *Adapter) handleNewChat(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(rand.Text())
	a.mu.Lock()
	a.chat(id)
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

// handleHistory returns the stored history of a conversation that happened
// before the messages this process keeps for the chat (the event stream
// sends those), so a page shows each message once.
func (a *Adapter) handleHistory(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("chat")
	if !validID(id) {
		apiError(w, http.StatusBadRequest, "bad chat id")
		return
	}
	a.mu.Lock()
	hh, _ := a.handler.(channels.HistoryHandler)
	var since time.Time
	if c, ok := a.chats[id]; ok {
		for _, m := range c.msgs {
			if !m.view.Ephemeral {
				since = m.view.At
				break
			}
		}
	}
	a.mu.Unlock()
	items := []viewMessage{}
	if hh == nil {
		writeJSON(w, http.StatusOK, map[string]any{"items": items})
		return
	}
	hist, err := hh.History(r.Context(), location(id))
	if err != nil {
		// A chat that is not (yet) a conversation has no history; the page
		// shows the error only for conversations it listed.
		a.log.Debug("history", "chat", id, "err", err)
		writeJSON(w, http.StatusOK, map[string]any{"items": items, "error": err.Error()})
		return
	}
	for _, h := range hist {
		if !since.IsZero() && !h.At.Before(since) {
			break
		}
		// History files are not served: only messages this process sent
		// carry downloadable attachments.
		v := viewMessage{ID: "h-" + h.ID, Role: h.Role, At: h.At, Parts: renderParts(withoutAttachments(h.Message), nil)}
		if h.Role == channels.RoleUser {
			v.User = cmp.Or(h.User.Name, h.User.Username, h.User.ID)
		}
		items = append(items, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func withoutAttachments(m channels.Message) channels.Message {
	var parts []channels.Part
	for _, p := range m.Parts {
		if at, ok := p.(channels.Attachment); ok {
			parts = append(parts, channels.Notice{Text: "attachment: " + at.Name})
			continue
		}
		parts = append(parts, p)
	}
	return channels.Message{Parts: parts}
}

// postedMessage is the body of POST /api/chats/{chat}/messages (JSON, or
// the same fields as multipart form values with files under "file").
type postedMessage struct {
	ID   string `json:"id"` // client-generated, stable across retries of one message
	Text string `json:"text"`
}

// handleMessage hands what the person wrote to the gateway. It answers 202
// once OnInbound returned nil, 503 when it failed.
func (a *Adapter) handleMessage(w http.ResponseWriter, r *http.Request) {
	chatID := r.PathValue("chat")
	if !validID(chatID) {
		apiError(w, http.StatusBadRequest, "bad chat id")
		return
	}
	var pm postedMessage
	var atts []channels.Attachment
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		var ok bool
		if pm, atts, ok = a.readMultipart(w, r); !ok {
			return
		}
	} else if !readJSON(w, r, &pm) {
		return
	}
	if !validID(pm.ID) || len(pm.ID) > 64 {
		apiError(w, http.StatusBadRequest, "id must be 1..64 letters, digits, '-', '_' or '.'")
		return
	}
	if !utf8.ValidString(pm.Text) {
		apiError(w, http.StatusBadRequest, "text is not UTF-8")
		return
	}
	if strings.TrimSpace(pm.Text) == "" && len(atts) == 0 {
		apiError(w, http.StatusBadRequest, "empty message")
		return
	}
	h := a.currentHandler(w)
	if h == nil {
		return
	}
	now := time.Now()
	in := channels.Inbound{
		EventID: "web:" + pm.ID, Location: location(chatID), User: a.person(),
		Text: pm.Text, Attachments: atts, DirectMessage: true, Mentioned: true, At: now,
	}
	ref := a.showUserMessage(chatID, pm, atts, now)
	if err := h.OnInbound(r.Context(), in); err != nil {
		a.log.Warn("inbound not accepted", "chat", chatID, "err", err)
		a.mu.Lock()
		if m := a.find(ref); m != nil {
			a.deleteLocked(chatID, m)
		}
		a.mu.Unlock()
		apiError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	a.mu.Lock()
	if m := a.find(ref); m != nil && m.view.Pending {
		m.view.Pending = false
		a.touch(chatID, m)
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]string{"id": ref.ID})
}

// showUserMessage puts the person's message into the chat before the
// gateway sees it, so it precedes any reply. A retry of the same message
// reuses the entry.
func (a *Adapter) showUserMessage(chatID string, pm postedMessage, atts []channels.Attachment, at time.Time) channels.MessageRef {
	id := "u-" + pm.ID
	ref := channels.MessageRef{Location: location(chatID), ID: id}
	msg := channels.Message{Parts: []channels.Part{channels.Text{Markdown: pm.Text}}}
	for _, at := range atts {
		msg.Parts = append(msg.Parts, at)
	}
	files, ids := attachmentFiles(msg)
	parts := renderParts(msg, ids)

	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.chat(chatID)
	if c.title == "" {
		c.title = shorten(pm.Text, 60)
	}
	if m := a.find(ref); m != nil {
		return ref
	}
	a.addFiles(ids, files)
	v := viewMessage{ID: id, Role: channels.RoleUser, User: a.user, At: at, Parts: parts, Pending: true}
	// Drop a tombstone of an earlier failed try so the id is unique.
	c.msgs = slices.DeleteFunc(c.msgs, func(m *message) bool { return m.view.ID == id })
	a.appendMessage(c, &message{view: v, files: ids})
	return ref
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// readMultipart reads a message with files. The whole body is bounded by
// MaxUpload plus room for the text.
func (a *Adapter) readMultipart(w http.ResponseWriter, r *http.Request) (postedMessage, []channels.Attachment, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, a.maxUpload+maxJSONBody)
	mr, err := r.MultipartReader()
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad multipart body: "+err.Error())
		return postedMessage{}, nil, false
	}
	var pm postedMessage
	var atts []channels.Attachment
	var total int64
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			a.uploadError(w, err)
			return postedMessage{}, nil, false
		}
		switch p.FormName() {
		case "id", "text":
			b, err := io.ReadAll(io.LimitReader(p, maxJSONBody))
			if err != nil {
				a.uploadError(w, err)
				return postedMessage{}, nil, false
			}
			if p.FormName() == "id" {
				pm.ID = string(b)
			} else {
				pm.Text = string(b)
			}
		case "file":
			data, err := io.ReadAll(io.LimitReader(p, a.maxUpload-total+1))
			if err != nil {
				a.uploadError(w, err)
				return postedMessage{}, nil, false
			}
			total += int64(len(data))
			if total > a.maxUpload {
				apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("files larger than %d bytes", a.maxUpload))
				return postedMessage{}, nil, false
			}
			name := path.Base(strings.ReplaceAll(p.FileName(), "\\", "/"))
			if name == "." || name == "/" || name == "" {
				name = "upload"
			}
			mt := p.Header.Get("Content-Type")
			if mt == "" || mt == "application/octet-stream" {
				mt = http.DetectContentType(data)
			}
			atts = append(atts, channels.Attachment{Name: name, MIME: mt, Data: data})
		}
	}
	return pm, atts, true
}

func (a *Adapter) uploadError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("upload larger than %d bytes", a.maxUpload))
		return
	}
	apiError(w, http.StatusBadRequest, "read upload: "+err.Error())
}

// postedAction is the body of POST /api/actions.
type postedAction struct {
	Token   string `json:"token"`
	Chat    string `json:"chat"`
	Message string `json:"message"`
}

// handleAction hands a button press to the gateway and returns its reply
// for the page to show. The message's buttons stay disabled until the
// gateway edits it, or until the press failed.
func (a *Adapter) handleAction(w http.ResponseWriter, r *http.Request) {
	var pa postedAction
	if !readJSON(w, r, &pa) {
		return
	}
	if pa.Token == "" || len(pa.Token) > channels.MaxTokenLen || !validID(pa.Chat) || !validID(pa.Message) {
		apiError(w, http.StatusBadRequest, "need token, chat and message")
		return
	}
	h := a.currentHandler(w)
	if h == nil {
		return
	}
	ref := channels.MessageRef{Location: location(pa.Chat), ID: pa.Message}
	a.setPressed(ref, true)
	reply, err := h.OnAction(r.Context(), channels.Action{
		EventID: "web:" + rand.Text(), Location: ref.Location, User: a.person(), Token: pa.Token, Message: ref,
	})
	if err != nil {
		a.setPressed(ref, false)
		a.log.Warn("action failed", "message", ref, "err", err)
		apiError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"text": reply.Text, "alert": reply.Alert})
}

func (a *Adapter) setPressed(ref channels.MessageRef, pressed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m := a.find(ref); m != nil && m.view.Pressed != pressed {
		m.view.Pressed = pressed
		a.touch(ref.Location.ChatID, m)
	}
}

// handleFile serves an attachment as a download.
func (a *Adapter) handleFile(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	f, ok := a.files[r.PathValue("id")]
	a.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "no such file (only recent messages keep theirs)")
		return
	}
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	w.Header().Set("Content-Type", cmp.Or(f.MIME, "application/octet-stream"))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if f.Data != nil {
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.Data))
		return
	}
	file, err := os.Open(f.Path)
	if err != nil {
		apiError(w, http.StatusNotFound, "file is gone: "+f.Name)
		return
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		apiError(w, http.StatusNotFound, "not a regular file: "+f.Name)
		return
	}
	http.ServeContent(w, r, "", st.ModTime(), file)
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

const (
	maxIDLen    = 128
	maxTitleLen = 200
)

// validID accepts the ids the gateway and store generate (conv-…, in-…,
// UUIDs, approval ids) and nothing that needs escaping in a path or a log
// line.
func validID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

type agentJSON struct {
	Name    string `json:"name"`
	Model   string `json:"model,omitempty"`
	Default bool   `json:"default,omitempty"`
}

func (a *Adapter) handleAgents(w http.ResponseWriter, r *http.Request) {
	cs, ok := ability[channels.ConversationStarter](a, w, "list agents")
	if !ok {
		return
	}
	list, err := cs.Agents(r.Context())
	if err != nil {
		a.internal(w, "list agents", err)
		return
	}
	out := []agentJSON{}
	for _, ag := range list {
		out = append(out, agentJSON{Name: ag.Name, Model: ag.Model, Default: ag.Default})
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

type conversationJSON struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Title     string    `json:"title,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func conversationOut(c Conversation) conversationJSON {
	return conversationJSON{ID: c.ID, Agent: c.Agent, Title: c.Title, CreatedAt: c.Created.UTC()}
}

// createConversation is the body of POST /v1/conversations.
type createConversation struct {
	Agent string `json:"agent"`
	Title string `json:"title"`
}

// check validates a createConversation body.
func (c createConversation) check() error {
	switch {
	case c.Agent != "" && !validID(c.Agent):
		return errors.New("agent must be an agent name (GET /v1/agents)")
	case !utf8.ValidString(c.Title):
		return errors.New("title is not UTF-8")
	case utf8.RuneCountInString(c.Title) > maxTitleLen:
		return errors.New("title is longer than 200 characters")
	case strings.ContainsFunc(c.Title, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return errors.New("title contains control characters")
	}
	return nil
}

func (a *Adapter) handleCreateConversation(w http.ResponseWriter, r *http.Request) {
	var body createConversation
	if !a.readJSON(w, r, &body) {
		return
	}
	if err := body.check(); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	cs, ok := ability[channels.ConversationStarter](a, w, "start conversations")
	if !ok {
		return
	}
	ctx := r.Context()
	c := callerOf(ctx)
	agents, err := cs.Agents(ctx)
	if err != nil {
		a.internal(w, "list agents", err)
		return
	}
	agent := ""
	for _, ag := range agents {
		if ag.Name == body.Agent || (body.Agent == "" && ag.Default) {
			agent = ag.Name
		}
	}
	if agent == "" {
		writeError(w, http.StatusBadRequest, "unknown_agent", "no agent "+strconv.Quote(body.Agent)+": see GET /v1/agents")
		return
	}
	info, err := cs.StartConversation(ctx, channels.Location{Channel: Name, Account: c.name}, agent, body.Title)
	if err != nil {
		a.internal(w, "start a conversation", err)
		return
	}
	conv, err := a.store.AddConversation(ctx, Conversation{ID: info.ID, Account: c.name, Agent: info.Agent, Title: body.Title, Created: a.now().UTC()})
	if err != nil {
		a.internal(w, "record the conversation", err)
		return
	}
	a.log.Info("conversation started", "conversation", conv.ID, "agent", conv.Agent, "by", c.who())
	writeJSON(w, http.StatusCreated, conversationOut(conv))
}

func (a *Adapter) handleListConversations(w http.ResponseWriter, r *http.Request) {
	limit, ok := limitParam(w, r, 50, 200)
	if !ok {
		return
	}
	var before int64
	if s := r.URL.Query().Get("cursor"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "bad_cursor", "cursor must be a nextCursor this API returned")
			return
		}
		before = n
	}
	convs, err := a.store.APIConversations(r.Context(), callerOf(r.Context()).name, before, limit+1)
	if err != nil {
		a.internal(w, "list conversations", err)
		return
	}
	out := map[string]any{}
	if len(convs) > limit {
		convs = convs[:limit]
		out["nextCursor"] = strconv.FormatInt(convs[limit-1].Pos, 10)
	}
	list := []conversationJSON{}
	for _, c := range convs {
		list = append(list, conversationOut(c))
	}
	out["conversations"] = list
	writeJSON(w, http.StatusOK, out)
}

// ownConversation returns the conversation of the {id} path value when the
// caller started it; others are 404, as if they did not exist.
func (a *Adapter) ownConversation(w http.ResponseWriter, r *http.Request) (Conversation, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, http.StatusBadRequest, "bad_id", "bad conversation id")
		return Conversation{}, false
	}
	c, err := a.store.APIConversation(r.Context(), id)
	if err == nil && c.Account == callerOf(r.Context()).name {
		return c, true
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		a.internal(w, "read the conversation", err)
		return Conversation{}, false
	}
	writeError(w, http.StatusNotFound, "not_found", "no conversation "+id+" of yours (POST /v1/conversations starts one)")
	return Conversation{}, false
}

func (a *Adapter) handleGetConversation(w http.ResponseWriter, r *http.Request) {
	if c, ok := a.ownConversation(w, r); ok {
		writeJSON(w, http.StatusOK, conversationOut(c))
	}
}

type messageJSON struct {
	UUID       string         `json:"uuid"`
	OTID       string         `json:"otid,omitempty"` // assistant messages: the otid of their text and reasoning slices
	Seq        int64          `json:"seq"`
	Role       string         `json:"role"`
	Text       string         `json:"text,omitempty"`
	Images     int            `json:"images,omitempty"`
	Reasoning  string         `json:"reasoning,omitempty"`
	ToolCalls  []toolCallJSON `json:"toolCalls,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	ToolName   string         `json:"toolName,omitempty"`
	Outcome    string         `json:"outcome,omitempty"`
	IsError    bool           `json:"isError,omitempty"`
	RunID      string         `json:"runId,omitempty"`
	CreatedAt  time.Time      `json:"createdAt"`
}

type toolCallJSON struct {
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Title      string          `json:"title,omitempty"`
	Kind       string          `json:"kind,omitempty"`
}

func messageOut(m channels.TranscriptMessage) messageJSON {
	out := messageJSON{UUID: m.ID, Seq: m.Seq, Role: m.Role, Text: m.Text, Images: m.Images, Reasoning: m.Reasoning,
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, Outcome: m.Outcome, IsError: m.IsError, RunID: m.RunID, CreatedAt: m.At.UTC()}
	if m.Role == channels.TranscriptAssistant {
		out.OTID = m.ID
	}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, toolCallJSON{ToolCallID: c.ID, ToolName: c.Name, Arguments: c.Arguments, Title: c.Title, Kind: c.Kind})
	}
	return out
}

// handleMessages is the history: stored messages by uuid cursor, oldest
// first, with the stream cursor to follow it from (read before the
// messages, so following it overlaps the page and never leaves a gap).
func (a *Adapter) handleMessages(w http.ResponseWriter, r *http.Request) {
	conv, ok := a.ownConversation(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	after, before := q.Get("after"), q.Get("before")
	if (after != "" && !validID(after)) || (before != "" && !validID(before)) {
		writeError(w, http.StatusBadRequest, "bad_cursor", "after and before must be message uuids")
		return
	}
	limit, ok := limitParam(w, r, 100, 1000)
	if !ok {
		return
	}
	tr, ok := ability[channels.TranscriptReader](a, w, "read transcripts")
	if !ok {
		return
	}
	ctx := r.Context()
	cursor, err := a.streamCursor(ctx, conv.ID)
	if err != nil {
		a.internal(w, "read the stream cursor", err)
		return
	}
	page, err := tr.Transcript(ctx, location(conv.Account, conv.ID), channels.TranscriptQuery{After: after, Before: before, Limit: limit})
	if errors.Is(err, channels.ErrUnknownMessage) {
		writeError(w, http.StatusBadRequest, "unknown_cursor", err.Error())
		return
	}
	if err != nil {
		a.internal(w, "read the transcript", err)
		return
	}
	msgs := []messageJSON{}
	for _, m := range page.Messages {
		msgs = append(msgs, messageOut(m))
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs, "more": page.More, "streamCursor": cursor})
}

// cursorStart is the stream cursor before every retained event.
const cursorStart = "start"

// streamCursor is where a client that has read the history follows the
// stream from: just before the running turn's turn_start (so the client
// sees that turn whole), else after the newest event; "start" when that is
// before every retained event.
func (a *Adapter) streamCursor(ctx context.Context, conv string) (string, error) {
	q := EventQuery{ConversationID: conv}
	if last, err := a.store.LastEvent(ctx, EventQuery{ConversationID: conv, Types: []string{TypeTurnStart, TypeTurnEnd}}); err == nil && last.Type == TypeTurnStart {
		q.BeforePos = last.Pos
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return "", err
	}
	ev, err := a.store.LastEvent(ctx, q)
	if errors.Is(err, ErrNotFound) {
		return cursorStart, nil
	}
	if err != nil {
		return "", err
	}
	return FormatEventID(ev.RunID, ev.SeqID), nil
}

// internal answers 500 for a failure of the gateway or the store.
func (a *Adapter) internal(w http.ResponseWriter, what string, err error) {
	a.log.Error(what, "err", err)
	writeError(w, http.StatusInternalServerError, "internal", what+" failed; try again (the server log says why)")
}

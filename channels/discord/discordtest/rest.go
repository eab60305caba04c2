package discordtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// apiError is Discord's JSON error body.
type apiError struct {
	status  int
	code    int
	message string
}

var (
	errUnauthorized   = apiError{http.StatusUnauthorized, 0, "401: Unauthorized"}
	errUnknownChannel = apiError{http.StatusNotFound, 10003, "Unknown Channel"}
	errUnknownMessage = apiError{http.StatusNotFound, 10008, "Unknown Message"}
	errUnknownInter   = apiError{http.StatusNotFound, 10062, "Unknown interaction"}
	errAcked          = apiError{http.StatusBadRequest, 40060, "Interaction has already been acknowledged."}
	errThreadExists   = apiError{http.StatusBadRequest, 160004, "A thread has already been created for this message"}
	errNotAllowed     = apiError{http.StatusForbidden, 50001, "Missing Access"}
	errBadBody        = apiError{http.StatusBadRequest, 50035, "Invalid Form Body"}
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/gw"):
		s.gw.serveWS(s, w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/files/"):
		s.serveFile(w, r)
		return
	case !strings.HasPrefix(r.URL.Path, "/api/v9/"):
		http.NotFound(w, r)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	var body []byte
	var files []File
	if ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
		var err error
		body, files, err = readMultipart(r.Body, params["boundary"])
		if err != nil {
			s.answer(w, r, path, nil, nil, errBadBody)
			return
		}
	} else {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 64<<20))
	}
	seg := strings.Split(strings.Trim(path, "/"), "/")
	// The gateway lookup needs no token (as on Discord); the rest does,
	// except interaction responses and webhooks, which carry their own.
	needsAuth := !(len(seg) >= 1 && (seg[0] == "gateway" || seg[0] == "interactions" || seg[0] == "webhooks"))
	if needsAuth && r.Header.Get("Authorization") != "Bot "+s.token {
		s.answer(w, r, path, body, nil, errUnauthorized)
		return
	}
	out, hdr, err := s.route(r.Method, seg, r.URL.Query().Get, body, files)
	if err == nil && r.Method == http.MethodPost && len(seg) == 3 && seg[0] == "channels" && seg[2] == "messages" {
		s.hold(r, out)
	}
	s.answer(w, r, path, body, hdr, err, out)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, path string, body []byte, hdr http.Header, err any, out ...any) {
	status := http.StatusOK
	var payload any
	switch e := err.(type) {
	case nil:
		if len(out) > 0 {
			payload = out[0]
		}
		if payload == nil {
			status = http.StatusNoContent
		}
	case apiError:
		status = e.status
		payload = map[string]any{"message": e.message, "code": e.code}
	case failure:
		status = e.status
		if e.status == http.StatusTooManyRequests {
			secs := e.retryAfter.Seconds()
			payload = map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": false}
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
			w.Header().Set("X-RateLimit-Limit", "5")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
			w.Header().Set("X-RateLimit-Bucket", "fakebucket")
			w.Header().Set("X-RateLimit-Scope", "user")
		} else {
			payload = map[string]any{"message": e.message, "code": e.code}
		}
	}
	for k, vs := range hdr {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	s.mu.Lock()
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	s.calls = append(s.calls, Call{Method: r.Method, Path: path, Body: append(json.RawMessage(nil), body...), Status: status, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	if payload == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(payload)
}

func readMultipart(r io.Reader, boundary string) ([]byte, []File, error) {
	mr := multipart.NewReader(r, boundary)
	var payload []byte
	var files []File
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return payload, files, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(io.LimitReader(p, 64<<20))
		if err != nil {
			return nil, nil, err
		}
		switch name := p.FormName(); {
		case name == "payload_json":
			payload = data
		case strings.HasPrefix(name, "files["):
			files = append(files, File{Name: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data})
		}
	}
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[strings.TrimPrefix(r.URL.Path, "/files/")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.ContentType)
	w.Write(f.Data)
}

// route answers one REST request: the answer, extra headers, an error.
func (s *Server) route(method string, seg []string, query func(string) string, body []byte, files []File) (any, http.Header, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := func(i int) string {
		if i < len(seg) {
			return seg[i]
		}
		return ""
	}
	n := len(seg)
	switch {
	case at(0) == "gateway":
		return map[string]any{"url": s.gw.url(s), "shards": 1}, nil, nil
	case at(0) == "channels" && n == 2 && method == http.MethodGet:
		c, ok := s.channels[at(1)]
		if !ok {
			return nil, nil, errUnknownChannel
		}
		return channelJSON(c), nil, nil
	case at(0) == "channels" && n == 3 && at(2) == "messages" && method == http.MethodGet:
		return s.listMessagesLocked(at(1), query("after"), query("before"), query("limit"))
	case at(0) == "channels" && n == 3 && at(2) == "messages" && method == http.MethodPost:
		return s.createMessageLocked(at(1), body, files)
	case at(0) == "channels" && n == 4 && at(2) == "messages" && method == http.MethodPatch:
		return s.editMessageLocked(at(1), at(3), body)
	case at(0) == "channels" && n == 4 && at(2) == "messages" && method == http.MethodDelete:
		m, ok := s.byID[at(3)]
		if !ok || m.ChannelID != at(1) || m.Deleted {
			return nil, nil, errUnknownMessage
		}
		m.Deleted = true
		s.notifyLocked()
		return nil, nil, nil
	case at(0) == "channels" && n == 5 && at(4) == "threads" && method == http.MethodPost:
		return s.startThreadLocked(at(1), at(3), body)
	case at(0) == "channels" && n == 3 && at(2) == "typing" && method == http.MethodPost:
		if _, ok := s.channels[at(1)]; !ok {
			return nil, nil, errUnknownChannel
		}
		return nil, nil, nil
	case at(0) == "users" && at(1) == "@me" && n == 2 && method == http.MethodGet:
		return userJSON(s.users[BotID]), nil, nil
	case at(0) == "applications" && at(1) == "@me" && n == 2 && method == http.MethodGet:
		flags := flagGatewayMessageContentLimited
		if s.noContent {
			flags = 0
		}
		return map[string]any{"id": AppID, "name": BotUsername, "flags": flags, "bot": userJSON(s.users[BotID])}, nil, nil
	case at(0) == "users" && at(1) == "@me" && at(2) == "channels" && method == http.MethodPost:
		var req struct {
			RecipientID string `json:"recipient_id"`
		}
		if json.Unmarshal(body, &req) != nil || req.RecipientID == "" {
			return nil, nil, errBadBody
		}
		if _, ok := s.users[req.RecipientID]; !ok {
			return nil, nil, apiError{http.StatusBadRequest, 50007, "Cannot send messages to this user"}
		}
		id, ok := s.dms[req.RecipientID]
		if !ok {
			id = s.nextIDLocked(time.Now())
			s.dms[req.RecipientID] = id
			s.channels[id] = &Channel{ID: id, Type: TypeDM}
		}
		return map[string]any{"id": id, "type": TypeDM, "recipients": []any{userJSON(s.users[req.RecipientID])}}, nil, nil
	case at(0) == "guilds" && n == 4 && at(2) == "members" && method == http.MethodGet:
		u, ok := s.users[at(3)]
		if !ok {
			return nil, nil, apiError{http.StatusNotFound, 10007, "Unknown Member"}
		}
		return map[string]any{"user": userJSON(u), "roles": nonNil(s.memberRolesLocked(at(3)))}, nil, nil
	case at(0) == "interactions" && n == 4 && at(3) == "callback" && method == http.MethodPost:
		return s.callbackLocked(at(1), at(2), body)
	case at(0) == "webhooks" && n >= 3:
		return s.webhookLocked(method, at(1), at(2), seg[3:], query("wait"), body)
	case at(0) == "applications" && method == http.MethodPut && (n == 3 && at(2) == "commands" || n == 5 && at(2) == "guilds" && at(4) == "commands"):
		if at(1) != AppID {
			return nil, nil, errNotAllowed
		}
		scope := "global"
		if n == 5 {
			scope = at(3)
		}
		s.commands[scope] = append(json.RawMessage(nil), body...)
		s.notifyLocked()
		var v any
		json.Unmarshal(body, &v)
		return v, nil, nil
	}
	return nil, nil, apiError{http.StatusNotFound, 0, fmt.Sprintf("404: Not Found (%s /%s)", method, strings.Join(seg, "/"))}
}

// memberRolesLocked are the roles of a user: those of their latest message.
func (s *Server) memberRolesLocked(user string) []string {
	var roles []string
	var last string
	for _, m := range s.byID {
		if m.Author.ID == user && m.Roles != nil && (last == "" || later(m.ID, last)) {
			roles, last = m.Roles, m.ID
		}
	}
	return roles
}

func later(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

func (s *Server) listMessagesLocked(cid, after, before, limit string) (any, http.Header, any) {
	if _, ok := s.channels[cid]; !ok {
		return nil, nil, errUnknownChannel
	}
	n, err := strconv.Atoi(limit)
	if err != nil || n <= 0 || n > 100 {
		n = 50
	}
	var ms []*Message
	for _, m := range s.order[cid] {
		if !m.Deleted && (after == "" || later(m.ID, after)) && (before == "" || later(before, m.ID)) {
			ms = append(ms, m)
		}
	}
	// With after: the oldest n after the cursor; else (before, or no
	// cursor) the newest n. Answered newest first, as Discord does.
	if len(ms) > n {
		if after != "" {
			ms = ms[:n]
		} else {
			ms = ms[len(ms)-n:]
		}
	}
	sort.Slice(ms, func(i, j int) bool { return later(ms[i].ID, ms[j].ID) })
	out := []any{}
	for _, m := range ms {
		out = append(out, s.messageJSONLocked(m, false))
	}
	return out, nil, nil
}

type outgoing struct {
	Content         string          `json:"content"`
	Nonce           json.RawMessage `json:"nonce"`
	EnforceNonce    bool            `json:"enforce_nonce"`
	Components      json.RawMessage `json:"components"`
	AllowedMentions json.RawMessage `json:"allowed_mentions"`
	Flags           int             `json:"flags"`
	Reference       *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
}

// tokensOf returns the custom ids of the buttons in components JSON, or an
// error when a button is malformed.
func tokensOf(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rows []struct {
		Type       int `json:"type"`
		Components []struct {
			Type     int    `json:"type"`
			Style    int    `json:"style"`
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, err
	}
	if len(rows) > 5 {
		return nil, fmt.Errorf("%d action rows", len(rows))
	}
	var out []string
	for _, r := range rows {
		if r.Type != 1 || len(r.Components) == 0 || len(r.Components) > 5 {
			return nil, fmt.Errorf("bad action row")
		}
		for _, b := range r.Components {
			if b.Type != 2 || b.Label == "" || len(b.Label) > 80 || b.CustomID == "" || len(b.CustomID) > 100 || b.Style < 1 || b.Style > 4 {
				return nil, fmt.Errorf("bad button %+v", b)
			}
			out = append(out, b.CustomID)
		}
	}
	return out, nil
}

func (s *Server) nextFailureLocked() (failure, bool) {
	if len(s.failures) == 0 {
		return failure{}, false
	}
	f := s.failures[0]
	s.failures = s.failures[1:]
	return f, true
}

func (s *Server) createMessageLocked(cid string, body []byte, files []File) (any, http.Header, any) {
	if f, ok := s.nextFailureLocked(); ok {
		return nil, nil, f
	}
	if _, ok := s.channels[cid]; !ok {
		return nil, nil, errUnknownChannel
	}
	var o outgoing
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, nil, errBadBody
	}
	var nonce string
	if len(o.Nonce) > 0 && json.Unmarshal(o.Nonce, &nonce) != nil {
		nonce = string(o.Nonce)
	}
	if len(nonce) > 25 {
		return nil, nil, errBadBody
	}
	if o.EnforceNonce && nonce != "" {
		if m, ok := s.nonces[nonce]; ok {
			return s.messageJSONLocked(m, false), nil, nil // Discord returns the message it made
		}
	}
	tokens, err := tokensOf(o.Components)
	if err != nil {
		return nil, nil, errBadBody
	}
	if strings.TrimSpace(o.Content) == "" && len(tokens) == 0 && len(files) == 0 {
		return nil, nil, apiError{http.StatusBadRequest, 50006, "Cannot send an empty message"}
	}
	if len([]rune(o.Content)) > 2000 {
		return nil, nil, apiError{http.StatusBadRequest, 50035, "Invalid Form Body: content must be 2000 or fewer in length"}
	}
	m := &Message{ChannelID: cid, Author: s.users[BotID], Content: o.Content, Tokens: tokens, Nonce: nonce,
		AllowedMentions: o.AllowedMentions, Attachments: files, Time: time.Now(), Flags: o.Flags}
	if len(tokens) > 0 {
		m.Components = o.Components
	}
	if o.Reference != nil {
		m.ReferenceID = o.Reference.MessageID
	}
	m.ID = s.nextIDLocked(m.Time)
	s.storeLocked(m)
	if nonce != "" {
		s.nonces[nonce] = m
	}
	var hdr http.Header
	if s.exhaust > 0 {
		hdr = http.Header{}
		hdr.Set("X-RateLimit-Limit", "5")
		hdr.Set("X-RateLimit-Remaining", "0")
		hdr.Set("X-RateLimit-Reset-After", strconv.FormatFloat(s.exhaust, 'f', 3, 64))
		s.exhaust = 0
	}
	// Discord dispatches the bot's own messages too; the adapter must
	// ignore them.
	s.gw.dispatchLocked(s, "MESSAGE_CREATE", s.messageJSONLocked(m, true))
	return s.messageJSONLocked(m, false), hdr, nil
}

func (s *Server) editMessageLocked(cid, mid string, body []byte) (any, http.Header, any) {
	if f, ok := s.nextFailureLocked(); ok {
		return nil, nil, f
	}
	m, ok := s.byID[mid]
	if !ok || m.ChannelID != cid || m.Deleted {
		return nil, nil, errUnknownMessage
	}
	if m.Author.ID != BotID {
		return nil, nil, apiError{http.StatusForbidden, 50005, "Cannot edit a message authored by another user"}
	}
	var o outgoing
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, nil, errBadBody
	}
	if err := s.applyEditLocked(m, body, o); err != nil {
		return nil, nil, err
	}
	s.gw.dispatchLocked(s, "MESSAGE_UPDATE", s.messageJSONLocked(m, true))
	return s.messageJSONLocked(m, false), nil, nil
}

// applyEditLocked changes the fields an edit carries.
func (s *Server) applyEditLocked(m *Message, body []byte, o outgoing) any {
	var fields map[string]json.RawMessage
	json.Unmarshal(body, &fields)
	if _, ok := fields["components"]; ok {
		tokens, err := tokensOf(o.Components)
		if err != nil {
			return errBadBody
		}
		m.Tokens = tokens
		m.Components = nil
		if len(tokens) > 0 {
			m.Components = o.Components
		}
	}
	if _, ok := fields["content"]; ok {
		if len([]rune(o.Content)) > 2000 {
			return apiError{http.StatusBadRequest, 50035, "Invalid Form Body: content must be 2000 or fewer in length"}
		}
		m.Content = o.Content
	}
	if len(o.AllowedMentions) > 0 {
		m.AllowedMentions = o.AllowedMentions
	}
	m.Edits++
	s.notifyLocked()
	return nil
}

func (s *Server) startThreadLocked(cid, mid string, body []byte) (any, http.Header, any) {
	c, ok := s.channels[cid]
	if !ok {
		return nil, nil, errUnknownChannel
	}
	if c.Type != TypeText {
		return nil, nil, apiError{http.StatusBadRequest, 50024, "Cannot execute action on this channel type"}
	}
	m, ok := s.byID[mid]
	if !ok || m.ChannelID != cid {
		return nil, nil, errUnknownMessage
	}
	if _, exists := s.channels[mid]; exists {
		return nil, nil, errThreadExists
	}
	var req struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(body, &req) != nil || req.Name == "" || len([]rune(req.Name)) > 100 {
		return nil, nil, errBadBody
	}
	t := &Channel{ID: mid, GuildID: c.GuildID, ParentID: cid, OwnerID: BotID, Name: req.Name, Type: TypePublicThread}
	s.channels[mid] = t
	s.notifyLocked()
	s.gw.dispatchLocked(s, "THREAD_CREATE", channelJSON(t))
	return channelJSON(t), nil, nil
}

func (s *Server) callbackLocked(id, token string, body []byte) (any, http.Header, any) {
	in, ok := s.interactions[id]
	if !ok || in.Token != token {
		return nil, nil, errUnknownInter
	}
	var req struct {
		Type int      `json:"type"`
		Data outgoing `json:"data"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil, nil, errBadBody
	}
	in.Callbacks = append(in.Callbacks, req.Type)
	s.notifyLocked()
	if len(in.Callbacks) > 1 {
		return nil, nil, errAcked
	}
	switch req.Type {
	case 4, 5:
		tokens, _ := tokensOf(req.Data.Components)
		in.Original = &Message{ID: s.nextIDLocked(time.Now()), ChannelID: in.ChannelID, Author: s.users[BotID],
			Content: req.Data.Content, Tokens: tokens, Flags: req.Data.Flags, AllowedMentions: req.Data.AllowedMentions, Time: time.Now()}
	case 6, 7:
	default:
		return nil, nil, errBadBody
	}
	return nil, nil, nil
}

// webhookLocked serves interaction followups and edits of the response:
// /webhooks/{app}/{token}[/messages/{id|@original}].
func (s *Server) webhookLocked(method, app, token string, rest []string, wait string, body []byte) (any, http.Header, any) {
	var in *Interaction
	for _, i := range s.interactions {
		if i.Token == token {
			in = i
		}
	}
	if app != AppID || in == nil {
		return nil, nil, apiError{http.StatusNotFound, 10015, "Unknown Webhook"}
	}
	var o outgoing
	if err := json.Unmarshal(body, &o); err != nil && len(body) > 0 {
		return nil, nil, errBadBody
	}
	switch {
	case len(rest) == 0 && method == http.MethodPost:
		if len(in.Callbacks) == 0 {
			return nil, nil, errUnknownInter
		}
		tokens, err := tokensOf(o.Components)
		if err != nil {
			return nil, nil, errBadBody
		}
		m := &Message{ID: s.nextIDLocked(time.Now()), ChannelID: in.ChannelID, Author: s.users[BotID], Content: o.Content,
			Tokens: tokens, Flags: o.Flags, AllowedMentions: o.AllowedMentions, Time: time.Now()}
		in.Followups = append(in.Followups, m)
		s.notifyLocked()
		if wait == "true" {
			return map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content}, nil, nil
		}
		return nil, nil, nil
	case len(rest) == 2 && rest[0] == "messages" && method == http.MethodPatch:
		var m *Message
		if rest[1] == "@original" || (in.Original != nil && rest[1] == in.Original.ID) {
			m = in.Original
		} else {
			for _, f := range in.Followups {
				if f.ID == rest[1] {
					m = f
				}
			}
		}
		if m == nil {
			return nil, nil, errUnknownMessage
		}
		if err := s.applyEditLocked(m, body, o); err != nil {
			return nil, nil, err
		}
		return map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content}, nil, nil
	}
	return nil, nil, apiError{http.StatusMethodNotAllowed, 0, "405: Method Not Allowed"}
}

// jsonBytes encodes v (for dispatches).
func jsonBytes(v any) json.RawMessage {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(v)
	return bytes.TrimSpace(b.Bytes())
}

package slacktest

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Slack's limits the fake enforces.
const (
	maxText        = 40000
	maxSectionText = 3000
	maxBlocks      = 50
	maxButtonText  = 75
	maxActionID    = 255
	maxValue       = 2000
	maxElements    = 25
)

type apiError string

func (e apiError) Error() string { return string(e) }

// api serves /api/<method>.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, err := readParams(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	token := params["token"]
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token == "" {
		token = bearer
	}
	delete(params, "token")
	s.mu.Lock()
	defer s.mu.Unlock()
	call := Call{Method: method, Params: params, At: time.Now()}
	defer func() {
		s.calls = append(s.calls, call)
		s.notify()
	}()
	want := BotToken
	if method == "apps.connections.open" {
		want = AppToken
	}
	if token == BotToken {
		w.Header().Set("X-OAuth-Scopes", s.scopes)
	}
	if token != want {
		call.Error = "invalid_auth"
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	if f, ok := s.takeFailure(method); ok {
		if f.Taken {
			_, _ = s.method(method, params)
		}
		if f.RateLimited > 0 {
			call.Error = "429"
			w.Header().Set("Retry-After", strconv.Itoa(int(f.RateLimited/time.Second)))
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
		call.Error = f.Error
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": f.Error})
		return
	}
	res, err := s.method(method, params)
	if err != nil {
		call.Error = err.Error()
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": err.Error()})
		return
	}
	res["ok"] = true
	writeJSON(w, http.StatusOK, res)
}

// readParams reads a form (query, urlencoded or multipart) or JSON body into
// strings.
func readParams(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return nil, err
		}
		if len(strings.TrimSpace(string(body))) > 0 && string(body) != "null" {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, err
			}
			for k, v := range m {
				if s, ok := v.(string); ok {
					out[k] = s
				} else {
					b, _ := json.Marshal(v)
					out[k] = string(b)
				}
			}
		}
		return out, nil
	}
	if ct == "multipart/form-data" {
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, err
		}
	} else if err := r.ParseForm(); err != nil {
		return nil, err
	}
	for k, v := range r.Form {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	return out, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// method answers one Web API method; called with s.mu held.
func (s *Server) method(method string, p map[string]string) (map[string]any, error) {
	switch method {
	case "auth.test":
		return map[string]any{"url": "https://fake.slack.com/", "team": "Fake", "user": "switchboard",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}, nil
	case "apps.connections.open":
		s.opens++
		return map[string]any{"url": "ws" + strings.TrimPrefix(s.base(), "http") + "/ws?ticket=" + s.nextID("t")}, nil
	case "chat.postMessage":
		return s.postMessage(p)
	case "chat.update":
		return s.updateMessage(p)
	case "chat.delete":
		m, err := s.find(p["channel"], p["ts"])
		if err != nil {
			return nil, err
		}
		m.Deleted = true
		return map[string]any{"channel": m.Channel, "ts": m.TS}, nil
	case "chat.postEphemeral":
		c := s.channels[p["channel"]]
		if c == nil {
			return nil, apiError("channel_not_found")
		}
		if _, ok := s.users[p["user"]]; !ok {
			return nil, apiError("user_not_found")
		}
		blocks, err := parseBlocks(p["blocks"])
		if err != nil {
			return nil, err
		}
		text := p["text"]
		if len(blocks) > 0 {
			text = Message{Blocks: blocks}.Shown()
		}
		s.ephemerals = append(s.ephemerals, Ephemeral{Channel: c.id, User: p["user"], Text: text, ThreadTS: p["thread_ts"], Via: method})
		return map[string]any{"message_ts": s.nextTS()}, nil
	case "chat.getPermalink":
		if _, err := s.find(p["channel"], p["message_ts"]); err != nil {
			return nil, err
		}
		return map[string]any{"channel": p["channel"],
			"permalink": "https://fake.slack.com/archives/" + p["channel"] + "/p" + strings.ReplaceAll(p["message_ts"], ".", "")}, nil
	case "conversations.open":
		users := strings.Split(p["users"], ",")
		if len(users) != 1 {
			return nil, apiError("not_implemented")
		}
		if _, ok := s.users[users[0]]; !ok || users[0] == BotUserID {
			return nil, apiError("user_not_found")
		}
		return map[string]any{"channel": map[string]any{"id": s.dm(users[0]), "is_im": true}}, nil
	case "conversations.replies":
		return s.replies(p)
	case "conversations.history":
		return s.history(p)
	case "users.info":
		u, ok := s.users[p["user"]]
		if !ok {
			return nil, apiError("user_not_found")
		}
		return map[string]any{"user": map[string]any{"id": u.ID, "team_id": TeamID, "name": u.Name, "real_name": u.RealName,
			"is_bot": u.ID == BotUserID, "profile": map[string]any{"display_name": u.DisplayName, "real_name": u.RealName}}}, nil
	case "files.getUploadURLExternal":
		n, err := strconv.Atoi(p["length"])
		if err != nil || n <= 0 || p["filename"] == "" {
			return nil, apiError("invalid_arguments")
		}
		id := s.nextID("F0")
		s.files[id] = &storedFile{id: id, name: p["filename"]}
		return map[string]any{"upload_url": s.base() + "/upload/" + id, "file_id": id}, nil
	case "files.completeUploadExternal":
		return s.completeUpload(p)
	}
	return nil, apiError("unknown_method")
}

func (s *Server) find(channel, ts string) (*Message, error) {
	c := s.channels[channel]
	if c == nil {
		return nil, apiError("channel_not_found")
	}
	for _, m := range c.msgs {
		if m.TS == ts && !m.Deleted {
			return m, nil
		}
	}
	return nil, apiError("message_not_found")
}

// checkThread checks a thread_ts a bot message is posted to.
func (s *Server) checkThread(c *channel, thread string) error {
	if thread == "" {
		return nil
	}
	if s.refuse[c.id+"/"+thread] {
		return apiError("cannot_reply_to_message")
	}
	root, err := s.find(c.id, thread)
	if err != nil {
		return apiError("thread_not_found")
	}
	if root.ThreadTS != "" {
		return apiError("thread_ts_is_a_reply") // the fake insists on root timestamps
	}
	return nil
}

func (s *Server) postMessage(p map[string]string) (map[string]any, error) {
	c := s.channels[p["channel"]]
	if c == nil {
		return nil, apiError("channel_not_found")
	}
	blocks, err := parseBlocks(p["blocks"])
	if err != nil {
		return nil, err
	}
	if err := checkText(p["text"], blocks); err != nil {
		return nil, err
	}
	if err := s.checkThread(c, p["thread_ts"]); err != nil {
		return nil, err
	}
	if md := p["metadata"]; md != "" {
		var v struct {
			EventType    string         `json:"event_type"`
			EventPayload map[string]any `json:"event_payload"`
		}
		if json.Unmarshal([]byte(md), &v) != nil || v.EventType == "" {
			return nil, apiError("invalid_metadata_format")
		}
	}
	m := &Message{Channel: c.id, TS: s.nextTS(), ThreadTS: p["thread_ts"], User: BotUserID, BotID: BotID, Text: p["text"], Blocks: blocks,
		Metadata: p["metadata"]}
	c.msgs = append(c.msgs, m)
	s.botMessageEvent(c, m)
	return map[string]any{"channel": c.id, "ts": m.TS, "message": map[string]any{"ts": m.TS, "text": m.Text, "bot_id": BotID}}, nil
}

func (s *Server) updateMessage(p map[string]string) (map[string]any, error) {
	m, err := s.find(p["channel"], p["ts"])
	if err != nil {
		return nil, err
	}
	if m.BotID != BotID {
		return nil, apiError("cant_update_message")
	}
	blocks, err := parseBlocks(p["blocks"])
	if err != nil {
		return nil, err
	}
	if err := checkText(p["text"], blocks); err != nil {
		return nil, err
	}
	m.Text, m.Blocks = p["text"], blocks
	m.Edits++
	return map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text}, nil
}

func checkText(text string, blocks []Block) error {
	switch {
	case text == "" && len(blocks) == 0:
		return apiError("no_text")
	case utf8.RuneCountInString(text) > maxText:
		return apiError("msg_too_long")
	}
	return nil
}

// parseBlocks reads and checks a blocks parameter: every block must have a
// unique block_id (the fake insists: without one, presses do not name their
// block), sections at most 3,000 characters, actions at most 25 buttons
// with labels of at most 75 characters and unique action_ids.
func parseBlocks(raw string) ([]Block, error) {
	if raw == "" {
		return nil, nil
	}
	var in []struct {
		Type    string `json:"type"`
		BlockID string `json:"block_id"`
		Text    *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Style    string `json:"style"`
			Text     struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, apiError("invalid_blocks_format")
	}
	if len(in) > maxBlocks {
		return nil, apiError("invalid_blocks")
	}
	ids, actions := map[string]bool{}, map[string]bool{}
	var out []Block
	for _, b := range in {
		if b.BlockID == "" || ids[b.BlockID] || len(b.BlockID) > 255 {
			return nil, apiError("invalid_blocks")
		}
		ids[b.BlockID] = true
		blk := Block{Type: b.Type, BlockID: b.BlockID}
		switch b.Type {
		case "section":
			if b.Text == nil || b.Text.Text == "" || len([]rune(b.Text.Text)) > maxSectionText ||
				(b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text") {
				return nil, apiError("invalid_blocks")
			}
			blk.Text = b.Text.Text
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > maxElements {
				return nil, apiError("invalid_blocks")
			}
			for _, e := range b.Elements {
				if e.Type != "button" || e.Text.Type != "plain_text" || e.Text.Text == "" ||
					utf8.RuneCountInString(e.Text.Text) > maxButtonText || e.ActionID == "" ||
					len(e.ActionID) > maxActionID || actions[e.ActionID] || len(e.Value) > maxValue ||
					(e.Style != "" && e.Style != "primary" && e.Style != "danger") {
					return nil, apiError("invalid_blocks")
				}
				actions[e.ActionID] = true
				blk.Buttons = append(blk.Buttons, Button{ActionID: e.ActionID, Value: e.Value, Text: e.Text.Text, Style: e.Style})
			}
		default:
			return nil, apiError("invalid_blocks")
		}
		out = append(out, blk)
	}
	return out, nil
}

// replies answers conversations.replies: the root, then the replies after
// oldest (inclusive=1: at or after), at most limit per page.
func (s *Server) replies(p map[string]string) (map[string]any, error) {
	root, err := s.find(p["channel"], p["ts"])
	if err != nil {
		return nil, apiError("thread_not_found")
	}
	var msgs []*Message
	for _, m := range s.channels[p["channel"]].msgs {
		if m.Deleted || m == root || m.ThreadTS != root.TS || !after(m.TS, p["oldest"], p["inclusive"] == "1") {
			continue
		}
		msgs = append(msgs, m)
	}
	page, next := paginate(msgs, p)
	meta := p["include_all_metadata"] == "1" || p["include_all_metadata"] == "true"
	out := []map[string]any{s.wire(root, len(msgs), meta)}
	for _, m := range page {
		out = append(out, s.wire(m, 0, meta))
	}
	return withCursor(map[string]any{"messages": out}, next), nil
}

// history answers conversations.history: top-level messages after oldest,
// newest first.
func (s *Server) history(p map[string]string) (map[string]any, error) {
	c := s.channels[p["channel"]]
	if c == nil {
		return nil, apiError("channel_not_found")
	}
	var msgs []*Message
	for _, m := range slices.Backward(c.msgs) {
		if !m.Deleted && m.ThreadTS == "" && after(m.TS, p["oldest"], p["inclusive"] == "1") {
			msgs = append(msgs, m)
		}
	}
	page, next := paginate(msgs, p)
	meta := p["include_all_metadata"] == "1" || p["include_all_metadata"] == "true"
	var out []map[string]any
	for _, m := range page {
		out = append(out, s.wire(m, 0, meta))
	}
	return withCursor(map[string]any{"messages": out}, next), nil
}

func withCursor(res map[string]any, next string) map[string]any {
	res["has_more"] = next != ""
	res["response_metadata"] = map[string]any{"next_cursor": next}
	return res
}

// after reports ts > oldest (or >= when inclusive); "" is before everything.
func after(ts, oldest string, inclusive bool) bool {
	if oldest == "" {
		return true
	}
	a, _ := strconv.ParseFloat(ts, 64)
	b, _ := strconv.ParseFloat(oldest, 64)
	if inclusive {
		return a >= b
	}
	return a > b
}

func paginate(msgs []*Message, p map[string]string) ([]*Message, string) {
	limit, err := strconv.Atoi(p["limit"])
	if err != nil || limit <= 0 || limit > 1000 {
		limit = 100
	}
	start, _ := strconv.Atoi(p["cursor"])
	start = min(max(start, 0), len(msgs))
	end := min(start+limit, len(msgs))
	next := ""
	if end < len(msgs) {
		next = strconv.Itoa(end)
	}
	return msgs[start:end], next
}

// wire is a message as the Web API returns it.
func (s *Server) wire(m *Message, replies int, metadata bool) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "text": m.Text}
	if metadata && m.Metadata != "" {
		w["metadata"] = json.RawMessage(m.Metadata)
	}
	if m.BotID != "" {
		w["bot_id"] = m.BotID
	}
	if m.User != "" {
		w["user"] = m.User
	}
	if m.ThreadTS != "" {
		w["thread_ts"] = m.ThreadTS
		if root, err := s.find(m.Channel, m.ThreadTS); err == nil {
			w["parent_user_id"] = root.User
		}
	} else if replies > 0 {
		w["thread_ts"] = m.TS
		w["reply_count"] = replies
	}
	if len(m.Files) > 0 {
		w["files"] = s.wireFiles(m.Files)
	}
	return w
}

func (s *Server) wireFiles(ids []string) []map[string]any {
	var out []map[string]any
	for _, id := range ids {
		f := s.files[id]
		if f == nil {
			continue
		}
		u := s.base() + "/files-pri/" + f.id + "/" + f.name
		out = append(out, map[string]any{"id": f.id, "name": f.name, "title": f.name, "mimetype": f.mime,
			"size": len(f.data), "url_private": u, "url_private_download": u + "?download=1", "created": 1700000000})
	}
	return out
}

func (s *Server) completeUpload(p map[string]string) (map[string]any, error) {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(p["files"]), &files); err != nil || len(files) == 0 {
		return nil, apiError("invalid_arguments")
	}
	c := s.channels[p["channel_id"]]
	if c == nil {
		return nil, apiError("channel_not_found")
	}
	if err := s.checkThread(c, p["thread_ts"]); err != nil {
		return nil, err
	}
	m := &Message{Channel: c.id, TS: s.nextTS(), ThreadTS: p["thread_ts"], User: BotUserID, BotID: BotID, Text: p["initial_comment"]}
	var out []map[string]any
	for _, f := range files {
		sf := s.files[f.ID]
		if sf == nil || !sf.uploaded {
			return nil, apiError("file_not_found")
		}
		m.Files = append(m.Files, f.ID)
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	c.msgs = append(c.msgs, m)
	return map[string]any{"files": out}, nil
}

// uploadFile receives the bytes of an external upload (multipart "file").
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	data, err := readUpload(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[id]
	if err != nil || f == nil {
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	f.data, f.uploaded = data, true
	f.mime = http.DetectContentType(data)
	s.notify()
	_, _ = io.WriteString(w, "OK - "+strconv.Itoa(len(data)))
}

func readUpload(r *http.Request) ([]byte, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		return io.ReadAll(io.LimitReader(r.Body, 64<<20))
	}
	if err := r.ParseMultipartForm(64 << 20); err != nil {
		return nil, err
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// downloadFile serves a file's url_private to the bot token only.
func (s *Server) downloadFile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Error(w, "not authed", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	f := s.files[r.PathValue("id")]
	s.mu.Unlock()
	if f == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.mime)
	_, _ = w.Write(f.data)
}

// response receives a post to a response_url.
func (s *Server) response(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text            string `json:"text"`
		ResponseType    string `json:"response_type"`
		ReplaceOriginal *bool  `json:"replace_original"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hook, ok := s.responses[r.PathValue("id")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if body.ResponseType == "in_channel" || (body.ReplaceOriginal != nil && *body.ReplaceOriginal) {
		http.Error(w, "the fake takes only ephemeral answers with replace_original false", http.StatusBadRequest)
		return
	}
	s.ephemerals = append(s.ephemerals, Ephemeral{Channel: hook.channel, User: hook.user, Text: body.Text, ThreadTS: hook.thread, Via: "response_url"})
	s.notify()
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BotUsername is the username getMe reports for the fake bot.
const BotUsername = "switchboard_test_bot"

// Call is one request the server received.
type Call struct {
	Seq    int // 1-based order
	Method string
	// Params holds the request's fields: form values as sent, JSON values
	// as strings (strings unquoted, other values as compact JSON).
	Params map[string]string
	// Files are the uploaded files of a multipart request, by field name.
	Files map[string]File
	// Status is the HTTP status the server answered.
	Status int
	// At is when the call was answered; Received when it arrived (a call
	// a client sent just before it died may be answered after its death).
	At       time.Time
	Received time.Time
	// MessageID is the id of the message a successful sendMessage or
	// sendDocument created; 0 for every other call.
	MessageID int64
}

// File is an uploaded file.
type File struct {
	Name string
	Data []byte
}

// Int returns the parameter key as an integer; 0 when absent or not a
// number.
func (c Call) Int(key string) int64 {
	n, _ := strconv.ParseInt(c.Params[key], 10, 64)
	return n
}

// Has reports whether the call carried the parameter key.
func (c Call) Has(key string) bool {
	_, ok := c.Params[key]
	return ok
}

// Message is a message the bot sent, in its current state.
type Message struct {
	ChatID   int64
	ThreadID int64
	ID       int64
	Text     string
	// Markup is the reply_markup JSON as last sent; empty when none.
	Markup string
	Edits  int
	// Document is the uploaded file of a sendDocument message.
	Document *File
	Caption  string
	// Sent is when the message was created.
	Sent time.Time
}

type failure struct {
	status      int
	retryAfter  int
	description string
}

type pendingUpdate struct {
	id        int64
	raw       json.RawMessage
	redeliver bool // added again after it was acknowledged
	delivered bool // answered to a getUpdates call at least once
}

type storedFile struct {
	path string
	data []byte
}

// Server is a fake Telegram Bot API server. Create it with New.
type Server struct {
	token string
	botID int64
	srv   *httptest.Server

	mu         sync.Mutex
	closed     chan struct{}
	changed    chan struct{} // closed and replaced on every change
	calls      []Call
	updates    []pendingUpdate
	nextUpdate int64
	offset     int64 // the highest offset a getUpdates call confirmed
	pollers    int   // getUpdates calls waiting for an update
	failures   map[string][]failure
	messages   map[[2]int64]*Message // by chat id, message id
	order      [][2]int64
	nextMsgID  int64
	files      map[string]storedFile
	webhookURL string
	secret     string
	commands   string
	hookAcked  map[int64]bool // updates a webhook POST acknowledged
	pushing    bool           // DeliverWebhooks was called

	push     *http.Client
	stopPush context.CancelFunc
	pushCtx  context.Context
	wg       sync.WaitGroup // the webhook delivery goroutine
}

// New starts a fake Bot API server for token on 127.0.0.1 and closes it when
// the test ends. The bot's id is the token's numeric prefix (as on
// Telegram), or 1000 when there is none.
func New(t testing.TB, token string) *Server {
	t.Helper()
	s := NewServer(token)
	t.Cleanup(s.Close)
	return s
}

// NewServer is New for use outside tests (the crash campaign, load tools):
// the caller must Close it.
func NewServer(token string) *Server {
	id, err := strconv.ParseInt(strings.SplitN(token, ":", 2)[0], 10, 64)
	if err != nil || id <= 0 {
		id = 1000
	}
	s := &Server{
		token:      token,
		botID:      id,
		closed:     make(chan struct{}),
		changed:    make(chan struct{}),
		nextUpdate: 1,
		failures:   make(map[string][]failure),
		messages:   make(map[[2]int64]*Message),
		nextMsgID:  1,
		files:      make(map[string]storedFile),
		hookAcked:  make(map[int64]bool),
		push:       &http.Client{},
	}
	s.pushCtx, s.stopPush = context.WithCancel(context.Background())
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the server's base URL, for the client's server URL option.
func (s *Server) URL() string { return s.srv.URL }

// BotID is the fake bot's user id.
func (s *Server) BotID() int64 { return s.botID }

// Close stops the server; pending long polls and webhook deliveries return
// at once. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return
	default:
		close(s.closed)
	}
	s.mu.Unlock()
	s.stopPush()
	s.wg.Wait()
	s.push.CloseIdleConnections()
	s.srv.Close()
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// FailNext makes the next call of method fail with the HTTP status (also the
// error_code); with status 429 and retryAfter > 0 the answer carries
// parameters.retry_after. Failures queue: calling it twice fails two calls.
func (s *Server) FailNext(method string, status, retryAfter int) {
	desc := http.StatusText(status)
	switch status {
	case http.StatusTooManyRequests:
		desc = fmt.Sprintf("Too Many Requests: retry after %d", retryAfter)
	case http.StatusBadRequest:
		desc = "Bad Request: test failure"
	}
	s.FailNextError(method, status, desc, retryAfter)
}

// FailNextError is FailNext with the error description to answer, e.g.
// "Bad Request: chat not found" or "Forbidden: bot was blocked by the user".
func (s *Server) FailNextError(method string, status int, description string, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], failure{status: status, retryAfter: retryAfter, description: description})
}

// Calls returns every call so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CallsOf returns the calls of one method, in order.
func (s *Server) CallsOf(method string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitCall waits until a recorded call (earlier or later) satisfies pred and
// returns the first such call.
func (s *Server) WaitCall(ctx context.Context, pred func(Call) bool) (Call, error) {
	for {
		s.mu.Lock()
		for _, c := range s.calls {
			if pred(c) {
				s.mu.Unlock()
				return c, nil
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return Call{}, fmt.Errorf("wait for call: %w", ctx.Err())
		case <-ch:
		}
	}
}

// WaitCalls waits until there are calls after the first after ones (their
// Seq is above after) and returns them in order. A reader that remembers
// the last Seq it saw follows every call without rescanning the record.
func (s *Server) WaitCalls(ctx context.Context, after int) ([]Call, error) {
	for {
		s.mu.Lock()
		if after < 0 {
			after = 0
		}
		if len(s.calls) > after {
			out := slices.Clone(s.calls[after:])
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for calls after %d: %w", after, ctx.Err())
		case <-ch:
		}
	}
}

// Method returns a WaitCall predicate matching calls of method.
func Method(method string) func(Call) bool {
	return func(c Call) bool { return c.Method == method }
}

// Offset is the highest offset a getUpdates call has confirmed: every update
// with a lower id has been acknowledged by the client.
func (s *Server) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

// Acked reports whether the client acknowledged the update with id: a
// getUpdates call confirmed an offset above it, or (DeliverWebhooks) the
// webhook answered its POST with 2xx.
func (s *Server) Acked(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return id < s.offset || s.hookAcked[id]
}

// WaitOffset waits until a getUpdates call confirmed at least offset, i.e.
// the client acknowledged every update below it.
func (s *Server) WaitOffset(ctx context.Context, offset int64) error {
	for {
		s.mu.Lock()
		ok, ch := s.offset >= offset, s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for offset %d: %w", offset, ctx.Err())
		case <-ch:
		}
	}
}

// WaitPolling waits until a getUpdates long poll is waiting for updates:
// the client is connected and has handled everything before.
func (s *Server) WaitPolling(ctx context.Context) error {
	for {
		s.mu.Lock()
		ok, ch := s.pollers > 0, s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for a long poll: %w", ctx.Err())
		case <-ch:
		}
	}
}

// Messages returns the messages the bot sent, in the order sent.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, *s.messages[k])
	}
	return out
}

// Webhook returns the URL and secret token of the last setWebhook call
// (empty after deleteWebhook).
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhookURL, s.secret
}

// Commands returns the commands JSON of the last setMyCommands call ("" after
// deleteMyCommands).
func (s *Server) Commands() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands
}

// Command is one entry of a setMyCommands call.
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// CommandList returns the commands the bot registered last, in order (none
// after deleteMyCommands).
func (s *Server) CommandList() []Command {
	var out []Command
	if c := s.Commands(); c != "" {
		_ = json.Unmarshal([]byte(c), &out) // setMyCommands stored only valid JSON
	}
	return out
}

// AddFile stores data as a file the client can fetch with getFile and
// download; it returns the file_id.
func (s *Server) AddFile(data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("file-%d", len(s.files)+1)
	s.files[id] = storedFile{path: "photos/" + id + ".jpg", data: slices.Clone(data)}
	return id
}

type apiReply struct {
	OK          bool   `json:"ok"`
	Result      any    `json:"result,omitempty"`
	ErrorCode   int    `json:"error_code,omitempty"`
	Description string `json:"description,omitempty"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after,omitempty"`
	} `json:"parameters,omitempty"`
}

// receivedKey holds when a request arrived, in its context.
type receivedKey struct{}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	r = r.WithContext(context.WithValue(r.Context(), receivedKey{}, time.Now()))
	filePrefix := "/file/bot" + s.token + "/"
	if strings.HasPrefix(r.URL.Path, filePrefix) {
		s.serveFile(w, strings.TrimPrefix(r.URL.Path, filePrefix))
		return
	}
	prefix := "/bot" + s.token + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		writeReply(w, http.StatusNotFound, apiReply{ErrorCode: 404, Description: "Not Found"})
		return
	}
	method := strings.TrimPrefix(r.URL.Path, prefix)
	params, files, err := parseRequest(r)
	if err != nil {
		s.finish(w, r, method, params, files, http.StatusBadRequest, apiReply{ErrorCode: 400, Description: "Bad Request: " + err.Error()})
		return
	}
	s.mu.Lock()
	if fs := s.failures[method]; len(fs) > 0 {
		f := fs[0]
		s.failures[method] = fs[1:]
		s.mu.Unlock()
		rep := apiReply{ErrorCode: f.status, Description: f.description}
		if f.retryAfter > 0 {
			rep.Parameters = &struct {
				RetryAfter int `json:"retry_after,omitempty"`
			}{f.retryAfter}
		}
		s.finish(w, r, method, params, files, f.status, rep)
		return
	}
	s.mu.Unlock()
	if method == "getUpdates" {
		s.getUpdates(w, r, params)
		return
	}
	status, rep := s.call(method, params, files)
	s.finish(w, r, method, params, files, status, rep)
}

// finish records the call and writes the answer.
func (s *Server) finish(w http.ResponseWriter, r *http.Request, method string, params map[string]string, files map[string]File, status int, rep apiReply) {
	received, _ := r.Context().Value(receivedKey{}).(time.Time)
	var created int64
	if m, ok := rep.Result.(map[string]any); ok && status == http.StatusOK && (method == "sendMessage" || method == "sendDocument") {
		created, _ = m["message_id"].(int64)
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Seq: len(s.calls) + 1, Method: method, Params: params, Files: files, Status: status, At: time.Now(), Received: received, MessageID: created})
	s.notifyLocked()
	s.mu.Unlock()
	writeReply(w, status, rep)
}

func writeReply(w http.ResponseWriter, status int, rep apiReply) {
	rep.OK = status == http.StatusOK
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(rep)
}

func (s *Server) serveFile(w http.ResponseWriter, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		if f.path == path {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(f.data)
			return
		}
	}
	http.NotFound(w, nil)
}

// parseRequest reads a multipart, URL-encoded or JSON body into string
// parameters.
func parseRequest(r *http.Request) (map[string]string, map[string]File, error) {
	params := map[string]string{}
	files := map[string]File{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "multipart/form-data"):
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			if err == http.ErrNotMultipart || strings.Contains(err.Error(), "EOF") {
				return params, files, nil // empty body (getMe)
			}
			return params, files, fmt.Errorf("bad multipart body: %v", err)
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		for k, fhs := range r.MultipartForm.File {
			data, err := readPart(fhs[0])
			if err != nil {
				return params, files, err
			}
			files[k] = File{Name: fhs[0].Filename, Data: data}
		}
	case strings.HasPrefix(ct, "application/json"):
		var m map[string]json.RawMessage
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return params, files, err
		}
		if len(strings.TrimSpace(string(body))) == 0 {
			return params, files, nil
		}
		if err := json.Unmarshal(body, &m); err != nil {
			return params, files, fmt.Errorf("bad JSON body: %v", err)
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				params[k] = str
			} else {
				params[k] = string(v)
			}
		}
	default:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return params, files, err
		}
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return params, files, fmt.Errorf("bad form body: %v", err)
		}
		for k, v := range vals {
			params[k] = v[0]
		}
	}
	return params, files, nil
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

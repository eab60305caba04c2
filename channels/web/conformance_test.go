package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
)

// browser is the conformance Platform of the web channel: it uses the page's
// HTTP API as the page's script does, with a session from the login link.
// Deliver posts a message (acknowledged when the POST is answered 2xx; the
// page never repeats a POST answered with an error, so it is a
// NoRedelivery), Shown reads the chat's event stream (the burst a page gets
// when it opens the chat), Press posts a button press. The page has one
// person and nothing between it and the adapter that could refuse a send,
// so other is "" and there is no Failer.
type browser struct {
	a    *Adapter
	base string
	c    *http.Client
	chat string
	next atomic.Int64
	wg   sync.WaitGroup

	mu     sync.Mutex
	status map[string]int // post id → the status its POST was answered
}

var (
	_ channelstest.Platform      = (*browser)(nil)
	_ channelstest.NoRedelivery  = (*browser)(nil)
	_ channelstest.CommandLister = (*browser)(nil)
)

// newBrowser serves a, logs in with the token link and opens a new chat.
func newBrowser(t *testing.T, a *Adapter) *browser {
	t.Helper()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{a: a, base: srv.URL, status: map[string]int{},
		c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(b.wg.Wait) // runs before srv.Close
	resp, err := b.c.Get(srv.URL + "/?token=" + url.QueryEscape(testToken))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login link: status %d", resp.StatusCode)
	}
	var chat struct{ ID string }
	if status, err := b.call(context.Background(), "POST", "/api/chats", nil, &chat); err != nil || status != http.StatusCreated {
		t.Fatalf("new chat: %d %v", status, err)
	}
	b.chat = chat.ID
	return b
}

// call makes an API request as the page does (JSON, the CSRF header) and
// decodes a JSON answer into out.
func (b *browser) call(ctx context.Context, method, path string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Switchboard", "1")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// started waits until the adapter runs: a person opens the page once the
// gateway is up (before, the API answers 503).
func (b *browser) started(ctx context.Context) error {
	select {
	case <-b.a.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("web platform: the adapter did not start: %w", ctx.Err())
	}
}

func (b *browser) Chat() channels.Location { return location(b.chat) }

func (b *browser) Users() (string, string) { return b.a.user, "" }

func (b *browser) Deliver(ctx context.Context, loc channels.Location, user, text string) (string, error) {
	if user != b.a.user {
		return "", fmt.Errorf("web platform: the page's only person is %q, not %q", b.a.user, user)
	}
	id := "post-" + strconv.FormatInt(b.next.Add(1), 10)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		status := 0
		if b.started(ctx) == nil {
			status, _ = b.call(ctx, "POST", "/api/chats/"+loc.ChatID+"/messages", map[string]string{"id": id, "text": text}, nil)
		}
		b.mu.Lock()
		b.status[id] = status
		b.mu.Unlock()
	}()
	return id, nil
}

func (b *browser) AcksEvents() bool { return true }

func (b *browser) answered(id string) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.status[id]
	return s, ok
}

func (b *browser) Acked(id string) bool {
	s, ok := b.answered(id)
	return ok && s >= 200 && s < 300
}

func (b *browser) Refused(id string) bool {
	s, ok := b.answered(id)
	return ok && (s < 200 || s >= 300)
}

// Shown opens the chat's event stream, reads the burst up to its first
// event id (every kept message) and returns the messages not written by the
// person.
func (b *browser) Shown(loc channels.Location) []channelstest.Shown {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", b.base+"/api/chats/"+loc.ChatID+"/events", nil)
	if err != nil {
		return nil
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var out []channelstest.Shown
	r := bufio.NewReader(resp.Body)
	name, last := "", false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return out
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			last = true
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && name == "message":
			var v viewMessage
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v) == nil && v.Role != channels.RoleUser {
				out = append(out, shownOf(v))
			}
		case line == "" && last:
			return out
		}
	}
}

// shownOf is a message as the page shows it: its parts' HTML and text, one
// per line, and its buttons' tokens.
func shownOf(v viewMessage) channelstest.Shown {
	sh := channelstest.Shown{ID: v.ID}
	var lines []string
	for _, p := range v.Parts {
		switch p.Type {
		case "text":
			lines = append(lines, p.HTML)
		case "tool":
			lines = append(lines, p.TitleHTML)
		case "reasoning", "notice":
			lines = append(lines, p.Text)
		case "buttons":
			for _, row := range p.Rows {
				for _, btn := range row {
					sh.Tokens = append(sh.Tokens, btn.Token)
				}
			}
		}
	}
	sh.Text = strings.Join(lines, "\n")
	return sh
}

func (b *browser) Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error) {
	if user != b.a.user {
		return "", fmt.Errorf("web platform: the page's only person is %q, not %q", b.a.user, user)
	}
	if err := b.started(ctx); err != nil {
		return "", err
	}
	var reply struct{ Text string }
	status, err := b.call(ctx, "POST", "/api/actions", postedAction{Token: token, Chat: loc.ChatID, Message: msgID}, &reply)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("web platform: press answered %d", status)
	}
	return reply.Text, nil
}

// Commands returns the command names the page offers as hints, from GET
// /api/state as the page's script reads them.
func (b *browser) Commands() []string {
	var st struct {
		Commands []struct{ Name string }
	}
	if status, err := b.call(context.Background(), "GET", "/api/state", nil, &st); err != nil || status != http.StatusOK {
		return nil
	}
	var names []string
	for _, c := range st.Commands {
		names = append(names, c.Name)
	}
	return names
}

func TestConformance(t *testing.T) {
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		a := newTestAdapter()
		return channelstest.Subject{Adapter: a, Platform: newBrowser(t, a)}
	})
}

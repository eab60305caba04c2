package api_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/api"
)

// Every id ParseEventID accepts is the FormatEventID of what it returns,
// so an id names one event and one event has one id.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"run-1:1", "turn-abc:2", "in-conv-1-3:1", "msg-x:12", "a:b:3", ":1", "run:0", "run:01", "run:-1", "run:9223372036854775807", "run:9223372036854775808", "r\x00:1", "r u:1", "start"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		run, seq, err := api.ParseEventID(s)
		if err != nil {
			return
		}
		if seq < 1 || run == "" || strings.ContainsAny(run, ": \r\n") {
			t.Fatalf("ParseEventID(%q) = %q, %d", s, run, seq)
		}
		if back := api.FormatEventID(run, seq); back != s {
			t.Fatalf("ParseEventID(%q) = %q, %d, which formats as %q", s, run, seq, back)
		}
	})
}

// A posted message is queued only when it is a valid message; anything
// else is a 4xx and queues nothing. The server never fails with a 5xx.
func FuzzPostMessage(f *testing.F) {
	for _, s := range []string{`{"text":"hi"}`, `{"text":"/new"}`, `{"images":[{"mime":"image/png","data":"aGk="}]}`, `{"text":""}`, `{"text":1}`, `[]`, `{"text":"a","images":null}`, `{"images":[{"mime":"image/png","data":"aGk","name":"../x"}]}`, "{\"text\":\"\\u0000\"}"} {
		f.Add(s, "")
		f.Add(s, "key-1")
	}
	h := newHarness(f, harnessOpts{maxBody: 1 << 16})
	conv := h.conversation()
	f.Fuzz(func(t *testing.T, body, key string) {
		before := h.gw.queuedCount()
		header := map[string]string{}
		if key != "" {
			header["Idempotency-Key"] = key
		}
		req, err := http.NewRequest("POST", h.srv.URL+"/v1/conversations/"+conv+"/messages", strings.NewReader(body))
		if err != nil {
			t.Skip()
		}
		req.Header.Set("Authorization", "Bearer "+ciToken)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			if strings.ContainsAny(v, "\r\n\x00") {
				t.Skip() // not a header value net/http sends
			}
			req.Header.Set(k, v)
		}
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Skip() // the client refused the request (a header it will not send)
		}
		resp.Body.Close()
		after := h.gw.queuedCount()
		switch {
		case resp.StatusCode >= 500:
			t.Fatalf("%q: %d", body, resp.StatusCode)
		case resp.StatusCode == http.StatusAccepted:
			if after > before {
				h.gw.mu.Lock()
				in := h.gw.queued[len(h.gw.queued)-1]
				h.gw.mu.Unlock()
				checkQueued(t, in)
			}
		default:
			if after != before {
				t.Fatalf("%q answered %d but queued", body, resp.StatusCode)
			}
		}
	})
}

func checkQueued(t *testing.T, in channels.Inbound) {
	t.Helper()
	if !utf8.ValidString(in.Text) || channels.CommandName(in.Text) != "" || len(in.Attachments) > 8 || (strings.TrimSpace(in.Text) == "" && len(in.Attachments) == 0) {
		t.Fatalf("queued a bad message: %+v", in)
	}
	for _, a := range in.Attachments {
		if !strings.HasPrefix(a.MIME, "image/") || len(a.Data) == 0 || strings.ContainsAny(a.Name, "/\\") {
			t.Fatalf("queued a bad attachment: %+v", a)
		}
	}
}

// A decision reaches the gateway only when it is well-formed.
func FuzzDecideBody(f *testing.F) {
	for _, s := range []string{`{"decision":"allow"}`, `{"decision":"deny","reason":"no"}`, `{"decision":"always"}`, `{"decision":"ALLOW"}`, `{}`, `{"decision":"allow","reason":1}`} {
		f.Add(s)
	}
	h := newHarness(f, harnessOpts{})
	f.Fuzz(func(t *testing.T, body string) {
		h.gw.mu.Lock()
		before := len(h.gw.decisions)
		h.gw.mu.Unlock()
		a := h.with(t).do("POST", "/v1/approvals/ap-1", ciToken, nil, body)
		h.gw.mu.Lock()
		after := len(h.gw.decisions)
		var last channels.Decision
		if after > 0 {
			last = h.gw.decisions[after-1]
		}
		h.gw.mu.Unlock()
		switch {
		case a.status >= 500:
			t.Fatalf("%q: %d", body, a.status)
		case after > before:
			if last.Action != "allow" && last.Action != "deny" && last.Action != "always" || !utf8.ValidString(last.Reason) || utf8.RuneCountInString(last.Reason) > 2000 {
				t.Fatalf("a bad decision reached the gateway: %+v", last)
			}
		case a.status != 400:
			t.Fatalf("%q: %d without a decision", body, a.status)
		}
	})
}

// A conversation is created only from a well-formed body.
func FuzzCreateConversation(f *testing.F) {
	for _, s := range []string{`{}`, `{"agent":"helper","title":"x"}`, `{"agent":"../x"}`, `{"title":"\u0007"}`, `{"title":null}`} {
		f.Add(s)
	}
	h := newHarness(f, harnessOpts{})
	f.Fuzz(func(t *testing.T, body string) {
		a := h.with(t).do("POST", "/v1/conversations", ciToken, nil, body)
		switch a.status {
		case http.StatusCreated:
			title, _ := a.json(t)["title"].(string)
			if !utf8.ValidString(title) || utf8.RuneCountInString(title) > 200 || strings.ContainsAny(title, "\x00\r\n\x07") {
				t.Fatalf("created with title %q", title)
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("%q: %d %s", body, a.status, a.body)
		}
	})
}

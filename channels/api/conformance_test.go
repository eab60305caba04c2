package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/api"
	"github.com/switchboard-gw/switchboard/channels/api/apitest"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
)

// apiPlatform is the API's "platform" for the conformance suite: a
// program posting over HTTP (which does not post again by itself when
// refused) and reading the chat_message events of the log.
type apiPlatform struct {
	t     *testing.T
	srv   *httptest.Server
	store *apitest.MemStore
	loc   channels.Location

	mu      sync.Mutex
	n       int
	status  map[string]int // event id → the POST's answer, once it came
	pending sync.WaitGroup
}

var (
	_ channelstest.Platform     = (*apiPlatform)(nil)
	_ channelstest.NoRedelivery = (*apiPlatform)(nil)
)

func (p *apiPlatform) Chat() channels.Location { return p.loc }

func (p *apiPlatform) Users() (string, string) { return "ci", "" }

// Deliver posts the message in the background, as a program would.
func (p *apiPlatform) Deliver(ctx context.Context, loc channels.Location, user, text string) (string, error) {
	p.mu.Lock()
	p.n++
	id := fmt.Sprintf("post-%d", p.n)
	p.mu.Unlock()
	body, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), "POST", p.srv.URL+"/v1/conversations/"+loc.ChatID+"/messages", strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+ciToken)
	req.Header.Set("Content-Type", "application/json")
	p.pending.Go(func() {
		resp, err := p.srv.Client().Do(req)
		status := 0
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		p.mu.Lock()
		p.status[id] = status
		p.mu.Unlock()
	})
	return id, nil
}

func (p *apiPlatform) AcksEvents() bool { return true }

func (p *apiPlatform) Acked(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status[id] == http.StatusAccepted
}

func (p *apiPlatform) Refused(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.status[id]
	return ok && s != http.StatusAccepted
}

// Shown is the conversation's chat messages, after their edits.
func (p *apiPlatform) Shown(loc channels.Location) []channelstest.Shown {
	var out []channelstest.Shown
	at := map[string]int{}
	for _, ev := range p.store.Events(loc.ChatID) {
		if ev.Type != api.TypeChatMessage && ev.Type != api.TypeChatEdit {
			continue
		}
		var m struct {
			MessageID string   `json:"messageId"`
			Text      string   `json:"text"`
			Notices   []string `json:"notices"`
		}
		if json.Unmarshal(ev.Data, &m) != nil {
			continue
		}
		text := strings.Join(append([]string{m.Text}, m.Notices...), "\n")
		if i, ok := at[m.MessageID]; ok {
			out[i].Text = text
			continue
		}
		at[m.MessageID] = len(out)
		out = append(out, channelstest.Shown{ID: m.MessageID, Text: text})
	}
	return out
}

func (p *apiPlatform) Press(ctx context.Context, loc channels.Location, msgID, token, user string) (string, error) {
	return "", fmt.Errorf("the API has no buttons")
}

func TestConformance(t *testing.T) {
	channelstest.Conformance(t, func(t *testing.T) channelstest.Subject {
		st := apitest.NewMemStore()
		if _, err := st.AddConversation(context.Background(), api.Conversation{ID: "conv-c", Account: "ci", Agent: "main"}); err != nil {
			t.Fatal(err)
		}
		ad, err := api.New(api.Options{Tokens: []api.Token{{Name: "ci", Secret: ciToken}}, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(ad.Handler())
		p := &apiPlatform{t: t, srv: srv, store: st, status: map[string]int{},
			loc: channels.Location{Channel: api.Name, Account: "ci", ChatID: "conv-c"}}
		t.Cleanup(func() {
			p.pending.Wait()
			srv.Close()
		})
		return channelstest.Subject{Adapter: ad, Platform: p}
	})
}

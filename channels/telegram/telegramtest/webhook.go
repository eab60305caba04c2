package telegramtest

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
)

// webhookRetry is how long the server waits before posting an update the
// webhook refused again (Telegram waits longer; tests want it quick).
const webhookRetry = 20 * time.Millisecond

// webhookSecretHeader carries the secret_token of setWebhook.
const webhookSecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// DeliverWebhooks makes the server push updates to the bot's webhook, as
// Telegram does once setWebhook was called: each pending update is POSTed as
// JSON, in order and one at a time, to the URL of the last setWebhook, with
// its secret_token in X-Telegram-Bot-Api-Secret-Token. A 2xx answer
// acknowledges the update (Acked); any other answer, or none, makes the
// server post it again after a short delay. Every POST is recorded as a call
// of method "webhook" with the update_id parameter and the status answered.
// Call it once, before or after setWebhook; it lasts until Close.
func (s *Server) DeliverWebhooks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pushing {
		return
	}
	s.pushing = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.pushLoop()
	}()
}

func (s *Server) pushLoop() {
	for {
		s.mu.Lock()
		url, secret := s.webhookURL, s.secret
		var next *pendingUpdate
		if url != "" && len(s.updates) > 0 {
			u := s.updates[0]
			next = &u
		}
		ch := s.changed
		s.mu.Unlock()
		if next == nil {
			select {
			case <-ch:
				continue
			case <-s.pushCtx.Done():
				return
			}
		}
		status := s.post(url, secret, next.raw)
		s.mu.Lock()
		s.calls = append(s.calls, Call{Seq: len(s.calls) + 1, Method: "webhook",
			Params: map[string]string{"update_id": strconv.FormatInt(next.id, 10), "url": url}, Status: status, At: time.Now()})
		accepted := status >= 200 && status < 300
		if accepted {
			s.hookAcked[next.id] = true
			if len(s.updates) > 0 && s.updates[0].id == next.id {
				s.updates = s.updates[1:]
			}
		}
		s.notifyLocked()
		s.mu.Unlock()
		if !accepted {
			t := time.NewTimer(webhookRetry)
			select {
			case <-t.C:
			case <-s.pushCtx.Done():
				t.Stop()
				return
			}
		}
	}
}

// post sends one update to the webhook and returns the status answered (0
// when the request failed).
func (s *Server) post(url, secret string, raw []byte) int {
	req, err := http.NewRequestWithContext(s.pushCtx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(webhookSecretHeader, secret)
	}
	resp, err := s.push.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

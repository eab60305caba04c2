package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/slack-go/slack"
)

// Bounds of the request bodies Slack posts.
const (
	maxEventBody   = 1 << 20
	maxCommandBody = 64 << 10
)

// Routes returns the HTTP mode handlers keyed by their ServeMux pattern
// ("POST /slack/events", "POST /slack/interactions", "POST
// /slack/commands"), for the gateway's [http] listener. In Socket Mode they
// answer 404.
func (a *Adapter) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"POST " + EventsPath:       a.EventsHandler(),
		"POST " + InteractionsPath: a.InteractionsHandler(),
		"POST " + CommandsPath:     a.CommandsHandler(),
	}
}

// verified reads a request's body and checks Slack's signature over the
// raw bytes with the signing secret; a missing or wrong signature, or a
// timestamp more than five minutes off, gets 401 and nothing else happens.
func (a *Adapter) verified(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	if a.opts.Mode != ModeHTTP {
		http.Error(w, "slack runs in Socket Mode; these routes serve mode = \"http\"", http.StatusNotFound)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return nil, false
		}
		http.Error(w, "cannot read request", http.StatusBadRequest)
		return nil, false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, a.opts.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		a.log.Warn("slack request with a bad signature refused", "path", r.URL.Path, "why", verifyReason(err))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

func verifyReason(err error) string {
	switch {
	case errors.Is(err, slack.ErrExpiredTimestamp):
		return "timestamp older than 5 minutes (replayed, or the clock is off)"
	case errors.Is(err, slack.ErrMissingHeaders):
		return "no signature headers"
	}
	return "signature does not match signing_secret"
}

// EventsHandler serves POST /slack/events: url_verification is answered
// with its challenge; an event gets 200 only after the gateway accepted it
// (or it needs no handling), else 500 so that Slack delivers it again.
// Retries (X-Slack-Retry-Num) of an accepted event are acknowledged without
// handing it over again. Before Start (and after it returned) events get
// 503.
func (a *Adapter) EventsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.verified(w, r, maxEventBody)
		if !ok {
			return
		}
		cb, err := parseCallback(body)
		if err != nil {
			http.Error(w, "not an Events API request", http.StatusBadRequest)
			return
		}
		if cb.Type == "url_verification" {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, cb.Challenge)
			return
		}
		run := a.current()
		if run == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
			a.log.Debug("slack event delivered again", "event", cb.EventID, "retry", n, "reason", r.Header.Get("X-Slack-Retry-Reason"))
		}
		if err := a.handleEvent(r.Context(), run, body); err != nil {
			a.log.Warn("slack event not accepted; Slack will deliver it again", "err", err)
			http.Error(w, "not accepted", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// InteractionsHandler serves POST /slack/interactions: a press is
// acknowledged at once and handled afterwards (the reply goes to the
// presser through the payload's response_url).
func (a *Adapter) InteractionsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.verified(w, r, maxEventBody)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		payload := form.Get("payload")
		if err != nil || payload == "" {
			http.Error(w, "no interaction payload", http.StatusBadRequest)
			return
		}
		run := a.current()
		if run == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		raw := []byte(payload)
		if !run.submit(func(ctx context.Context) { a.handleInteraction(ctx, run.h, raw) }) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// CommandsHandler serves POST /slack/commands: the command is acknowledged
// at once (with help, or a refusal, as an ephemeral answer) and handed to
// the gateway afterwards, whose reply is posted in the channel.
func (a *Adapter) CommandsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.verified(w, r, maxCommandBody)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			http.Error(w, "not a form", http.StatusBadRequest)
			return
		}
		if form.Get("ssl_check") == "1" {
			w.WriteHeader(http.StatusOK)
			return
		}
		run := a.current()
		if run == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		c := commandFromForm(form)
		reply, handOver := a.commandAck(c)
		// Answer Slack completely before the command runs (Slack wants the
		// answer within 3 s; the gateway's reply comes by chat.postMessage):
		// the queued work waits for answered.
		answered := make(chan struct{})
		defer close(answered)
		if handOver && !run.submit(func(ctx context.Context) {
			select {
			case <-answered:
				a.handleCommand(ctx, run.h, c)
			case <-ctx.Done():
			}
		}) {
			a.log.Warn("slack slash command refused: too many at once")
			reply = ephemeral(commandFailedText)
		}
		body = nil
		if reply != nil {
			body, _ = json.Marshal(reply)
			w.Header().Set("Content-Type", "application/json")
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	})
}

package telegram

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
)

// maxWebhookBody bounds one webhook update.
const maxWebhookBody = 1 << 20

// SecretHeader is the header Telegram sends the webhook secret in.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// WebhookHandler serves POST /telegram/webhook in webhook mode. A request
// without the right secret header gets 401 and is not looked at further;
// an update gets 200 only after the handler accepted it, else 500 so that
// Telegram delivers it again. Before Start has set the webhook (and after
// it returned) it answers 503.
func (a *Adapter) WebhookHandler() http.Handler {
	want := sha256.Sum256([]byte(a.opts.WebhookSecret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// Compare digests so neither the content nor the length of the
		// secret leaks through timing.
		got := sha256.Sum256([]byte(r.Header.Get(SecretHeader)))
		if a.opts.WebhookSecret == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		box := a.handler.Load()
		if box == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "update too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read update", http.StatusBadRequest)
			return
		}
		if err := a.dispatch(r.Context(), box.h, body); err != nil {
			a.log.Warn("telegram webhook update not accepted; Telegram will deliver it again", "err", err)
			http.Error(w, "not accepted", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

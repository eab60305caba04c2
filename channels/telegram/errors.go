package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-telegram/bot"

	"github.com/switchboard-gw/switchboard/channels"
)

// redactor removes the bot token from text. The token is part of every
// request URL, so network errors quote it.
type redactor struct {
	forms []string // the token as it may appear: raw and URL-escaped
}

func newRedactor(token string) redactor {
	forms := []string{token}
	for _, f := range []string{url.PathEscape(token), url.QueryEscape(token)} {
		if f != token {
			forms = append(forms, f)
		}
	}
	return redactor{forms: forms}
}

func (r redactor) string(s string) string {
	for _, f := range r.forms {
		if f != "" {
			s = strings.ReplaceAll(s, f, "<redacted>")
		}
	}
	return s
}

// redactedError carries a message with the token removed. Unwrap gives the
// original error for errors.Is/As; its own text is never shown by us (the
// library and our requests redact URLs in *url.Error before they get here).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (r redactor) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = r.string(ue.URL)
	}
	return &redactedError{msg: r.string(fmt.Sprintf("telegram %s: %v", op, err)), err: err}
}

// apiError is a failed answer to a request this package makes itself
// (getUpdates, file downloads); the library's errors cover the rest.
type apiError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  int
}

func (e *apiError) Error() string {
	if e.Description == "" {
		return fmt.Sprintf("%s: HTTP %d", e.Method, e.Code)
	}
	return fmt.Sprintf("%s: %d %s", e.Method, e.Code, e.Description)
}

// classify wraps err (redacted) in the contract's error kinds:
//
//   - 429 → *channels.RateLimitError with the retry_after Telegram gave;
//   - other 4xx (bad request, forbidden: chat not found, message to edit not
//     found, bot was blocked, message too long, unauthorized) →
//     channels.Permanent: the same request cannot succeed later;
//   - anything else (network, 5xx, cancelled) → transient.
func (r redactor) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	wrapped := r.wrap(op, err)
	var tm *bot.TooManyRequestsError
	if errors.As(err, &tm) {
		return &channels.RateLimitError{RetryAfter: time.Duration(tm.RetryAfter) * time.Second, Err: wrapped}
	}
	var ae *apiError
	if errors.As(err, &ae) {
		switch {
		case ae.Code == http.StatusTooManyRequests:
			return &channels.RateLimitError{RetryAfter: time.Duration(ae.RetryAfter) * time.Second, Err: wrapped}
		case ae.Code >= 400 && ae.Code < 500:
			return channels.Permanent(wrapped)
		}
		return wrapped
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return wrapped
	}
	var me *bot.MigrateError
	if errors.As(err, &me) || errors.Is(err, bot.ErrorBadRequest) || errors.Is(err, bot.ErrorForbidden) ||
		errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) {
		return channels.Permanent(wrapped)
	}
	return wrapped
}

// isNotModified reports Telegram's answer to an edit that changes nothing.
func isNotModified(err error) bool {
	return err != nil && strings.Contains(err.Error(), "message is not modified")
}

// isConflict reports a 409 from getUpdates: a webhook is set or another
// process polls with the same token.
func isConflict(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == http.StatusConflict
}

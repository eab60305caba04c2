package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/slack-go/slack"

	"github.com/switchboard-gw/switchboard/channels"
)

// redactor removes the adapter's secrets from text: the configured tokens
// and signing secret as written and URL-escaped, and anything shaped like a
// Slack token (a second line, for tokens we were never told about).
type redactor struct {
	forms []string
}

var tokenShape = regexp.MustCompile(`\b(xox[abposre]|xapp)-[0-9A-Za-z-]{6,}`)

func newRedactor(secrets ...string) redactor {
	var forms []string
	for _, s := range secrets {
		if len(s) < 6 {
			continue
		}
		forms = append(forms, s)
		for _, f := range []string{url.PathEscape(s), url.QueryEscape(s)} {
			if f != s {
				forms = append(forms, f)
			}
		}
	}
	return redactor{forms: forms}
}

func (r redactor) string(s string) string {
	for _, f := range r.forms {
		s = strings.ReplaceAll(s, f, "<redacted>")
	}
	return tokenShape.ReplaceAllString(s, "$1-<redacted>")
}

// redactedError carries a redacted message; Unwrap keeps the original for
// errors.Is/As (its own text is never shown).
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
	msg := err.Error()
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		if hint := errorHints[se.Err]; hint != "" {
			msg += " (" + hint + ")"
		}
		if se.Needed != "" {
			msg += " (needed scope: " + se.Needed + ")"
		}
	}
	return &redactedError{msg: r.string(fmt.Sprintf("slack %s: %s", op, msg)), err: err}
}

// errorHints say what to do about Slack's refusals people meet in set-up.
var errorHints = map[string]string{
	"not_in_channel":    "invite the bot to the channel: /invite @switchboard",
	"channel_not_found": "the channel does not exist or the bot cannot see it; invite the bot",
	"missing_scope":     "add the scope to the app (switchboard slack manifest) and reinstall it",
	"invalid_auth":      "check bot_token (OAuth & Permissions → Bot User OAuth Token)",
	"not_authed":        "check bot_token (OAuth & Permissions → Bot User OAuth Token)",
	"token_revoked":     "the token was revoked; reinstall the app and update bot_token",
	"account_inactive":  "the app was uninstalled or its owner deactivated; reinstall it",
}

// transientSlackErrors are ok:false answers that a later retry can fix; every
// other refusal is permanent (the same request cannot succeed).
var transientSlackErrors = map[string]bool{
	"internal_error": true, "fatal_error": true, "service_unavailable": true,
	"request_timeout": true, "team_added_to_org": true, "ekm_access_denied": true,
}

// authErrors mean the token itself is refused.
var authErrors = map[string]bool{
	"invalid_auth": true, "not_authed": true, "token_revoked": true, "account_inactive": true,
	"token_expired": true, "not_allowed_token_type": true, "no_permission": true,
}

// classify wraps err (redacted) in the contract's error kinds: 429 →
// *channels.RateLimitError with Slack's Retry-After; refusals (ok:false
// with an error code, other 4xx) → channels.Permanent, except the few Slack
// names as temporary; network errors and 5xx → transient.
func (r redactor) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	wrapped := r.wrap(op, err)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &channels.RateLimitError{RetryAfter: rl.RetryAfter, Err: wrapped}
	}
	if code := slackCode(err); code != "" {
		switch {
		case code == "ratelimited":
			return &channels.RateLimitError{Err: wrapped}
		case transientSlackErrors[code]:
			return wrapped
		}
		return channels.Permanent(wrapped)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		switch {
		case sc.Code == http.StatusTooManyRequests:
			return &channels.RateLimitError{Err: wrapped}
		case sc.Code >= 400 && sc.Code < 500:
			return channels.Permanent(wrapped)
		}
		return wrapped
	}
	var perm *permanentLocal
	if errors.As(err, &perm) {
		return channels.Permanent(wrapped)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return wrapped
	}
	return wrapped
}

// permanentLocal marks a refusal of our own (bad location, unreadable file).
type permanentLocal struct{ msg string }

func (e *permanentLocal) Error() string { return e.msg }

func refuse(format string, args ...any) error {
	return &permanentLocal{msg: fmt.Sprintf(format, args...)}
}

// slackCode is the error code of an ok:false answer ("" for other errors).
func slackCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	var pse *slack.SlackErrorResponse
	if errors.As(err, &pse) && pse != nil {
		return pse.Err
	}
	return ""
}

func isAuthError(err error) bool { return authErrors[slackCode(err)] }

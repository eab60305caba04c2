package channels

import (
	"errors"
	"fmt"
	"time"
)

// Adapters classify their errors so the outbox can decide without knowing
// platforms:
//
//   - *RateLimitError: retry after RetryAfter, not before;
//   - Permanent(err): retrying cannot help (chat not found, bot blocked,
//     message too long, invalid message); give up and report;
//   - anything else: transient (network, 5xx); retry with backoff.

// ErrNotSupported is returned (wrapped as permanent) for an operation the
// surface does not have, such as Edit on a surface without edits.
var ErrNotSupported = errors.New("not supported by this chat surface")

// RateLimitError reports that the platform refused a call for sending too
// fast (HTTP 429) and said when to try again.
type RateLimitError struct {
	// RetryAfter is how long the platform asked us to wait; 0 if it did not
	// say.
	RetryAfter time.Duration
	// Err is the platform's error, if any.
	Err error
}

// Error implements error.
func (e *RateLimitError) Error() string {
	msg := "rate limited by the chat platform"
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf("; retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the platform's error.
func (e *RateLimitError) Unwrap() error { return e.Err }

// RetryAfter reports the wait a *RateLimitError in err's chain asks for.
func RetryAfter(err error) (time.Duration, bool) {
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	return 0, false
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that retrying cannot fix. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or an error it wraps) was marked with
// Permanent. A rate limit is never permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

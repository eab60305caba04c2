package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-gw/switchboard/channels"
)

// discordHost is the host of discordgo's REST endpoints, which are fixed at
// package init: pointing REST elsewhere means rewriting requests to it.
const discordHost = "discord.com"

// transport is the adapter's http.RoundTripper. It
//
//   - rewrites requests for discord.com to Options.APIURL when one is set
//     (a proxy, or the fake in tests): discordgo's endpoints cannot be
//     changed, and GET /gateway goes through here too;
//   - replaces discordgo's rate limiter: it reads the X-RateLimit-* headers
//     of each answer and removes them, so discordgo's own buckets never
//     sleep (they would block the caller for as long as Discord says,
//     without a context). When a bucket is exhausted, the next request for
//     it waits for the reset if that is at most maxWait, and otherwise
//     fails at once with *channels.RateLimitError, which the outbox turns
//     into a retry later.
type transport struct {
	base    http.RoundTripper
	rewrite *url.URL // nil: talk to Discord
	maxWait time.Duration
	now     func() time.Time

	mu      sync.Mutex
	buckets map[string]time.Time // route key → when the bucket resets (exhausted until then)
}

func newTransport(base http.RoundTripper, apiURL string, maxWait time.Duration, now func() time.Time) (*transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &transport{base: base, maxWait: maxWait, now: now, buckets: map[string]time.Time{}}
	if apiURL != "" {
		u, err := url.Parse(strings.TrimRight(apiURL, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("discord: api_url %q is not an http(s) URL", apiURL)
		}
		t.rewrite = u
	}
	return t, nil
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := ""
	if req.URL.Host == discordHost {
		key = routeKey(req.Method, req.URL.Path)
		if err := t.wait(req.Context(), key); err != nil {
			return nil, err
		}
		if t.rewrite != nil {
			req = req.Clone(req.Context())
			req.URL.Scheme = t.rewrite.Scheme
			req.URL.Host = t.rewrite.Host
			req.URL.Path = t.rewrite.Path + req.URL.Path
			req.URL.RawPath = ""
			req.Host = ""
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || key == "" {
		return resp, err
	}
	t.observe(key, resp)
	for h := range resp.Header {
		if strings.HasPrefix(strings.ToLower(h), "x-ratelimit-") {
			resp.Header.Del(h)
		}
	}
	return resp, nil
}

// wait holds a request for an exhausted bucket until it resets, at most
// maxWait; longer waits fail at once.
func (t *transport) wait(ctx context.Context, key string) error {
	t.mu.Lock()
	reset, ok := t.buckets[key]
	t.mu.Unlock()
	if !ok {
		return nil
	}
	d := reset.Sub(t.now())
	if d <= 0 {
		return nil
	}
	if d > t.maxWait {
		return &channels.RateLimitError{RetryAfter: d.Round(time.Millisecond)}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// observe records an exhausted bucket from a successful answer. A 429 is
// not recorded: the caller gets a *channels.RateLimitError with the delay
// and waits itself, so holding the next request too would count it twice.
func (t *transport) observe(key string, resp *http.Response) {
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if resp.Header.Get("X-RateLimit-Remaining") != "0" {
		delete(t.buckets, key)
		return
	}
	after, err := strconv.ParseFloat(resp.Header.Get("X-RateLimit-Reset-After"), 64)
	if err != nil || after <= 0 || math.IsNaN(after) || math.IsInf(after, 0) {
		return
	}
	after = min(after, 3600)
	t.buckets[key] = t.now().Add(time.Duration(after * float64(time.Second)))
	if len(t.buckets) > 4096 { // forget resets long past
		now := t.now()
		for k, r := range t.buckets {
			if r.Before(now) {
				delete(t.buckets, k)
			}
		}
	}
}

// snowflakeSegment matches an id in a path.
var snowflakeSegment = regexp.MustCompile(`^[0-9]+$`)

// routeKey approximates Discord's rate-limit bucket of a request: the
// method and the path with ids replaced, except the major parameter (the
// channel, guild or webhook the path starts with), which has buckets of its
// own. Interaction and webhook tokens are replaced too.
func routeKey(method, path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, p := range parts {
		if i > 0 && (parts[i-1] == "webhooks" || parts[i-1] == "interactions") {
			continue // the major parameter
		}
		if i > 1 && (parts[i-2] == "webhooks" || parts[i-2] == "interactions") {
			parts[i] = ":token"
			continue
		}
		if snowflakeSegment.MatchString(p) && !(i > 0 && (parts[i-1] == "channels" || parts[i-1] == "guilds")) {
			parts[i] = ":id"
		}
	}
	return method + " /" + strings.Join(parts, "/")
}

// redactor removes secrets from text: the bot token, and interaction or
// webhook tokens, which are part of the URLs of interaction responses (and
// so of network errors and discordgo's rate-limit errors).
type redactor struct{ token string }

var urlTokens = regexp.MustCompile(`(/(?:webhooks|interactions)/[0-9]+/)[^/?\s"]+`)

func (r redactor) string(s string) string {
	if r.token != "" {
		s = strings.ReplaceAll(s, r.token, "<redacted>")
	}
	return urlTokens.ReplaceAllString(s, "${1}<redacted>")
}

// redactedError carries a redacted message; Unwrap keeps the original for
// errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// API error codes the adapter branches on.
const (
	codeUnknownChannel      = 10003
	codeUnknownMessage      = 10008
	codeThreadAlreadyExists = 160004
)

// apiCode returns Discord's JSON error code of a REST error, 0 if none.
func apiCode(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Message.Code
	}
	return 0
}

// httpStatus returns the HTTP status of a REST error, 0 if none.
func httpStatus(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

// classify wraps err (redacted) in the contract's error kinds:
//
//   - a rate limit (a 429 from Discord, or a bucket the transport knows is
//     exhausted for longer than it waits) → *channels.RateLimitError;
//   - other 4xx (unknown channel or message, missing access or permissions,
//     invalid form body, DMs closed, unauthorized) → channels.Permanent;
//   - anything else (network, 5xx, cancelled) → transient.
func (r redactor) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var rl *channels.RateLimitError
	if errors.As(err, &rl) {
		return &channels.RateLimitError{RetryAfter: rl.RetryAfter, Err: &redactedError{msg: "discord " + op + ": rate limited", err: err}}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = r.string(ue.URL)
	}
	msg := err.Error()
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		msg = "HTTP " + re.Response.Status
		if re.Message != nil && re.Message.Message != "" {
			msg += ": " + re.Message.Message + " (code " + strconv.Itoa(re.Message.Code) + ")"
		}
	}
	wrapped := &redactedError{msg: r.string("discord " + op + ": " + msg), err: err}
	var dl *discordgo.RateLimitError
	if errors.As(err, &dl) {
		var d time.Duration
		if dl.RateLimit != nil && dl.TooManyRequests != nil {
			d = dl.RetryAfter
		}
		return &channels.RateLimitError{RetryAfter: d, Err: wrapped}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return wrapped
	}
	if errors.Is(err, discordgo.ErrUnauthorized) {
		return channels.Permanent(wrapped)
	}
	if re != nil && re.Response != nil {
		if s := re.Response.StatusCode; s >= 400 && s < 500 && s != http.StatusTooManyRequests && s != http.StatusRequestTimeout {
			return channels.Permanent(wrapped)
		}
	}
	return wrapped
}

// call makes one REST request with a JSON body (nil for none) and decodes
// the answer into out (nil to ignore it). bucket groups requests the way
// discordgo serializes them (one in flight per bucket).
func (a *Adapter) call(ctx context.Context, op, method, endpoint, bucket string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return channels.Permanent(fmt.Errorf("discord %s: encode request: %w", op, err))
		}
	}
	return a.raw(ctx, op, method, endpoint, bucket, "application/json", b, out)
}

// callFiles makes a multipart request: payload as payload_json plus files.
func (a *Adapter) callFiles(ctx context.Context, op, method, endpoint, bucket string, payload any, files []*discordgo.File, out any) error {
	ct, b, err := discordgo.MultipartBodyWithJSON(payload, files)
	if err != nil {
		return channels.Permanent(fmt.Errorf("discord %s: encode upload: %w", op, err))
	}
	return a.raw(ctx, op, method, endpoint, bucket, ct, b, out)
}

func (a *Adapter) raw(ctx context.Context, op, method, endpoint, bucket, contentType string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if bucket == "" {
		bucket = strings.SplitN(endpoint, "?", 2)[0]
	}
	resp, err := a.sess.RequestRaw(method, endpoint, contentType, body, bucket, 0,
		discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false), discordgo.WithRestRetries(1))
	if err != nil {
		return a.red.classify(op, err)
	}
	if out != nil && len(resp) > 0 {
		if err := json.Unmarshal(resp, out); err != nil {
			return fmt.Errorf("discord %s: decode answer: %w", op, err)
		}
	}
	return nil
}

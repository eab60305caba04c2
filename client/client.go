package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Options configure a Client.
type Options struct {
	// HTTPClient makes the requests; nil means a client without a timeout
	// (streams are long), whose requests end with their contexts.
	HTTPClient *http.Client
	// Retries is how often Send retries a request that failed in transit or
	// with a 5xx answer (default 4); the retry carries the same
	// Idempotency-Key, so the message is queued once.
	Retries int
	// MinBackoff and MaxBackoff bound the waits between retries and stream
	// reconnects (defaults 100ms and 5s).
	MinBackoff, MaxBackoff time.Duration
}

// Client calls one switchboard gateway's API. It is safe for concurrent
// use.
type Client struct {
	base  string // "http://host:port", no trailing slash
	token string
	hc    *http.Client
	opts  Options
}

// New returns a Client for the gateway at baseURL (e.g.
// "http://127.0.0.1:7700") with a bearer token of its [channels.api].
func New(baseURL, token string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	if token == "" {
		return nil, errors.New("client: a token is required")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Retries <= 0 {
		opts.Retries = 4
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), token: token, hc: opts.HTTPClient, opts: opts}, nil
}

// APIError is an error answer of the API.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("switchboard API: %d %s: %s", e.Status, e.Code, e.Message)
}

// retryable reports whether a request that failed with err may be tried
// again: transport failures and 5xx answers, not the caller's mistakes.
func retryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// do sends one request and decodes a JSON answer into out (nil: discard).
func (c *Client) do(ctx context.Context, method, path string, header http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return apiError(resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

func apiError(status int, data []byte) error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error.Code == "" {
		e.Error.Code, e.Error.Message = http.StatusText(status), strings.TrimSpace(string(data))
	}
	return &APIError{Status: status, Code: e.Error.Code, Message: e.Error.Message}
}

// Agents lists the agents conversations can talk to.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	var out struct {
		Agents []Agent `json:"agents"`
	}
	err := c.do(ctx, "GET", "/v1/agents", nil, nil, &out)
	return out.Agents, err
}

// CreateConversation starts a conversation.
func (c *Client) CreateConversation(ctx context.Context, nc NewConversation) (Conversation, error) {
	var out Conversation
	err := c.do(ctx, "POST", "/v1/conversations", nil, nc, &out)
	return out, err
}

// Conversations returns a page of the caller's conversations, newest
// first: cursor "" for the first page, then the NextCursor of the last;
// limit 0 for the server's default.
func (c *Client) Conversations(ctx context.Context, cursor string, limit int) (ConversationPage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out ConversationPage
	err := c.do(ctx, "GET", "/v1/conversations"+query(q), nil, nil, &out)
	return out, err
}

// Conversation returns one of the caller's conversations.
func (c *Client) Conversation(ctx context.Context, id string) (Conversation, error) {
	var out Conversation
	err := c.do(ctx, "GET", "/v1/conversations/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// Messages returns a page of a conversation's history, oldest first.
func (c *Client) Messages(ctx context.Context, conv string, q MessageQuery) (MessagePage, error) {
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Before != "" {
		v.Set("before", q.Before)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out MessagePage
	err := c.do(ctx, "GET", "/v1/conversations/"+url.PathEscape(conv)+"/messages"+query(v), nil, nil, &out)
	return out, err
}

// SendOptions tune Send.
type SendOptions struct {
	// IdempotencyKey names the request across retries; "" means a random
	// key, so Send's own retries queue once.
	IdempotencyKey string
}

// Send queues a message and returns once the gateway queued it durably.
// Failures in transit and 5xx answers are retried with backoff under the
// same Idempotency-Key, so the message is queued once.
func (c *Client) Send(ctx context.Context, conv string, m NewMessage, o SendOptions) (Queued, error) {
	key := o.IdempotencyKey
	if key == "" {
		key = "go-" + rand.Text()
	}
	h := http.Header{"Idempotency-Key": {key}}
	var out Queued
	var err error
	wait := time.Duration(0)
	for try := 0; try <= c.opts.Retries; try++ {
		if try > 0 {
			wait = nextBackoff(wait, c.opts.MinBackoff, c.opts.MaxBackoff)
			if !sleep(ctx, wait) {
				return Queued{}, ctx.Err()
			}
		}
		if err = c.do(ctx, "POST", "/v1/conversations/"+url.PathEscape(conv)+"/messages", h, m, &out); err == nil || !retryable(err) {
			break
		}
	}
	return out, err
}

// Cancel asks the gateway to stop the conversation's running turn.
func (c *Client) Cancel(ctx context.Context, conv string) error {
	return c.do(ctx, "POST", "/v1/conversations/"+url.PathEscape(conv)+"/cancel", nil, struct{}{}, nil)
}

// Approvals lists the pending approvals the caller may decide.
func (c *Client) Approvals(ctx context.Context) ([]Approval, error) {
	var out struct {
		Approvals []Approval `json:"approvals"`
	}
	err := c.do(ctx, "GET", "/v1/approvals", nil, nil, &out)
	return out.Approvals, err
}

// Decide answers an approval through the gateway's one decide path. A
// refusal (not the caller's, already decided, expired) is an *APIError
// with Status 409.
func (c *Client) Decide(ctx context.Context, approvalID string, d Decision) (DecisionResult, error) {
	var out DecisionResult
	err := c.do(ctx, "POST", "/v1/approvals/"+url.PathEscape(approvalID), nil, d, &out)
	return out, err
}

// OpenAPI returns the server's OpenAPI document.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	var out []byte
	err := c.do(ctx, "GET", "/v1/openapi.json", nil, nil, &out)
	return out, err
}

func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// nextBackoff doubles the wait between lo and hi, with jitter.
func nextBackoff(d, lo, hi time.Duration) time.Duration {
	d *= 2
	if d < lo {
		d = lo
	}
	if d > hi {
		d = hi
	}
	// Up to a quarter of jitter, so reconnecting clients spread out.
	var b [2]byte
	_, _ = rand.Read(b[:])
	return d - time.Duration(int64(d)/4*int64(b[0])/255)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

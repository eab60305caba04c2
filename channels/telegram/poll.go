package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// allowedUpdates are the update types requested from Telegram. Edited
// messages are not: an edit is not a new turn.
func allowedUpdates() []string { return []string{"message", "callback_query"} }

// maxUpdatesBody bounds a getUpdates answer (100 updates are far smaller).
const maxUpdatesBody = 32 << 20

// poll runs the getUpdates loop until ctx ends. The offset advances past an
// update only after it was handled (OnInbound returned nil), so updates of a
// process that dies are read again by the next one; when the handler
// refuses an update, the rest of the batch waits and the batch is fetched
// again after a backoff.
func (a *Adapter) poll(ctx context.Context, h channels.Handler) {
	var offset int64
	fetch := backoff{min: a.minBackoff, max: a.maxBackoff}
	handle := backoff{min: a.minBackoff, max: a.maxBackoff}
	var out outage
	for ctx.Err() == nil {
		raws, err := a.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			err = a.red.classify("getUpdates", err)
			wait := fetch.next()
			if d, ok := channels.RetryAfter(err); ok && d > 0 {
				wait = d
			}
			out.fail(a, err)
			sleep(ctx, wait)
			continue
		}
		fetch.reset()
		out.recovered(a)
		for _, raw := range raws {
			id, ok := updateID(raw)
			if !ok {
				a.log.Warn("telegram update without update_id ignored")
				continue
			}
			if err := a.dispatch(ctx, h, raw); err != nil {
				if ctx.Err() != nil {
					return
				}
				wait := handle.next()
				a.log.Warn("telegram update not accepted; it will be delivered again", "update", id, "err", err, "wait", wait)
				sleep(ctx, wait)
				break
			}
			handle.reset()
			offset = max(offset, id+1)
		}
	}
}

func updateID(raw []byte) (int64, bool) {
	var u struct {
		UpdateID *int64 `json:"update_id"`
	}
	if json.Unmarshal(raw, &u) != nil || u.UpdateID == nil {
		return 0, false
	}
	return *u.UpdateID, true
}

// outage logs a polling outage once when it starts and once when it ends,
// not on every failed attempt.
type outage struct {
	since    time.Time
	attempts int
}

func (o *outage) fail(a *Adapter, err error) {
	if o.attempts == 0 {
		o.since = time.Now()
		msg := "telegram polling failed; retrying with backoff until it recovers"
		if isConflict(err) {
			msg = "telegram polling conflicts with a webhook or another process using this bot token; retrying"
		}
		a.log.Warn(msg, "err", err)
	} else {
		a.log.Debug("telegram polling still failing", "attempt", o.attempts+1, "err", err)
	}
	o.attempts++
}

func (o *outage) recovered(a *Adapter) {
	if o.attempts > 0 {
		a.log.Info("telegram polling recovered", "after", time.Since(o.since).Round(time.Millisecond), "attempts", o.attempts)
	}
	o.attempts = 0
}

// getUpdates makes one long-poll request. It is our own request, not the
// library's loop, which acknowledges updates before handlers run.
func (a *Adapter) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	body, err := json.Marshal(struct {
		Offset         int64    `json:"offset,omitempty"`
		Timeout        int      `json:"timeout"`
		AllowedUpdates []string `json:"allowed_updates"`
	}{offset, int(a.opts.PollTimeout / time.Second), allowedUpdates()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.PollTimeout+15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.opts.APIURL+"/bot"+a.opts.Token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUpdatesBody))
	if err != nil {
		return nil, fmt.Errorf("read getUpdates answer: %w", err)
	}
	var r struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &apiError{Method: "getUpdates", Code: resp.StatusCode, Description: "answer is not Bot API JSON"}
	}
	if !r.OK {
		code := r.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return nil, &apiError{Method: "getUpdates", Code: code, Description: r.Description, RetryAfter: r.Parameters.RetryAfter}
	}
	return r.Result, nil
}

// errTooLarge is a download over Options.MaxDownload.
var errTooLarge = errors.New("file is larger than the download limit")

package agentcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of one model step (see Request.MaxStepOutput and
// OpenAIOptions.StreamIdleTimeout).
const (
	// DefaultMaxStepOutput bounds the text, reasoning and tool calls one
	// step may stream, in bytes.
	DefaultMaxStepOutput = 1 << 20
	// DefaultStreamIdleTimeout is how long a model server may send nothing
	// before the step fails.
	DefaultStreamIdleTimeout = 120 * time.Second

	// eventSlack is what one SSE event may carry beyond MaxStepOutput: the
	// JSON around a delta. One event larger than that is refused before it
	// is buffered whole.
	eventSlack = 64 << 10
	// callOverhead is what each tool call counts against MaxStepOutput on
	// top of its id, name and arguments, so a flood of empty calls is
	// bounded too.
	callOverhead = 64
)

var (
	// errOutputLimit: the step's output passed its cap.
	errOutputLimit = errors.New("step output limit reached")
	// errEventTooLarge: one SSE event passed the cap; the SSE reader
	// refuses it.
	errEventTooLarge = errors.New("stream event larger than the step output limit")
	// errStreamIdle is the cause of a step context ended by the idle timer.
	errStreamIdle = errors.New("the model server sent nothing for too long")
)

// outputLimitError is the ProviderError of a step that passed its cap.
func outputLimitError(limit int, err error) *ProviderError {
	return &ProviderError{
		Kind: ProviderOutputLimit,
		Message: fmt.Sprintf("the model's output exceeded max_step_output (%s) in one step; the stream was closed "+
			"and the partial answer discarded", formatBytes(limit)),
		Hint: "the model may be repeating itself: send a message to try again or ask for a shorter answer, " +
			"or raise max_step_output in [agents.NAME]",
		Err: err,
	}
}

// stalledError is the ProviderError of a step whose server went silent.
func (p *OpenAI) stalledError(err error) *ProviderError {
	return &ProviderError{
		Kind: ProviderStalled,
		Message: fmt.Sprintf("%s sent nothing for %s (stream_idle_timeout); the stream was closed",
			p.safeURL(), p.idle),
		Hint: "the server may be overloaded or stuck: send a message to try again, " +
			"or raise stream_idle_timeout in [providers.NAME] for a slow local model",
		Err: err,
	}
}

// formatBytes prints n the way the config reference writes sizes.
func formatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// streamGuard watches one step's HTTP exchange: it cancels the step's
// context with errStreamIdle when nothing arrived for idle (waiting for
// the response headers counts, so does a silent body).
//
// The timer goroutine and the reading goroutine share only last (atomic)
// and the context's cancel function; stop ends the timer.
type streamGuard struct {
	idle   time.Duration
	cancel context.CancelCauseFunc
	last   atomic.Int64 // UnixNano of the last sign of life

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

// newStreamGuard returns a context for the step and its guard. idle <= 0
// disables the idle timer. The caller must call stop.
func newStreamGuard(ctx context.Context, idle time.Duration) (context.Context, *streamGuard) {
	ctx, cancel := context.WithCancelCause(ctx)
	g := &streamGuard{idle: idle, cancel: cancel}
	g.touch()
	if idle > 0 {
		g.mu.Lock()
		g.timer = time.AfterFunc(idle, g.check)
		g.mu.Unlock()
	}
	return ctx, g
}

// touch records a sign of life. It is called on every read, so it only
// stores a time; the timer looks at it when it fires.
func (g *streamGuard) touch() { g.last.Store(time.Now().UnixNano()) }

// check runs when the timer fires: it re-arms for the rest of the window
// when there was a sign of life since, and ends the step otherwise.
func (g *streamGuard) check() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	quiet := time.Since(time.Unix(0, g.last.Load()))
	if quiet < g.idle {
		g.timer.Reset(g.idle - quiet)
		return
	}
	g.cancel(errStreamIdle)
}

// stop ends the timer and releases the step's context.
func (g *streamGuard) stop() {
	g.mu.Lock()
	g.stopped = true
	if g.timer != nil {
		g.timer.Stop()
	}
	g.mu.Unlock()
	g.cancel(nil)
}

// idled reports whether the guard ended the step.
func (g *streamGuard) idled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errStreamIdle)
}

// middleware is an openai-go middleware (one call per attempt) that
// counts the response, and every read of its body, as a sign of life.
func (g *streamGuard) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	g.touch()
	res, err := next(req)
	g.touch()
	if err == nil && res != nil && res.Body != nil {
		res.Body = &guardedBody{rc: res.Body, g: g}
	}
	return res, err
}

// guardedBody is a response body that reports reads to its guard.
type guardedBody struct {
	rc io.ReadCloser
	g  *streamGuard
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.g.touch()
	}
	return n, err
}

func (b *guardedBody) Close() error { return b.rc.Close() }

// outputBudget counts what one step streamed against its cap.
type outputBudget struct {
	limit, used int
}

// spend counts n more bytes; errOutputLimit when they pass the cap.
func (b *outputBudget) spend(n int) error {
	if n > b.limit-b.used {
		b.used = b.limit
		return errOutputLimit
	}
	b.used += n
	return nil
}

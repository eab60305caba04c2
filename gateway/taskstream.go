package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// taskStream is the agentcore.Sink of a task child's turn. Nothing of the
// child's turn is posted as messages: its activity is summarized into the
// task's one status line (edited in place, at most once per edit
// interval) or, on surfaces that render live, into LiveTask events whose
// Wire is a task_progress event; the child's asks reach live surfaces as
// approval cards labelled with the task (their messages with buttons are
// posted through the outbox when the turn parks, like any ask).
type taskStream struct {
	env      *env
	ad       channels.Adapter
	live     channels.LiveSurface
	loc      channels.Location
	interval time.Duration

	mu       sync.Mutex
	task     agentcore.Task
	progress string
	dirty    bool
	queue    []channels.LiveEvent // approval cards for live surfaces, in order
	ref      string               // the status line's platform message id, once known
	closed   bool

	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func newTaskStream(ctx context.Context, e *env, loc channels.Location, task agentcore.Task) *taskStream {
	s := &taskStream{env: e, loc: loc, task: task, interval: e.channel(loc.Channel).EditInterval,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if s.interval < 200*time.Millisecond {
		s.interval = 200 * time.Millisecond
	}
	if a, ok := e.adapter(loc); ok {
		s.ad = a
		s.live, _ = a.(channels.LiveSurface)
	}
	if s.ad != nil && (s.live != nil || s.ad.Capabilities().Edit) {
		s.dirty = true // show "running" at once
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.run(ctx) }()
	}
	return s
}

// Emit implements agentcore.Sink.
func (s *taskStream) Emit(e agentcore.Event) {
	s.mu.Lock()
	switch e.Type {
	case agentcore.EventToolCall:
		title := e.Title
		if title == "" {
			title = e.ToolName
		}
		s.progress = title
	case agentcore.EventAssistantMessage:
		s.progress = firstLineOf(e.Text)
	case agentcore.EventApprovalRequest:
		if e.Approval != nil {
			s.progress = "asks to run " + e.Approval.Summary
			if s.live != nil {
				e.TaskID = s.task.ID
				ev := channels.LiveEvent{Kind: channels.LiveApproval, Location: s.loc, ConversationID: e.ConversationID,
					RunID: e.RunID, SeqID: e.SeqID, At: s.env.now(), Approval: approvalCard(*e.Approval, nil, "")}
				ev.Wire = marshalEvent(e)
				s.queue = append(s.queue, ev)
			}
		}
	default:
		s.mu.Unlock()
		return
	}
	s.dirty = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// show sets the task's status and shows it at once (a child parked on
// approvals).
func (s *taskStream) show(ctx context.Context, t agentcore.Task, progress string) {
	s.mu.Lock()
	s.task, s.progress = t, progress
	s.mu.Unlock()
	s.publish(ctx)
}

// run publishes the status at most once per interval until the stream
// stops, then once more.
func (s *taskStream) run(ctx context.Context) {
	var last time.Time
	for {
		s.publish(ctx)
		last = time.Now()
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		if wait := s.interval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.done:
				t.Stop()
				s.publish(ctx)
				return
			case <-t.C:
			}
		}
	}
}

// publish shows the current status where the surface shows it.
func (s *taskStream) publish(ctx context.Context) {
	s.mu.Lock()
	dirty, queue := s.dirty, s.queue
	s.dirty, s.queue = false, nil
	task, progress, ref := s.task, s.progress, s.ref
	s.mu.Unlock()
	if s.ad == nil {
		return
	}
	now := s.env.now()
	if s.live != nil {
		if dirty {
			s.live.Live(ctx, taskLiveEvent(s.loc, task, progress, now))
		}
		for _, ev := range queue {
			s.live.Live(ctx, ev)
		}
		return
	}
	if !dirty || task.StatusPost == 0 || !s.ad.Capabilities().Edit {
		return
	}
	if ref == "" {
		it, err := s.env.opts.Store.OutboundItem(ctx, task.StatusPost)
		if err != nil || !it.Sent || it.MessageID == "" {
			return // not sent yet: the next round tries again
		}
		ref = it.MessageID
		s.mu.Lock()
		s.ref = ref
		s.mu.Unlock()
	}
	var buttons []Button
	if s.ad.Capabilities().Buttons && !task.Status.Final() {
		if bs, err := s.env.opts.Store.ApprovalButtons(ctx, task.ConversationID); err == nil {
			buttons = bs
		}
	}
	msg := statusMessage(task, progress, now, buttons)
	if err := s.ad.Edit(ctx, channels.MessageRef{Location: s.loc, ID: ref}, msg); err != nil {
		s.env.log.Debug("edit a task's status line", "task", task.ID, "err", err)
	}
	s.env.metrics.StreamEdits.WithLabelValues(s.loc.Channel).Inc()
}

// stop ends the stream after a last publish and waits for its goroutine.
func (s *taskStream) stop() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	s.wg.Wait()
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clipString(s, 200)
}

func marshalEvent(e agentcore.Event) []byte {
	b, _ := json.Marshal(e)
	return b
}

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// outMessage is the gateway's serializable form of a chat message: the
// body of outbox items.
type outMessage struct {
	Markdown    string           `json:"md,omitempty"`
	Notice      string           `json:"notice,omitempty"`
	Activity    []activity       `json:"activity,omitempty"`
	Plan        []agentcore.Todo `json:"plan,omitempty"`
	Buttons     [][]buttonSpec   `json:"buttons,omitempty"`
	Attachments []attachmentSpec `json:"attachments,omitempty"`
	ReplyTo     string           `json:"replyTo,omitempty"` // the platform id of the message answered
}

type activity struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Kind   string `json:"kind,omitempty"`
	Status string `json:"status"`
	Diff   string `json:"diff,omitempty"`
}

type buttonSpec struct {
	Label string `json:"label"`
	Style string `json:"style,omitempty"`
	Token string `json:"token"`
}

type attachmentSpec struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	MIME    string `json:"mime,omitempty"`
	Caption string `json:"caption,omitempty"`
}

func (m outMessage) channels() channels.Message {
	var parts []channels.Part
	for _, a := range m.Activity {
		parts = append(parts, channels.ToolActivity{ID: a.ID, Title: a.Title, Kind: a.Kind, Status: a.Status, Diff: a.Diff})
	}
	if len(m.Plan) > 0 {
		var items []channels.PlanItem
		for _, t := range m.Plan {
			items = append(items, channels.PlanItem{Content: t.Content, Status: t.Status, Priority: t.Priority})
		}
		parts = append(parts, channels.Plan{Items: items})
	}
	if m.Markdown != "" {
		parts = append(parts, channels.Text{Markdown: m.Markdown})
	}
	if m.Notice != "" {
		parts = append(parts, channels.Notice{Text: m.Notice})
	}
	if len(m.Buttons) > 0 {
		var rows [][]channels.Button
		for _, r := range m.Buttons {
			var row []channels.Button
			for _, b := range r {
				row = append(row, channels.Button{Label: b.Label, Style: b.Style, Token: b.Token})
			}
			rows = append(rows, row)
		}
		parts = append(parts, channels.Buttons{Rows: rows})
	}
	for _, a := range m.Attachments {
		parts = append(parts, channels.Attachment{Name: a.Name, Path: a.Path, MIME: a.MIME, Caption: a.Caption})
	}
	return channels.Message{Parts: parts, ReplyTo: m.ReplyTo}
}

func (m outMessage) empty() bool {
	return m.Markdown == "" && m.Notice == "" && len(m.Activity) == 0 && len(m.Plan) == 0 && len(m.Buttons) == 0 && len(m.Attachments) == 0
}

// renderer turns one turn's events into a streamed chat message. Events
// arrive on the turn's goroutine; platform calls happen on the renderer's
// own streaming goroutine, so a slow platform never slows the agent.
type renderer struct {
	g        *Gateway
	ctx      context.Context
	loc      channels.Location
	agentID  string
	conv     string
	caps     channels.Capabilities
	interval time.Duration
	replyTo  string // the person's message the turn answers

	mu          sync.Mutex
	texts       []string // finished assistant texts of the turn
	current     strings.Builder
	activity    []activity
	plan        []agentcore.Todo
	attachments []attachmentSpec
	dirty       bool
	ref         string // the streamed message's platform id

	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func (g *Gateway) newRenderer(ctx context.Context, loc channels.Location, agentID, conv string) *renderer {
	r := &renderer{g: g, ctx: ctx, loc: loc, agentID: agentID, conv: conv, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if a, ok := g.adapterFor(loc); ok {
		r.caps = a.Capabilities()
	}
	r.interval = g.opts.Channels[loc.Channel].EditInterval
	if r.caps.Edit {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.stream()
		}()
	}
	return r
}

// Emit implements agentcore.Sink.
func (r *renderer) Emit(e agentcore.Event) {
	switch e.Type {
	case agentcore.EventAssistantDelta:
		r.mu.Lock()
		r.current.WriteString(e.Text)
		r.mu.Unlock()
		r.touch()
	case agentcore.EventAssistantMessage:
		r.mu.Lock()
		r.current.Reset()
		r.texts = append(r.texts, e.Text)
		r.mu.Unlock()
		r.touch()
	case agentcore.EventToolCall:
		r.mu.Lock()
		r.current.Reset()
		r.activity = append(r.activity, activity{ID: e.ToolCallID, Title: toolTitle(e.ToolName, e.Arguments), Kind: toolKind(e.ToolName), Status: channels.StatusRunning})
		r.mu.Unlock()
		r.touch()
	case agentcore.EventToolResult:
		r.mu.Lock()
		if !r.hasActivity(e.ToolCallID) {
			// A resumed turn: the call was shown by the turn that asked.
			r.activity = append(r.activity, activity{ID: e.ToolCallID, Title: e.ToolName, Kind: toolKind(e.ToolName), Status: channels.StatusRunning})
		}
		for i := range r.activity {
			if r.activity[i].ID == e.ToolCallID {
				r.activity[i].Status = channels.StatusDone
				if e.IsError {
					r.activity[i].Status = channels.StatusError
					if strings.HasPrefix(e.Text, "Permission denied") || strings.HasPrefix(e.Text, "Not run") {
						r.activity[i].Status = channels.StatusDenied
					}
				}
			}
		}
		for _, p := range e.Attachments {
			r.attachments = append(r.attachments, attachmentSpec{Name: baseName(p), Path: p})
		}
		r.mu.Unlock()
		r.touch()
	case agentcore.EventPlan:
		r.mu.Lock()
		r.plan = e.Todos
		r.mu.Unlock()
		r.touch()
	case agentcore.EventApprovalRequest:
		r.mu.Lock()
		for i := range r.activity {
			if r.activity[i].ID == e.ToolCallID {
				r.activity[i].Status = channels.StatusPending
			}
		}
		r.mu.Unlock()
		r.touch()
	case agentcore.EventApprovalDecision:
		if e.Approval != nil {
			r.g.approvalDecided(r.ctx, *e.Approval)
		}
	case agentcore.EventCompaction:
		r.g.post(r.ctx, r.loc, outMessage{Notice: e.Text})
	}
}

// parkedTurn is what a turn that stopped for approval showed, so the turn
// that resumes it can continue the same message.
type parkedTurn struct {
	loc      string
	ref      string
	texts    []string
	activity []activity
}

// parkedState returns the streamed message of a parked turn.
func (r *renderer) parkedState() (parkedTurn, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ref == "" {
		return parkedTurn{}, false
	}
	return parkedTurn{loc: r.loc.String(), ref: r.ref, texts: append([]string(nil), r.texts...), activity: append([]activity(nil), r.activity...)}, true
}

// adopt continues a parked turn's message.
func (r *renderer) adopt(p parkedTurn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ref = p.ref
	r.texts = append(r.texts, p.texts...)
	r.activity = append(r.activity, p.activity...)
}

func (r *renderer) hasActivity(id string) bool {
	for _, a := range r.activity {
		if a.ID == id {
			return true
		}
	}
	return false
}

func (r *renderer) touch() {
	r.mu.Lock()
	r.dirty = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// snapshot is what the streamed message shows now.
func (r *renderer) snapshot() outMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	text := strings.Join(append(append([]string(nil), r.texts...), r.current.String()), "\n\n")
	text = strings.TrimSpace(text)
	if limit := r.caps.MaxMessageLen; limit > 0 && len([]rune(text)) > limit*3/4 {
		rs := []rune(text)
		text = "…" + string(rs[len(rs)-limit*3/4:])
	}
	m := outMessage{Markdown: text, Activity: append([]activity(nil), r.activity...), Plan: r.plan}
	if len(m.Activity) > 12 {
		m.Activity = m.Activity[len(m.Activity)-12:]
	}
	return m
}

// stream edits the reply at most once per interval while the turn runs.
func (r *renderer) stream() {
	var last time.Time
	for {
		select {
		case <-r.done:
			return
		case <-r.wake:
		}
		if wait := r.interval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		r.mu.Lock()
		dirty, ref := r.dirty, r.ref
		r.dirty = false
		r.mu.Unlock()
		if !dirty {
			continue
		}
		snap := r.snapshot()
		if snap.empty() {
			continue
		}
		a, ok := r.g.adapterFor(r.loc)
		if !ok {
			return
		}
		last = time.Now()
		var err error
		if ref == "" {
			var mr channels.MessageRef
			msg := snap.channels()
			msg.ReplyTo = r.replyTo
			mr, err = a.Send(r.ctx, r.loc, msg)
			if err == nil {
				r.mu.Lock()
				r.ref = mr.ID
				r.mu.Unlock()
			}
		} else {
			err = a.Edit(r.ctx, channels.MessageRef{Location: r.loc, ID: ref}, snap.channels())
		}
		r.g.opts.Metrics.StreamEdits.WithLabelValues(r.loc.Channel).Inc()
		if d, limited := channels.RetryAfter(err); limited {
			last = time.Now().Add(d)
		}
	}
}

// stop ends streaming; the final reply goes through the outbox.
func (r *renderer) stop() {
	close(r.done)
	r.wg.Wait()
}

// final builds the turn's final reply as outbox items: an edit of the
// streamed message (or a send), further messages for text past the
// platform's length limit, and attachments.
func (r *renderer) final(res agentcore.TurnResult) []Outbound {
	r.mu.Lock()
	texts := append([]string(nil), r.texts...)
	acts := append([]activity(nil), r.activity...)
	plan := r.plan
	atts := append([]attachmentSpec(nil), r.attachments...)
	ref := r.ref
	r.mu.Unlock()

	text := strings.TrimSpace(strings.Join(texts, "\n\n"))
	if text == "" {
		text = strings.TrimSpace(res.Text)
	}
	var notice string
	switch res.StopReason {
	case agentcore.StopRequiresApproval:
		notice = fmt.Sprintf("Waiting for approval (%d pending).", len(res.Pending))
	case agentcore.StopEndTurn:
	default:
		if res.Error != "" {
			notice = "⚠ " + res.Error
		} else {
			notice = "⚠ stopped: " + string(res.StopReason)
		}
	}
	if res.StopReason == agentcore.StopRequiresApproval {
		for _, ap := range res.Pending {
			r.g.ensureApprovalPosted(r.ctx, ap, r.loc)
		}
	}
	chunks := splitMarkdown(text, r.caps)
	first := outMessage{Activity: acts, Plan: plan, Notice: notice}
	if len(acts) > 12 {
		first.Activity = acts[len(acts)-12:]
	}
	if len(chunks) > 0 {
		first.Markdown = chunks[0]
		chunks = chunks[1:]
	}
	var out []Outbound
	now := r.g.opts.Now().UTC()
	add := func(kind OutboundKind, msgID string, m outMessage) {
		body, _ := json.Marshal(m)
		out = append(out, Outbound{Kind: kind, Location: r.loc.String(), MessageID: msgID, Body: body, Created: now, NextAt: now})
	}
	if !first.empty() {
		if ref != "" {
			add(OutboundEdit, ref, first)
		} else {
			first.ReplyTo = r.replyTo
			add(OutboundSend, "", first)
		}
	}
	for _, c := range chunks {
		add(OutboundSend, "", outMessage{Markdown: c})
	}
	if len(atts) > 0 {
		add(OutboundSend, "", outMessage{Attachments: atts})
	}
	return out
}

// splitMarkdown cuts text into pieces that fit the platform's limit
// after rendering (with a margin for markup the dialect adds).
func splitMarkdown(text string, caps channels.Capabilities) []string {
	if text == "" {
		return nil
	}
	limit := caps.MaxMessageLen
	if limit <= 0 {
		return []string{text}
	}
	budget := limit * 4 / 5
	if channels.Length(channels.Render(text, caps.Dialect), caps.Dialect) <= budget {
		return []string{text}
	}
	return channels.Chunk(text, budget, channels.Plain)
}

func toolTitle(name string, args json.RawMessage) string {
	s := strings.ReplaceAll(agentcore.CallSubject(args), "\n", " ")
	if s == "" {
		return name
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return name + " `" + strings.ReplaceAll(s, "`", "'") + "`"
}

func toolKind(name string) string {
	switch name {
	case "Read", "Grep", "Glob", "Recall":
		return "read"
	case "Write", "Edit":
		return "edit"
	case "Bash":
		return "execute"
	}
	return "other"
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// post sends a message durably through the outbox, outside any turn.
func (g *Gateway) post(ctx context.Context, loc channels.Location, m outMessage) int64 {
	body, _ := json.Marshal(m)
	now := g.opts.Now().UTC()
	ids, err := g.opts.Store.EnqueueOutbound(context.WithoutCancel(ctx), Outbound{Kind: OutboundSend, Location: loc.String(), Body: body, Created: now, NextAt: now})
	if err != nil {
		g.log.Error("queue outbound message", "location", loc.String(), "err", err)
		return 0
	}
	g.kickOut()
	return ids[0]
}

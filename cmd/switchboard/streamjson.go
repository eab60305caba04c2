package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// inputMsg is one parsed line of --input-format stream-json.
type inputMsg struct {
	Type       string // user | approval | interrupt | control
	Parts      []agentcore.Part
	ApprovalID string
	Decision   agentcore.ApprovalState
	Reason     string
	Subtype    string
}

// parseInputLine parses one stream-json input line. Errors say what is
// wrong so the caller can report them and go on.
func parseInputLine(line []byte) (inputMsg, error) {
	var raw struct {
		Type       string          `json:"type"`
		Content    json.RawMessage `json:"content"`
		ApprovalID string          `json:"approvalId"`
		Decision   string          `json:"decision"`
		Reason     string          `json:"reason"`
		Subtype    string          `json:"subtype"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return inputMsg{}, fmt.Errorf("not a JSON object: %v", err)
	}
	m := inputMsg{Type: raw.Type, ApprovalID: raw.ApprovalID, Reason: raw.Reason, Subtype: raw.Subtype}
	switch raw.Type {
	case "user":
		parts, err := parseContent(raw.Content)
		if err != nil {
			return inputMsg{}, err
		}
		m.Parts = parts
	case "approval":
		if raw.ApprovalID == "" {
			return inputMsg{}, errors.New(`approval without "approvalId"`)
		}
		switch raw.Decision {
		case "allow":
			m.Decision = agentcore.ApprovalAllowed
		case "always":
			m.Decision = agentcore.ApprovalAlways
		case "deny":
			m.Decision = agentcore.ApprovalDenied
		default:
			return inputMsg{}, fmt.Errorf(`approval "decision" must be allow, always or deny, not %q`, raw.Decision)
		}
	case "interrupt":
	case "control":
		if raw.Subtype == "" {
			return inputMsg{}, errors.New(`control message without "subtype"`)
		}
	case "":
		return inputMsg{}, errors.New(`missing "type" (user, approval, interrupt or control)`)
	default:
		return inputMsg{}, fmt.Errorf("unknown type %q (want user, approval, interrupt or control)", raw.Type)
	}
	return m, nil
}

// parseContent accepts a string or a list of {"type":"text","text":…} /
// {"type":"image","mime":…,"data":base64} parts.
func parseContent(raw json.RawMessage) ([]agentcore.Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New(`user message without "content"`)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return nil, errors.New("user message with empty content")
		}
		return []agentcore.Part{{Type: agentcore.PartText, Text: s}}, nil
	}
	var items []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		MIME string `json:"mime"`
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New(`"content" must be a string or a list of parts`)
	}
	var parts []agentcore.Part
	for i, it := range items {
		switch it.Type {
		case "text":
			parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: it.Text})
		case "image":
			if len(it.Data) == 0 || !strings.HasPrefix(it.MIME, "image/") {
				return nil, fmt.Errorf("content part %d: an image needs \"mime\" (image/…) and base64 \"data\"", i)
			}
			parts = append(parts, agentcore.Part{Type: agentcore.PartImage, MIME: it.MIME, Data: it.Data})
		default:
			return nil, fmt.Errorf("content part %d: unknown type %q (want text or image)", i, it.Type)
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("user message with empty content")
	}
	return parts, nil
}

type lineOrErr struct {
	msg inputMsg
	err error
}

type turnDone struct {
	res agentcore.TurnResult
	err error
}

// bidirectional reads user messages, approval decisions and interrupts
// from stdin, one JSON object per line, until EOF.
func (h *headless) bidirectional(ctx context.Context) error {
	lines := make(chan lineOrErr)
	readerCtx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(h.s.in)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			m, err := parseInputLine([]byte(line))
			select {
			case lines <- lineOrErr{m, err}:
			case <-readerCtx.Done():
				return
			}
		}
		if err := sc.Err(); err != nil {
			select {
			case lines <- lineOrErr{err: fmt.Errorf("read stdin: %w", err)}:
			case <-readerCtx.Done():
			}
		}
	}()

	var queue []inputMsg
	if strings.TrimSpace(h.f.prompt) != "" {
		queue = append(queue, inputMsg{Type: "user", Parts: []agentcore.Part{{Type: agentcore.PartText, Text: h.f.prompt}}})
	}
	var (
		running bool
		cancel  context.CancelFunc
		done    = make(chan turnDone, 1)
		last    *agentcore.TurnResult
		eof     bool
	)
	start := func(in agentcore.Input) {
		var tctx context.Context
		tctx, cancel = context.WithCancel(ctx)
		running = true
		go func() {
			res, err := h.turn(tctx, in)
			done <- turnDone{res, err}
		}()
	}
	for {
		for !running && len(queue) > 0 {
			m := queue[0]
			queue = queue[1:]
			switch m.Type {
			case "user":
				start(agentcore.Input{Kind: agentcore.InputUser, Parts: m.Parts, Speaker: "the local user", Origin: "stream-json (switchboard run)"})
			case "approval":
				resume, err := h.decide(ctx, m)
				if err != nil {
					h.out.write(map[string]any{"type": "error", "message": err.Error()})
					continue
				}
				if resume {
					start(agentcore.Input{Kind: agentcore.InputResume})
				}
			case "control":
				h.out.write(map[string]any{"type": "error", "message": fmt.Sprintf("control %q is not supported by this version; ignored", m.Subtype)})
			}
		}
		if !running && eof {
			break
		}
		select {
		case l, ok := <-lines:
			if !ok {
				eof, lines = true, nil
				continue
			}
			if l.err != nil {
				h.out.write(map[string]any{"type": "error", "message": "bad input line: " + l.err.Error()})
				continue
			}
			if l.msg.Type == "interrupt" {
				if running {
					cancel()
				}
				continue
			}
			queue = append(queue, l.msg)
		case d := <-done:
			running = false
			cancel()
			if d.err != nil {
				return d.err
			}
			r := d.res
			last = &r
			switch h.f.outputFormat {
			case "stream-json":
				h.out.write(toResult(r, h.usage, h.steps, timeSince(h.start)))
			case "text":
				if r.Text != "" {
					fmt.Fprintln(h.s.out, r.Text)
				}
			}
		case <-ctx.Done():
			// Interrupted (SIGINT/SIGTERM): stop the running turn and end
			// with its cancelled result rather than a bare error.
			if running {
				cancel()
				d := <-done
				if d.err == nil && h.f.outputFormat != "text" {
					h.out.write(toResult(d.res, h.usage, h.steps, timeSince(h.start)))
				}
			}
			return exitError{130}
		}
	}
	if last == nil {
		return nil
	}
	if h.f.outputFormat == "json" {
		h.out.write(toResult(*last, h.usage, h.steps, timeSince(h.start)))
	}
	switch subtype(last.StopReason) {
	case "success", "requires_approval":
		return nil
	case "cancelled":
		return exitError{130}
	}
	return exitError{1}
}

// decide records an approval decision from stdin and reports whether the
// parked turn can resume (no approval of the conversation still pending).
func (h *headless) decide(ctx context.Context, m inputMsg) (bool, error) {
	ap, err := h.a.store.Approval(ctx, m.ApprovalID)
	if err != nil {
		return false, fmt.Errorf("approval %s: %w", m.ApprovalID, err)
	}
	if ap.ConversationID != h.convID {
		return false, fmt.Errorf("approval %s belongs to another conversation", m.ApprovalID)
	}
	ap, decided, err := h.ag.Decide(ctx, m.ApprovalID, agentcore.Decision{State: m.Decision, Reason: m.Reason, By: "local user"})
	if err != nil {
		return false, err
	}
	if !decided {
		return false, fmt.Errorf("approval %s was already decided (%s)", ap.ID, ap.State)
	}
	if h.f.outputFormat == "stream-json" {
		h.out.write(agentcore.Event{Type: agentcore.EventApprovalDecision, ConversationID: h.convID, AgentID: h.ag.ID(), ToolCallID: ap.ToolCallID, Approval: &ap})
	}
	pending, err := h.a.store.PendingApprovals(ctx, h.convID)
	if err != nil {
		return false, err
	}
	return len(pending) == 0, nil
}

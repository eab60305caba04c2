package gateway

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// turnView is what one turn shows in a chat: it takes the turn's events and
// yields the snapshot of the live message and the final message. It is pure
// — no store, no adapter — and is used from one goroutine at a time (the
// stream guards it).
type turnView struct {
	caps        channels.Capabilities
	texts       []string // finished assistant texts of the turn
	current     strings.Builder
	reasoning   strings.Builder
	activity    []channels.ToolActivity
	plan        []agentcore.Todo
	attachments []string // file paths to send with the reply
	// settled are approvals the turn decided itself (expired, or denied
	// because a new message came): their posted copies are edited.
	settled []agentcore.Approval
	notices []string // harness notes (context compacted)
}

func newTurnView(caps channels.Capabilities) *turnView { return &turnView{caps: caps} }

// apply takes one event and reports whether the snapshot changed.
func (v *turnView) apply(e agentcore.Event) bool {
	switch e.Type {
	case agentcore.EventAssistantDelta:
		v.current.WriteString(e.Text)
	case agentcore.EventReasoningDelta:
		if !v.caps.RichParts {
			return false
		}
		v.reasoning.WriteString(e.Text)
	case agentcore.EventAssistantMessage:
		v.current.Reset()
		v.texts = append(v.texts, e.Text)
	case agentcore.EventToolCall:
		v.current.Reset()
		title, kind := e.Title, e.Kind
		if title == "" {
			title = e.ToolName
		}
		v.activity = append(v.activity, channels.ToolActivity{ID: e.ToolCallID, Title: title, Kind: kind, Status: channels.StatusRunning})
	case agentcore.EventToolResult:
		i := v.find(e.ToolCallID)
		if i < 0 {
			// A resumed turn whose parked message is gone: show the call.
			v.activity = append(v.activity, channels.ToolActivity{ID: e.ToolCallID, Title: e.ToolName, Kind: "other"})
			i = len(v.activity) - 1
		}
		a := &v.activity[i]
		a.Outcome = e.Outcome
		if a.Outcome == "" {
			a.Outcome = map[bool]string{true: channels.OutcomeError, false: channels.OutcomeOK}[e.IsError]
		}
		a.Status = channels.StatusOf(a.Outcome)
		if v.caps.RichParts {
			a.Output = clipString(e.Text, 2000)
		}
		v.attachments = append(v.attachments, e.Attachments...)
	case agentcore.EventPlan:
		v.plan = e.Todos
	case agentcore.EventApprovalRequest:
		if i := v.find(e.ToolCallID); i >= 0 {
			v.activity[i].Status = channels.StatusPending
			if e.Approval != nil && e.Approval.Diff != "" {
				v.activity[i].Diff = e.Approval.Diff
			}
		}
	case agentcore.EventCompaction:
		if strings.TrimSpace(e.Text) == "" {
			return false
		}
		v.notices = append(v.notices, e.Text)
	case agentcore.EventApprovalDecision:
		if e.Approval != nil {
			v.settled = append(v.settled, *e.Approval)
		}
		return false
	default:
		return false
	}
	return true
}

func (v *turnView) find(callID string) int {
	for i, a := range v.activity {
		if a.ID == callID {
			return i
		}
	}
	return -1
}

// message is the chat message of the turn so far: tool activity, plan,
// reasoning (rich surfaces), the text, then extra parts.
func (v *turnView) message(text string, extra ...channels.Part) channels.Message {
	var parts []channels.Part
	for _, a := range v.activity {
		parts = append(parts, a)
	}
	if len(v.plan) > 0 {
		var items []channels.PlanItem
		for _, t := range v.plan {
			items = append(items, channels.PlanItem{Content: t.Content, Status: t.Status, Priority: t.Priority})
		}
		parts = append(parts, channels.Plan{Items: items})
	}
	if r := strings.TrimSpace(v.reasoning.String()); r != "" {
		parts = append(parts, channels.Reasoning{Text: r})
	}
	for _, n := range v.notices {
		parts = append(parts, channels.Notice{Text: n})
	}
	if text != "" {
		parts = append(parts, channels.Text{Markdown: text})
	}
	return channels.Message{Parts: append(parts, extra...)}
}

// snapshot is what the live message shows now.
func (v *turnView) snapshot() channels.Message {
	text := strings.TrimSpace(strings.Join(append(append([]string(nil), v.texts...), v.current.String()), "\n\n"))
	return v.message(text)
}

// final is the turn's final message for its result.
func (v *turnView) final(res agentcore.TurnResult) channels.Message {
	text := strings.TrimSpace(strings.Join(v.texts, "\n\n"))
	if text == "" {
		text = strings.TrimSpace(res.Text)
	}
	var extra []channels.Part
	switch res.StopReason {
	case agentcore.StopRequiresApproval:
		extra = append(extra, channels.Notice{Text: fmt.Sprintf("Waiting for approval (%d pending).", len(res.Pending))})
	case agentcore.StopWaitingForTask:
		var ids []string
		for _, t := range res.Tasks {
			ids = append(ids, t.ID+" ("+t.Type+")")
		}
		extra = append(extra, channels.Notice{Text: "Waiting for sub-agent task " + strings.Join(ids, ", ") + " to report."})
	case agentcore.StopEndTurn:
	default:
		if res.Error != "" {
			extra = append(extra, channels.Notice{Text: "⚠ " + res.Error})
		} else {
			extra = append(extra, channels.Notice{Text: "⚠ stopped: " + string(res.StopReason)})
		}
	}
	for _, p := range v.attachments {
		if v.caps.Upload {
			extra = append(extra, channels.Attachment{Name: filepath.Base(p), Path: p})
		} else {
			extra = append(extra, channels.Notice{Text: "The agent attached " + p + " (this chat cannot receive files)."})
		}
	}
	return v.message(text, extra...)
}

// parkedView is what a turn that stopped for approval showed, so the turn
// that resumes it continues the same message (also after a restart: it is
// stored with the conversation).
type parkedView struct {
	Location string                  `json:"location"`
	Refs     []string                `json:"refs"` // platform ids of the live message's pages
	Outbox   []int64                 `json:"outbox,omitempty"`
	Texts    []string                `json:"texts,omitempty"`
	Activity []channels.ToolActivity `json:"activity,omitempty"`
}

func (v *turnView) parked(loc string, refs []string, outbox []int64) parkedView {
	return parkedView{Location: loc, Refs: refs, Outbox: outbox, Texts: append([]string(nil), v.texts...), Activity: append([]channels.ToolActivity(nil), v.activity...)}
}

// adopt continues a parked turn's message.
func (v *turnView) adopt(p parkedView) {
	v.texts = append(v.texts, p.Texts...)
	v.activity = append(v.activity, p.Activity...)
}

package acp

// Protocol version 1 (see v1.go): prompt content to message text and
// attachments, live events to session/update kinds, approval cards to
// permission options.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/switchboard-gw/switchboard/channels"
)

// promptV1 turns prompt content into the message text and attachments:
// text as is; images as attachments (the gateway passes them to models
// with vision and tells the others); resource links and embedded text
// resources as text the model can read; anything else as a note.
func promptV1(blocks []sdk.ContentBlock) (string, []channels.Attachment) {
	var parts []string
	var atts []channels.Attachment
	image := func(data, mime, uri string) {
		b, err := decodeBase64(data)
		switch {
		case err != nil || len(b) == 0:
			what := "an image"
			if uri != "" {
				what += " (" + uri + ")"
			}
			parts = append(parts, "[The user attached "+what+" that could not be decoded.]")
		default:
			atts = append(atts, channels.Attachment{Name: fmt.Sprintf("image-%d%s", len(atts)+1, imageExt(mime)), MIME: mime, Data: b})
		}
	}
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.Image != nil:
			uri := ""
			if b.Image.Uri != nil {
				uri = *b.Image.Uri
			}
			image(b.Image.Data, mimeOr(b.Image.MimeType, "image/png"), uri)
		case b.Audio != nil:
			parts = append(parts, "[The user attached audio ("+b.Audio.MimeType+"), which is not passed to the model.]")
		case b.ResourceLink != nil:
			parts = append(parts, linkText(b.ResourceLink))
		case b.Resource != nil:
			r := b.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				parts = append(parts, resourceText(r.TextResourceContents.Uri, r.TextResourceContents.Text))
			case r.BlobResourceContents != nil:
				mime := ""
				if r.BlobResourceContents.MimeType != nil {
					mime = *r.BlobResourceContents.MimeType
				}
				if strings.HasPrefix(mime, "image/") {
					image(r.BlobResourceContents.Blob, mime, r.BlobResourceContents.Uri)
					continue
				}
				parts = append(parts, fmt.Sprintf("[The user attached %s (%s), binary content that is not passed to the model.]",
					uriPath(r.BlobResourceContents.Uri), mimeOr(mime, "unknown type")))
			}
		}
	}
	return strings.Join(parts, "\n\n"), atts
}

// uriPath shows a file: URI as its path, other URIs as they are.
func uriPath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" && u.Path != "" {
		return u.Path
	}
	return uri
}

func linkText(l *sdk.ContentBlockResourceLink) string {
	var b strings.Builder
	b.WriteString("[The user referred to ")
	if p := uriPath(l.Uri); p != l.Uri {
		b.WriteString("the file " + p)
	} else {
		b.WriteString(l.Uri)
	}
	name := l.Name
	if l.Title != nil && *l.Title != "" {
		name = *l.Title
	}
	var facts []string
	if name != "" && !strings.HasSuffix(l.Uri, name) {
		facts = append(facts, name)
	}
	if l.MimeType != nil && *l.MimeType != "" {
		facts = append(facts, *l.MimeType)
	}
	if l.Size != nil {
		facts = append(facts, fmt.Sprintf("%d bytes", *l.Size))
	}
	if len(facts) > 0 {
		b.WriteString(" (" + strings.Join(facts, ", ") + ")")
	}
	if l.Description != nil && *l.Description != "" {
		b.WriteString(": " + *l.Description)
	}
	b.WriteString("]")
	return b.String()
}

// resourceText is an embedded text resource as the model reads it: its
// place and its text in a fence no line of it can close.
func resourceText(uri, text string) string {
	note := ""
	if len(text) > maxResourceText {
		cut := maxResourceText
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text, note = text[:cut], fmt.Sprintf("\n[cut: the rest of %s is not shown]", uriPath(uri))
	}
	return fmt.Sprintf("Contents of %s:\n%s%s", uriPath(uri), channels.CodeBlock(text, ""), note)
}

// v1State is what a session's updates remember: tool calls already
// announced (later changes are tool_call_update) and assistant slices
// whose text already arrived in deltas.
type v1State struct {
	ws        string
	announced map[string]bool
	streamed  map[string]bool
}

func newV1State(ws string) v1State {
	return v1State{ws: ws, announced: map[string]bool{}, streamed: map[string]bool{}}
}

// updates maps one live event to session updates.
func (st *v1State) updates(ev channels.LiveEvent) []sdk.SessionUpdate {
	switch ev.Kind {
	case channels.LiveText:
		if ev.Text == "" {
			return nil
		}
		st.streamed[ev.OTID] = true
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(ev.Text)}
	case channels.LiveReasoning:
		if ev.Text == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentThoughtText(ev.Text)}
	case channels.LiveMessage:
		streamed := st.streamed[ev.OTID]
		delete(st.streamed, ev.OTID)
		if streamed || ev.Text == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(ev.Text)}
	case channels.LiveTool:
		if ev.Tool == nil {
			return nil
		}
		return st.tool(*ev.Tool, rawInput(ev.Wire))
	case channels.LivePlan:
		if ev.Plan == nil {
			return nil
		}
		return []sdk.SessionUpdate{planV1(*ev.Plan)}
	case channels.LiveApproval:
		if ev.Approval == nil {
			return nil
		}
		return st.pending(*ev.Approval)
	case channels.LiveTask:
		if ev.Task == nil {
			return nil
		}
		return st.task(*ev.Task)
	case channels.LiveTurnEnd:
		st.streamed = map[string]bool{}
	case kindNotice:
		if strings.TrimSpace(ev.Text) == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText("\n\n" + ev.Text + "\n\n")}
	}
	return nil
}

// rawInput is the arguments of a tool_call event's wire form.
func rawInput(wire []byte) any {
	var w struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(wire, &w) != nil || len(w.Arguments) == 0 || !json.Valid(w.Arguments) {
		return nil
	}
	return w.Arguments
}

func kindV1(k string) sdk.ToolKind {
	switch sdk.ToolKind(k) {
	case sdk.ToolKindRead, sdk.ToolKindEdit, sdk.ToolKindDelete, sdk.ToolKindMove, sdk.ToolKindSearch,
		sdk.ToolKindExecute, sdk.ToolKindThink, sdk.ToolKindFetch, sdk.ToolKindSwitchMode:
		return sdk.ToolKind(k)
	}
	return sdk.ToolKindOther
}

func statusV1(t channels.ToolActivity) sdk.ToolCallStatus {
	if t.Outcome != "" {
		if t.Outcome == channels.OutcomeOK {
			return sdk.ToolCallStatusCompleted
		}
		return sdk.ToolCallStatusFailed
	}
	switch t.Status {
	case channels.StatusPending:
		return sdk.ToolCallStatusPending
	case channels.StatusDone:
		return sdk.ToolCallStatusCompleted
	case channels.StatusError, channels.StatusDenied, channels.StatusUnknown:
		return sdk.ToolCallStatusFailed
	}
	return sdk.ToolCallStatusInProgress
}

// tool is a tool call's start or change.
func (st *v1State) tool(t channels.ToolActivity, raw any) []sdk.SessionUpdate {
	status := statusV1(t)
	var content []sdk.ToolCallContent
	if t.Diff != "" {
		content = append(content, diffV1(t.Diff, st.ws)...)
	}
	if status == sdk.ToolCallStatusCompleted || status == sdk.ToolCallStatusFailed {
		if out := strings.TrimRight(t.Output, "\n"); out != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(channels.CodeBlock(out, ""))))
		}
	}
	var locs []sdk.ToolCallLocation
	for _, p := range t.Paths {
		if !filepath.IsAbs(p) && st.ws != "" {
			p = filepath.Join(st.ws, p)
		}
		locs = append(locs, sdk.ToolCallLocation{Path: p})
	}
	if !st.announced[t.ID] {
		st.announced[t.ID] = true
		return []sdk.SessionUpdate{{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(t.ID), Title: titleOr(t.Title, "tool call"),
			Kind: kindV1(t.Kind), Status: status, Content: content, Locations: locs, RawInput: raw}}}
	}
	return []sdk.SessionUpdate{{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(t.ID), Status: sdk.Ptr(status),
		Content: content, Locations: locs}}}
}

// pending marks the call an ask is about as waiting, with the diff it
// would make and why the policy asks.
func (st *v1State) pending(c channels.ApprovalCard) []sdk.SessionUpdate {
	if c.ToolCallID == "" {
		return nil
	}
	content := pendingContent(c, st.ws)
	if !st.announced[c.ToolCallID] {
		st.announced[c.ToolCallID] = true
		return []sdk.SessionUpdate{{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(c.ToolCallID),
			Title: titleOr(c.Summary, c.Tool), Kind: sdk.ToolKindOther, Status: sdk.ToolCallStatusPending, Content: content}}}
	}
	return []sdk.SessionUpdate{{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(c.ToolCallID),
		Status: sdk.Ptr(sdk.ToolCallStatusPending), Content: content}}}
}

func pendingContent(c channels.ApprovalCard, ws string) []sdk.ToolCallContent {
	var content []sdk.ToolCallContent
	if c.Diff != "" {
		content = append(content, diffV1(c.Diff, ws)...)
	}
	if c.Reason != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock("Why it asks: "+c.Reason)))
	}
	return content
}

// diffV1 is a unified diff as diff content, one per file.
func diffV1(diff, ws string) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	for _, f := range parseUnified(diff, ws) {
		if f.NewFile {
			out = append(out, sdk.ToolDiffContent(f.Path, f.New))
		} else {
			out = append(out, sdk.ToolDiffContent(f.Path, f.New, f.Old))
		}
	}
	return out
}

// task is a sub-agent task as a tool call of kind think.
func (st *v1State) task(t channels.TaskActivity) []sdk.SessionUpdate {
	return st.tool(channels.ToolActivity{ID: "task-" + t.ID, Title: "Task: " + titleOr(t.Description, t.Type), Kind: "think",
		Status: taskStatus(t.Status), Output: t.Progress}, nil)
}

func planV1(p channels.Plan) sdk.SessionUpdate {
	entries := []sdk.PlanEntry{}
	for _, it := range p.Items {
		pr := sdk.PlanEntryPriority(it.Priority)
		switch pr {
		case sdk.PlanEntryPriorityHigh, sdk.PlanEntryPriorityLow:
		default:
			pr = sdk.PlanEntryPriorityMedium
		}
		status := sdk.PlanEntryStatus(it.Status)
		switch status {
		case sdk.PlanEntryStatusInProgress, sdk.PlanEntryStatusCompleted:
		default:
			status = sdk.PlanEntryStatusPending
		}
		entries = append(entries, sdk.PlanEntry{Content: it.Content, Priority: pr, Status: status})
	}
	return sdk.UpdatePlan(entries...)
}

// permission option ids.
const (
	optAllow  = "allow_once"
	optAlways = "allow_always"
	optReject = "reject_once"
)

// permissionOptionsV1: allow once, allow always (showing the rule it
// stores; admins only, when the call has one), reject.
func permissionOptionsV1(c channels.ApprovalCard, always bool) []sdk.PermissionOption {
	opts := []sdk.PermissionOption{{OptionId: optAllow, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if always && c.Rule != "" {
		opts = append(opts, sdk.PermissionOption{OptionId: optAlways, Name: "Always allow " + c.Rule, Kind: sdk.PermissionOptionKindAllowAlways})
	}
	return append(opts, sdk.PermissionOption{OptionId: optReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce})
}

// decisionV1 maps the client's answer; "" when it was cancelled.
func decisionV1(o sdk.RequestPermissionOutcome) (string, error) {
	if o.Selected == nil {
		return "", nil
	}
	switch o.Selected.OptionId {
	case optAllow:
		return channels.DecideAllow, nil
	case optAlways:
		return channels.DecideAlways, nil
	case optReject:
		return channels.DecideDeny, nil
	}
	return "", fmt.Errorf("unknown permission option %q", o.Selected.OptionId)
}

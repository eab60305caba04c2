package api

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/channels"
)

const maxReasonLen = 2000

type approvalJSON struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversationId"`
	Agent          string    `json:"agent"`
	ToolCallID     string    `json:"toolCallId"`
	ToolName       string    `json:"toolName"`
	Summary        string    `json:"summary"`
	Reason         string    `json:"reason,omitempty"`
	Diff           string    `json:"diff,omitempty"`
	Workdir        string    `json:"workdir,omitempty"`
	Rule           string    `json:"rule,omitempty"`
	Always         bool      `json:"always"`
	Requester      string    `json:"requester,omitempty"`
	Approvers      string    `json:"approvers,omitempty"`
	Task           string    `json:"task,omitempty"`
	Location       string    `json:"location,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	ExpiresAt      time.Time `json:"expiresAt"`
}

// handleApprovals lists the pending approvals the caller may decide, in
// every conversation (a dashboard's list), oldest first.
func (a *Adapter) handleApprovals(w http.ResponseWriter, r *http.Request) {
	limit, ok := limitParam(w, r, 100, 500)
	if !ok {
		return
	}
	al, ok := ability[channels.ApprovalLister](a, w, "list approvals")
	if !ok {
		return
	}
	ctx := r.Context()
	list, err := al.PendingApprovals(ctx, callerOf(ctx).who(), limit)
	if err != nil {
		a.internal(w, "list approvals", err)
		return
	}
	out := []approvalJSON{}
	for _, p := range list {
		aj := approvalJSON{ID: p.ID, ConversationID: p.ConversationID, Agent: p.Agent, ToolCallID: p.ToolCallID, ToolName: p.Tool,
			Summary: p.Summary, Reason: p.Reason, Diff: p.Diff, Workdir: p.Workdir, Rule: p.Rule, Always: p.Always,
			Requester: p.Requester, Approvers: p.Approvers, Task: p.Task, CreatedAt: p.Created.UTC(), ExpiresAt: p.Expires.UTC()}
		if !p.Location.IsZero() {
			aj.Location = p.Location.String()
		}
		out = append(out, aj)
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

// decideBody is the body of POST /v1/approvals/{id}.
type decideBody struct {
	Decision string `json:"decision"` // allow, always or deny
	Reason   string `json:"reason"`
}

func (d decideBody) check() error {
	switch d.Decision {
	case channels.DecideAllow, channels.DecideAlways, channels.DecideDeny:
	default:
		return errors.New("decision must be allow, always or deny")
	}
	switch {
	case !utf8.ValidString(d.Reason):
		return errors.New("reason is not UTF-8")
	case utf8.RuneCountInString(d.Reason) > maxReasonLen:
		return errors.New("reason is longer than 2000 characters")
	case strings.ContainsRune(d.Reason, 0):
		return errors.New("reason contains a NUL character")
	}
	return nil
}

type decisionJSON struct {
	ApprovalID string `json:"approvalId"`
	Decided    bool   `json:"decided"`
	Resumed    bool   `json:"resumed"`
	Text       string `json:"text"`
}

// handleDecide decides an approval through the gateway's one decide path
// (the same approver checks and transaction as a button press). A refusal
// (not the caller's to decide, already decided, expired) is 409 with the
// reason.
func (a *Adapter) handleDecide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, http.StatusBadRequest, "bad_id", "bad approval id")
		return
	}
	var body decideBody
	if !a.readJSON(w, r, &body) {
		return
	}
	if err := body.check(); err != nil {
		writeError(w, http.StatusBadRequest, "bad_decision", err.Error())
		return
	}
	dec, ok := ability[channels.Decider](a, w, "decide approvals")
	if !ok {
		return
	}
	ctx := r.Context()
	c := callerOf(ctx)
	reply, err := dec.Decide(ctx, channels.Decision{ApprovalID: id, Action: body.Decision, Reason: body.Reason, User: c.user(),
		Location: channels.Location{Channel: Name, Account: c.name, ChatID: "approvals"}})
	if err != nil {
		a.internal(w, "decide the approval", err)
		return
	}
	out := decisionJSON{ApprovalID: id, Decided: reply.Decided, Resumed: reply.Resumed, Text: reply.Text}
	if reply.Refused || !reply.Decided {
		writeJSON(w, http.StatusConflict, map[string]any{"error": errorBody{Code: "refused", Message: reply.Text}, "approvalId": id, "decided": false})
		return
	}
	a.log.Info("approval decided through the API", "approval", id, "decision", body.Decision, "by", c.who())
	writeJSON(w, http.StatusOK, out)
}

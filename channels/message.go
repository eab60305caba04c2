package channels

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxTokenLen is the longest Button.Token in bytes (Telegram's callback_data
// limit). Tokens are opaque ids looked up by the gateway, never arguments.
const MaxTokenLen = 64

// Message is a platform-neutral message: an ordered list of typed parts.
// Chat surfaces render what they can (see RenderMessage); rich surfaces map
// each part to their own element.
type Message struct {
	Parts []Part
	// ReplyTo, when set, is the platform id of a message this one answers
	// (Inbound.MessageID of the input, passed back unchanged: an adapter may
	// put any handle there, e.g. a Discord interaction); surfaces that thread
	// replies attach it to the first send.
	ReplyTo string
	// Turn, when set, is the id of the turn whose final message this is, so
	// a LiveSurface can tell it from what it already showed live.
	Turn string
	// Key is an idempotency key stable across retries of the same outbound
	// message (the outbox item); "" when none. Adapters whose platform
	// dedupes sends derive their platform's key from it (Discord: nonce
	// with enforce_nonce), so a send retried after a crash posts once.
	Key string
	// MaybeSentSince, when set, says an earlier attempt at this send, made
	// after that time, may have posted it: a process died between the
	// platform call and recording it, or a call failed after the platform
	// took it. Adapters that can find their own earlier post by Key (Slack:
	// message metadata) return it instead of posting again. Not encoded.
	MaybeSentSince time.Time
	// PostedBefore and PostedSince, set with MaybeSentSince on a message
	// with buttons, are what the gateway has on record in the location:
	// the id of its newest post from before MaybeSentSince ("" for none),
	// and the ids of its posts since. An adapter that cannot find an
	// earlier post by Key (Telegram: no history, no idempotency key) takes
	// its own messages between PostedBefore and the new post that are not
	// in PostedSince for what the lost attempt posted, and removes their
	// buttons, so that only the new copy can be pressed. PostedSince is nil
	// when the gateway has no record to give: then nothing is touched. Not
	// encoded.
	PostedBefore string
	PostedSince  []string
}

// Part is one piece of a Message. The set of parts is closed: Text,
// Reasoning, ToolActivity, Plan, Buttons, Attachment and Notice.
type Part interface {
	part()
}

// Text is Markdown text, usually from the model.
type Text struct {
	Markdown string
}

// Reasoning is the model's visible thinking, plain text.
type Reasoning struct {
	Text string
}

// Tool activity statuses.
const (
	StatusPending = "pending" // waiting for a person's decision
	StatusRunning = "running"
	StatusDone    = "done"
	StatusError   = "error"
	StatusDenied  = "denied"
	StatusUnknown = "unknown" // it was running when the process stopped; it may have run
)

// Tool call outcomes (ToolActivity.Outcome): how a finished call went, as the
// agent core reports it (never parsed from tool text).
const (
	OutcomeOK           = "ok"            // it ran and succeeded
	OutcomeError        = "error"         // it ran (or tried to) and failed
	OutcomeDeniedPolicy = "denied_policy" // the permission policy refused it
	OutcomeDeniedPerson = "denied_person" // a person denied it (or the ask expired)
	OutcomeUnknown      = "unknown"       // interrupted by a crash: it may have run
)

// ToolActivity is one tool call and how it went.
type ToolActivity struct {
	ID string // the tool call id; stable across updates of one call
	// Title is a one-line Markdown summary, e.g. "Bash `go test ./...`".
	Title string
	// Kind is what the tool does, as the tool itself says: read, edit,
	// delete, move, search, execute, think, fetch, other (ACP's kinds).
	Kind string
	// Status is one of StatusPending, StatusRunning, StatusDone, StatusError,
	// StatusDenied, StatusUnknown.
	Status string
	// Outcome is set once the call finished (Outcome* constants).
	Outcome string
	Diff    string   // optional unified diff of an edit
	Paths   []string // files the call touches, when known (rich surfaces link them)
	// Output is the start of the call's result, for rich surfaces (chat
	// surfaces show only the line); clipped by the gateway.
	Output string
}

// StatusOf maps an outcome to the status chat surfaces show.
func StatusOf(outcome string) string {
	switch outcome {
	case OutcomeOK:
		return StatusDone
	case OutcomeDeniedPolicy, OutcomeDeniedPerson:
		return StatusDenied
	case OutcomeUnknown:
		return StatusUnknown
	case "":
		return StatusRunning
	}
	return StatusError
}

// Plan item statuses.
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanCompleted  = "completed"
)

// Plan is the agent's current to-do list.
type Plan struct {
	Items []PlanItem
}

// PlanItem is one entry of a Plan.
type PlanItem struct {
	Content  string // plain text
	Status   string // PlanPending, PlanInProgress or PlanCompleted
	Priority string // high, medium or low; may be empty
}

// Button styles.
const (
	StyleDefault = ""
	StylePrimary = "primary"
	StyleDanger  = "danger"
)

// Buttons are rows of buttons shown with the message.
type Buttons struct {
	Rows [][]Button
}

// Button is one button. Pressing it yields an Action carrying Token.
type Button struct {
	Label string
	Style string // StyleDefault, StylePrimary or StyleDanger
	Token string // opaque, 1..MaxTokenLen bytes
}

// Attachment is a file: one the gateway sends (Path or Data) or one a user
// sent (the adapter fills Data or Path, within its size limit).
type Attachment struct {
	Name    string
	MIME    string
	Path    string // a file on the host; used when Data is nil
	Data    []byte
	Caption string // plain text
}

// Notice is a system or status line ("context compacted", "stopped").
type Notice struct {
	Text string // plain text
}

func (Text) part()         {}
func (Reasoning) part()    {}
func (ToolActivity) part() {}
func (Plan) part()         {}
func (Buttons) part()      {}
func (Attachment) part()   {}
func (Notice) part()       {}

// TextMessage returns a message with one Text part.
func TextMessage(markdown string) Message {
	return Message{Parts: []Part{Text{Markdown: markdown}}}
}

// Markdown returns the message's Text parts joined by blank lines.
func (m Message) Markdown() string {
	var texts []string
	for _, p := range m.Parts {
		if t, ok := p.(Text); ok && t.Markdown != "" {
			texts = append(texts, t.Markdown)
		}
	}
	return strings.Join(texts, "\n\n")
}

// ButtonRows returns the rows of all Buttons parts, in order.
func (m Message) ButtonRows() [][]Button {
	var rows [][]Button
	for _, p := range m.Parts {
		if b, ok := p.(Buttons); ok {
			for _, r := range b.Rows {
				if len(r) > 0 {
					rows = append(rows, r)
				}
			}
		}
	}
	return rows
}

// Attachments returns the message's Attachment parts, in order.
func (m Message) Attachments() []Attachment {
	var as []Attachment
	for _, p := range m.Parts {
		if a, ok := p.(Attachment); ok {
			as = append(as, a)
		}
	}
	return as
}

// Validate checks what adapters rely on: no nil parts, buttons with a label
// and a token of 1..MaxTokenLen bytes, attachments with a name and content.
func (m Message) Validate() error {
	var errs []error
	for i, p := range m.Parts {
		switch p := p.(type) {
		case nil:
			errs = append(errs, fmt.Errorf("part %d is nil", i))
		case Buttons:
			for r, row := range p.Rows {
				for c, b := range row {
					if b.Label == "" {
						errs = append(errs, fmt.Errorf("part %d button %d/%d has no label", i, r, c))
					}
					if b.Token == "" || len(b.Token) > MaxTokenLen {
						errs = append(errs, fmt.Errorf("part %d button %q: token must be 1..%d bytes, is %d",
							i, b.Label, MaxTokenLen, len(b.Token)))
					}
				}
			}
		case Attachment:
			if p.Name == "" {
				errs = append(errs, fmt.Errorf("part %d: attachment has no name", i))
			}
			if p.Path == "" && p.Data == nil {
				errs = append(errs, fmt.Errorf("part %d: attachment %q has neither path nor data", i, p.Name))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid message: %w", err)
	}
	return nil
}

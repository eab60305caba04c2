package web

import (
	"html"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// viewMessage is the JSON a page receives for one message: its current
// state, sent again whole after every edit.
type viewMessage struct {
	ID        string        `json:"id"`
	Role      channels.Role `json:"role"`
	User      string        `json:"user,omitempty"`
	At        time.Time     `json:"at"`
	Parts     []viewPart    `json:"parts"`
	Ephemeral bool          `json:"ephemeral,omitempty"`
	// Pressed: a button of this message was pressed and the message has not
	// been edited since; the page shows its buttons disabled.
	Pressed bool `json:"pressed,omitempty"`
	// Pending: a user message the gateway has not yet accepted.
	Pending bool `json:"pending,omitempty"`
}

// viewPart is one rendered part. Type says which fields are set. HTML and
// TitleHTML come from channels.Render and are safe to insert as HTML; every
// other string is plain text for textContent.
type viewPart struct {
	Type string `json:"type"` // text, reasoning, tool, plan, buttons, attachment, notice

	HTML string `json:"html,omitempty"` // text
	Text string `json:"text,omitempty"` // reasoning, notice

	ToolID    string `json:"tool_id,omitempty"`    // tool
	Kind      string `json:"kind,omitempty"`       // tool
	TitleHTML string `json:"title_html,omitempty"` // tool
	Status    string `json:"status,omitempty"`     // tool
	Diff      string `json:"diff,omitempty"`       // tool

	Items []viewPlanItem  `json:"items,omitempty"` // plan
	Rows  [][]viewButton  `json:"rows,omitempty"`  // buttons
	File  *viewAttachment `json:"file,omitempty"`  // attachment
}

type viewPlanItem struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority,omitempty"`
}

type viewButton struct {
	Label string `json:"label"`
	Style string `json:"style,omitempty"`
	Token string `json:"token"`
}

type viewAttachment struct {
	Name    string `json:"name"`
	MIME    string `json:"mime,omitempty"`
	URL     string `json:"url"`
	Caption string `json:"caption,omitempty"`
	Size    int64  `json:"size,omitempty"`
	// Image: the page may preview it with <img> (raster formats only; SVG
	// can carry script and is always a download).
	Image bool `json:"image,omitempty"`
}

// viewCommand is one command of the gateway's table, for the page's hints.
type viewCommand struct {
	Name        string `json:"name"`
	Args        string `json:"args,omitempty"`
	Description string `json:"description"`
	Admin       bool   `json:"admin,omitempty"`
}

// storedFile is an attachment the page can download from /api/files/{id}.
type storedFile struct {
	Name string
	MIME string
	Data []byte
	Path string // used when Data is nil
}

// renderParts converts a message to the page's parts. Attachments are given
// the ids in fileIDs, in order; the caller registers the files under those
// ids. It is pure: no I/O, no shared state.
func renderParts(m channels.Message, fileIDs []string) []viewPart {
	parts := make([]viewPart, 0, len(m.Parts))
	next := 0
	for _, p := range m.Parts {
		switch p := p.(type) {
		case channels.Text:
			if h := channels.Render(p.Markdown, channels.HTML); strings.TrimSpace(h) != "" {
				parts = append(parts, viewPart{Type: "text", HTML: h})
			}
		case channels.Reasoning:
			if strings.TrimSpace(p.Text) != "" {
				parts = append(parts, viewPart{Type: "reasoning", Text: p.Text})
			}
		case channels.ToolActivity:
			parts = append(parts, viewPart{
				Type: "tool", ToolID: p.ID, Kind: p.Kind, Status: p.Status, Diff: p.Diff,
				TitleHTML: titleHTML(p.Title, p.Kind),
			})
		case channels.Plan:
			items := make([]viewPlanItem, 0, len(p.Items))
			for _, it := range p.Items {
				items = append(items, viewPlanItem{Content: it.Content, Status: it.Status, Priority: it.Priority})
			}
			parts = append(parts, viewPart{Type: "plan", Items: items})
		case channels.Buttons:
			var rows [][]viewButton
			for _, r := range p.Rows {
				if len(r) == 0 {
					continue
				}
				row := make([]viewButton, 0, len(r))
				for _, b := range r {
					row = append(row, viewButton{Label: b.Label, Style: b.Style, Token: b.Token})
				}
				rows = append(rows, row)
			}
			if len(rows) > 0 {
				parts = append(parts, viewPart{Type: "buttons", Rows: rows})
			}
		case channels.Attachment:
			if next >= len(fileIDs) {
				continue
			}
			id := fileIDs[next]
			next++
			size := int64(len(p.Data))
			if p.Data == nil {
				size = 0 // unknown until downloaded
			}
			parts = append(parts, viewPart{Type: "attachment", File: &viewAttachment{
				Name: p.Name, MIME: p.MIME, URL: "/api/files/" + id, Caption: p.Caption,
				Size: size, Image: previewable(p.MIME),
			}})
		case channels.Notice:
			if strings.TrimSpace(p.Text) != "" {
				parts = append(parts, viewPart{Type: "notice", Text: p.Text})
			}
		}
	}
	return parts
}

// titleHTML renders a tool title (one line of Markdown such as
// "Bash `go test ./...`") as inline HTML: channels.Render with the paragraph
// wrapper removed. Anything that renders as more than one paragraph falls
// back to the escaped text.
func titleHTML(title, kind string) string {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		title = channels.EscapeMarkdown(strings.Join(strings.Fields(kind), " "))
	}
	if title == "" {
		return "tool"
	}
	h := channels.Render(title, channels.HTML)
	inner, ok := strings.CutPrefix(h, "<p>")
	if ok {
		inner, ok = strings.CutSuffix(inner, "</p>")
	}
	if !ok || strings.Contains(inner, "<p>") {
		return html.EscapeString(title)
	}
	return inner
}

// previewable reports whether a MIME type is a raster image a browser shows
// without running anything.
func previewable(mime string) bool {
	switch strings.ToLower(strings.TrimSpace(mime)) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

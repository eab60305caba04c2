package channels

import (
	"strings"
)

// RenderMessage renders the text a chat surface shows for m, chunked under
// caps.MaxMessageLen in caps.Dialect. Text parts are rendered Markdown; each
// ToolActivity becomes a compact line ("⚙ Bash `go test ./...` — done"),
// consecutive ones grouped; a Plan becomes a checklist; a Notice an italic
// line. Reasoning is left out (chat users read answers, not thoughts), and so
// are Buttons and Attachments, which the adapter sends its own way. A message
// with nothing to show yields no chunks.
func RenderMessage(m Message, caps Capabilities) []string {
	var blocks []string
	var tools []string
	flushTools := func() {
		if len(tools) > 0 {
			blocks = append(blocks, Render(strings.Join(tools, "\n"), caps.Dialect))
			tools = nil
		}
	}
	for _, p := range m.Parts {
		if t, ok := p.(ToolActivity); ok {
			tools = append(tools, toolLine(t))
			continue
		}
		flushTools()
		var md string
		switch p := p.(type) {
		case Text:
			md = p.Markdown
		case Plan:
			md = planMarkdown(p)
		case Notice:
			if s := strings.TrimSpace(p.Text); s != "" {
				md = "*" + EscapeMarkdown(oneLine(s)) + "*"
			}
		}
		if s := Render(md, caps.Dialect); strings.TrimSpace(s) != "" {
			blocks = append(blocks, s)
		}
	}
	flushTools()
	sep := "\n\n"
	if caps.Dialect == HTML {
		sep = "\n"
	}
	return Chunk(strings.Join(blocks, sep), caps.MaxMessageLen, caps.Dialect)
}

// statusWord is how a tool status reads in a chat line.
func statusWord(status string) string {
	switch status {
	case StatusPending:
		return "waiting"
	case StatusRunning:
		return "running…"
	case StatusDone:
		return "done"
	case StatusError:
		return "failed"
	case StatusDenied:
		return "denied"
	case StatusUnknown:
		return "interrupted (may have run)"
	}
	return EscapeMarkdown(oneLine(status))
}

// toolLine is the Markdown of one compact tool activity line.
func toolLine(t ToolActivity) string {
	title := oneLine(t.Title)
	if title == "" {
		title = EscapeMarkdown(oneLine(t.Kind))
	}
	if title == "" {
		title = "tool"
	}
	line := "⚙ " + title
	if status := statusWord(t.Status); status != "" {
		line += " — " + status
	}
	return line
}

func planMarkdown(p Plan) string {
	var b strings.Builder
	for _, it := range p.Items {
		c := EscapeMarkdown(oneLine(it.Content))
		if c == "" {
			continue
		}
		switch it.Status {
		case PlanCompleted:
			b.WriteString("☑ ~~" + c + "~~")
		case PlanInProgress:
			b.WriteString("◐ **" + c + "**")
		default:
			b.WriteString("☐ " + c)
		}
		b.WriteString("\n") // Render keeps line breaks
	}
	return b.String()
}

// oneLine collapses whitespace (including newlines) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// EscapeMarkdown backslash-escapes every ASCII punctuation character in s,
// so Render shows s literally. Use it to put plain text into Markdown.
func EscapeMarkdown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

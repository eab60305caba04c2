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

// CodeSpan returns s as a Markdown code span that Render shows verbatim:
// the fence is one backtick longer than the longest run of backticks in s,
// and a space pads each side when s starts or ends with a backtick or a
// space (CommonMark strips one from each side). Line breaks become spaces
// (a code span shows them so anyway), so no line of s can start a block. An
// empty s gives "".
func CodeSpan(s string) string {
	s = breaksToSpaces(s)
	if s == "" {
		return ""
	}
	fence := strings.Repeat("`", longestBackticks(s)+1)
	if s[0] == '`' || s[len(s)-1] == '`' || (s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// QuotedMarkdown puts plain text that quotes code in backticks (the reasons
// of the permission policy: "`rm -rf x` is not covered by an allow rule")
// into Markdown: each quoted part becomes a CodeSpan, the rest is escaped.
// A quote opens at a backtick at the start or after a space or "(", and
// closes at the next backtick that ends the text or comes before a space or
// one of ":),.;". The quoted parts may hold backticks of their own (they
// are a model's commands), so the split may fall elsewhere than meant, but
// every piece is escaped text or a code span: nothing in s becomes a link
// or markup. Line breaks become spaces and leading blanks go, so the result
// is one line of inline Markdown wherever it is put.
func QuotedMarkdown(s string) string {
	s = strings.TrimLeft(breaksToSpaces(s), " \t")
	var b strings.Builder
	for {
		open := -1
		for i := 0; i < len(s); i++ {
			if s[i] == '`' && (i == 0 || s[i-1] == ' ' || s[i-1] == '(') {
				open = i
				break
			}
		}
		if open < 0 {
			break
		}
		end := -1
		for j := open + 2; j < len(s); j++ {
			if s[j] == '`' && (j == len(s)-1 || strings.IndexByte(" :),.;", s[j+1]) >= 0) {
				end = j
				break
			}
		}
		if end < 0 {
			break
		}
		b.WriteString(EscapeMarkdown(s[:open]))
		b.WriteString(CodeSpan(s[open+1 : end]))
		s = s[end+1:]
	}
	b.WriteString(EscapeMarkdown(s))
	return b.String()
}

// CodeBlock returns s as a fenced Markdown code block, with lang as its
// info string, that Render shows verbatim: the fence is longer than any run
// of backticks in s, so no line of s can close it.
func CodeBlock(s, lang string) string {
	fence := strings.Repeat("`", max(3, longestBackticks(s)+1))
	return fence + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + fence
}

// longestBackticks returns the length of the longest run of backticks in s.
func longestBackticks(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// breaksToSpaces replaces each line ending in s (CRLF, LF or CR) with one
// space, leaving every other character as it is.
func breaksToSpaces(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

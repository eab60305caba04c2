package channels

import (
	"fmt"
	"strings"
)

// maxTools is how many tool activity lines a page shows at most; earlier
// ones are summarized in one line (never dropped silently).
const maxTools = 12

// Paginate splits m into the messages a chat surface posts for it, each of
// which RenderMessage renders into one chunk under caps.MaxMessageLen. It is
// the one place that decides message length: the gateway pages both the
// streamed snapshot of a running turn and its final message with it, so
// adapters never have to cut (and Edit never truncates).
//
// The parts before the first Text part (tool activity, plan, reasoning) lead
// the first page; when there are more than maxTools activity lines, the
// earlier ones become one "N earlier tool calls" line. Text is split at
// paragraph, line or word boundaries of the Markdown source, code blocks
// closed and reopened across pages. The parts after the text (notices,
// buttons, attachments) go on the last page. A message that fits, or a
// surface without a limit, yields [m]. Text that cannot be made to fit by
// splitting (a single word longer than the limit) is still split by
// RenderMessage's chunker on the last resort, so nothing is lost.
func Paginate(m Message, caps Capabilities) []Message {
	m = collapseTools(m)
	if caps.MaxMessageLen <= 0 || len(RenderMessage(m, caps)) <= 1 {
		return []Message{m}
	}
	var lead, tail []Part
	var texts []string
	for _, p := range m.Parts {
		switch p := p.(type) {
		case Text:
			if p.Markdown != "" {
				texts = append(texts, p.Markdown)
			}
		default:
			if len(texts) == 0 {
				lead = append(lead, p)
			} else {
				tail = append(tail, p)
			}
		}
	}
	md := strings.Join(texts, "\n\n")
	budget := caps.MaxMessageLen
	var pages []Message
	for range 12 {
		pages = composePages(m, lead, tail, md, budget)
		if fits(pages, caps) {
			return pages
		}
		budget = budget * 4 / 5
		if budget < MinChunkLimit*2 {
			break
		}
	}
	return pages
}

// composePages builds the pages for one text budget.
func composePages(m Message, lead, tail []Part, md string, budget int) []Message {
	var chunks []string
	if md != "" {
		chunks = Chunk(md, budget, DiscordMarkdown)
	}
	var pages []Message
	page := func(parts []Part) {
		pages = append(pages, Message{Parts: parts, Turn: m.Turn})
	}
	if len(lead) > 0 {
		if len(chunks) > 0 {
			page(append(append([]Part(nil), lead...), Text{Markdown: chunks[0]}))
			chunks = chunks[1:]
		} else {
			page(append([]Part(nil), lead...))
		}
	}
	for _, c := range chunks {
		page([]Part{Text{Markdown: c}})
	}
	if len(tail) > 0 {
		if len(pages) == 0 {
			page(nil)
		}
		last := &pages[len(pages)-1]
		last.Parts = append(last.Parts, tail...)
	}
	if len(pages) > 0 {
		pages[0].ReplyTo = m.ReplyTo
	}
	// Each page is its own platform message: the first keeps the key, the
	// others get keys of their own derived from it, so an adapter that
	// dedupes on Key never folds two pages into one.
	for i := range pages {
		if m.Key != "" {
			pages[i].Key = m.Key
			if i > 0 {
				pages[i].Key = fmt.Sprintf("%s/p%d", m.Key, i)
			}
		}
	}
	return pages
}

func fits(pages []Message, caps Capabilities) bool {
	for _, p := range pages {
		if len(RenderMessage(p, caps)) > 1 {
			return false
		}
	}
	return true
}

// collapseTools keeps the last maxTools activity lines of a message and
// replaces the earlier ones with a count.
func collapseTools(m Message) Message {
	n := 0
	for _, p := range m.Parts {
		if _, ok := p.(ToolActivity); ok {
			n++
		}
	}
	if n <= maxTools {
		return m
	}
	drop := n - maxTools
	out := Message{ReplyTo: m.ReplyTo, Turn: m.Turn, Key: m.Key}
	noted := false
	for _, p := range m.Parts {
		if _, ok := p.(ToolActivity); ok && drop > 0 {
			drop--
			if !noted {
				out.Parts = append(out.Parts, Notice{Text: fmt.Sprintf("%d earlier tool calls", n-maxTools)})
				noted = true
			}
			continue
		}
		out.Parts = append(out.Parts, p)
	}
	return out
}

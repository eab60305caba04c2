package channels

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// markdownParser is configured once and never changed; goldmark parsers are
// safe for concurrent use (each Parse has its own context).
var markdownParser = goldmark.New(goldmark.WithExtensions(
	extension.Strikethrough,
	extension.Linkify,
	extension.TaskList,
	extension.Table,
)).Parser()

// Render converts Markdown (CommonMark with GitHub's strikethrough, tables,
// task lists and bare-URL links) to dialect d.
//
// Literal text is escaped for the dialect, so text cannot create markup: raw
// HTML in the Markdown is shown as text, Slack's <!channel>, <!here> and
// <@U…> cannot be formed, Discord's @everyone, @here and <@…> mentions get a
// zero-width space and Markdown characters a backslash. Links keep only safe
// schemes (http, https; plus tg for Telegram and mailto for Slack and HTML);
// other links become "label (target)" text. Headings become bold lines
// (HTML keeps real headings), line breaks inside a paragraph are kept, and
// lists become bullet or numbered lines indented by depth.
//
// Telegram output uses only <b> <i> <s> <code> <pre> <a href> <blockquote>
// and the entities &lt; &gt; &amp; &quot;, with tags always balanced.
func Render(markdown string, d Dialect) string {
	src := []byte(strings.ToValidUTF8(markdown, "\uFFFD"))
	doc := markdownParser.Parse(text.NewReader(src))
	r := renderer{d: d, src: src}
	return strings.Trim(r.children(doc, false), "\n")
}

type style int

const (
	styleStrong style = iota
	styleEmph
	styleStrike
	nStyles
)

// renderer walks one parsed document. It is used by one goroutine.
type renderer struct {
	d          Dialect
	src        []byte
	quoteDepth int
	listDepth  int
	inLink     bool
	open       [nStyles]int // how deep inside each inline style we are
}

// children renders the block children of n, separated by blank lines (or
// single newlines when tight).
func (r *renderer) children(n ast.Node, tight bool) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := r.block(c); strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	sep := "\n\n"
	if tight || r.d == HTML {
		sep = "\n"
	}
	return strings.Join(parts, sep)
}

func (r *renderer) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph:
		in := r.inlines(n)
		if r.d == HTML && in != "" {
			return "<p>" + in + "</p>"
		}
		return in
	case *ast.TextBlock:
		return r.inlines(n)
	case *ast.Heading:
		if r.d == HTML {
			return fmt.Sprintf("<h%d>%s</h%d>", n.Level, r.inlines(n), n.Level)
		}
		return r.styled(styleStrong, func() string { return r.inlines(n) })
	case *ast.ThematicBreak:
		if r.d == HTML {
			return "<hr>"
		}
		return "──────────"
	case *ast.FencedCodeBlock:
		return r.codeBlock(string(n.Language(r.src)), r.lines(n))
	case *ast.CodeBlock:
		return r.codeBlock("", r.lines(n))
	case *ast.HTMLBlock:
		raw := r.lines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(r.src))
		}
		return r.literalBlock(strings.TrimRight(raw, "\n"))
	case *ast.Blockquote:
		return r.blockquote(n)
	case *ast.List:
		return r.list(n)
	case *east.Table:
		return r.table(n)
	default:
		return r.children(n, false)
	}
}

// lines returns the raw source lines of a block.
func (r *renderer) lines(n ast.Node) string {
	var b strings.Builder
	ls := n.Lines()
	for i := range ls.Len() {
		seg := ls.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// literalBlock shows raw text (an HTML block) as an escaped paragraph.
func (r *renderer) literalBlock(s string) string {
	esc := r.text(s, true)
	if r.d == HTML {
		return "<p>" + strings.ReplaceAll(esc, "\n", "<br>\n") + "</p>"
	}
	return esc
}

func (r *renderer) blockquote(n *ast.Blockquote) string {
	r.quoteDepth++
	inner := r.children(n, false)
	r.quoteDepth--
	if inner == "" {
		return ""
	}
	switch r.d {
	case TelegramHTML:
		if r.quoteDepth > 0 { // Telegram cannot nest blockquotes
			return inner
		}
		return "<blockquote>" + inner + "</blockquote>"
	case HTML:
		return "<blockquote>\n" + inner + "\n</blockquote>"
	default:
		return prefixLines(inner, "> ", "> ", r.d, false)
	}
}

var bullets = [...]string{"• ", "◦ ", "▪ "}

func (r *renderer) list(n *ast.List) string {
	if r.d == HTML {
		tag, attr := "ul", ""
		if n.IsOrdered() {
			tag = "ol"
			if n.Start != 1 {
				attr = fmt.Sprintf(` start="%d"`, n.Start)
			}
		}
		var b strings.Builder
		b.WriteString("<" + tag + attr + ">\n")
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			b.WriteString("<li>" + r.children(item, n.IsTight) + "</li>\n")
		}
		b.WriteString("</" + tag + ">")
		return b.String()
	}
	depth := r.listDepth
	r.listDepth++
	defer func() { r.listDepth-- }()
	num := n.Start
	var items []string
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		var marker string
		switch {
		case n.IsOrdered():
			marker = fmt.Sprintf("%d. ", num)
			num++
		case r.d == DiscordMarkdown:
			marker = "- "
		default:
			marker = bullets[depth%len(bullets)]
		}
		body := r.children(item, n.IsTight)
		indent := strings.Repeat(" ", utf8.RuneCountInString(marker))
		if startsCode(body, r.d) { // never put a marker in front of a fence or <pre>
			body = "\n" + body
		}
		items = append(items, prefixLines(body, marker, indent, r.d, true))
	}
	sep := "\n"
	if !n.IsTight {
		sep = "\n\n"
	}
	return strings.Join(items, sep)
}

func startsCode(s string, d Dialect) bool {
	switch d {
	case SlackMrkdwn, DiscordMarkdown:
		return strings.HasPrefix(s, "```")
	}
	return false
}

// prefixLines puts first before the first line of s and rest before the
// others (empty lines get the prefix without trailing spaces). With skipCode,
// lines inside code blocks keep their bytes, so indentation for list items
// never changes code.
func prefixLines(s, first, rest string, d Dialect, skipCode bool) string {
	lines := strings.Split(s, "\n")
	var b strings.Builder
	inFence, preDepth := false, 0
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		p := rest
		if i == 0 {
			p = first
		}
		switch {
		case skipCode && (inFence || preDepth > 0):
			// keep code bytes as they are
		case line == "":
			b.WriteString(strings.TrimRight(p, " "))
		default:
			b.WriteString(p)
		}
		b.WriteString(line)
		switch d {
		case SlackMrkdwn, DiscordMarkdown:
			if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
				inFence = !inFence
			}
		case TelegramHTML, HTML:
			// Text never contains a raw '<', so these are our own tags.
			preDepth = max(0, preDepth+strings.Count(line, "<pre")-strings.Count(line, "</pre>"))
		}
	}
	return b.String()
}

// codeBlock renders a code block; an empty block renders as nothing.
func (r *renderer) codeBlock(lang, body string) string {
	body = strings.TrimRight(body, "\n")
	if strings.TrimSpace(body) == "" {
		return ""
	}
	lang = cleanLang(lang)
	switch r.d {
	case TelegramHTML, HTML:
		esc := escapeHTML(body, r.d == HTML)
		if lang != "" {
			return `<pre><code class="language-` + lang + `">` + esc + "</code></pre>"
		}
		if r.d == HTML {
			return "<pre><code>" + esc + "</code></pre>"
		}
		return "<pre>" + esc + "</pre>"
	case SlackMrkdwn:
		return "```\n" + escapeSlackCode(breakFences(body)) + "\n```"
	case DiscordMarkdown:
		return "```" + lang + "\n" + neutralizeMassMentions(breakFences(body)) + "\n```"
	default:
		return body
	}
}

// cleanLang keeps a fence's first word if it looks like a language name.
func cleanLang(info string) string {
	lang, _, _ := strings.Cut(strings.TrimSpace(info), " ")
	if len(lang) > 32 {
		return ""
	}
	for i := 0; i < len(lang); i++ {
		c := lang[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_+-.#", c) >= 0) {
			return ""
		}
	}
	return lang
}

// breakFences stops "```" inside code from ending the block early.
func breakFences(s string) string { return strings.ReplaceAll(s, "```", "``\u200b`") }

func (r *renderer) table(n *east.Table) string {
	var rows [][]string
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			if r.d == HTML {
				cells = append(cells, r.inlines(cell))
			} else {
				cells = append(cells, plainInlines(cell, r.src))
			}
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		return ""
	}
	if r.d == HTML {
		var b strings.Builder
		b.WriteString("<table>\n")
		for i, row := range rows {
			tag := "td"
			if i == 0 {
				tag = "th"
			}
			b.WriteString("<tr>")
			for _, c := range row {
				b.WriteString("<" + tag + ">" + c + "</" + tag + ">")
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>")
		return b.String()
	}
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for ri, row := range rows {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString(" | ")
			}
			line.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		if ri == 0 {
			for i, w := range widths {
				if i > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", w))
			}
			b.WriteString("\n")
		}
	}
	return r.codeBlock("", b.String())
}

// plainInlines renders inline content without any markup.
func plainInlines(n ast.Node, src []byte) string {
	p := renderer{d: Plain, src: src}
	return p.inlines(n)
}

package channels

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/util"
)

// inlines renders the inline children of n.
func (r *renderer) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(&b, c)
	}
	return b.String()
}

func atLineStart(b *strings.Builder) bool {
	return b.Len() == 0 || strings.HasSuffix(b.String(), "\n")
}

func (r *renderer) inline(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		s := string(v)
		if !n.IsRaw() {
			s = unescapeMarkdown(v)
		}
		b.WriteString(r.text(s, atLineStart(b)))
		if n.HardLineBreak() || n.SoftLineBreak() {
			b.WriteString(r.lineBreak())
		}
	case *ast.String:
		s := string(n.Value)
		b.WriteString(r.text(s, atLineStart(b)))
	case *ast.CodeSpan:
		b.WriteString(r.codeSpan(r.codeSpanText(n)))
	case *ast.Emphasis:
		st := styleEmph
		if n.Level >= 2 {
			st = styleStrong
		}
		b.WriteString(r.styled(st, func() string { return r.inlines(n) }))
	case *east.Strikethrough:
		b.WriteString(r.styled(styleStrike, func() string { return r.inlines(n) }))
	case *ast.Link:
		href := string(util.URLEscape(n.Destination, true))
		b.WriteString(r.link(n, href, false))
	case *ast.Image:
		href := string(util.URLEscape(n.Destination, true))
		b.WriteString(r.link(n, href, false))
	case *ast.AutoLink:
		href := string(util.URLEscape(n.URL(r.src), false))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(href), "mailto:") {
			href = "mailto:" + href
		} else if strings.HasPrefix(strings.ToLower(href), "www.") {
			href = "http://" + href
		}
		b.WriteString(r.link(n, href, true))
	case *ast.RawHTML:
		var raw strings.Builder
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			raw.Write(seg.Value(r.src))
		}
		b.WriteString(r.text(raw.String(), atLineStart(b)))
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("☑ ")
		} else {
			b.WriteString("☐ ")
		}
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			r.inline(b, c)
		}
	}
}

func (r *renderer) lineBreak() string {
	if r.d == HTML {
		return "<br>\n"
	}
	return "\n"
}

// codeSpanText returns a code span's content the way CommonMark defines it
// (line endings become spaces).
func (r *renderer) codeSpanText(n *ast.CodeSpan) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(r.src)
			b.WriteString(strings.ReplaceAll(string(v), "\n", " "))
		case *ast.String:
			b.Write(c.Value)
		}
	}
	return b.String()
}

func (r *renderer) codeSpan(code string) string {
	if code == "" {
		return ""
	}
	switch r.d {
	case TelegramHTML:
		if r.inLink { // Telegram links cannot contain code entities
			return escapeHTML(code, false)
		}
		return "<code>" + escapeHTML(code, false) + "</code>"
	case HTML:
		return "<code>" + escapeHTML(code, true) + "</code>"
	case SlackMrkdwn:
		if strings.Contains(code, "`") { // Slack has no way to escape a backtick
			return r.text(code, false)
		}
		return "`" + escapeSlackCode(code) + "`"
	case DiscordMarkdown:
		code = neutralizeMassMentions(code)
		if strings.Contains(code, "`") {
			return "`` " + strings.ReplaceAll(code, "``", "`\u200b`") + " ``"
		}
		return "`" + code + "`"
	default:
		return code
	}
}

// styled wraps what render returns in an inline style. Inside the same
// style it adds nothing (Telegram and Discord dislike <b><b> and **a **b****),
// and whitespace at the edges moves outside the markers, where Slack and
// Discord need it.
func (r *renderer) styled(st style, render func() string) string {
	if r.open[st] > 0 || r.d == Plain {
		return render()
	}
	r.open[st]++
	inner := render()
	r.open[st]--
	core := strings.TrimSpace(inner)
	if core == "" {
		return inner
	}
	lead := inner[:strings.Index(inner, core)]
	trail := inner[len(lead)+len(core):]
	open, closing := markers(r.d, st)
	return lead + open + core + closing + trail
}

func markers(d Dialect, st style) (open, closing string) {
	var m [nStyles]string
	switch d {
	case TelegramHTML:
		m = [nStyles]string{"b", "i", "s"}
	case HTML:
		m = [nStyles]string{"strong", "em", "del"}
	case SlackMrkdwn:
		m = [nStyles]string{"*", "_", "~"}
		return m[st], m[st]
	case DiscordMarkdown:
		m = [nStyles]string{"**", "*", "~~"}
		return m[st], m[st]
	default:
		return "", ""
	}
	return "<" + m[st] + ">", "</" + m[st] + ">"
}

// allowedScheme reports whether href may become a real link in d.
func allowedScheme(href string, d Dialect) bool {
	i := strings.IndexAny(href, ":/?#")
	if i <= 0 || href[i] != ':' {
		return false
	}
	switch strings.ToLower(href[:i]) {
	case "http", "https":
		return true
	case "tg":
		return d == TelegramHTML
	case "mailto":
		return d == SlackMrkdwn || d == HTML
	}
	return false
}

// link renders a link, image or autolink node n pointing at href.
func (r *renderer) link(n ast.Node, href string, auto bool) string {
	plain := plainInlines(n, r.src)
	if auto {
		plain = string(n.(*ast.AutoLink).Label(r.src))
	}
	if _, ok := n.(*ast.Image); ok && plain == "" {
		plain = "image"
	}
	sameAsTarget := plain == href || "mailto:"+plain == href || "http://"+plain == href
	if !allowedScheme(href, r.d) || r.inLink {
		if auto || sameAsTarget || href == "" {
			return r.text(plain, false)
		}
		return r.text(plain+" ("+href+")", false)
	}
	label := func() string {
		if auto {
			return r.text(plain, false)
		}
		r.inLink = true
		defer func() { r.inLink = false }()
		if _, ok := n.(*ast.Image); ok {
			return r.text(plain, false)
		}
		return r.inlines(n)
	}
	switch r.d {
	case TelegramHTML:
		return `<a href="` + escapeHTML(href, true) + `">` + label() + "</a>"
	case HTML:
		return `<a href="` + escapeHTML(href, true) + `" rel="nofollow noopener noreferrer">` + label() + "</a>"
	case SlackMrkdwn:
		u := escapeSlack(strings.NewReplacer("|", "%7C", "<", "%3C", ">", "%3E").Replace(href), false)
		if sameAsTarget {
			return "<" + u + ">"
		}
		return "<" + u + "|" + escapeSlack(plain, true) + ">"
	case DiscordMarkdown:
		u := strings.NewReplacer("(", "%28", ")", "%29", " ", "%20", "<", "%3C", ">", "%3E").Replace(href)
		u = strings.ReplaceAll(breakWords(u, "@", []string{"everyone", "here"}), "@"+zwsp, "%40")
		if sameAsTarget {
			return u
		}
		return "[" + label() + "](" + u + ")"
	default:
		if sameAsTarget {
			return plain
		}
		return plain + " (" + href + ")"
	}
}

package channels

import (
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/util"
)

// zwsp is a zero-width space: invisible, but it stops platforms from
// recognizing a mention or a fence.
const zwsp = "\u200b"

// text escapes literal text for the renderer's dialect. lineStart says the
// text begins a line, where Discord gives '#', '>' and list markers meaning.
func (r *renderer) text(s string, lineStart bool) string {
	switch r.d {
	case TelegramHTML:
		return escapeHTML(s, false)
	case HTML:
		return escapeHTML(s, true)
	case SlackMrkdwn:
		return escapeSlack(s, true)
	case DiscordMarkdown:
		return escapeDiscord(s, lineStart)
	default:
		return s
	}
}

// escapeHTML escapes &, < and > (and, with quotes, " and ').
func escapeHTML(s string, quotes bool) string {
	if !strings.ContainsAny(s, `&<>"'`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			if quotes {
				b.WriteString("&quot;")
			} else {
				b.WriteByte(c)
			}
		case '\'':
			if quotes {
				b.WriteString("&#39;")
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escapeSlackCode escapes the three characters Slack requires escaped
// everywhere; with them escaped, <!channel>, <!here> and <@U…> cannot form.
func escapeSlackCode(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// escapeSlack escapes text for Slack and, with mentions, also breaks the bare
// @channel, @here and @everyone that Slack links when link_names is set.
func escapeSlack(s string, mentions bool) string {
	s = escapeSlackCode(s)
	if mentions {
		s = breakWords(s, "@", []string{"channel", "here", "everyone"})
	}
	return s
}

// neutralizeMassMentions breaks Discord's @everyone and @here and the
// <@id>, <@!id> and <@&role> mention syntax.
func neutralizeMassMentions(s string) string {
	s = breakWords(s, "@", []string{"everyone", "here"})
	return strings.ReplaceAll(s, "<@", "<"+zwsp+"@")
}

// breakWords inserts a zero-width space after prefix wherever prefix is
// followed by one of words (ASCII case-insensitively).
func breakWords(s, prefix string, words []string) string {
	if !strings.Contains(s, prefix) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+len(prefix)])
		s = s[i+len(prefix):]
		for _, w := range words {
			if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) {
				b.WriteString(zwsp)
				break
			}
		}
	}
}

// escapeDiscord backslash-escapes Markdown characters (Discord shows "\*"
// as "*"), escapes line-start syntax ('#', '>', '-', '+', "1.") and
// neutralizes mentions.
func escapeDiscord(s string, lineStart bool) string {
	s = neutralizeMassMentions(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte("\\*_~`|[]", c) >= 0:
			b.WriteByte('\\')
		case lineStart && strings.IndexByte("#>-+", c) >= 0:
			b.WriteByte('\\')
		case lineStart && '0' <= c && c <= '9':
			j := i
			for j < len(s) && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			b.WriteString(s[i:j])
			if j < len(s) && (s[j] == '.' || s[j] == ')') {
				b.WriteByte('\\')
			}
			i = j - 1
			lineStart = false
			continue
		}
		b.WriteByte(c)
		lineStart = c == '\n' || (lineStart && c == ' ')
	}
	return b.String()
}

// unescapeMarkdown resolves backslash escapes and entity references in
// Markdown text, in one pass, the way CommonMark defines text content.
func unescapeMarkdown(v []byte) string {
	if !strings.ContainsAny(string(v), "\\&\x00") {
		return string(v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]):
			b.WriteByte(v[i+1])
			i++
		case c == '&':
			end := i + 1
			for end < len(v) && end-i < 40 && v[end] != ';' && v[end] != '&' && v[end] != ' ' {
				end++
			}
			if end < len(v) && v[end] == ';' {
				ref := v[i : end+1]
				res := util.ResolveEntityNames(util.ResolveNumericReferences(ref))
				if string(res) != string(ref) {
					b.Write(res)
					i = end
					continue
				}
			}
			b.WriteByte(c)
		case c == 0:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

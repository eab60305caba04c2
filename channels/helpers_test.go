package channels

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

var telegramTag = regexp.MustCompile(`^<(/?)(b|i|u|s|code|pre|blockquote|a)((?: href="[^"<>]*")|(?: class="language-[A-Za-z0-9_+#.-]+"))?>`)

// checkTelegramHTML checks that s uses only the tags and entities Telegram's
// HTML parse mode accepts, with tags balanced and properly nested, href only
// on <a> and class only on <code> directly inside <pre>.
func checkTelegramHTML(s string) error {
	var stack []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			m := telegramTag.FindStringSubmatch(s[i:])
			if m == nil {
				return fmt.Errorf("bad tag at %d: %.30q", i, s[i:])
			}
			closing, name, attr := m[1] == "/", m[2], m[3]
			switch {
			case closing:
				if attr != "" || len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("unbalanced </%s> at %d (open: %v)", name, i, stack)
				}
				stack = stack[:len(stack)-1]
			case name == "a" && !strings.HasPrefix(attr, " href="):
				return fmt.Errorf("<a> without href at %d", i)
			case name != "a" && strings.HasPrefix(attr, " href="):
				return fmt.Errorf("href on <%s> at %d", name, i)
			case strings.HasPrefix(attr, " class=") && (name != "code" || len(stack) == 0 || stack[len(stack)-1] != "pre"):
				return fmt.Errorf("class on <%s> outside <pre> at %d", name, i)
			default:
				for _, open := range stack {
					if open == "pre" || open == "code" {
						if !(open == "pre" && name == "code") {
							return fmt.Errorf("<%s> inside <%s> at %d", name, open, i)
						}
					}
					if open == name && (name == "a" || name == "blockquote") {
						return fmt.Errorf("nested <%s> at %d", name, i)
					}
				}
				stack = append(stack, name)
			}
			i += len(m[0])
		case '&':
			ok := false
			for _, e := range []string{"&lt;", "&gt;", "&amp;", "&quot;"} {
				if strings.HasPrefix(s[i:], e) {
					i += len(e)
					ok = true
					break
				}
			}
			if !ok {
				return fmt.Errorf("bare & at %d: %.20q", i, s[i:])
			}
		case '>':
			return fmt.Errorf("bare > at %d", i)
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed tags %v", stack)
	}
	return nil
}

var anyTag = regexp.MustCompile(`<[^<>]*>`)

// noSpace removes all whitespace.
func noSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// isSubsequence reports whether every rune of sub appears in s in order.
func isSubsequence(sub, s string) bool {
	rs := []rune(s)
	j := 0
	for _, r := range sub {
		for j < len(rs) && rs[j] != r {
			j++
		}
		if j == len(rs) {
			return false
		}
		j++
	}
	return true
}

// textAtoms is s without its tags, as Chunk sees it (entities stay as
// written).
func textAtoms(s string, d Dialect) string {
	var b strings.Builder
	for _, a := range tokenize(s, d, 0) {
		if a.kind < atomOpenTag {
			b.WriteString(s[a.start:a.end])
		}
	}
	return b.String()
}

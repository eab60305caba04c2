package channels

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MinChunkLimit is the smallest limit Chunk honours; smaller positive limits
// are raised to it, so a chunk always has room for a reopened code fence and
// a character.
const MinChunkLimit = 16

// Length measures s the way dialect d's platform counts against its message
// limit: Telegram counts the text after entity parsing (tags are free, an
// entity is one character) in UTF-16 code units; HTML counts visible
// characters the same way in runes; the Markdown dialects and Plain count
// runes of the whole text.
func Length(s string, d Dialect) int {
	switch d {
	case TelegramHTML, HTML:
		n := 0
		for _, a := range tokenize(s, d, 0) {
			n += a.cost
		}
		return n
	default:
		return utf8.RuneCountInString(s)
	}
}

// Chunk splits rendered text (the output of Render in dialect d) into
// pieces whose Length is at most limit. It prefers to split between
// paragraphs, then lines, then words, and drops the whitespace it splits at.
// It never splits a UTF-8 sequence, an HTML entity or tag, or (when it can
// help it) a character made of several code points. A code block that spans
// chunks is closed at the end of one and reopened, with its language, at the
// start of the next: ``` fences in Slack and Discord, <pre> (and every other
// open tag, so inline formatting stays balanced) in Telegram and HTML.
//
// limit <= 0 means no limit. Blank text yields no chunks; every chunk has
// visible content. Invalid UTF-8 is replaced with U+FFFD.
func Chunk(rendered string, limit int, d Dialect) []string {
	s := strings.ToValidUTF8(rendered, "\uFFFD")
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if limit <= 0 {
		return []string{s}
	}
	limit = max(limit, MinChunkLimit)
	if Length(s, d) <= limit {
		return []string{s}
	}
	c := chunker{s: s, d: d, limit: limit}
	c.atoms = tokenize(s, d, limit)
	if d == SlackMrkdwn || d == DiscordMarkdown {
		c.fences = findFences(s)
		if strings.Contains(s, "```") {
			c.closeReserve = len("\n```")
		}
	}
	return c.run()
}

type atomKind uint8

const (
	atomText atomKind = iota
	atomSpace
	atomNewline
	atomOpenTag
	atomCloseTag
	atomVoidTag
)

// atom is the smallest piece Chunk never splits: a rune, an entity, a tag,
// or for Slack a <…> link.
type atom struct {
	start, end int // byte range in the text
	cost       int // in the dialect's measure
	kind       atomKind
	name       string // tag name, lowercased
}

// tokenize cuts s into atoms. A Slack <…> atom may be at most limit/2 runes
// (longer ones are split into runes); 0 means no Slack atoms are needed.
func tokenize(s string, d Dialect, limit int) []atom {
	markup := d == TelegramHTML || d == HTML
	atoms := make([]atom, 0, len(s))
	for i := 0; i < len(s); {
		if markup && s[i] == '<' {
			if end, name, kind, ok := parseTag(s, i); ok {
				atoms = append(atoms, atom{start: i, end: end, kind: kind, name: name})
				i = end
				continue
			}
		}
		if (markup || d == SlackMrkdwn) && s[i] == '&' {
			if end, cost, ok := parseEntity(s, i, d); ok {
				atoms = append(atoms, atom{start: i, end: end, cost: cost})
				i = end
				continue
			}
		}
		if d == SlackMrkdwn && s[i] == '<' && limit > 0 {
			if j := strings.IndexAny(s[i+1:], "<>\n"); j >= 0 && s[i+1+j] == '>' {
				end := i + 2 + j
				if n := utf8.RuneCountInString(s[i:end]); n <= limit/2 { // a chunk's budget is at least limit/2
					atoms = append(atoms, atom{start: i, end: end, cost: n})
					i = end
					continue
				}
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		a := atom{start: i, end: i + size, cost: 1}
		if d == TelegramHTML {
			a.cost = utf16.RuneLen(r)
			if a.cost < 0 {
				a.cost = 1
			}
		}
		switch r {
		case '\n':
			a.kind = atomNewline
		case ' ', '\t':
			a.kind = atomSpace
		}
		atoms = append(atoms, a)
		i += size
	}
	return atoms
}

func isVoidTag(name string) bool {
	switch name {
	case "br", "hr", "img", "wbr", "input":
		return true
	}
	return false
}

// parseTag reads an HTML tag starting at s[i] == '<'.
func parseTag(s string, i int) (end int, name string, kind atomKind, ok bool) {
	j := i + 1
	kind = atomOpenTag
	if j < len(s) && s[j] == '/' {
		kind = atomCloseTag
		j++
	}
	k := j
	for k < len(s) && (isASCIILetter(s[k]) || (k > j && '0' <= s[k] && s[k] <= '9')) {
		k++
	}
	if k == j {
		return 0, "", 0, false
	}
	name = strings.ToLower(s[j:k])
	quote := byte(0)
	for ; k < len(s); k++ {
		c := s[k]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '<' || c == '\n':
			return 0, "", 0, false
		case c == '>':
			if kind == atomOpenTag && (isVoidTag(name) || s[k-1] == '/') {
				kind = atomVoidTag
			}
			return k + 1, name, kind, true
		}
	}
	return 0, "", 0, false
}

func isASCIILetter(c byte) bool { return 'A' <= c&^0x20 && c&^0x20 <= 'Z' }

// parseEntity reads "&name;" or "&#…;" at s[i] and returns its cost: one
// character (two UTF-16 units for a character outside the BMP in Telegram),
// or its own length in Slack, where entities count as written.
func parseEntity(s string, i int, d Dialect) (end, cost int, ok bool) {
	j := i + 1
	maxLen := 10
	if d == SlackMrkdwn {
		maxLen = 6 // &amp; &lt; &gt; &#NNN; — short enough to fit any chunk
	}
	for j < len(s) && j-i <= maxLen && (isASCIILetter(s[j]) || '0' <= s[j] && s[j] <= '9' || s[j] == '#') {
		j++
	}
	if j >= len(s) || s[j] != ';' || j == i+1 {
		return 0, 0, false
	}
	end = j + 1
	if d == SlackMrkdwn {
		return end, end - i, true
	}
	cost = 1
	if d == TelegramHTML && s[i+1] == '#' {
		if r := decodeNumericEntity(s[i+2 : j]); r > 0xFFFF && r <= unicode.MaxRune {
			cost = 2
		}
	}
	return end, cost, true
}

func decodeNumericEntity(body string) rune {
	base := 10
	if strings.HasPrefix(body, "x") || strings.HasPrefix(body, "X") {
		base, body = 16, body[1:]
	}
	var r rune
	for i := 0; i < len(body); i++ {
		v := unhex(body[i])
		if v < 0 || v >= base || r > unicode.MaxRune {
			return 0
		}
		r = r*rune(base) + rune(v)
	}
	return r
}

// fence is one ``` line of a Markdown dialect: it opens or closes a block.
type fence struct {
	lineStart, lineEnd int // byte range of the line without its newline
	open               bool
	lang               string
}

func findFences(s string) []fence {
	var fs []fence
	open := false
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		line := strings.TrimLeft(s[start:end], " ")
		if strings.HasPrefix(line, "```") {
			open = !open
			f := fence{lineStart: start, lineEnd: end, open: open}
			if open {
				f.lang = cleanLang(line[3:])
			}
			fs = append(fs, f)
		}
		start = end + 1
	}
	return fs
}

type chunker struct {
	s            string
	d            Dialect
	limit        int
	atoms        []atom
	fences       []fence
	closeReserve int
	out          []string
}

// fenceAt returns the last fence line starting before byte p, if any.
func (c *chunker) fenceAt(p int) (fence, bool) {
	i := sort.Search(len(c.fences), func(i int) bool { return c.fences[i].lineStart >= p })
	if i == 0 {
		return fence{}, false
	}
	return c.fences[i-1], true
}

// inFence reports whether the text before byte p leaves a code block open.
func (c *chunker) inFence(p int) (string, bool) {
	f, ok := c.fenceAt(p)
	return f.lang, ok && f.open
}

func (c *chunker) run() []string {
	var stack []atom // open tags (markup dialects)
	for i := 0; i < len(c.atoms); {
		reopen := ""
		if c.d == TelegramHTML || c.d == HTML {
			for _, t := range stack {
				reopen += c.s[t.start:t.end]
			}
		} else if lang, ok := c.inFence(c.atoms[i].start); ok {
			reopen = "```" + lang + "\n"
			if len(reopen)+c.closeReserve > c.limit/2 {
				reopen = "```\n"
			}
		}
		budget := c.limit - c.closeReserve - utf8.RuneCountInString(reopen)
		if c.d == TelegramHTML || c.d == HTML {
			budget = c.limit // tags are free
		}
		cut, skip := c.pickCut(i, budget)
		body := c.s[c.atoms[i].start:c.atoms[cut-1].end]
		for _, a := range c.atoms[i:cut] {
			stack = applyTag(stack, a)
		}
		var closing strings.Builder
		if c.d == TelegramHTML || c.d == HTML {
			for k := len(stack) - 1; k >= 0; k-- {
				closing.WriteString("</" + stack[k].name + ">")
			}
		} else if _, ok := c.inFence(c.atoms[cut-1].end); ok {
			closing.WriteString("\n```")
		}
		if c.hasVisible(i, cut) {
			c.out = append(c.out, reopen+body+closing.String())
		}
		i = cut + skip
	}
	return c.out
}

// hasVisible reports whether atoms[i:j] hold something other than
// whitespace and tags.
func (c *chunker) hasVisible(i, j int) bool {
	for _, a := range c.atoms[i:j] {
		if a.kind == atomText && strings.TrimSpace(c.s[a.start:a.end]) != "" {
			return true
		}
	}
	return false
}

func applyTag(stack []atom, a atom) []atom {
	switch a.kind {
	case atomOpenTag:
		return append(stack, a)
	case atomCloseTag:
		for k := len(stack) - 1; k >= 0; k-- {
			if stack[k].name == a.name {
				return stack[:k]
			}
		}
	}
	return stack
}

type cutPoint struct {
	cut, skip, at int // at: cost before the cut
}

// pickCut chooses where the chunk starting at atom i ends: atoms[i:cut] go
// into it and the skip whitespace atoms after it are dropped. cut > i.
func (c *chunker) pickCut(i, budget int) (cut, skip int) {
	var para, line, word cutPoint
	used, j := 0, i
	for ; j < len(c.atoms); j++ {
		a := c.atoms[j]
		if j > i && c.allowedCut(j) {
			switch a.kind {
			case atomNewline:
				line = cutPoint{j, 1, used}
				if j+1 < len(c.atoms) && c.atoms[j+1].kind == atomNewline {
					para = cutPoint{j, 2, used}
				}
			case atomSpace:
				word = cutPoint{j, 1, used}
			}
		}
		if used+a.cost > budget {
			break
		}
		used += a.cost
	}
	if j == len(c.atoms) {
		return j, 0
	}
	for _, p := range []cutPoint{para, line, word} {
		if p.cut > i && p.at >= budget/2 {
			return p.cut, p.skip
		}
	}
	best := para
	for _, p := range []cutPoint{line, word} {
		if p.cut > best.cut {
			best = p
		}
	}
	if best.cut > i {
		return best.cut, best.skip
	}
	return c.hardCut(i, j), 0
}

// allowedCut reports whether a chunk may end just before atom j: not inside
// or right after a line that opens a code fence (that would leave an empty
// block behind).
func (c *chunker) allowedCut(j int) bool {
	if len(c.fences) == 0 {
		return true
	}
	p := c.atoms[j-1].start
	f, ok := c.fenceAt(p + 1)
	return !ok || !f.open || p >= f.lineEnd+1
}

// hardCut ends a chunk at atom j (the first that does not fit), moving back
// so that a character made of several code points stays whole, an opening
// fence line is not cut, and no chunk ends with an opening tag.
func (c *chunker) hardCut(i, j int) int {
	if j <= i {
		return i + 1 // cannot happen with MinChunkLimit; never loop forever
	}
	cut := j
	for cut > i+1 && (joinsPrevious(c.s, c.atoms[cut]) || endsWithJoiner(c.s, c.atoms[cut-1])) {
		cut--
	}
	if cut == i+1 && j > i+1 {
		cut = j // one unbreakable run longer than the chunk: split it anyway
	}
	for cut > i+1 && !c.allowedCut(cut) {
		cut--
	}
	if cut == i+1 && !c.allowedCut(cut) {
		cut = j
	}
	for cut > i+1 && c.atoms[cut-1].kind == atomOpenTag {
		cut--
	}
	for cut < len(c.atoms) && c.atoms[cut].kind == atomCloseTag {
		cut++ // closing tags are free and belong with what they close
	}
	return cut
}

// joinsPrevious reports whether atom a's rune attaches to the one before it
// (combining marks, variation selectors, emoji modifiers, ZWJ).
func joinsPrevious(s string, a atom) bool {
	r, _ := utf8.DecodeRuneInString(s[a.start:a.end])
	return r == 0x200d || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) ||
		(0xfe00 <= r && r <= 0xfe0f) || (0x1f3fb <= r && r <= 0x1f3ff) || (0xe0020 <= r && r <= 0xe007f)
}

func endsWithJoiner(s string, a atom) bool {
	r, _ := utf8.DecodeRuneInString(s[a.start:a.end])
	return r == 0x200d
}

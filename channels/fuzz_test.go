package channels

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	"",
	"plain text",
	"**bold _nested *deep*_** ~~s~~ `code`",
	"# h1\n## h2\n\n> quote\n> > nested\n\n- a\n  - b\n    1. c\n\n---",
	"```go\nfunc main() {}\n```\n\n```\n```\n\n    indented code",
	"[x](https://e.com) [y](javascript:x) <https://a.b> www.c.d e@f.gh ![i](http://i)",
	"<b>raw</b> <script>alert(1)</script>\n\n<div>\nblock\n</div>",
	"@everyone @here <!channel> <@U1> <@&2> <#3>",
	"| a | b |\n|---|:-:|\n| `1` | **2** |",
	"- [x] done\n- [ ] todo",
	"&amp; &copy; &#128512; &#xFFFF; &bogus; \\* \\\\",
	"😀👨‍👩‍👧 日本語 e\u0301",
	"[**`code` in link**](https://x.y)",
	"* * *\n***\n___",
	"1) one\n2) two\n\n10. ten",
	"\x00\xff\xfe invalid",
	"a  \nhard break\\\nanother",
	"[a](<b c>) [d](e \"title\")",
	"~~**_all_**~~",
	"[x](https://a/@everyone) https://b/@here www.c.d/@Everyone",
}

// FuzzRender checks that every dialect renders any input without panicking,
// that Telegram output uses only allowed, balanced tags, and that HTML output
// never lets a raw tag from the input through.
func FuzzRender(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for d := Plain; d <= HTML; d++ {
			out := Render(md, d)
			if !utf8.ValidString(out) {
				t.Fatalf("%s: invalid UTF-8 %q", d, out)
			}
		}
		tg := Render(md, TelegramHTML)
		if err := checkTelegramHTML(tg); err != nil {
			t.Fatalf("Telegram output %q: %v", tg, err)
		}
		h := Render(md, HTML)
		tags := strings.ToLower(anyTagsOnly(h))
		for _, bad := range []string{"<script", "<div", "<img", "<iframe", "<style"} {
			if strings.Contains(tags, bad) {
				t.Fatalf("HTML output lets %q through: %q", bad, h)
			}
		}
		if eventAttr.MatchString(tags) {
			t.Fatalf("HTML output has an event attribute: %q", h)
		}
		for d, out := range map[Dialect]string{HTML: h, TelegramHTML: tg} {
			for _, m := range hrefAttr.FindAllStringSubmatch(out, -1) {
				if u := html.UnescapeString(m[1]); !allowedScheme(u, d) {
					t.Fatalf("%s link to %q: %q", d, u, out)
				}
			}
		}
		sl := Render(md, SlackMrkdwn)
		for _, bad := range []string{"<!channel", "<!here", "<!everyone", "<@"} {
			if strings.Contains(sl, bad) {
				t.Fatalf("Slack output contains %q: %q", bad, sl)
			}
		}
		dc := Render(md, DiscordMarkdown)
		for _, bad := range []string{"@everyone", "@here", "<@"} {
			if strings.Contains(dc, bad) {
				t.Fatalf("Discord output contains %q: %q", bad, dc)
			}
		}
	})
}

var (
	eventAttr = regexp.MustCompile(`\son[a-z]+=`)
	hrefAttr  = regexp.MustCompile(`href="([^"]*)"`)
)

// anyTagsOnly returns the tags in s, concatenated.
func anyTagsOnly(s string) string {
	return strings.Join(anyTag.FindAllString(s, -1), "")
}

// FuzzChunk checks Chunk on arbitrary text and on rendered Markdown: every
// chunk within the limit, valid UTF-8, not blank, Telegram chunks balanced,
// and no text lost.
func FuzzChunk(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, uint16(16+i*7), uint8(i))
	}
	f.Add(strings.Repeat("word ", 300), uint16(50), uint8(TelegramHTML))
	f.Add("```py\n"+strings.Repeat("x = 1\n", 100)+"```", uint16(40), uint8(DiscordMarkdown))
	f.Add(strings.Repeat("<b>bold</b> &amp; <i>it</i>\n", 40), uint16(30), uint8(TelegramHTML)+5)
	f.Fuzz(func(t *testing.T, s string, limit uint16, mode uint8) {
		d := Dialect(mode % 5)
		lim := max(int(limit)%5000, MinChunkLimit)
		in := strings.ToValidUTF8(s, "\uFFFD")
		if mode >= 5 { // chunk what Render produced, as the gateway does
			in = Render(s, d)
		}
		chunks := Chunk(in, lim, d)
		checkChunks(t, in, lim, d, chunks)
		if d == TelegramHTML && mode >= 5 {
			for i, c := range chunks {
				if err := checkTelegramHTML(c); err != nil {
					t.Fatalf("chunk %d: %v: %q", i, err, c)
				}
			}
		}
	})
}

package channels

import (
	"html"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCodeSpan(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"ls -la", "`ls -la`"},
		{"echo `id`", "`` echo `id` ``"},
		{"a``b", "```a``b```"},
		{"`", "`` ` ``"},
		{" x ", "`  x  `"},
		{"   ", "`   `"},
		{"a\nb\r\nc", "`a b c`"},
	} {
		if got := CodeSpan(c.in); got != c.want {
			t.Errorf("CodeSpan(%q) = %q, want %q", c.in, got, c.want)
		}
		if c.in == "" {
			continue
		}
		want := strings.NewReplacer("\r\n", " ", "\n", " ").Replace(c.in)
		if got := Render(CodeSpan(c.in), HTML); got != "<p><code>"+html.EscapeString(want)+"</code></p>" {
			t.Errorf("Render(CodeSpan(%q)) = %q, want the text verbatim in one code element", c.in, got)
		}
	}
}

func TestQuotedMarkdown(t *testing.T) {
	for _, c := range []struct{ in, html string }{
		{"`touch x` is not covered by an allow rule",
			"<p><code>touch x</code> is not covered by an allow rule</p>"},
		{"the redirection `> out.txt` writes outside the workspace",
			"<p>the redirection <code>&gt; out.txt</code> writes outside the workspace</p>"},
		{"`cat a`: where a leads cannot be known ahead",
			"<p><code>cat a</code>: where a leads cannot be known ahead</p>"},
		{"allow rule Bash(*) matches every command (`rm -rf /`)",
			"<p>allow rule Bash(*) matches every command (<code>rm -rf /</code>)</p>"},
		{"`cat a` reads `b`, outside",
			"<p><code>cat a</code> reads <code>b</code>, outside</p>"},
		{"`echo `id`` runs a command",
			"<p><code>echo `id`</code> runs a command</p>"},
		{"no quotes [link](http://e.com) **b**",
			"<p>no quotes [link](http://e.com) **b**</p>"},
		{"`unclosed [x](http://e.com)",
			"<p>`unclosed [x](http://e.com)</p>"},
		{"`x` [y](http://e.com) `z`", "<p><code>x</code> [y](http://e.com) <code>z</code></p>"},
		{"``", "<p>``</p>"},
	} {
		if got := Render(QuotedMarkdown(c.in), HTML); got != c.html {
			t.Errorf("QuotedMarkdown(%q) renders %q, want %q", c.in, got, c.html)
		}
	}
}

// FuzzQuotedMarkdown checks that no input makes markup: the HTML has only
// paragraphs, line breaks and code, and shows every character of the input.
func FuzzQuotedMarkdown(f *testing.F) {
	for _, s := range []string{
		"`touch x` is not covered", "`a` b `c`", "`x` [y](javascript:1) `z`", "`` ` ``",
		"`a`\n# h\n`b`", "`<b>` &amp; `*x*`", "(`a`)` `b`", "`a\n\n`b`",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return
		}
		out := Render(QuotedMarkdown(s), HTML)
		for _, tag := range anyTag.FindAllString(out, -1) {
			switch tag {
			case "<p>", "</p>", "<code>", "</code>", "<br>":
			default:
				t.Fatalf("QuotedMarkdown(%q) renders the tag %s: %q", s, tag, out)
			}
		}
		shown := html.UnescapeString(anyTag.ReplaceAllString(out, ""))
		if got, want := shownChars(shown), shownChars(s); got != want {
			t.Fatalf("QuotedMarkdown(%q) shows %q, want every character of the input", s, shown)
		}
	})
}

// shownChars drops the white space of s and the backticks that quote code.
func shownChars(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '`' {
			return -1
		}
		return r
	}, s)
}

func TestCodeBlock(t *testing.T) {
	for _, body := range []string{"ls", "echo ```\n````\ndone", "`a`\n\n    b\n# c"} {
		got := Render(CodeBlock(body, ""), HTML)
		if want := "<pre><code>" + html.EscapeString(body) + "</code></pre>"; got != want {
			t.Errorf("Render(CodeBlock(%q)) = %q, want %q", body, got, want)
		}
	}
	if got := Render(CodeBlock("+a\n-b", "diff"), HTML); got != `<pre><code class="language-diff">+a`+"\n"+`-b</code></pre>` {
		t.Errorf("diff block: %q", got)
	}
}

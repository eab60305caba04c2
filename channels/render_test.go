package channels

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	type want map[Dialect]string
	tests := []struct {
		name string
		md   string
		want want
	}{
		{
			name: "emphasis",
			md:   "a **bold** and *it* and ~~gone~~ and `x<y`",
			want: want{
				TelegramHTML:    "a <b>bold</b> and <i>it</i> and <s>gone</s> and <code>x&lt;y</code>",
				SlackMrkdwn:     "a *bold* and _it_ and ~gone~ and `x&lt;y`",
				DiscordMarkdown: "a **bold** and *it* and ~~gone~~ and `x<y`",
				HTML:            "<p>a <strong>bold</strong> and <em>it</em> and <del>gone</del> and <code>x&lt;y</code></p>",
				Plain:           "a bold and it and gone and x<y",
			},
		},
		{
			name: "escaping of literal text",
			md:   `5 < 6 & 7 > 3 "q" \*not em\* snake_case`,
			want: want{
				TelegramHTML:    `5 &lt; 6 &amp; 7 &gt; 3 "q" *not em* snake_case`,
				SlackMrkdwn:     `5 &lt; 6 &amp; 7 &gt; 3 "q" *not em* snake_case`,
				DiscordMarkdown: `5 < 6 & 7 > 3 "q" \*not em\* snake\_case`,
				HTML:            `<p>5 &lt; 6 &amp; 7 &gt; 3 &quot;q&quot; *not em* snake_case</p>`,
				Plain:           `5 < 6 & 7 > 3 "q" *not em* snake_case`,
			},
		},
		{
			name: "raw HTML is text",
			md:   "hi <b onclick=x>there</b>\n\n<div>\n<script>alert(1)</script>\n</div>",
			want: want{
				TelegramHTML: "hi &lt;b onclick=x&gt;there&lt;/b&gt;\n\n&lt;div&gt;\n&lt;script&gt;alert(1)&lt;/script&gt;\n&lt;/div&gt;",
				HTML:         "<p>hi &lt;b onclick=x&gt;there&lt;/b&gt;</p>\n<p>&lt;div&gt;<br>\n&lt;script&gt;alert(1)&lt;/script&gt;<br>\n&lt;/div&gt;</p>",
				SlackMrkdwn:  "hi &lt;b onclick=x&gt;there&lt;/b&gt;\n\n&lt;div&gt;\n&lt;script&gt;alert(1)&lt;/script&gt;\n&lt;/div&gt;",
			},
		},
		{
			name: "mass mentions",
			md:   "ping @everyone and @here and <!channel> <!here> <@U123> <@&99> @Channel",
			want: want{
				SlackMrkdwn:     "ping @\u200beveryone and @\u200bhere and &lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;@&amp;99&gt; @\u200bChannel",
				DiscordMarkdown: "ping @\u200beveryone and @\u200bhere and <!channel> <!here> <\u200b@U123> <\u200b@&99> @Channel",
				TelegramHTML:    "ping @everyone and @here and &lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;@&amp;99&gt; @Channel",
			},
		},
		{
			name: "mentions in code",
			md:   "`@everyone <@1>`\n\n```\n@here\n```",
			want: want{
				DiscordMarkdown: "`@\u200beveryone <\u200b@1>`\n\n```\n@\u200bhere\n```",
				SlackMrkdwn:     "`@everyone &lt;@1&gt;`\n\n```\n@here\n```",
			},
		},
		{
			name: "links",
			md:   "[site](https://ex.com/a_b?x=1&y=2) [bad](javascript:alert(1)) [rel](docs/a.md) <https://auto.dev> [q](https://e.com/\"><b>)",
			want: want{
				TelegramHTML:    `<a href="https://ex.com/a_b?x=1&amp;y=2">site</a> bad (javascript:alert(1)) rel (docs/a.md) <a href="https://auto.dev">https://auto.dev</a> <a href="https://e.com/%22%3E%3Cb%3E">q</a>`,
				SlackMrkdwn:     "<https://ex.com/a_b?x=1&amp;y=2|site> bad (javascript:alert(1)) rel (docs/a.md) <https://auto.dev> <https://e.com/%22%3E%3Cb%3E|q>",
				DiscordMarkdown: "[site](https://ex.com/a_b?x=1&y=2) bad (javascript:alert(1)) rel (docs/a.md) https://auto.dev [q](https://e.com/%22%3E%3Cb%3E)",
				HTML:            `<p><a href="https://ex.com/a_b?x=1&amp;y=2" rel="nofollow noopener noreferrer">site</a> bad (javascript:alert(1)) rel (docs/a.md) <a href="https://auto.dev" rel="nofollow noopener noreferrer">https://auto.dev</a> <a href="https://e.com/%22%3E%3Cb%3E" rel="nofollow noopener noreferrer">q</a></p>`,
				Plain:           "site (https://ex.com/a_b?x=1&y=2) bad (javascript:alert(1)) rel (docs/a.md) https://auto.dev q (https://e.com/%22%3E%3Cb%3E)",
			},
		},
		{
			name: "bare URLs stay whole",
			md:   "see https://example.com/some_path_here for *more*",
			want: want{
				DiscordMarkdown: "see https://example.com/some_path_here for *more*",
				TelegramHTML:    `see <a href="https://example.com/some_path_here">https://example.com/some_path_here</a> for <i>more</i>`,
			},
		},
		{
			name: "code in link label",
			md:   "[run `go test`](https://go.dev)",
			want: want{
				TelegramHTML:    `<a href="https://go.dev">run go test</a>`,
				DiscordMarkdown: "[run `go test`](https://go.dev)",
			},
		},
		{
			name: "fenced code keeps language and content",
			md:   "```go\nif a < b && c {\n\tfmt.Println(\"```\")\n}\n```",
			want: want{
				TelegramHTML:    "<pre><code class=\"language-go\">if a &lt; b &amp;&amp; c {\n\tfmt.Println(\"```\")\n}</code></pre>",
				SlackMrkdwn:     "```\nif a &lt; b &amp;&amp; c {\n\tfmt.Println(\"``\u200b`\")\n}\n```",
				DiscordMarkdown: "```go\nif a < b && c {\n\tfmt.Println(\"``\u200b`\")\n}\n```",
				HTML:            "<pre><code class=\"language-go\">if a &lt; b &amp;&amp; c {\n\tfmt.Println(&quot;```&quot;)\n}</code></pre>",
				Plain:           "if a < b && c {\n\tfmt.Println(\"```\")\n}",
			},
		},
		{
			name: "bad fence language is dropped",
			md:   "```\"><script>\nx\n```",
			want: want{
				TelegramHTML:    "<pre>x</pre>",
				DiscordMarkdown: "```\nx\n```",
			},
		},
		{
			name: "nested lists",
			md:   "- one\n- two\n  - inner *a*\n    1. deep\n    2. deeper\n- three",
			want: want{
				TelegramHTML:    "• one\n• two\n  ◦ inner <i>a</i>\n    1. deep\n    2. deeper\n• three",
				SlackMrkdwn:     "• one\n• two\n  ◦ inner _a_\n    1. deep\n    2. deeper\n• three",
				DiscordMarkdown: "- one\n- two\n  - inner *a*\n    1. deep\n    2. deeper\n- three",
				HTML:            "<ul>\n<li>one</li>\n<li>two\n<ul>\n<li>inner <em>a</em>\n<ol>\n<li>deep</li>\n<li>deeper</li>\n</ol></li>\n</ul></li>\n<li>three</li>\n</ul>",
				Plain:           "• one\n• two\n  ◦ inner a\n    1. deep\n    2. deeper\n• three",
			},
		},
		{
			name: "code block in a list item is not indented",
			md:   "1. run:\n\n   ```sh\n   go test\n   ```\n2. done",
			want: want{
				TelegramHTML:    "1. run:\n\n   <pre><code class=\"language-sh\">go test</code></pre>\n\n2. done",
				DiscordMarkdown: "1. run:\n\n   ```sh\ngo test\n```\n\n2. done",
			},
		},
		{
			name: "headings and quotes",
			md:   "# Title **x**\n\n> quoted\n> > nested\n\ntext",
			want: want{
				TelegramHTML:    "<b>Title x</b>\n\n<blockquote>quoted\n\nnested</blockquote>\n\ntext",
				SlackMrkdwn:     "*Title x*\n\n> quoted\n>\n> > nested\n\ntext",
				DiscordMarkdown: "**Title x**\n\n> quoted\n>\n> > nested\n\ntext",
				HTML:            "<h1>Title <strong>x</strong></h1>\n<blockquote>\n<p>quoted</p>\n<blockquote>\n<p>nested</p>\n</blockquote>\n</blockquote>\n<p>text</p>",
			},
		},
		{
			name: "discord line-start syntax in text",
			md:   "\\# not a heading\n\\- not a list\n1\\. not ordered",
			want: want{
				DiscordMarkdown: "\\# not a heading\n\\- not a list\n1\\. not ordered",
				Plain:           "# not a heading\n- not a list\n1. not ordered",
			},
		},
		{
			name: "table",
			md:   "| a | bb |\n|---|---|\n| 1 | <2> |",
			want: want{
				TelegramHTML: "<pre>a | bb\n--+----\n1 | &lt;2&gt;</pre>",
				HTML:         "<table>\n<tr><th>a</th><th>bb</th></tr>\n<tr><td>1</td><td>&lt;2&gt;</td></tr>\n</table>",
			},
		},
		{
			name: "entities and line breaks",
			md:   "&copy; &#128512; line one\nline two",
			want: want{
				TelegramHTML: "© 😀 line one\nline two",
				HTML:         "<p>© 😀 line one<br>\nline two</p>",
			},
		},
		{
			name: "code span of one space",
			md:   "a `` `` b",
			want: want{TelegramHTML: "a <code> </code> b"},
		},
	}
	for _, tc := range tests {
		for d, want := range tc.want {
			t.Run(tc.name+"/"+d.String(), func(t *testing.T) {
				got := Render(tc.md, d)
				if got != want {
					t.Errorf("Render(%q, %s)\n got: %q\nwant: %q", tc.md, d, got, want)
				}
				if d == TelegramHTML {
					if err := checkTelegramHTML(got); err != nil {
						t.Errorf("invalid Telegram HTML %q: %v", got, err)
					}
				}
			})
		}
	}
}

func TestDialectNames(t *testing.T) {
	for d := Plain; d <= HTML; d++ {
		got, err := ParseDialect(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDialect(%q) = %v, %v", d.String(), got, err)
		}
	}
	if _, err := ParseDialect("irc"); err == nil {
		t.Error("ParseDialect accepted an unknown dialect")
	}
	if s := Dialect(42).String(); s != "Dialect(42)" {
		t.Errorf("Dialect(42).String() = %q", s)
	}
}

func TestRenderMessage(t *testing.T) {
	m := Message{Parts: []Part{
		Text{Markdown: "Running the **tests**."},
		Reasoning{Text: "secret thoughts"},
		ToolActivity{ID: "1", Title: "Bash `go test ./...`", Kind: "execute", Status: StatusDone},
		ToolActivity{ID: "2", Title: "Edit `main.go`", Status: StatusDenied},
		Buttons{Rows: [][]Button{{{Label: "Approve", Token: "t1"}}}},
		Plan{Items: []PlanItem{{Content: "write *code*", Status: PlanCompleted}, {Content: "test", Status: PlanInProgress}, {Content: "ship"}}},
		Notice{Text: "context compacted <now>"},
	}}
	tests := []struct {
		d    Dialect
		want string
	}{
		{TelegramHTML, "Running the <b>tests</b>.\n\n" +
			"⚙ Bash <code>go test ./...</code> — done\n⚙ Edit <code>main.go</code> — denied\n\n" +
			"☑ <s>write *code*</s>\n◐ <b>test</b>\n☐ ship\n\n<i>context compacted &lt;now&gt;</i>"},
		{SlackMrkdwn, "Running the *tests*.\n\n" +
			"⚙ Bash `go test ./...` — done\n⚙ Edit `main.go` — denied\n\n" +
			"☑ ~write *code*~\n◐ *test*\n☐ ship\n\n_context compacted &lt;now&gt;_"},
		{Plain, "Running the tests.\n\n⚙ Bash go test ./... — done\n⚙ Edit main.go — denied\n\n" +
			"☑ write *code*\n◐ test\n☐ ship\n\ncontext compacted <now>"},
	}
	for _, tc := range tests {
		got := RenderMessage(m, Capabilities{Dialect: tc.d})
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("RenderMessage(%s)\n got: %q\nwant: %q", tc.d, got, tc.want)
		}
	}
	if got := RenderMessage(Message{Parts: []Part{Buttons{}, Reasoning{Text: "x"}}}, Capabilities{}); got != nil {
		t.Errorf("a message with nothing to show rendered as %q", got)
	}
	long := TextMessage(strings.Repeat("word ", 2000))
	chunks := RenderMessage(long, Capabilities{Dialect: TelegramHTML, MaxMessageLen: 4096})
	if len(chunks) != 3 {
		t.Errorf("10,000 characters at 4,096 gave %d chunks, want 3", len(chunks))
	}
}

func TestMessageHelpers(t *testing.T) {
	m := Message{Parts: []Part{
		Text{Markdown: "a"}, Buttons{Rows: [][]Button{{{Label: "A", Token: "1"}}, {}}},
		Attachment{Name: "f.txt", Data: []byte("x")}, Text{Markdown: "b"},
		Buttons{Rows: [][]Button{{{Label: "B", Token: "2"}}}},
	}}
	if m.Markdown() != "a\n\nb" || len(m.ButtonRows()) != 2 || len(m.Attachments()) != 1 {
		t.Errorf("helpers: %q %v %v", m.Markdown(), m.ButtonRows(), m.Attachments())
	}
	if err := m.Validate(); err != nil {
		t.Errorf("valid message: %v", err)
	}
	bad := []Message{
		{Parts: []Part{nil}},
		{Parts: []Part{Buttons{Rows: [][]Button{{{Label: "x"}}}}}},
		{Parts: []Part{Buttons{Rows: [][]Button{{{Token: "t"}}}}}},
		{Parts: []Part{Buttons{Rows: [][]Button{{{Label: "x", Token: strings.Repeat("a", MaxTokenLen+1)}}}}}},
		{Parts: []Part{Attachment{Name: "x"}}},
		{Parts: []Part{Attachment{Data: []byte{}}}},
	}
	for i, m := range bad {
		if m.Validate() == nil {
			t.Errorf("bad message %d passed Validate", i)
		}
	}
}

func TestEscapeMarkdown(t *testing.T) {
	in := "*a* _b_ `c` <d> [e](f) # g \\ h"
	for d := Plain; d <= HTML; d++ {
		if d == DiscordMarkdown {
			continue // Discord re-escapes the characters for itself
		}
		got := Render(EscapeMarkdown(in), d)
		if strings.Contains(got, "<b>") || strings.Contains(got, "<i>") || strings.Contains(got, "<code>") {
			t.Errorf("%s: escaped text rendered markup: %q", d, got)
		}
	}
	if got := Render(EscapeMarkdown(in), Plain); got != in {
		t.Errorf("plain round trip: %q, want %q", got, in)
	}
}

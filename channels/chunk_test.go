package channels

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// checkChunks asserts the properties every Chunk result has.
func checkChunks(t *testing.T, in string, limit int, d Dialect, chunks []string) {
	t.Helper()
	for i, c := range chunks {
		if n := Length(c, d); n > limit {
			t.Errorf("chunk %d has length %d > %d: %q", i, n, limit, c)
		}
		if !utf8.ValidString(c) {
			t.Errorf("chunk %d is not valid UTF-8: %q", i, c)
		}
		if strings.TrimSpace(c) == "" {
			t.Errorf("chunk %d is blank", i)
		}
		if d == TelegramHTML && checkTelegramHTML(in) == nil {
			if err := checkTelegramHTML(c); err != nil {
				t.Errorf("chunk %d is bad Telegram HTML: %v\n%q", i, err, c)
			}
		}
	}
	joined := strings.Join(chunks, "")
	switch d {
	case TelegramHTML, HTML:
		if got, want := noSpace(textAtoms(joined, d)), noSpace(textAtoms(in, d)); got != want {
			t.Errorf("visible text changed:\n got %q\nwant %q", got, want)
		}
	case Plain:
		if got, want := noSpace(joined), noSpace(in); got != want {
			t.Errorf("text changed:\n got %q\nwant %q", got, want)
		}
	default:
		if !isSubsequence(noSpace(in), noSpace(joined)) {
			t.Errorf("text lost:\n in %q\nout %q", in, chunks)
		}
	}
}

func TestChunkBoundaries(t *testing.T) {
	para := strings.Repeat("a", 20)
	tests := []struct {
		name  string
		in    string
		limit int
		d     Dialect
		want  []string
	}{
		{"fits", "short text", 100, Plain, []string{"short text"}},
		{"no limit", strings.Repeat("x", 10000), 0, Plain, []string{strings.Repeat("x", 10000)}},
		{"blank", " \n\n ", 20, Plain, nil},
		{"paragraphs", para + "\n\n" + para + "\n\n" + para, 45, Plain,
			[]string{para + "\n\n" + para, para}},
		{"lines", "line one is here\nline two is here\nline three", 35, Plain,
			[]string{"line one is here\nline two is here", "line three"}},
		{"words", "alpha beta gamma delta epsilon zeta eta theta", 20, Plain,
			[]string{"alpha beta gamma", "delta epsilon zeta", "eta theta"}},
		{"hard", strings.Repeat("x", 40), 16, Plain,
			[]string{strings.Repeat("x", 16), strings.Repeat("x", 16), strings.Repeat("x", 8)}},
		{"limit raised to minimum", strings.Repeat("y", 20), 3, Plain,
			[]string{strings.Repeat("y", 16), "yyyy"}},
		{"slack entity not split", strings.Repeat("a", 14) + "&amp;b", 16, SlackMrkdwn,
			[]string{strings.Repeat("a", 14), "&amp;b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Chunk(tc.in, tc.limit, tc.d)
			limit := tc.limit
			if limit > 0 {
				limit = max(limit, MinChunkLimit)
				checkChunks(t, tc.in, limit, tc.d, got)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("Chunk = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChunkSlackLinkKeptWhole(t *testing.T) {
	in := "see this <https://example.com/a|label> and more text after it"
	chunks := Chunk(in, 60, SlackMrkdwn)
	checkChunks(t, in, 60, SlackMrkdwn, chunks)
	if len(chunks) < 2 {
		t.Fatalf("got %q, want a split", chunks)
	}
	for _, c := range chunks {
		if strings.Count(c, "<") != strings.Count(c, ">") {
			t.Errorf("link split: %q", c)
		}
	}
}

func TestChunkReopensCodeFence(t *testing.T) {
	code := strings.Repeat("fmt.Println(\"hello\")\n", 30)
	for _, d := range []Dialect{DiscordMarkdown, SlackMrkdwn} {
		t.Run(d.String(), func(t *testing.T) {
			in := Render("Intro.\n\n```go\n"+code+"```\n\nOutro.", d)
			chunks := Chunk(in, 200, d)
			checkChunks(t, in, 200, d, chunks)
			if len(chunks) < 3 {
				t.Fatalf("got %d chunks, want ≥3", len(chunks))
			}
			open := "```go\n"
			if d == SlackMrkdwn {
				open = "```\n"
			}
			for i, c := range chunks {
				if strings.Count(c, "```")%2 != 0 {
					t.Errorf("chunk %d has unbalanced fences: %q", i, c)
				}
				if strings.Contains(c, "fmt.Println") && !strings.Contains(c, open) {
					t.Errorf("chunk %d holds code outside a fence: %q", i, c)
				}
				if strings.Contains(c, open+"\n```") || strings.HasSuffix(c, open+"```") {
					t.Errorf("chunk %d has an empty code block: %q", i, c)
				}
			}
		})
	}
}

func TestChunkTelegramReopensTags(t *testing.T) {
	md := "Some **bold text that goes on for quite a while and _has italics_ inside it** and then\n\n" +
		"```python\n" + strings.Repeat("print('x < y')\n", 20) + "```\n\n" +
		"> a quote that is long enough to be split across two chunks of text right here"
	in := Render(md, TelegramHTML)
	if err := checkTelegramHTML(in); err != nil {
		t.Fatal(err)
	}
	chunks := Chunk(in, 60, TelegramHTML)
	checkChunks(t, in, 60, TelegramHTML, chunks)
	reopened := 0
	for _, c := range chunks[1:] {
		if strings.HasPrefix(c, `<pre><code class="language-python">`) {
			reopened++
		}
	}
	if reopened < 2 {
		t.Errorf("code block reopened with its language %d times, want ≥2: %q", reopened, chunks)
	}
}

func TestChunkTelegramCountsVisibleUTF16(t *testing.T) {
	// 10 visible characters each, but many bytes of markup.
	unit := `<a href="https://example.com/a/very/long/path">0123456789</a> `
	in := strings.Repeat(unit, 50)
	chunks := Chunk(in, 100, TelegramHTML)
	checkChunks(t, in, 100, TelegramHTML, chunks)
	if len(chunks) != 6 { // 550 visible characters at 100 per chunk
		t.Errorf("got %d chunks, want 6", len(chunks))
	}
	// Emoji outside the BMP count two UTF-16 units; entities count one.
	if n := Length("😀&amp;<b>x</b>", TelegramHTML); n != 4 {
		t.Errorf("Length = %d, want 4", n)
	}
	if n := Length("😀&amp;<b>x</b>", Plain); n != 14 {
		t.Errorf("plain Length = %d, want 14", n)
	}
	if n := Length("&#128512;", TelegramHTML); n != 2 {
		t.Errorf("astral entity Length = %d, want 2", n)
	}
}

func TestChunkUnicode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		d    Dialect
	}{
		{"cjk", strings.Repeat("日本語のテキスト", 30), Plain},
		{"emoji telegram", strings.Repeat("😀🎉", 40), TelegramHTML},
		{"zwj family", strings.Repeat("👨‍👩‍👧‍👦", 20), Plain},
		{"combining", strings.Repeat("e\u0301", 40), DiscordMarkdown},
		{"entities", strings.Repeat("&lt;&amp;&gt;", 30), TelegramHTML},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chunks := Chunk(tc.in, 17, tc.d)
			checkChunks(t, tc.in, 17, tc.d, chunks)
			for i, c := range chunks {
				r, _ := utf8.DecodeRuneInString(c)
				if joinsPrevious(c, atom{start: 0, end: utf8.RuneLen(r)}) {
					t.Errorf("chunk %d starts inside a character: %q", i, c)
				}
			}
		})
	}
}

func TestChunkInvalidUTF8(t *testing.T) {
	in := strings.Repeat("ab\xffc\xe2\x82", 20)
	chunks := Chunk(in, 16, Plain)
	checkChunks(t, strings.ToValidUTF8(in, "\uFFFD"), 16, Plain, chunks)
}

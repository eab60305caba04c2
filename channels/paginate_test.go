package channels

import (
	"fmt"
	"strings"
	"testing"
)

func TestPaginate(t *testing.T) {
	var long strings.Builder
	for i := range 300 {
		fmt.Fprintf(&long, "Line %03d with <angle> & *stars* and `code`.\n\n", i)
	}
	code := "```go\n" + strings.Repeat("fmt.Println(\"x < y\") // padding padding\n", 200) + "```\n"
	tools := []Part{}
	for i := range 20 {
		tools = append(tools, ToolActivity{ID: fmt.Sprint(i), Title: fmt.Sprintf("Bash `step %d`", i), Status: StatusDone})
	}
	for _, d := range []Dialect{TelegramHTML, SlackMrkdwn, DiscordMarkdown, Plain} {
		for name, m := range map[string]Message{
			"text":  {Parts: []Part{Text{Markdown: long.String()}}, ReplyTo: "r1"},
			"code":  {Parts: []Part{Text{Markdown: code}}},
			"tools": {Parts: append(append([]Part(nil), tools...), Text{Markdown: long.String()}, Notice{Text: "Waiting for approval."}, Buttons{Rows: [][]Button{{{Label: "OK", Token: "t"}}}})},
		} {
			t.Run(d.String()+"/"+name, func(t *testing.T) {
				caps := Capabilities{MaxMessageLen: 2000, Dialect: d}
				pages := Paginate(m, caps)
				if len(pages) < 2 {
					t.Fatalf("%d pages", len(pages))
				}
				var all strings.Builder
				for i, p := range pages {
					chunks := RenderMessage(p, caps)
					if len(chunks) != 1 {
						t.Fatalf("page %d renders into %d chunks", i, len(chunks))
					}
					if l := Length(chunks[0], d); l > 2000 {
						t.Fatalf("page %d is %d long", i, l)
					}
					all.WriteString(chunks[0])
				}
				if pages[0].ReplyTo != m.ReplyTo {
					t.Errorf("first page ReplyTo %q, want %q", pages[0].ReplyTo, m.ReplyTo)
				}
				text := all.String()
				switch name {
				case "text":
					for i := range 300 {
						if !strings.Contains(text, fmt.Sprintf("Line %03d", i)) {
							t.Fatalf("line %d lost", i)
						}
					}
				case "code":
					if n := strings.Count(text, "fmt.Println"); n != 200 {
						t.Fatalf("%d code lines, want 200", n)
					}
				case "tools":
					if !strings.Contains(text, "8 earlier tool calls") || strings.Contains(text, "step 7") || !strings.Contains(text, "step 19") {
						t.Errorf("tool lines not collapsed to the last 12 with a count")
					}
					last := pages[len(pages)-1]
					if len(last.ButtonRows()) != 1 {
						t.Error("buttons not on the last page")
					}
					if len(pages[0].ButtonRows()) != 0 {
						t.Error("buttons on the first page")
					}
				}
			})
		}
	}
	keyed := Message{Parts: []Part{Text{Markdown: long.String()}}, Key: "out-7"}
	pages := Paginate(keyed, Capabilities{MaxMessageLen: 2000, Dialect: DiscordMarkdown})
	keys := map[string]bool{}
	for _, p := range pages {
		keys[p.Key] = true
	}
	if len(pages) < 2 || pages[0].Key != "out-7" || len(keys) != len(pages) || keys[""] {
		t.Errorf("page keys %v for %d pages: want the first to keep out-7 and every page a distinct key", keys, len(pages))
	}
	if got := Paginate(TextMessage("short"), Capabilities{MaxMessageLen: 100}); len(got) != 1 {
		t.Errorf("short message: %d pages", len(got))
	}
	if got := Paginate(TextMessage(long.String()), Capabilities{}); len(got) != 1 {
		t.Errorf("no limit: %d pages", len(got))
	}
}

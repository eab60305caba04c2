package channels

import (
	"strings"
	"testing"
)

// reply4K is a typical ~4 KB model answer: prose with emphasis and links,
// a list, a code block and a table.
var reply4K = strings.Repeat(`## Result

I ran the **tests** in `+"`./channels/...`"+` and _most_ of them pass; see [the docs](https://go.dev/doc/fuzz) for fuzzing.
A few notes & caveats <not html>:

- the renderer escapes `+"`<`"+`, `+"`>`"+` and `+"`&`"+`
- nested lists work:
  1. first
  2. second
- ~~old behaviour~~ is gone

`+"```go"+`
func main() {
	fmt.Println("hello, world") // a < b && c > d
}
`+"```"+`

| name | status |
|------|--------|
| render | ok |

`, 9)

func BenchmarkRenderTelegram(b *testing.B) {
	b.SetBytes(int64(len(reply4K)))
	for b.Loop() {
		Render(reply4K, TelegramHTML)
	}
}

func BenchmarkRenderAndChunkTelegram(b *testing.B) {
	b.SetBytes(int64(len(reply4K)))
	for b.Loop() {
		Chunk(Render(reply4K, TelegramHTML), 1000, TelegramHTML)
	}
}

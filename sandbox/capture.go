package sandbox

import (
	"fmt"
	"strings"
)

// capture keeps the first max bytes written to it and counts the rest.
// One goroutine writes; text and note are called after it finished.
type capture struct {
	buf     []byte
	max     int
	dropped int64
	notes   []string
}

func newCapture(max int) *capture { return &capture{max: max} }

// Write never fails, so the copy from the pipe keeps draining it and the
// command never blocks on a full pipe.
func (c *capture) Write(p []byte) (int, error) {
	room := c.max - len(c.buf)
	if room >= len(p) {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		c.buf = append(c.buf, p[:room]...)
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// note adds a line after the output.
func (c *capture) note(s string) { c.notes = append(c.notes, s) }

// text returns the redacted output with the notes appended.
func (c *capture) text(red *Redactor) string {
	kept := c.buf
	dropped := c.dropped
	if dropped > 0 {
		// A secret straddling the cut would survive redaction as a prefix:
		// drop the bytes where one could start.
		n := min(len(kept), max(red.maxLen()-1, 0))
		kept = kept[:len(kept)-n]
		dropped += int64(n)
	}
	var b strings.Builder
	b.WriteString(red.Redact(string(kept)))
	if dropped > 0 {
		fmt.Fprintf(&b, "\n[sandbox: output exceeded %d bytes; the remaining %d bytes were discarded]", c.max, dropped)
	}
	for _, n := range c.notes {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(n)
	}
	return b.String()
}

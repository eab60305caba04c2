package client

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readAll(t testing.TB, in string, maxLine int) ([]sseEvent, error) {
	r := newSSEReader(strings.NewReader(in), maxLine)
	var out []sseEvent
	for {
		ev, err := r.next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []sseEvent
		err  error
	}{
		{"one event", "id: r:1\nevent: x\ndata: {\"a\":1}\n\n", []sseEvent{{id: "r:1", hasID: true, event: "x", data: `{"a":1}`}}, io.EOF},
		{"comments and retry", ": keepalive\n\nretry: 1000\n\nid: r:2\ndata: d\n\n", []sseEvent{{retry: 1000}, {id: "r:2", hasID: true, data: "d"}}, io.EOF},
		{"multi-line data", "data: a\ndata: b\n\n", []sseEvent{{data: "a\nb"}}, io.EOF},
		{"CRLF and CR line ends", "id: r:1\r\ndata: x\r\n\r\nid: r:2\rdata: y\r\r", []sseEvent{{id: "r:1", hasID: true, data: "x"}, {id: "r:2", hasID: true, data: "y"}}, io.EOF},
		{"no space after the colon", "data:x\n\n", []sseEvent{{data: "x"}}, io.EOF},
		{"an event cut off is never dispatched", "id: r:1\ndata: {\"a\":1}\n\nid: r:2\ndata: {\"a\"", []sseEvent{{id: "r:1", hasID: true, data: `{"a":1}`}}, io.ErrUnexpectedEOF},
		{"an event without its blank line is not dispatched", "id: r:1\ndata: x\n", nil, io.EOF},
		{"an id with NUL is ignored", "id: a\x00b\ndata: x\n\n", []sseEvent{{data: "x"}}, io.EOF},
		{"unknown fields are ignored", "foo: bar\ndata: x\n\n", []sseEvent{{data: "x"}}, io.EOF},
		{"a bad retry is ignored", "retry: 10s\ndata: x\n\n", []sseEvent{{data: "x"}}, io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(t, c.in, 0)
			if !errors.Is(err, c.err) {
				t.Errorf("error %v, want %v", err, c.err)
			}
			if d := cmp.Diff(c.want, got, cmp.AllowUnexported(sseEvent{})); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestSSEReaderBoundsLines(t *testing.T) {
	if _, err := readAll(t, "data: "+strings.Repeat("x", 100)+"\n\n", 50); !errors.Is(err, errLineTooLong) {
		t.Errorf("a 106-byte line with a 50-byte bound: %v, want errLineTooLong", err)
	}
	if _, err := readAll(t, strings.Repeat("data: xxxxxxxxxx\n", 20)+"\n", 50); !errors.Is(err, errLineTooLong) {
		t.Errorf("200 bytes of data lines with a 50-byte bound: %v, want errLineTooLong", err)
	}
}

// The reader never panics, never dispatches data longer than its bound,
// and what it dispatches re-encodes to something it reads back the same.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"id: r:1\nevent: x\ndata: {}\n\n", ": c\r\n\r\ndata: a\rdata: b\r\r", "retry: 5\n\n", "data", "\n\n\n", "id\ndata\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		evs, _ := readAll(t, in, 1024)
		for _, ev := range evs {
			if len(ev.data) > 1024 {
				t.Fatalf("data of %d bytes past a 1024 bound", len(ev.data))
			}
			if strings.ContainsRune(ev.id, 0) {
				t.Fatal("an id with NUL was taken")
			}
			// "field: value": the reader drops one space after the colon,
			// so a value that starts with a space keeps it.
			var b strings.Builder
			if ev.hasID {
				b.WriteString("id: " + ev.id + "\n")
			}
			if ev.event != "" {
				b.WriteString("event: " + ev.event + "\n")
			}
			if ev.data != "" {
				for _, l := range strings.Split(ev.data, "\n") {
					b.WriteString("data: " + l + "\n")
				}
			}
			if ev.retry > 0 {
				continue // retry-only events carry nothing to compare
			}
			if strings.ContainsAny(ev.id+ev.event, "\r\n") {
				t.Fatalf("a field holds a line break: %q", ev.id+ev.event)
			}
			b.WriteString("\n")
			again, err := readAll(t, b.String(), 4096)
			if !errors.Is(err, io.EOF) || len(again) != 1 || again[0].data != ev.data || again[0].id != ev.id || again[0].event != ev.event {
				t.Fatalf("re-encoded %q reads as %+v, %v; want %+v", b.String(), again, err, ev)
			}
		}
	})
}

package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DefaultMaxLine bounds one line of the event stream.
const DefaultMaxLine = 8 << 20

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	id    string
	hasID bool // the event set its id (possibly to "")
	event string
	data  string
	retry int // milliseconds; 0: not set
}

// sseReader reads Server-Sent Events (the WHATWG format: "field: value"
// lines, a blank line dispatches, lines starting with ':' are comments,
// lines end with LF, CRLF or CR).
type sseReader struct {
	br      *bufio.Reader
	maxLine int
	cr      bool // the last line ended with CR: skip a following LF
}

func newSSEReader(r io.Reader, maxLine int) *sseReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &sseReader{br: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine}
}

var errLineTooLong = errors.New("event stream: line too long")

// line reads one line without its end.
func (r *sseReader) line() (string, error) {
	var b strings.Builder
	for {
		c, err := r.br.ReadByte()
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				return "", io.ErrUnexpectedEOF // a line cut off mid-way is never dispatched
			}
			return "", err
		}
		if r.cr {
			r.cr = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			r.cr = true
			return b.String(), nil
		}
		if b.Len() >= r.maxLine {
			return "", errLineTooLong
		}
		b.WriteByte(c)
	}
}

// next returns the next event that has data, or an id or retry change;
// comments and empty events are skipped. An error means the stream ended
// (io.EOF when cleanly between events).
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data strings.Builder
	for {
		line, err := r.line()
		if err != nil {
			return sseEvent{}, err
		}
		if line == "" {
			// An event whose data is empty carries nothing (the stream's
			// events are JSON); its id and retry still count.
			ev.data = strings.TrimSuffix(data.String(), "\n")
			if ev.data != "" || ev.hasID || ev.retry > 0 {
				return ev, nil
			}
			ev = sseEvent{}
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			ev.event = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			if data.Len() > r.maxLine {
				return sseEvent{}, errLineTooLong
			}
		case "id":
			if !strings.ContainsRune(value, 0) {
				ev.id, ev.hasID = value, true
			}
		case "retry":
			if n, err := strconv.Atoi(value); err == nil && n > 0 && isDigits(value) {
				ev.retry = n
			}
		}
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// ErrNeedsRestart is returned by Stream.Next after a reset event until
// Restart is called.
var ErrNeedsRestart = errors.New("client: the stream was reset; backfill the history and Restart it at its StreamCursor")

// statusError describes a refused stream request.
func statusError(status int, body []byte) error {
	if err := apiError(status, body); err != nil {
		return err
	}
	return fmt.Errorf("stream: HTTP %d", status)
}

package agentcore

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseReader reads the data of Server-Sent Events, one event at a time, and
// refuses a line or an event larger than max bytes before buffering it:
// memory stays bounded by max whatever the server sends. openai-go's own
// stream decoder buffers any event whole and decodes every chunk into its
// full typed form, which the provider never reads; reading the body here
// keeps one decode per chunk.
//
// Not safe for concurrent use; one Step owns it.
type sseReader struct {
	sc   *bufio.Scanner
	data []byte
	max  int
}

func newSSEReader(r io.Reader, max int) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), max+len("data: \r\n"))
	return &sseReader{sc: sc, max: max}
}

// next returns the data of the next event (its data lines joined by
// "\n"); io.EOF at the end of the stream or at "[DONE]". The returned
// slice is valid until the next call. An event the stream ends before
// dispatching is dropped, as the SSE rules say.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	have := false
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if !have {
				continue
			}
			if bytes.HasPrefix(s.data, []byte("[DONE]")) {
				return nil, io.EOF
			}
			return s.data, nil
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue // comments (":"), event, id and retry fields
		}
		value, _ = bytes.CutPrefix(value, []byte(" "))
		if have {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(value) > s.max {
			return nil, errEventTooLarge
		}
		s.data = append(s.data, value...)
		have = true
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, errEventTooLarge
		}
		return nil, err
	}
	return nil, io.EOF
}

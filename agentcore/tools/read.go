package tools

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed read.md
var readDescription string

const readSchema = `{
 "type": "object",
 "properties": {
  "file_path": {"type": "string", "description": "Absolute, or relative to the workspace"},
  "offset": {"type": "integer", "description": "First line to read, 1-based"},
  "limit": {"type": "integer", "description": "Number of lines to read"}
 },
 "required": ["file_path"]
}`

// Read limits.
const (
	// ReadDefaultLimit is how many lines Read returns without a limit.
	ReadDefaultLimit = 2000
	// ReadMaxLineChars is where Read cuts a long line.
	ReadMaxLineChars = 2000
	// ReadMaxFileBytes is the largest file Read takes whole; larger files
	// need offset or limit.
	ReadMaxFileBytes = 10 << 20
)

type readArgs struct {
	FilePath string  `json:"file_path"`
	Offset   flexInt `json:"offset"`
	Limit    flexInt `json:"limit"`
}

// Read returns the Read tool: a text file's lines, numbered.
func Read() agentcore.Tool {
	return newTool("Read", readDescription, readSchema, nil, runRead)
}

func runRead(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a readArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	if strings.TrimSpace(a.FilePath) == "" {
		return missing("file_path")
	}
	offset, limit := 1, ReadDefaultLimit
	if a.Offset.Set {
		if a.Offset.Value < 0 {
			return agentcore.ErrorResult("Invalid arguments: offset must be a line number from 1, got %d.", a.Offset.Value)
		}
		offset = max(a.Offset.Value, 1)
	}
	if a.Limit.Set {
		if a.Limit.Value < 0 {
			return agentcore.ErrorResult("Invalid arguments: limit must be positive, got %d.", a.Limit.Value)
		}
		if a.Limit.Value > 0 {
			limit = a.Limit.Value
		}
	}
	path := resolvePath(env.Workspace, a.FilePath)
	shown := displayPath(env.Workspace, path)
	if c := env.FileClient(path, false); c != nil {
		return readViaClient(ctx, c, path, shown, offset, limit)
	}

	fi, err := os.Stat(path)
	if err != nil {
		return agentcore.ErrorResult("%s", fileError(shown, err))
	}
	if fi.IsDir() {
		return agentcore.ErrorResult("%s is a directory, not a file. Use Glob (e.g. pattern \"%s/*\") or Bash `ls` to list it.", shown, strings.TrimSuffix(shown, "/"))
	}
	if !fi.Mode().IsRegular() {
		return agentcore.ErrorResult("%s is not a regular file (%s); Read only reads files.", shown, fi.Mode().Type())
	}
	if fi.Size() > ReadMaxFileBytes && !a.Offset.Set && !a.Limit.Set {
		return agentcore.ErrorResult("%s is %s, more than Read takes at once (%s). Pass offset and limit to read part of it, or use Grep to find what you need.",
			shown, humanBytes(fi.Size()), humanBytes(ReadMaxFileBytes))
	}
	f, err := os.Open(path)
	if err != nil {
		return agentcore.ErrorResult("%s", fileError(shown, err))
	}
	defer f.Close()

	// Sniff the head for binary content before numbering anything.
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8192)
	if isBinary(head) {
		return binaryResult(shown, head)
	}
	if fi.Size() == 0 {
		return agentcore.Result{Content: fmt.Sprintf("(%s is empty)", shown)}
	}
	return readLines(ctx, br, shown, offset, limit, fi.Size() <= ReadMaxFileBytes)
}

// readLines numbers lines [offset, offset+limit) of r. When countAll is
// set it reads to the end to tell the total line count.
func readLines(ctx context.Context, r *bufio.Reader, shown string, offset, limit int, countAll bool) agentcore.Result {
	var b strings.Builder
	lineNo, last, total := 0, 0, 0
	cutAt := 0 // line at which the output budget ran out
	eof := false
	for {
		if lineNo%4096 == 0 && ctx.Err() != nil {
			return agentcore.ErrorResult("Read of %s cancelled.", shown)
		}
		line, long, err := readLine(r, ReadMaxLineChars*4)
		if errors.Is(err, io.EOF) && line == nil {
			eof = true
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return agentcore.ErrorResult("Cannot read %s: %v", shown, err)
		}
		lineNo++
		if isBinary(line) {
			return binaryResult(shown, line)
		}
		if lineNo >= offset && lineNo < offset+limit && cutAt == 0 {
			text := strings.TrimSuffix(string(line), "\r")
			cut := long
			if n := len([]rune(text)); n > ReadMaxLineChars {
				text, cut = string([]rune(text)[:ReadMaxLineChars]), true
			}
			if cut {
				text += " … [line cut]"
			}
			entry := fmt.Sprintf("%6d\t%s\n", lineNo, text)
			if b.Len()+len(entry) > MaxOutputChars && b.Len() > 0 {
				cutAt = lineNo
			} else {
				b.WriteString(entry)
				last = lineNo
			}
		}
		if errors.Is(err, io.EOF) {
			eof = true
			break
		}
		if lineNo >= offset+limit-1 && !countAll {
			break
		}
	}
	if eof {
		total = lineNo
	}
	if last == 0 {
		if total > 0 {
			return agentcore.ErrorResult("%s has %d lines; offset %d is past the end.", shown, total, offset)
		}
		return agentcore.ErrorResult("%s has fewer than %d lines.", shown, offset)
	}
	next := last + 1
	if cutAt > 0 {
		next = cutAt
		b.WriteString("(output limit reached) ")
	}
	switch {
	case total > 0 && next <= total:
		fmt.Fprintf(&b, "(showing lines %d-%d of %d; continue with offset=%d)", offset, last, total, next)
	case total == 0:
		fmt.Fprintf(&b, "(showing lines %d-%d; more may follow: continue with offset=%d)", offset, last, next)
	}
	return agentcore.Result{Content: strings.TrimSuffix(b.String(), "\n")}
}

// readLine returns the next line without its newline, at most max bytes of
// it (long reports that the rest was dropped). At the end of input it
// returns the last unterminated line with io.EOF, or nil and io.EOF.
func readLine(r *bufio.Reader, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= max {
			line = append(line, chunk...)
		} else {
			if room := max - len(line); room > 0 {
				line = append(line, chunk[:room]...)
			}
			long = true
		}
		switch {
		case err == nil:
			return trimNL(line, long), long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 && !long {
				return nil, false, io.EOF
			}
			return line, long, io.EOF
		default:
			return nil, false, err
		}
	}
}

func trimNL(line []byte, long bool) []byte {
	if !long && len(line) > 0 && line[len(line)-1] == '\n' {
		return line[:len(line)-1]
	}
	return line
}

func binaryResult(shown string, head []byte) agentcore.Result {
	kind := http.DetectContentType(head)
	hint := "Use Bash (e.g. `file`, `xxd | head`) to inspect it"
	if strings.HasPrefix(kind, "image/") || kind == "application/pdf" {
		hint += ", or Attach to send it to the user"
	}
	return agentcore.ErrorResult("%s is a binary file (%s), not text. %s.", shown, kind, hint)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

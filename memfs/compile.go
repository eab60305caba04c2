package memfs

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// Compiled is the memory section of a system prompt built from one HEAD.
type Compiled struct {
	Text      string   // the rendered section; byte-identical for the same HEAD and options
	Revision  string   // the HEAD commit it was built from
	Files     int      // files rendered (wholly or cut)
	Truncated []string // files cut or left out by the size limits, in render order
}

// ReadHEAD returns every file committed at HEAD, sorted by path. The work
// tree is never read, so uncommitted edits are invisible.
func (r *Repo) ReadHEAD(ctx context.Context) ([]File, error) {
	unlock, err := r.lock(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := r.headCommit()
	if err != nil {
		return nil, err
	}
	return r.readCommitFiles(ctx, c, func(string) bool { return true })
}

// readCommitFiles reads the regular files of a commit that keep accepts,
// sorted by path.
func (r *Repo) readCommitFiles(ctx context.Context, c *object.Commit, keep func(string) bool) ([]File, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of memory commit %s: %w", c.Hash, err)
	}
	var out []File
	err = tree.Files().ForEach(func(f *object.File) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !isRegular(f.Mode) || !keep(f.Name) {
			return nil
		}
		rd, err := f.Reader()
		if err != nil {
			return fmt.Errorf("read memory file %s: %w", f.Name, err)
		}
		defer rd.Close()
		data, err := io.ReadAll(rd)
		if err != nil {
			return fmt.Errorf("read memory file %s: %w", f.Name, err)
		}
		out = append(out, File{Path: f.Name, Content: string(data)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read memory commit %s: %w", c.Hash, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Compile renders the .md and .txt files of HEAD into the memory section of
// a system prompt: files under system/ first, then the rest, each sorted by
// path, each as <memory_file path="…">…</memory_file> inside one <memory>
// element. A file over MaxFileBytes is cut with a note; when the whole text
// would exceed MaxTotalBytes the file that does not fit is cut or left out,
// the rest are left out, and a closing note lists them so the agent can
// read them from disk. The work tree is never read.
func (r *Repo) Compile(ctx context.Context) (Compiled, error) {
	unlock, err := r.lock(ctx, false)
	if err != nil {
		return Compiled{}, err
	}
	defer unlock()
	c, err := r.headCommit()
	if err != nil {
		return Compiled{}, err
	}
	files, err := r.readCommitFiles(ctx, c, compiledExt)
	if err != nil {
		return Compiled{}, err
	}
	out := render(r.dir, files, r.opts.MaxFileBytes, r.opts.MaxTotalBytes)
	out.Revision = c.Hash.String()
	return out, nil
}

// Rendering pieces. The omission note is kept within omitReserve bytes,
// which are set aside from the total budget as soon as a file does not fit.
const (
	omitReserve  = 512
	minFilePiece = 256 // cut a file to fit only when at least this much room is left
	closeMemory  = "</memory>\n"
)

// render builds the compiled text. It is pure so it can be fuzzed.
func render(dir string, files []File, maxFile, maxTotal int) Compiled {
	sort.SliceStable(files, func(i, j int) bool {
		si, sj := strings.HasPrefix(files[i].Path, "system/"), strings.HasPrefix(files[j].Path, "system/")
		if si != sj {
			return si
		}
		return files[i].Path < files[j].Path
	})
	var b strings.Builder
	fmt.Fprintf(&b, "<memory dir=\"%s\">\n", escapeAttr(dir))
	var out Compiled
	var omitted []string
	for i, f := range files {
		body, cut := cutText(f.Content, maxFile, func(kept int) string {
			return fmt.Sprintf("[cut: this file is %d bytes; only the first %d are shown — read the whole file %s from the memory directory]", len(f.Content), kept, f.Path)
		})
		piece := filePiece(f.Path, body)
		room := maxTotal - b.Len() - len(closeMemory)
		if i < len(files)-1 {
			room -= omitReserve // later files may need the omission note
		}
		if len(piece) > room {
			// Cut this file to what is left, with the note's room reserved.
			room = maxTotal - b.Len() - len(closeMemory) - omitReserve
			empty := len(filePiece(f.Path, ""))
			if room-empty >= minFilePiece {
				body, _ = cutText(f.Content, min(room-empty, maxFile), func(kept int) string {
					return fmt.Sprintf("[cut: the memory size limit was reached; only the first %d of %d bytes are shown — read the whole file %s from the memory directory]", kept, len(f.Content), f.Path)
				})
				b.WriteString(filePiece(f.Path, body))
				out.Files++
				out.Truncated = append(out.Truncated, f.Path)
				omitted = pathsOf(files[i+1:])
			} else {
				omitted = pathsOf(files[i:])
			}
			break
		}
		b.WriteString(piece)
		out.Files++
		if cut {
			out.Truncated = append(out.Truncated, f.Path)
		}
	}
	if len(omitted) > 0 {
		out.Truncated = append(out.Truncated, omitted...)
		b.WriteString(omissionNote(omitted, max(0, maxTotal-b.Len()-len(closeMemory))))
	}
	b.WriteString(closeMemory)
	out.Text = b.String()
	return out
}

func pathsOf(files []File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

func filePiece(path, body string) string {
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return "<memory_file path=\"" + escapeAttr(path) + "\">\n" + body + "</memory_file>\n"
}

// omissionNote lists left-out files within at most room bytes.
func omissionNote(paths []string, room int) string {
	head := fmt.Sprintf("<memory_omitted>\n%d file(s) are not shown because memory is over its size limit; read them from the memory directory:\n", len(paths))
	const tail = "</memory_omitted>\n"
	var b strings.Builder
	b.WriteString(head)
	moreRoom := len(fmt.Sprintf("- and %d more\n", len(paths)))
	for i, p := range paths {
		line := "- " + p + "\n"
		if b.Len()+len(line)+moreRoom+len(tail) > room {
			fmt.Fprintf(&b, "- and %d more\n", len(paths)-i)
			break
		}
		b.WriteString(line)
	}
	b.WriteString(tail)
	if b.Len() > room {
		return "" // not even the note fits; Truncated still names the files
	}
	return b.String()
}

// cutText returns s unchanged when it is at most limit bytes, else a prefix
// ending at a line (or at least a rune) boundary followed by note(kept
// bytes), all within limit bytes when limit leaves room for the note.
func cutText(s string, limit int, note func(kept int) string) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	keep := limit - len(note(len(s))) - 2 // the longest note, and newlines around it
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	if nl := strings.LastIndexByte(s[:keep], '\n'); nl >= 0 && nl >= keep*3/4 {
		keep = nl + 1
	}
	body := s[:keep]
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body + note(keep) + "\n", true
}

// escapeAttr escapes a string for a double-quoted attribute value.
func escapeAttr(s string) string {
	if !strings.ContainsAny(s, "&\"<>\n") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\n':
			b.WriteString("&#10;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

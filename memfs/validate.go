package memfs

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPathBytes bounds the length of a memory file path.
const maxPathBytes = 256

// compiledExt reports whether a path names a memory text file, the only
// kind Compile renders and CommitWorkTree accepts.
func compiledExt(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".txt":
		return true
	}
	return false
}

// checkPath returns why a slash-separated path may not hold a memory file,
// or "" when it may.
func checkPath(p string) string {
	switch {
	case p == "":
		return "the path is empty"
	case strings.HasPrefix(p, "/"):
		return "absolute paths are not allowed; use a path inside the memory directory"
	case len(p) > maxPathBytes:
		return fmt.Sprintf("the path is longer than %d bytes", maxPathBytes)
	case !utf8.ValidString(p):
		return "the path is not valid UTF-8"
	case strings.Contains(p, `\`):
		return "backslashes are not allowed in memory paths"
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return "the path contains control characters"
		}
	}
	for _, part := range strings.Split(p, "/") {
		switch {
		case part == "" || part == "." || part == "..":
			return "the path must be a plain relative path inside the memory directory"
		case strings.EqualFold(part, ".git"):
			return "paths inside .git are not allowed"
		}
	}
	if !compiledExt(p) {
		return "only .md and .txt files can be memory; give the file one of those extensions"
	}
	return ""
}

// checkContent returns why content may not be a memory file, or "".
func checkContent(data []byte) string {
	if bytes.IndexByte(data, 0) >= 0 {
		return "it is binary (contains NUL bytes); memory holds UTF-8 text only"
	}
	if !utf8.Valid(data) {
		return "it is not valid UTF-8 text"
	}
	return ""
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Clamp keeps the head and the tail of s within max characters (runes),
// with a marker line in between saying how many characters were cut. Cuts
// never split a UTF-8 sequence and move to a line boundary when one is
// near, so the model sees whole lines. out is always valid UTF-8: invalid
// bytes in s become U+FFFD (with truncated false if nothing else changed).
// When max is too small to hold the marker, only the head is kept.
// max <= 0 means no limit.
func Clamp(s string, max int) (out string, truncated bool) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if max <= 0 {
		return s, false
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	// The marker for the whole length is the longest it can get, so the
	// final one (for a smaller cut) fits in the room reserved here.
	room := max - utf8.RuneCountInString(clampMarker(n))
	if room <= 0 {
		return s[:runeOffset(s, max)], true
	}
	headRunes := room - room/2
	tailRunes := room / 2
	headEnd := runeOffset(s, headRunes)
	tailStart := runeOffset(s, n-tailRunes)

	// Prefer whole lines when a newline sits in the last (first) fifth of
	// the head (tail); beyond that, keeping more text matters more.
	if i := strings.LastIndexByte(s[:headEnd], '\n'); i >= 0 && headRunes-utf8.RuneCountInString(s[:i+1]) <= headRunes/5 {
		headEnd = i + 1
	}
	if i := strings.IndexByte(s[tailStart:], '\n'); i >= 0 && utf8.RuneCountInString(s[tailStart:tailStart+i+1]) <= tailRunes/5 {
		tailStart += i + 1
	}
	cut := n - utf8.RuneCountInString(s[:headEnd]) - utf8.RuneCountInString(s[tailStart:])
	return s[:headEnd] + clampMarker(cut) + s[tailStart:], true
}

// clampMarker is the line Clamp puts where it cut.
func clampMarker(cut int) string {
	return fmt.Sprintf("\n[… %d characters cut …]\n", cut)
}

// runeOffset returns the byte offset of the rune with index i in s (len(s)
// when s has fewer runes).
func runeOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}

// WriteOverflow writes content, redacted by red (which may be nil), to a
// new file named name in dir with mode 0600 and returns its path. dir is
// created (0700) when missing. name must be a plain file name; characters
// other than letters, digits, '.', '-' and '_' are replaced by '_'. An
// existing file of that name is replaced atomically, so a reader never sees
// half a file.
func WriteOverflow(dir, name string, content string, red *Redactor) (path string, err error) {
	clean := sanitizeFileName(name)
	if clean == "" {
		return "", fmt.Errorf("write overflow file: name %q is not a usable file name", name)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("write overflow file: create directory %s: %w", dir, err)
	}
	path = filepath.Join(dir, clean)
	f, err := os.CreateTemp(dir, "."+clean+".tmp*") // CreateTemp uses 0600
	if err != nil {
		return "", fmt.Errorf("write overflow file %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.WriteString(red.Redact(content))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write overflow file %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write overflow file %s: %w", path, err)
	}
	return path, nil
}

// sanitizeFileName maps name to a safe single path element, or "" when
// nothing usable is left.
func sanitizeFileName(name string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
	if strings.Trim(clean, "._") == "" || len(clean) > 200 {
		return ""
	}
	return clean
}

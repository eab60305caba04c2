package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// readOnly checks a command against the read-only list; why explains a refusal.
func (s *bashSubject) readOnly(c *shellCmd) (ok bool, why string) {
	if c.other != "" {
		return false, fmt.Sprintf("`%s` is a %s, which only an allow rule for the whole tool allows", c.src, c.other)
	}
	if c.assigns {
		return false, fmt.Sprintf("`%s` sets variables for the command, so no rule or read-only entry applies", c.src)
	}
	p, rest, why := lookupReadOnly(c.args)
	if p == nil {
		return false, fmt.Sprintf("`%s` %s", c.src, why)
	}
	if p.anyWords {
		return true, ""
	}
	e, why := s.expandWords(rest)
	if why != "" {
		return false, fmt.Sprintf("`%s`: %s", c.src, why)
	}
	parsed, why := p.parse(e.words)
	if why != "" {
		return false, fmt.Sprintf("`%s` %s", c.src, why)
	}
	if why, ok := e.dashesOK(parsed.endOpts); !ok {
		return false, fmt.Sprintf("`%s`: %s", c.src, why)
	}
	parsed.paths = append(parsed.paths, e.matches...)
	if p.operands == operandText && len(parsed.paths) == 0 {
		return true, ""
	}
	if s.cwdUnknown {
		return false, fmt.Sprintf("`%s`: the directory it runs in cannot be known ahead", c.src)
	}
	if p.git {
		if why := s.gitRepoChecks(); why != "" {
			return false, fmt.Sprintf("`%s`: %s", c.src, why)
		}
	}
	for _, pth := range parsed.paths {
		ts, ok := s.targets(wordInfo{lit: pth, plain: true})
		if !ok {
			return false, fmt.Sprintf("`%s`: where %s leads cannot be known ahead", c.src, pth)
		}
		for _, t := range ts {
			if !s.ck.readable(t) {
				return false, fmt.Sprintf("`%s` reads %s, outside the workspace", c.src, t.real)
			}
			if p.noDirs {
				if fi, err := os.Stat(t.real); err == nil && fi.IsDir() {
					return false, fmt.Sprintf("`%s` compares the directory %s, reading its files through any symlinks in it", c.src, pth)
				}
			}
		}
	}
	return true, ""
}

// expanded is a command's words as the program will see them.
type expanded struct {
	words   []string
	matches []string // every word a glob became: all are checked as reads, whatever their position
	dashes  []int    // indexes of matches that start with "-"
}

// expandWords turns a command's words into the words the program will see: every glob is
// replaced by its matches (or kept when it matches nothing, as bash does). Expansions and a
// ".." after a wildcard are refused. bash sorts matches by locale, so the order of matches is
// not relied on: each is checked as a read, and one that starts with "-" is accepted only after
// the end of options (see dashesOK).
func (s *bashSubject) expandWords(ws []wordInfo) (expanded, string) {
	e := expanded{words: make([]string, 0, len(ws))}
	for _, w := range ws {
		switch {
		case !w.plain:
			return e, "an argument has expansions that cannot be checked ahead"
		case !w.glob:
			e.words = append(e.words, w.lit)
			continue
		case w.quotedMeta:
			return e, fmt.Sprintf("%s mixes quoted and unquoted wildcards", w.lit)
		case globThenDotDot(w.lit):
			return e, fmt.Sprintf("%s has .. after a wildcard, so where it leads depends on what the wildcard matches", w.lit)
		}
		ms, none, ok := s.matches1(w)
		if !ok {
			return e, fmt.Sprintf("where %s leads cannot be known ahead", w.lit)
		}
		if none {
			e.words = append(e.words, w.lit) // bash passes it unchanged where it matches nothing
		}
		for _, m := range ms {
			if strings.HasPrefix(m, "-") {
				e.dashes = append(e.dashes, len(e.words))
			}
			e.words = append(e.words, m)
		}
		e.matches = append(e.matches, ms...)
	}
	return e, ""
}

// dashesOK reports whether every glob match starting with "-" comes after the "--" that ended
// the options; before it the program could take such a file name as an option.
func (e expanded) dashesOK(endOpts int) (string, bool) {
	for _, i := range e.dashes {
		if endOpts < 0 || i < endOpts {
			return fmt.Sprintf("a wildcard matches the file %s, which the program would take as an option", e.words[i]), false
		}
	}
	return "", true
}

// gitRepoChecks refuses git where a file the agent may write would choose what git runs:
// a directory between where git starts and the repository's .git that looks like a repository
// itself (a HEAD file: a bare repository planted in the workspace, with its own config), or a
// global git config inside the workspace or memory.
func (s *bashSubject) gitRepoChecks() string {
	ck := s.ck
	for _, cw := range s.cwds {
		t := ck.target(cw, "")
		if !t.ok {
			return "where git would run cannot be known ahead"
		}
		for d := t.real; ; d = filepath.Dir(d) {
			if _, err := os.Lstat(d + "/.git"); err == nil {
				break
			}
			if _, err := os.Lstat(d + "/HEAD"); err == nil {
				return fmt.Sprintf("%s looks like a git repository of its own (it has a HEAD file), whose config git would follow", d)
			}
			if d == "/" || !under(d, ck.ws.real) && !(ck.mem.ok && under(d, ck.mem.real)) {
				break
			}
		}
	}
	for _, p := range []string{"~/.gitconfig", "~/.config/git/config"} {
		if t := ck.target(p, ""); t.ok && (inside(t, ck.ws) || inside(t, ck.mem)) {
			return fmt.Sprintf("git reads its global config %s from inside the workspace or memory, where the agent may write", t.real)
		}
	}
	return ""
}

// readPaths returns the words of a read-only command that name files it reads, for read rules
// (deny and ask rules match any of them). When the words do not parse, every operand and the
// value of every flag counts, so an unusual spelling cannot dodge a deny rule.
func (s *bashSubject) readPaths(c *shellCmd) []wordInfo {
	if c.other != "" {
		return nil
	}
	p, rest, _ := lookupReadOnly(c.args)
	if p == nil || p.operands == operandText {
		return nil
	}
	if e, why := s.expandWords(rest); why == "" {
		if parsed, why := p.parse(e.words); why == "" {
			out := make([]wordInfo, 0, len(parsed.paths)+len(e.matches))
			for _, pth := range append(parsed.paths, e.matches...) {
				out = append(out, wordInfo{lit: pth, plain: true})
			}
			return out
		}
	}
	return loosePaths(rest)
}

// loosePaths extracts every word that may name a file: positional words and the values of
// flags (--file=x, -f/x).
func loosePaths(args []wordInfo) []wordInfo {
	var cands []wordInfo
	for _, a := range args {
		if !a.plain {
			continue
		}
		v := a.lit
		switch {
		case v == "-" || v == "" || v == "--":
		case strings.HasPrefix(v, "-"):
			if i := strings.IndexByte(v, '='); i >= 0 {
				cands = append(cands, wordInfo{lit: v[i+1:], plain: true, glob: a.glob, quotedMeta: a.quotedMeta})
			} else if j := strings.IndexAny(v[1:], "/~."); j >= 0 && strings.ContainsAny(v, "/~") {
				cands = append(cands, wordInfo{lit: v[1+j:], plain: true, glob: a.glob, quotedMeta: a.quotedMeta})
			}
		default:
			cands = append(cands, a)
		}
	}
	return cands
}

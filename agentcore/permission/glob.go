package permission

import (
	"os"
	"path/filepath"
	"strings"
)

// expandGlob expands a glob word the way bash does before the command sees it: component by
// component, each wildcard component matched against the entries of the directories reached so
// far, with the kernel (not the text) resolving symlinks and ".." on the way. A name starting
// with "." is matched only by a component that starts with "." (no dotglob); "." and ".." are
// offered to such components too, as older bash versions do. The result keeps the spelling bash
// passes on (relative words stay relative). No match means bash passes the word unchanged.
//
// ok is false when the expansion cannot be known: ~user, a relative word without a directory,
// a pattern this matcher does not read like bash (backslashes, bracket expressions Go cannot
// parse), or more than limit matches.
func (ck *checker) expandGlob(pat, cwd string, limit int) (matches []string, ok bool) {
	switch {
	case pat == "~" || strings.HasPrefix(pat, "~/"):
		if ck.home == "" {
			return nil, false
		}
		pat = ck.home + pat[1:]
	case strings.HasPrefix(pat, "~"), strings.ContainsRune(pat, '\\'):
		return nil, false
	}
	type cand struct{ shown, fs string }
	join := func(c cand, name string) cand {
		sep := "/"
		if c.shown == "" || strings.HasSuffix(c.shown, "/") {
			sep = ""
		}
		fsSep := "/"
		if strings.HasSuffix(c.fs, "/") {
			fsSep = ""
		}
		return cand{c.shown + sep + name, c.fs + fsSep + name}
	}
	comps := strings.Split(pat, "/")
	var cur []cand
	if comps[0] == "" {
		cur, comps = []cand{{"/", "/"}}, comps[1:]
	} else {
		if cwd == "" {
			return nil, false
		}
		cur = []cand{{"", cwd}}
	}
	for i, comp := range comps {
		if comp == "" {
			if i == len(comps)-1 { // a trailing slash matches directories only
				var dirs []cand
				for _, c := range cur {
					if fi, err := os.Stat(c.fs); err == nil && fi.IsDir() {
						dirs = append(dirs, cand{c.shown + "/", c.fs})
					}
				}
				cur = dirs
			}
			continue
		}
		if !strings.ContainsAny(comp, "*?[") {
			for j := range cur {
				cur[j] = join(cur[j], comp)
			}
			continue
		}
		goPat := strings.ReplaceAll(comp, "[!", "[^")
		if _, err := filepath.Match(goPat, ""); err != nil {
			return nil, false
		}
		var next []cand
		for _, c := range cur {
			entries, err := os.ReadDir(c.fs)
			if err != nil {
				continue
			}
			names := make([]string, 0, len(entries)+2)
			if comp[0] == '.' {
				names = append(names, ".", "..")
			}
			for _, e := range entries {
				if n := e.Name(); n[0] != '.' || comp[0] == '.' {
					names = append(names, n)
				}
			}
			for _, n := range names {
				if m, _ := filepath.Match(goPat, n); m {
					if next = append(next, join(c, n)); len(next) > limit {
						return nil, false
					}
				}
			}
		}
		cur = next
	}
	for _, c := range cur {
		if _, err := os.Lstat(c.fs); err == nil {
			matches = append(matches, c.shown)
		}
	}
	return matches, true
}

// globThenDotDot reports a word in which ".." follows a wildcard: a matched symlink decides
// where the ".." leads, so only the kernel knows.
func globThenDotDot(pat string) bool {
	_, ok := globBase(pat)
	return !ok
}

// globResult is one cached expansion.
type globResult struct {
	matches []string
	ok      bool
}

// glob expands pat in cwd once per Check: the memory invariant, the rules and the read-only
// list all look at the same expansion, and at most maxGlobs words are expanded per Check.
func (ck *checker) glob(pat, cwd string) ([]string, bool) {
	key := cwd + "\x00" + pat
	if r, ok := ck.globs[key]; ok {
		return r.matches, r.ok
	}
	var r globResult
	if ck.globBudget > 0 {
		ck.globBudget--
		r.matches, r.ok = ck.expandGlob(pat, cwd, maxGlobMatches)
	}
	if ck.globs == nil {
		ck.globs = make(map[string]globResult)
	}
	ck.globs[key] = r
	return r.matches, r.ok
}

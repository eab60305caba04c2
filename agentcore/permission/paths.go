package permission

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxLinks bounds symlink hops while resolving one path (the kernel's limit is 40).
const maxLinks = 40

// linkInfo is what lstat and readlink said about one path during a Check.
type linkInfo struct {
	link   bool
	target string
}

// resolver finds where a path really leads. It caches per Check: within one classification
// the file system is taken as a snapshot.
type resolver struct {
	cache map[string]linkInfo
	// ownProc is /proc/<pid> of this process; a path whose resolution passes through it names
	// the gateway's own process files.
	ownProc string
}

// procVia says whether resolving a path went through /proc or /sys.
type procVia uint8

const (
	viaKernelFS procVia = 1 << iota // some step was under /proc or /sys
	viaOwnProc                      // some step was under this process's /proc/<pid>
)

func (r *resolver) lookup(p string) linkInfo {
	if li, ok := r.cache[p]; ok {
		return li
	}
	var li linkInfo
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := os.Readlink(p); err == nil {
			li = linkInfo{link: true, target: t}
		}
	}
	if r.cache == nil {
		r.cache = make(map[string]linkInfo)
	}
	r.cache[p] = li
	return li
}

// resolve returns the real location of the absolute path abs: every existing symlink is
// followed (dangling ones too, since writing through them creates their target), ".." applies
// after following links as the kernel does, and components that do not exist are kept as
// written. via says whether the walk passed through /proc or /sys (/dev/fd/3 does, and leads
// wherever the gateway's descriptor 3 points). ok is false for symlink loops.
func (r *resolver) resolve(abs string) (real string, via procVia, ok bool) {
	pending := strings.Split(abs, "/")
	resolved := "/"
	links := 0
	mark := func() {
		if under(resolved, "/proc") || under(resolved, "/sys") {
			via |= viaKernelFS
			if r.ownProc != "" && under(resolved, r.ownProc) {
				via |= viaOwnProc
			}
		}
	}
	for len(pending) > 0 {
		mark()
		comp := pending[0]
		pending = pending[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		cand := joinAbs(resolved, comp)
		li := r.lookup(cand)
		if !li.link {
			resolved = cand
			continue
		}
		links++
		if links > maxLinks {
			return "", via, false
		}
		if filepath.IsAbs(li.target) {
			resolved = "/"
		}
		pending = append(strings.Split(li.target, "/"), pending...)
	}
	mark()
	return resolved, via, true
}

func joinAbs(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// under reports whether p is d or inside it; both are clean absolute paths.
func under(p, d string) bool {
	if d == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == d || strings.HasPrefix(p, d) && len(p) > len(d) && p[len(d)] == '/'
}

// dir is a configured directory in both its lexical and its resolved form.
type dir struct {
	lex, real string
	ok        bool
}

// target is a path a call touches, in both forms. ok is false when it cannot be known (an
// unset workspace for a relative path, ~user, a symlink loop, a NUL byte).
type target struct {
	given     string
	lex, real string
	via       procVia
	ok        bool
}

func (ck *checker) dir(p string) dir {
	if p == "" || !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return dir{}
	}
	real, _, ok := ck.res.resolve(p)
	return dir{lex: filepath.Clean(p), real: real, ok: ok}
}

// target resolves a path argument: ~ and ~/x expand to the home directory, relative paths are
// taken against cwd (absolute, or "" when unknown).
func (ck *checker) target(p, cwd string) target {
	t := target{given: p}
	if p == "" || strings.ContainsRune(p, 0) {
		return t
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if ck.home == "" {
			return t
		}
		p = ck.home + p[1:]
	} else if strings.HasPrefix(p, "~") {
		return t // ~user: another user's home, or ~+ / ~-; not something to allow blindly
	}
	if !filepath.IsAbs(p) {
		if cwd == "" {
			return t
		}
		p = cwd + "/" + p
	}
	real, via, ok := ck.res.resolve(p)
	if !ok {
		return t
	}
	t.lex, t.real, t.via, t.ok = filepath.Clean(p), real, via, true
	if under(t.lex, "/proc") || under(t.lex, "/sys") {
		t.via |= viaKernelFS
	}
	return t
}

// inside reports whether t is inside d in both forms: a symlink in the workspace that leads
// out does not count, nor does a path whose text climbs out through a symlinked directory.
func inside(t target, d dir) bool {
	return t.ok && d.ok && under(t.lex, d.lex) && under(t.real, d.real)
}

// otherMemory reports whether t is under the memory root but not under this agent's memory
// directory, in either form: the root itself counts, since it holds every agent's memory.
func (ck *checker) otherMemory(t target) bool {
	if !t.ok || !ck.root.ok {
		return false
	}
	if under(t.lex, ck.root.lex) && !(ck.mem.ok && under(t.lex, ck.mem.lex)) {
		return true
	}
	return under(t.real, ck.root.real) && !(ck.mem.ok && under(t.real, ck.mem.real))
}

// readable reports whether a read of t is auto-allowed: the workspace, this agent's memory, or
// one of the extra read-only directories — never /proc or /sys, in either form. Those hold
// other processes' environments and memory (the gateway's secrets among them); the checker
// runs in the gateway, so it cannot even tell what /proc/self will be for the tool, and reads
// there always ask.
func (ck *checker) readable(t target) bool {
	if kernelFS(t) {
		return false
	}
	if inside(t, ck.ws) || inside(t, ck.mem) {
		return true
	}
	for _, d := range ck.ro {
		if inside(t, d) {
			return true
		}
	}
	return false
}

// kernelFS reports a path under /proc or /sys in its lexical or resolved form, or one whose
// resolution passes through them (/dev/fd/N).
func kernelFS(t target) bool {
	return t.via&viaKernelFS != 0
}

// gatewayProc reports a path into the gateway's own /proc/<pid> (/proc/self, /dev/fd/N and
// /dev/stdin of the process running the checker). File tools run inside the gateway, so for
// them this is the gateway's environment and memory.
func gatewayProc(t target) bool {
	return t.via&viaOwnProc != 0
}

// inGitDir reports whether t is inside a .git directory of the workspace or of this agent's
// memory repository (which the harness owns): writing there can plant hooks or config that a
// later "read-only" git command would execute.
func (ck *checker) inGitDir(t target) bool {
	for _, d := range []dir{ck.ws, ck.mem} {
		if !d.ok {
			continue
		}
		for _, p := range [2][2]string{{t.lex, d.lex}, {t.real, d.real}} {
			if !under(p[0], p[1]) {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(p[0], p[1]), "/")
			for _, c := range strings.Split(rel, "/") {
				if strings.EqualFold(c, ".git") {
					return true
				}
			}
		}
	}
	return false
}

// writableAuto reports whether a write to t is auto-allowed in the current mode.
func (ck *checker) writableAuto(t target) bool {
	if ck.inGitDir(t) {
		return false
	}
	return inside(t, ck.mem) || ck.mode == ModeAcceptEdits && inside(t, ck.ws)
}

// writableByRule reports whether a shell redirection written by a rule-allowed command may
// write t: inside the workspace or this agent's memory, not under their .git.
func (ck *checker) writableByRule(t target) bool {
	return (inside(t, ck.mem) || inside(t, ck.ws)) && !ck.inGitDir(t)
}

// relForms returns t relative to the workspace in lexical and resolved form, "" when outside.
func (ck *checker) relForms(t target) (lex, real string) {
	if !t.ok || !ck.ws.ok {
		return "", ""
	}
	rel := func(p, d string) string {
		if !under(p, d) {
			return ""
		}
		r := strings.TrimPrefix(strings.TrimPrefix(p, d), "/")
		if r == "" {
			r = "."
		}
		return r
	}
	return rel(t.lex, ck.ws.lex), rel(t.real, ck.ws.real)
}

// patternMatches matches a file rule pattern against t. all=true (allow rules) needs both
// forms to match; all=false (deny and ask rules) needs one. Relative patterns match
// workspace-relative paths only; absolute and ~ patterns match absolute paths.
func (ck *checker) patternMatches(pattern string, t target, all bool) bool {
	if !t.ok {
		return false
	}
	match := func(pat, p string) bool {
		if p == "" {
			return false
		}
		if p == "." {
			ok, _ := doublestar.Match(pat, "")
			return ok || pat == "**" || pat == "." || pat == "./**"
		}
		ok, _ := doublestar.Match(pat, p)
		return ok
	}
	var a, b bool
	switch {
	case pattern == "~" || strings.HasPrefix(pattern, "~/"):
		if ck.home == "" {
			return false
		}
		pattern = ck.home + pattern[1:]
		fallthrough
	case strings.HasPrefix(pattern, "/"):
		a, b = match(pattern, t.lex), match(pattern, t.real)
	default:
		pattern = strings.TrimPrefix(pattern, "./")
		lex, real := ck.relForms(t)
		a, b = match(pattern, lex), match(pattern, real)
	}
	if all {
		return a && b
	}
	return a || b
}

// escapeGlob escapes doublestar metacharacters so a path can be stored as a rule pattern.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

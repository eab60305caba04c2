package permission

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// fileSubject is a call of Read, Write, Edit, Attach, Grep or Glob.
type fileSubject struct {
	ck      *checker
	tool    string
	write   bool
	dirArg  bool     // the path names a directory searched recursively (Grep, Glob)
	targets []target // every place the call may touch; all must pass for allow
	problem string   // why the paths cannot be known; never allowed then
}

func (ck *checker) fileSubject(c Call) *fileSubject {
	s := &fileSubject{ck: ck, tool: c.Tool, write: fileFamily(c.Tool) == "write"}
	a, ok := decodeArgs(c.Args)
	if !ok {
		s.problem = fmt.Sprintf("the %s arguments are not a JSON object", c.Tool)
		return s
	}
	cwd := ck.ws.lex
	addPaths := func(key string, dflt bool) {
		vals, bad := a.strings(key)
		if bad {
			s.problem = fmt.Sprintf("the %s argument %s is not a string", c.Tool, key)
		}
		if len(vals) == 0 && !bad {
			if !dflt {
				s.problem = fmt.Sprintf("the %s call has no %s", c.Tool, key)
				return
			}
			if !ck.ws.ok {
				s.problem = "no workspace is configured, so the default search path is unknown"
				return
			}
			vals = []string{ck.ws.lex}
		}
		if len(vals) > 1 {
			s.problem = fmt.Sprintf("the %s call names %s more than once", c.Tool, key)
		}
		for _, v := range vals {
			t := ck.target(v, cwd)
			if !t.ok && s.problem == "" {
				s.problem = fmt.Sprintf("cannot tell where %q leads (relative path without a workspace, ~user, or a symlink loop)", v)
			}
			s.targets = append(s.targets, t)
		}
	}
	switch {
	case strings.EqualFold(c.Tool, toolGrep):
		s.dirArg = true
		addPaths("path", true)
	case strings.EqualFold(c.Tool, toolGlob):
		s.dirArg = true
		addPaths("path", true)
		pats, bad := a.strings("pattern")
		if bad || len(pats) == 0 {
			s.problem = "the Glob call has no string pattern"
		}
		var bases []target
		for _, pat := range pats {
			for _, t := range s.targets {
				if base, ok := globBase(pat); ok && t.ok {
					bases = append(bases, ck.target(base, t.lex))
				} else {
					s.problem = fmt.Sprintf("the glob pattern %q climbs with .. after a wildcard, so where it reads cannot be known ahead", pat)
					// Still look where its literal text leads, for the memory invariant.
					bases = append(bases, ck.target(filepath.Clean(pat), t.lex))
				}
			}
		}
		s.targets = append(s.targets, bases...)
	default:
		addPaths("file_path", false)
	}
	return s
}

// globBase returns the directory part of a glob pattern before its first wildcard; ok is false
// when a ".." follows a wildcard (a matched symlink could lead anywhere).
func globBase(pattern string) (string, bool) {
	comps := strings.Split(pattern, "/")
	i := 0
	for ; i < len(comps); i++ {
		if strings.ContainsAny(comps[i], `*?[{\`) {
			break
		}
	}
	for _, c := range comps[i:] {
		if c == ".." {
			return "", false
		}
	}
	base := strings.Join(comps[:i], "/")
	switch {
	case base == "" && strings.HasPrefix(pattern, "/"):
		return "/", true
	case base == "":
		return ".", true
	}
	return base, true
}

func (s *fileSubject) memory() (string, bool) {
	for _, t := range s.targets {
		if s.ck.otherMemory(t) {
			return fmt.Sprintf("%s %s is another agent's memory", s.tool, t.given), true
		}
		if gatewayProc(t) {
			return fmt.Sprintf("%s runs inside the gateway, so %s is the gateway's own process (its environment holds provider keys and bot tokens)", s.tool, t.given), true
		}
	}
	return "", false
}

func (s *fileSubject) matches(r Rule) (string, bool) {
	for _, t := range s.targets {
		if s.ck.patternMatches(r.Pattern, t, false) {
			return t.given, true
		}
	}
	return "", false
}

func (s *fileSubject) unreadable() (string, bool) { return "", false }

func (s *fileSubject) allowedBy(rules []Rule) (Rule, string, bool) {
	if s.problem != "" || len(s.targets) == 0 {
		return Rule{}, "", false
	}
	for _, r := range rules {
		all := true
		for _, t := range s.targets {
			if !s.ck.patternMatches(r.Pattern, t, true) {
				all = false
				break
			}
		}
		if all {
			return r, fmt.Sprintf("allow rule %s matches %s", r, s.targets[0].given), true
		}
	}
	return Rule{}, "", false
}

func (s *fileSubject) auto() (string, bool) {
	if s.problem != "" || len(s.targets) == 0 {
		return "", false
	}
	for _, t := range s.targets {
		if s.write && !s.ck.writableAuto(t) || !s.write && !s.ck.readable(t) {
			return "", false
		}
	}
	if s.write {
		if inside(s.targets[0], s.ck.mem) {
			return "writes inside this agent's memory directory are allowed", true
		}
		return "mode acceptEdits allows edits inside the workspace", true
	}
	return "reads inside the workspace, this agent's memory or its read-only directories are allowed", true
}

func (s *fileSubject) approval() (string, string) {
	if s.problem != "" {
		return s.problem + "; a person must decide", ""
	}
	ck := s.ck
	t := s.targets[0]
	for _, x := range s.targets {
		if s.write && !ck.writableAuto(x) || !s.write && !ck.readable(x) {
			t = x
			break
		}
	}
	var why string
	switch {
	case s.write && ck.inGitDir(t):
		why = fmt.Sprintf("writes under .git need approval: git runs hooks and config from there (%s)", t.given)
	case s.write && !inside(t, ck.ws) && !inside(t, ck.mem):
		why = fmt.Sprintf("writes outside the workspace need approval (%s)", t.given)
	case s.write:
		why = fmt.Sprintf("edits need approval in %s mode (acceptEdits allows them inside the workspace)", ck.mode)
	case !s.write && kernelFS(t):
		why = fmt.Sprintf("reads under /proc and /sys need approval: they show other processes' environments and memory (%s)", t.given)
	case !ck.readable(t):
		why = fmt.Sprintf("reads outside the workspace need approval (%s)", t.given)
	default:
		why = fmt.Sprintf("%s %s needs approval", s.tool, t.given)
	}
	return why, s.suggest(t)
}

// suggest builds the rule an "Always" approval would store: the workspace-relative path when
// the target is inside the workspace, else its absolute real path; directories get /**.
func (s *fileSubject) suggest(t target) string {
	if !t.ok {
		return ""
	}
	p := t.real
	lex, real := s.ck.relForms(t)
	if lex != "" && lex == real {
		p = lex
	}
	pat := escapeGlob(p)
	if s.dirArg {
		switch {
		case p == ".":
			pat = "**"
		case p == "/":
			pat = "/**"
		default:
			pat += "/**"
		}
	}
	return Rule{Tool: s.tool, Pattern: pat}.String()
}

// otherSubject is a call of a tool without path arguments: TodoWrite, Recall, Agent and tools
// the checker does not know (their string arguments are still searched for another agent's
// memory).
type otherSubject struct {
	ck    *checker
	tool  string
	args  args
	known bool
}

func (ck *checker) otherSubject(c Call) *otherSubject {
	a, _ := decodeArgs(c.Args)
	known := false
	for _, n := range []string{toolTodoWrite, toolRecall, toolAgent} {
		known = known || strings.EqualFold(c.Tool, n)
	}
	s := &otherSubject{ck: ck, tool: c.Tool, args: a, known: known}
	if !known && len(c.Args) > 0 && len(a) == 0 {
		// Not an object: keep the raw text so the memory scan still sees it.
		s.args = args{"": c.Args}
	}
	return s
}

func (s *otherSubject) memory() (string, bool) {
	if s.known {
		return "", false
	}
	for _, v := range s.args {
		for _, str := range allStrings(v) {
			if what, ok := s.ck.mentionsOtherMemory(str); ok {
				return fmt.Sprintf("%s argument names another agent's memory (%s)", s.tool, what), true
			}
		}
	}
	return "", false
}

// primary returns the argument a pattern of this tool's rules is matched against.
func (s *otherSubject) primary() (string, bool) {
	for _, k := range []string{"url", "file_path", "path", "command", "query", "subagent_type", "name", "pattern"} {
		if vals, _ := s.args.strings(k); len(vals) == 1 {
			return vals[0], true
		}
	}
	return "", false
}

func (s *otherSubject) patternMatches(pattern, v string) bool {
	if pattern == "*" || pattern == "**" {
		return true
	}
	ok, _ := doublestar.Match(pattern, v)
	return ok
}

func (s *otherSubject) matches(r Rule) (string, bool) {
	if r.Pattern == "*" || r.Pattern == "**" {
		return "every " + s.tool + " call", true
	}
	for _, v := range s.args {
		for _, str := range allStrings(v) {
			if s.patternMatches(r.Pattern, str) {
				return fmt.Sprintf("%q", str), true
			}
		}
	}
	return "", false
}

func (s *otherSubject) unreadable() (string, bool) { return "", false }

func (s *otherSubject) allowedBy(rules []Rule) (Rule, string, bool) {
	v, ok := s.primary()
	for _, r := range rules {
		if r.Pattern == "*" || r.Pattern == "**" || ok && s.patternMatches(r.Pattern, v) {
			return r, fmt.Sprintf("allow rule %s matches this %s call", r, s.tool), true
		}
	}
	return Rule{}, "", false
}

func (s *otherSubject) auto() (string, bool) {
	if strings.EqualFold(s.tool, toolAgent) {
		return "a sub-agent runs under its own permissions", true
	}
	return "", false
}

func (s *otherSubject) approval() (string, string) {
	if s.tool == "" {
		return "the call names no tool", ""
	}
	if s.known {
		return fmt.Sprintf("%s needs approval", s.tool), s.tool
	}
	if !isValidToolName(s.tool) {
		return fmt.Sprintf("%q is not a tool the permission checker knows; a person must decide", s.tool), ""
	}
	return fmt.Sprintf("%s is not a tool the permission checker knows; a person must decide", s.tool), s.tool
}

func isValidToolName(s string) bool {
	for _, r := range s {
		if !isToolNameRune(r) {
			return false
		}
	}
	return s != ""
}

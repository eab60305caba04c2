package permission

import (
	"fmt"
	"path/filepath"
	"strings"
)

// maxCwds bounds the directories a line's cd commands may lead to; past it they are unknown.
const maxCwds = 16

// maxGlobMatches bounds how many files a glob argument of a read-only command may match before
// the checker gives up and asks.
const maxGlobMatches = 1000

// maxGlobs bounds how many glob arguments one Check expands.
const maxGlobs = 16

// bashSubject is a call of Bash.
type bashSubject struct {
	ck       *checker
	commands []string // every spelling of the command argument (normally one)
	line     *shellLine
	problem  string

	cwds       []string // lexical directories the line's commands may run in
	cwdUnknown bool     // a cd leads somewhere that cannot be known

	// memUnchecked is set by memory when a glob could not be expanded to check it against
	// other agents' memory; unreadable then asks in every mode.
	memUnchecked string
}

func (ck *checker) bashSubject(c Call) *bashSubject {
	s := &bashSubject{ck: ck}
	a, ok := decodeArgs(c.Args)
	if !ok {
		s.problem = "the Bash arguments are not a JSON object"
		return s
	}
	vals, bad := a.strings("command")
	s.commands = vals
	switch {
	case bad:
		s.problem = "the Bash argument command is not a string"
	case len(vals) == 0:
		s.problem = "the Bash call has no command"
	case len(vals) > 1:
		s.problem = "the Bash call names command more than once"
	}
	if len(vals) == 0 {
		return s
	}
	s.line = ck.parseLine(vals[0], 0)
	s.findCwds()
	return s
}

// findCwds follows the line's cd, pushd and popd commands: the commands may run in the
// workspace or in any directory a cd leads to (order is ignored, which only adds places). A cd
// to a glob may lead to any of its matches; cd -P goes where the kernel resolves the path,
// plain cd to its lexical form (bash's default, cd -L).
func (s *bashSubject) findCwds() {
	if s.ck.ws.ok {
		s.cwds = []string{s.ck.ws.lex}
	} else {
		s.cwdUnknown = true
	}
	for _, c := range s.line.cmds {
		d, isCd := cdTarget(c)
		if !isCd {
			continue
		}
		if !d.ok {
			s.cwdUnknown = true
			continue
		}
		for _, cw := range append([]string(nil), s.cwds...) {
			dests := []string{d.dest}
			if d.glob {
				m, ok := s.ck.glob(d.dest, cw)
				if !ok {
					s.cwdUnknown = true
					continue
				}
				dests = m
			}
			for _, dest := range dests {
				t := s.ck.target(dest, cw)
				if !t.ok || len(s.cwds) >= maxCwds {
					s.cwdUnknown = true
					continue
				}
				next := t.lex
				if d.physical {
					next = t.real
				}
				if !contains(s.cwds, next) {
					s.cwds = append(s.cwds, next)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cdDest is where a cd or pushd command goes.
type cdDest struct {
	dest     string
	glob     bool // dest is a glob: the directory is one of its matches
	physical bool // cd -P: the kernel resolves dest, .. after symlinks
	ok       bool // false when the destination cannot be known
}

// cdTarget returns where a cd, pushd or popd command goes; isCd is false for other commands.
func cdTarget(c *shellCmd) (d cdDest, isCd bool) {
	if c.other != "" || len(c.args) == 0 || !c.args[0].plain {
		return d, false
	}
	switch c.args[0].lit {
	case "cd", "pushd":
	case "popd":
		return cdDest{ok: len(c.args) == 1 && !c.assigns}, true
	default:
		return d, false
	}
	var rest []wordInfo
	for _, a := range c.args[1:] {
		if !a.plain || a.quotedMeta {
			return d, true
		}
		if len(rest) == 0 && (a.lit == "-L" || a.lit == "-P" || a.lit == "-e" || a.lit == "-@" || a.lit == "--") {
			d.physical = d.physical || a.lit == "-P"
			continue
		}
		rest = append(rest, a)
	}
	switch {
	case len(rest) == 0:
		d.dest, d.ok = "~", !c.assigns
		return d, true
	case len(rest) > 1 || rest[0].lit == "-" || strings.HasPrefix(rest[0].lit, "+") || strings.HasPrefix(rest[0].lit, "-"):
		return d, true
	}
	d.dest, d.glob, d.ok = rest[0].lit, rest[0].glob, !c.assigns
	return d, true
}

// targets resolves a word against every directory the command may run in. ok is false when
// a place cannot be known.
func (s *bashSubject) targets(w wordInfo) (ts []target, ok bool) {
	if !w.plain {
		return nil, false
	}
	p := w.lit
	if filepath.IsAbs(p) || p == "~" || strings.HasPrefix(p, "~/") {
		t := s.ck.target(p, "")
		return []target{t}, t.ok
	}
	if s.cwdUnknown {
		return nil, false
	}
	for _, cw := range s.cwds {
		t := s.ck.target(p, cw)
		if !t.ok {
			return nil, false
		}
		ts = append(ts, t)
	}
	return ts, true
}

// globTargets is targets plus every file a glob word matches now, in every directory the
// command may run in.
func (s *bashSubject) globTargets(w wordInfo) ([]target, bool) {
	ts, ok := s.targets(w)
	if !ok || !w.glob {
		return ts, ok
	}
	ms, _, ok := s.matches1(w)
	if !ok {
		return nil, false
	}
	for _, m := range ms {
		mt, ok := s.targets(wordInfo{lit: m, plain: true})
		if !ok {
			return nil, false
		}
		ts = append(ts, mt...)
	}
	return ts, true
}

// matches1 expands a glob word in every directory the command may run in (the union); none
// reports a directory where it matches nothing, so bash passes the word itself.
func (s *bashSubject) matches1(w wordInfo) (out []string, none, ok bool) {
	if w.quotedMeta {
		return nil, false, false
	}
	p := w.lit
	dirs := s.cwds
	if filepath.IsAbs(p) || p == "~" || strings.HasPrefix(p, "~/") {
		dirs = []string{""}
	} else if s.cwdUnknown {
		return nil, false, false
	}
	for _, d := range dirs {
		ms, ok := s.ck.glob(p, d)
		if !ok {
			return nil, false, false
		}
		none = none || len(ms) == 0
		for _, m := range ms {
			if !contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out, none, true
}

func (s *bashSubject) memory() (string, bool) {
	for _, cmd := range s.commands {
		if what, ok := s.ck.mentionsOtherMemory(cmd); ok {
			return "Bash command names another agent's memory: " + what, true
		}
	}
	if s.line == nil || !s.ck.root.ok {
		return "", false
	}
	dirs := s.cwds
	if s.cwdUnknown && s.ck.ws.ok && !contains(dirs, s.ck.ws.lex) {
		dirs = append(dirs, s.ck.ws.lex)
	}
	seen := make(map[string]bool)
	check := func(cand string) (string, bool) {
		if seen[cand] {
			return "", false
		}
		seen[cand] = true
		var ts []target
		if filepath.IsAbs(cand) || cand == "~" || strings.HasPrefix(cand, "~/") {
			ts = append(ts, s.ck.target(cand, ""))
		} else {
			for _, d := range dirs {
				ts = append(ts, s.ck.target(cand, d))
			}
		}
		for _, t := range ts {
			if s.ck.otherMemory(t) {
				return fmt.Sprintf("Bash command touches another agent's memory: %s leads to %s", cand, t.real), true
			}
		}
		return "", false
	}
	for _, w := range s.line.allWords() {
		for _, cand := range pathCandidates(w.known) {
			if why, ok := check(cand); ok {
				return why, true
			}
		}
		if !w.plain || !w.glob {
			continue
		}
		// What bash passes is what the glob matches: a matched symlink may lead anywhere, and
		// ".." after it applies to where it leads.
		for _, d := range dirs {
			dd := d
			if filepath.IsAbs(w.lit) || strings.HasPrefix(w.lit, "~") {
				dd = ""
			}
			ms, ok := s.ck.glob(w.lit, dd)
			if !ok || w.quotedMeta {
				s.memUnchecked = fmt.Sprintf("the glob %s cannot be expanded ahead (too many matches, or a pattern the checker does not read), so it cannot be checked against other agents' memory; a person must decide", w.lit)
				continue
			}
			for _, m := range ms {
				if why, ok := check(m); ok {
					return why, true
				}
			}
		}
	}
	return "", false
}

// pathCandidates returns the ways a word may name a path: itself, the value after the first =
// (--file=x, if=x) and the tail of a short flag from its first / or ~ (-f/x).
func pathCandidates(known string) []string {
	if known == "" {
		return nil
	}
	var c []string
	if !strings.HasPrefix(known, "-") {
		c = append(c, known)
	}
	if i := strings.IndexByte(known, '='); i >= 0 && i+1 < len(known) {
		c = append(c, known[i+1:])
	}
	if strings.HasPrefix(known, "-") {
		if j := strings.IndexAny(known, "/~"); j > 0 {
			c = append(c, known[j:])
		}
	}
	return c
}

func (s *bashSubject) matches(r Rule) (string, bool) {
	if s.line == nil {
		return "", false
	}
	switch fileFamily(r.Tool) {
	case "read":
		for _, cmd := range s.line.allCmds() {
			for _, w := range s.readPaths(cmd) {
				ts, _ := s.globTargets(w)
				for _, t := range ts {
					if s.ck.patternMatches(r.Pattern, t, false) {
						return fmt.Sprintf("`%s` (reads %s)", cmd.src, w.lit), true
					}
				}
			}
		}
		for _, rd := range s.line.allRedirs() {
			if s.redirMatches(rd, rd.read, r) {
				return fmt.Sprintf("the redirection `%s`", rd.src), true
			}
		}
		return "", false
	case "write":
		for _, rd := range s.line.allRedirs() {
			if s.redirMatches(rd, rd.write, r) {
				return fmt.Sprintf("the redirection `%s`", rd.src), true
			}
		}
		return "", false
	}
	bp, err := parseBashPattern(r.Pattern)
	if err != nil {
		return "", false
	}
	if bp.any {
		return "every command line", true
	}
	for _, cmd := range s.line.allCmds() {
		if cmd.other != "" {
			continue
		}
		for _, st := range commandStarts(cmd.args) {
			if matchWords(cmd.args[st:], bp, true) {
				return fmt.Sprintf("`%s`", cmd.src), true
			}
		}
	}
	return "", false
}

func (s *bashSubject) redirMatches(rd shellRedir, relevant bool, r Rule) bool {
	if !relevant {
		return false
	}
	ts, _ := s.targets(rd.word)
	for _, t := range ts {
		if s.ck.patternMatches(r.Pattern, t, false) {
			return true
		}
	}
	return false
}

// matchWords matches a Bash rule pattern against a command's words. loose (deny and ask
// rules) also compares the base name of a command path (/bin/rm is rm) and lets a glob word
// match, since the shell could expand it to the denied name.
func matchWords(args []wordInfo, bp bashPattern, loose bool) bool {
	if bp.any {
		return true
	}
	if len(args) < len(bp.words) || !bp.prefix && len(args) != len(bp.words) {
		return false
	}
	for i, want := range bp.words {
		a := args[i]
		if !a.plain {
			return false
		}
		if !loose {
			if a.glob || a.lit != want {
				return false
			}
			continue
		}
		v := a.lit
		if i == 0 {
			v = cmdName(a)
		}
		if v == want || a.lit == want {
			continue
		}
		if a.glob {
			if ok, _ := filepath.Match(v, want); ok {
				continue
			}
		}
		return false
	}
	return true
}

func (s *bashSubject) unreadable() (string, bool) {
	if s.problem != "" {
		return s.problem + "; a person must decide", true
	}
	if err := s.line.firstErr(); err != nil {
		return fmt.Sprintf("the command line could not be checked (%v), so no rule can vouch for it; a person must decide", err), true
	}
	if s.memUnchecked != "" {
		return s.memUnchecked, true
	}
	return "", false
}

// neutral reports commands that need no rule: true, false, : and cd into the workspace.
func (s *bashSubject) neutral(c *shellCmd) bool {
	if c.other != "" || c.assigns || len(c.args) == 0 || !c.args[0].plain {
		return false
	}
	switch c.args[0].lit {
	case "true", "false", ":":
		return len(c.args) == 1
	}
	d, isCd := cdTarget(c)
	if !isCd || !d.ok || d.glob {
		return false
	}
	if c.args[0].lit == "popd" {
		return true
	}
	ts, ok := s.targets(wordInfo{lit: d.dest, plain: true})
	if !ok {
		return false
	}
	for _, t := range ts {
		if !inside(t, s.ck.ws) {
			return false
		}
	}
	return true
}

// ruleFor returns the first allow rule that matches a command exactly: its literal words begin
// with the rule's words and it sets no variables.
func ruleFor(c *shellCmd, rules []Rule) (Rule, bool) {
	if c.other != "" || c.assigns {
		return Rule{}, false
	}
	for _, r := range rules {
		if !strings.EqualFold(r.Tool, toolBash) {
			continue
		}
		bp, err := parseBashPattern(r.Pattern)
		if err == nil && matchWords(c.args, bp, false) {
			return r, true
		}
	}
	return Rule{}, false
}

// redirOK checks a redirection: byRule for lines allowed by rules (writes must stay in the
// workspace or this agent's memory), else for auto-allow (writes only where the mode allows
// edits, reads only where reads are allowed).
func (s *bashSubject) redirOK(rd shellRedir, byRule bool) (string, bool) {
	if rd.word.plain && isDevice(rd.word.lit) {
		return "", true
	}
	ts, ok := s.targets(rd.word)
	if !ok || rd.word.glob {
		return fmt.Sprintf("the redirection `%s` goes to a file that cannot be known ahead", rd.src), false
	}
	for _, t := range ts {
		switch {
		case rd.write && byRule && !s.ck.writableByRule(t):
			return fmt.Sprintf("the redirection `%s` writes outside the workspace", rd.src), false
		case rd.write && !byRule && !s.ck.writableAuto(t):
			if !inside(t, s.ck.ws) {
				return fmt.Sprintf("the redirection `%s` writes outside the workspace", rd.src), false
			}
			return fmt.Sprintf("the redirection `%s` writes a file, which needs approval in %s mode", rd.src, s.ck.mode), false
		case rd.read && !byRule && !s.ck.readable(t):
			return fmt.Sprintf("the redirection `%s` reads outside the workspace", rd.src), false
		}
	}
	return "", true
}

func isDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty":
		return true
	}
	if rest, ok := strings.CutPrefix(p, "/dev/fd/"); ok {
		return rest != "" && isFdWord(rest)
	}
	return false
}

func (s *bashSubject) allowedBy(rules []Rule) (Rule, string, bool) {
	var used []Rule
	var src string
	for _, c := range s.line.cmds {
		if s.neutral(c) {
			continue
		}
		r, ok := ruleFor(c, rules)
		if !ok {
			return Rule{}, "", false
		}
		if len(used) == 0 {
			src = c.src
		}
		if !containsRule(used, r) {
			used = append(used, r)
		}
	}
	if len(used) == 0 {
		return Rule{}, "", false
	}
	for _, rd := range s.line.redirs {
		if _, ok := s.redirOK(rd, true); !ok {
			return Rule{}, "", false
		}
	}
	if len(used) == 1 {
		return used[0], fmt.Sprintf("allow rule %s matches every command (`%s`)", used[0], src), true
	}
	names := make([]string, len(used))
	for i, r := range used {
		names[i] = r.String()
	}
	return used[0], "allow rules " + strings.Join(names, ", ") + " together match every command", true
}

func containsRule(list []Rule, r Rule) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}

func (s *bashSubject) auto() (string, bool) {
	for _, c := range s.line.cmds {
		if s.neutral(c) {
			continue
		}
		if _, ok := ruleFor(c, s.ck.p.Allow); ok {
			continue
		}
		if ok, _ := s.readOnly(c); !ok {
			return "", false
		}
	}
	for _, rd := range s.line.redirs {
		if _, ok := s.redirOK(rd, false); !ok {
			return "", false
		}
	}
	if len(s.line.cmds) == 0 {
		return "the command line runs no command", true
	}
	return "read-only commands inside the workspace are allowed", true
}

func (s *bashSubject) approval() (string, string) {
	if s.line == nil {
		return s.problem, ""
	}
	for _, c := range s.line.cmds {
		if s.neutral(c) {
			continue
		}
		if _, ok := ruleFor(c, s.ck.p.Allow); ok {
			continue
		}
		ok, why := s.readOnly(c)
		if ok && s.ck.mode != ModeStrict {
			continue
		}
		if ok {
			why = fmt.Sprintf("`%s` is not covered by an allow rule", c.src)
		}
		if _, isCd := cdTarget(c); isCd {
			why = fmt.Sprintf("`%s` leaves the workspace or goes somewhere that cannot be known ahead", c.src)
		}
		return why, suggestBash(c)
	}
	byRule := s.ck.mode == ModeStrict
	for _, rd := range s.line.redirs {
		if why, ok := s.redirOK(rd, byRule); !ok {
			return why, ""
		}
	}
	return "the command needs approval", ""
}

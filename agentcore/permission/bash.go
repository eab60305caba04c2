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
// workspace or in any directory a cd leads to (order is ignored, which only adds places).
func (s *bashSubject) findCwds() {
	if s.ck.ws.ok {
		s.cwds = []string{s.ck.ws.lex}
	} else {
		s.cwdUnknown = true
	}
	for _, c := range s.line.cmds {
		dest, ok, isCd := cdTarget(c)
		if !isCd {
			continue
		}
		if !ok {
			s.cwdUnknown = true
			continue
		}
		for _, cw := range append([]string(nil), s.cwds...) {
			t := s.ck.target(dest, cw)
			if !t.ok || len(s.cwds) >= maxCwds {
				s.cwdUnknown = true
				continue
			}
			if !contains(s.cwds, t.lex) {
				s.cwds = append(s.cwds, t.lex)
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

// cdTarget returns where a cd or pushd command goes; ok is false when that cannot be known.
func cdTarget(c *shellCmd) (dest string, ok, isCd bool) {
	if c.other != "" || len(c.args) == 0 || !c.args[0].plain {
		return "", false, false
	}
	switch c.args[0].lit {
	case "cd", "pushd":
	case "popd":
		return "", len(c.args) == 1 && !c.assigns, true
	default:
		return "", false, false
	}
	var rest []string
	for _, a := range c.args[1:] {
		if !a.plain || a.glob {
			return "", false, true
		}
		if len(rest) == 0 && (a.lit == "-L" || a.lit == "-P" || a.lit == "-e" || a.lit == "-@" || a.lit == "--") {
			continue
		}
		rest = append(rest, a.lit)
	}
	switch {
	case len(rest) == 0:
		return "~", !c.assigns, true
	case len(rest) > 1 || rest[0] == "-" || strings.HasPrefix(rest[0], "+") || strings.HasPrefix(rest[0], "-"):
		return "", false, true
	}
	return rest[0], !c.assigns, true
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

// globTargets is targets plus every file a glob word matches now.
func (s *bashSubject) globTargets(w wordInfo) ([]target, bool) {
	ts, ok := s.targets(w)
	if !ok || !w.glob {
		return ts, ok
	}
	if s.ck.globBudget <= 0 {
		return nil, false
	}
	s.ck.globBudget--
	for _, t := range append([]target(nil), ts...) {
		matches, err := filepath.Glob(t.lex)
		if err != nil {
			continue
		}
		if len(matches) > maxGlobMatches {
			return nil, false
		}
		for _, m := range matches {
			mt := s.ck.target(m, "")
			if !mt.ok {
				return nil, false
			}
			ts = append(ts, mt)
		}
	}
	return ts, true
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
	for _, w := range s.line.allWords() {
		for _, cand := range pathCandidates(w.known) {
			if seen[cand] {
				continue
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
			spec, ok := readOnlySpec(cmd.args)
			if !ok || !spec.paths || cmd.other != "" {
				continue
			}
			cands, _ := pathArgs(cmd.args[min(spec.skip, len(cmd.args)):])
			for _, w := range cands {
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
	dest, ok, isCd := cdTarget(c)
	if !isCd || !ok {
		return false
	}
	if c.args[0].lit == "popd" {
		return true
	}
	ts, ok := s.targets(wordInfo{lit: dest, plain: true})
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

// readOnly checks a command against the read-only list; why explains a refusal.
func (s *bashSubject) readOnly(c *shellCmd) (ok bool, why string) {
	if c.other != "" {
		return false, fmt.Sprintf("`%s` is a %s, which only an allow rule for the whole tool allows", c.src, c.other)
	}
	if c.assigns {
		return false, fmt.Sprintf("`%s` sets variables for the command, so no rule or read-only entry applies", c.src)
	}
	spec, listed := readOnlySpec(c.args)
	if !listed {
		return false, fmt.Sprintf("`%s` is not covered by an allow rule or the read-only command list", c.src)
	}
	args := c.args[min(spec.skip, len(c.args)):]
	if spec.reject != nil {
		if r := spec.reject(args); r != "" {
			return false, fmt.Sprintf("`%s` is more than a read: %s", c.src, r)
		}
	}
	if !spec.paths {
		return true, ""
	}
	if s.cwdUnknown {
		return false, fmt.Sprintf("`%s`: the directory it runs in cannot be known ahead", c.src)
	}
	cands, bad := pathArgs(args)
	if bad != "" {
		return false, fmt.Sprintf("`%s`: %s", c.src, bad)
	}
	for _, w := range cands {
		// Check the word itself before expanding it, so /*/*/* is refused without a walk.
		ts, ok := s.targets(w)
		for _, t := range ts {
			if !s.ck.readable(t) {
				return false, fmt.Sprintf("`%s` reads %s, outside the workspace", c.src, t.real)
			}
		}
		if ok && w.glob {
			ts, ok = s.globTargets(w)
		}
		if !ok {
			return false, fmt.Sprintf("`%s`: where %s leads cannot be known ahead", c.src, w.lit)
		}
		for _, t := range ts {
			if !s.ck.readable(t) {
				return false, fmt.Sprintf("`%s` reads %s, outside the workspace", c.src, t.real)
			}
		}
	}
	return true, ""
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
		if _, _, isCd := cdTarget(c); isCd {
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

// suggestBash returns the rule an "Always" approval of c would store: its first two literal
// words as a prefix rule. Nothing is suggested when such a rule would allow far more than the
// command (shells, eval, sudo and other wrappers, interpreters given code with -c or -e) or
// could never match it (variable assignments, expansions in the command name).
func suggestBash(c *shellCmd) string {
	if c.other != "" || c.assigns || len(c.args) == 0 {
		return ""
	}
	safe := func(w wordInfo) bool {
		return w.plain && !w.glob && w.lit != "" && !strings.ContainsAny(w.lit, " \t\n\r*?()\\\"'`$;&|<>")
	}
	if !safe(c.args[0]) {
		return ""
	}
	name := cmdName(c.args[0])
	if isShell(name) || isWrapper(name) || name == "eval" || name == "source" || name == "." {
		return ""
	}
	words := []string{c.args[0].lit}
	if len(c.args) > 1 && safe(c.args[1]) {
		switch c.args[1].lit {
		case "-c", "-e", "--eval", "-r", "-x":
			switch name {
			case "python", "python3", "python2", "node", "perl", "ruby", "php", "deno", "bun", "lua", "Rscript", "osascript":
				return ""
			}
		}
		words = append(words, c.args[1].lit)
	}
	return Rule{Tool: toolBash, Pattern: strings.Join(words, " ") + ":*"}.String()
}

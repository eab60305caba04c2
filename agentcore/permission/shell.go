package permission

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

const (
	// maxLineLen is the longest command line the checker parses; longer ones ask.
	maxLineLen = 64 << 10
	// maxShellDepth bounds how deep sh -c and eval strings are parsed for deny and ask rules.
	maxShellDepth = 3
	// maxInner bounds the sh -c and eval scripts parsed per line.
	maxInner = 16
	// parseBudget bounds the bytes of inner scripts parsed per Check.
	parseBudget = 4 * maxLineLen
)

// wordInfo is what the checker knows about one shell word before the shell runs.
type wordInfo struct {
	lit   string // the value after quote removal (a leading ~ is kept); meaningful when plain
	plain bool   // no expansion, brace expansion or $'..': the shell passes lit as is, apart from globbing and ~
	glob  bool   // has unquoted *, ? or [ that the shell may expand to file names
	// quotedMeta: besides unquoted wildcards the word has quoted or escaped ones, which lit
	// no longer tells apart; such a glob is not expanded for allowing.
	quotedMeta bool
	known      string // the literal text before the first expansion, with ~ and $HOME expanded: for deny checks
}

// shellCmd is one simple command (or another command the rules cannot allow, in other).
type shellCmd struct {
	src     string
	args    []wordInfo
	assigns bool   // leading VAR=value assignments
	other   string // non-empty for commands no rule allows: "export", "arithmetic", "variable assignment"
}

// shellRedir is one redirection of the line.
type shellRedir struct {
	src         string
	read, write bool
	word        wordInfo
}

// shellLine is a parsed command line: every simple command in it (also those in command and
// process substitutions, subshells, loops and function bodies), every redirection, every word,
// and the scripts passed to sh -c or eval, parsed in turn for deny and ask rules.
type shellLine struct {
	ck     *checker
	src    string
	depth  int
	cmds   []*shellCmd
	redirs []shellRedir
	words  []wordInfo
	inner  []*shellLine
	err    error
	cache  map[*syntax.Word]wordInfo
}

var errTooLong = errors.New("the command line is longer than the checker reads")

func (ck *checker) parseLine(src string, depth int) *shellLine {
	l := &shellLine{ck: ck, src: src, depth: depth, cache: make(map[*syntax.Word]wordInfo)}
	if depth == 0 {
		ck.parseBudget = parseBudget
	}
	switch {
	case len(src) > maxLineLen:
		l.err = errTooLong
		return l
	case strings.ContainsRune(src, 0):
		l.err = errors.New("the command line contains a NUL byte")
		return l
	}
	f, err := parseShell(src, false)
	if err == nil {
		l.collect(f)
		return l
	}
	l.err = err
	// Bash runs the statements before a syntax error, so deny and ask rules still look at
	// whatever a forgiving parse recovers. Such a tree may be incomplete; a walk that trips
	// over it just finds fewer commands (the line is never allowed anyway).
	f, _ = parseShell(src, true)
	if f != nil {
		func() {
			defer func() { _ = recover() }()
			l.collect(f)
		}()
	}
	return l
}

// parseShell parses a bash command line. The parser has been seen to panic on some malformed
// input with error recovery on (e.g. "A0=$((0 0"); such a panic is a parse error here.
func parseShell(src string, recoverErrors bool) (f *syntax.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("the shell parser failed on this input: %v", r)
		}
	}()
	opts := []syntax.ParserOption{syntax.Variant(syntax.LangBash)}
	if recoverErrors {
		opts = append(opts, syntax.RecoverErrors(8))
	}
	return syntax.NewParser(opts...).Parse(strings.NewReader(src), "")
}

// slice returns the source text of a node, "" when its positions are unusable.
func (l *shellLine) slice(n syntax.Node) string {
	p, e := n.Pos(), n.End()
	if !p.IsValid() || !e.IsValid() {
		return ""
	}
	a, b := int(p.Offset()), int(e.Offset())
	if a < 0 || b > len(l.src) || a > b {
		return ""
	}
	return l.src[a:b]
}

func (l *shellLine) collect(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			l.addCall(x)
		case *syntax.DeclClause:
			what := "declaration"
			if x.Variant != nil {
				what = x.Variant.Value
			}
			l.cmds = append(l.cmds, &shellCmd{src: l.slice(x), other: what})
		case *syntax.ArithmCmd, *syntax.LetClause:
			l.cmds = append(l.cmds, &shellCmd{src: l.slice(x), other: "arithmetic command"})
		case *syntax.CoprocClause:
			l.cmds = append(l.cmds, &shellCmd{src: l.slice(x), other: "coprocess"})
		case *syntax.TestDecl:
			l.cmds = append(l.cmds, &shellCmd{src: l.slice(x), other: "test declaration"})
		case *syntax.Redirect:
			l.addRedir(x)
		case *syntax.Word:
			l.words = append(l.words, l.word(x))
		}
		return true
	})
}

func (l *shellLine) addCall(x *syntax.CallExpr) {
	c := &shellCmd{src: l.slice(x), assigns: len(x.Assigns) > 0}
	for _, w := range x.Args {
		c.args = append(c.args, l.word(w))
	}
	if len(x.Args) == 0 {
		c.other = "variable assignment"
	}
	l.cmds = append(l.cmds, c)
	for _, st := range commandStarts(c.args) {
		script, ok := innerScript(c.args[st:])
		if !ok {
			continue
		}
		if l.depth >= maxShellDepth || len(l.inner) >= maxInner || len(script) > l.ck.parseBudget {
			// Not looking inside would let a deny rule be dodged; the line cannot be allowed.
			l.err = errors.New("it nests shell scripts (sh -c, eval) too deep or too large to check")
			return
		}
		l.ck.parseBudget -= len(script)
		l.inner = append(l.inner, l.ck.parseLine(script, l.depth+1))
	}
}

func (l *shellLine) addRedir(r *syntax.Redirect) {
	rd := shellRedir{src: l.slice(r)}
	if r.Word != nil {
		rd.word = l.word(r.Word)
	}
	fdTarget := r.Word != nil && rd.word.plain && isFdWord(rd.word.lit)
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		rd.write = true
	case syntax.RdrInOut:
		rd.read, rd.write = true, true
	case syntax.RdrIn:
		rd.read = true
	case syntax.DplOut:
		rd.write = !fdTarget
	case syntax.DplIn:
		rd.read = !fdTarget
	default: // here-documents and here-strings read no file
		return
	}
	if rd.read || rd.write {
		l.redirs = append(l.redirs, rd)
	}
}

// isFdWord reports a duplication target that names a file descriptor: 1, 2-, -.
func isFdWord(s string) bool {
	s = strings.TrimSuffix(s, "-")
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// word works out what the checker can know about a word without running anything.
func (l *shellLine) word(w *syntax.Word) wordInfo {
	if wi, ok := l.cache[w]; ok {
		return wi
	}
	wi := wordInfo{plain: true}
	var lit, known strings.Builder
	open := true // known is still the whole word so far
	stop := func() { wi.plain, open = false, false }
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				name, _, _ := strings.Cut(v, "/")
				if name != "~" || l.ck.home == "" {
					stop()
					continue
				}
				known.WriteString(l.ck.home)
				lit.WriteString("~")
				v = v[1:]
			}
			s, glob, brace, esc := unescapeUnquoted(v)
			lit.WriteString(s)
			wi.glob = wi.glob || glob
			wi.quotedMeta = wi.quotedMeta || esc
			if brace {
				wi.plain = false
			}
			if open {
				known.WriteString(s)
			}
		case *syntax.SglQuoted:
			if x.Dollar {
				stop()
				continue
			}
			lit.WriteString(x.Value)
			wi.quotedMeta = wi.quotedMeta || strings.ContainsAny(x.Value, "*?[")
			if open {
				known.WriteString(x.Value)
			}
		case *syntax.DblQuoted:
			if x.Dollar {
				stop()
				continue
			}
			for _, q := range x.Parts {
				switch y := q.(type) {
				case *syntax.Lit:
					s := unescapeDouble(y.Value)
					lit.WriteString(s)
					wi.quotedMeta = wi.quotedMeta || strings.ContainsAny(s, "*?[")
					if open {
						known.WriteString(s)
					}
				case *syntax.ParamExp:
					l.param(y, &wi, &known, &open)
				default:
					stop()
				}
			}
		case *syntax.ParamExp:
			l.param(x, &wi, &known, &open)
		default:
			stop()
		}
	}
	wi.lit, wi.known = lit.String(), known.String()
	l.cache[w] = wi
	return wi
}

// param handles a parameter expansion: $HOME and ${HOME} are known for deny checks, anything
// else ends what is known.
func (l *shellLine) param(p *syntax.ParamExp, wi *wordInfo, known *strings.Builder, open *bool) {
	wi.plain = false
	isHome := p.Param != nil && p.Param.Value == "HOME" && !p.Excl && !p.Length && !p.Width &&
		p.Index == nil && p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil && p.NestedParam == nil
	if isHome && *open && l.ck.home != "" {
		known.WriteString(l.ck.home)
		return
	}
	*open = false
}

// unescapeUnquoted removes backslash escapes from unquoted text and reports unescaped glob
// characters, brace expansions and escaped glob characters.
func unescapeUnquoted(s string) (out string, glob, brace, escMeta bool) {
	if !strings.ContainsAny(s, `\*?[{`) {
		return s, false, false, false
	}
	var b strings.Builder
	openBrace := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			escMeta = escMeta || strings.IndexByte("*?[", s[i]) >= 0
			b.WriteByte(s[i])
			continue
		case c == '*' || c == '?':
			glob = true
		case c == '[' && strings.IndexByte(s[i+1:], ']') >= 0:
			glob = true
		case c == '{':
			openBrace = true
		case c == '}' && openBrace:
			brace = true
		}
		b.WriteByte(c)
	}
	return b.String(), glob, brace, escMeta
}

// unescapeDouble removes the backslashes that double quotes remove.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cmdName returns the base name of a plain command word.
func cmdName(w wordInfo) string {
	if !w.plain {
		return ""
	}
	return path.Base(w.lit)
}

// isWrapper reports commands that run the command given in their later arguments.
func isWrapper(name string) bool {
	switch name {
	case "sudo", "doas", "su", "env", "command", "builtin", "exec", "nohup", "time", "nice", "ionice",
		"timeout", "xargs", "stdbuf", "setsid", "chroot", "unbuffer", "watch", "strace", "ltrace",
		"taskset", "chrt", "flock", "caffeinate", "runuser", "sg", "parallel", "busybox":
		return true
	}
	return false
}

// commandStarts lists the argument positions where a command name may begin: the first word,
// and after a wrapper (sudo, env, xargs, ...) or find's -exec every later word, since their
// options cannot be told from the command without knowing each tool's flags.
func commandStarts(args []wordInfo) []int {
	if len(args) == 0 {
		return nil
	}
	starts := []int{0}
	name := cmdName(args[0])
	from := -1
	switch {
	case isWrapper(name):
		from = 1
	case name == "find" || name == "fd":
		for i, a := range args {
			switch a.lit {
			case "-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch":
				from = i + 1
			}
			if from >= 0 {
				break
			}
		}
	}
	if from > 0 {
		for i := from; i < len(args); i++ {
			starts = append(starts, i)
		}
	}
	return starts
}

// isShell reports command interpreters whose -c argument is a script.
func isShell(name string) bool {
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash":
		return true
	}
	return false
}

// innerScript returns the script of `sh -c SCRIPT` or `eval WORDS`, when it is plain text.
func innerScript(args []wordInfo) (string, bool) {
	name := cmdName(args[0])
	if name == "eval" {
		var parts []string
		for _, a := range args[1:] {
			if !a.plain {
				return "", false
			}
			parts = append(parts, a.lit)
		}
		return strings.Join(parts, " "), len(parts) > 0
	}
	if !isShell(name) {
		return "", false
	}
	sawC := false
	for _, a := range args[1:] {
		if !a.plain {
			return "", false
		}
		if strings.HasPrefix(a.lit, "-") && !strings.HasPrefix(a.lit, "--") || strings.HasPrefix(a.lit, "+") {
			sawC = sawC || strings.Contains(a.lit[1:], "c")
			continue
		}
		if sawC {
			return a.lit, true
		}
		return "", false
	}
	return "", false
}

// firstErr returns the first error of the line or of a script it passes to a shell: bash
// runs the statements before a syntax error, so a broken inner script is as unreadable as a
// broken line.
func (l *shellLine) firstErr() error {
	if l.err != nil {
		return l.err
	}
	for _, in := range l.inner {
		if err := in.firstErr(); err != nil {
			return err
		}
	}
	return nil
}

// allCmds returns the line's commands and those of the scripts it passes to shells.
func (l *shellLine) allCmds() []*shellCmd {
	if len(l.inner) == 0 {
		return l.cmds
	}
	out := append([]*shellCmd(nil), l.cmds...)
	for _, in := range l.inner {
		out = append(out, in.allCmds()...)
	}
	return out
}

// allWords returns every word of the line and of its inner scripts.
func (l *shellLine) allWords() []wordInfo {
	if len(l.inner) == 0 {
		return l.words
	}
	out := append([]wordInfo(nil), l.words...)
	for _, in := range l.inner {
		out = append(out, in.allWords()...)
	}
	return out
}

// allRedirs returns every redirection of the line and of its inner scripts.
func (l *shellLine) allRedirs() []shellRedir {
	if len(l.inner) == 0 {
		return l.redirs
	}
	out := append([]shellRedir(nil), l.redirs...)
	for _, in := range l.inner {
		out = append(out, in.allRedirs()...)
	}
	return out
}

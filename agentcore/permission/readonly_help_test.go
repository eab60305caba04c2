package permission

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// These tests hold the read-only list against the programs themselves: the options each
// program's --help (git SUB -h) lists are read, every one that is not on our list must ask in
// every spelling, every option on both must take a value exactly when the program says so, and
// every abbreviation of every dangerous long option must ask. A missing program skips locally
// and fails in CI (CI=true), where .ci/run installs them.

// helpArg is what a program's help says an option does with a value.
type helpArg uint8

const (
	helpNone     helpArg = 1 << iota // shown without a value
	helpRequired                     // shown with a placeholder: --lines=NUM, -A <NUM>
	helpOptional                     // shown with [=...]
	helpLiteral                      // shown with a fixed value: --check=quiet, --indicator-style=slash
)

// kind merges what every line says about one option.
func (h helpArg) kind() argKind {
	switch {
	case h&helpOptional != 0, h&helpNone != 0 && h&(helpRequired|helpLiteral) != 0:
		return argOptional
	case h&(helpRequired|helpLiteral) != 0:
		return argValue
	}
	return argNone
}

// roProbe says how to ask a program for its help and how to build commands around an option.
type roProbe struct {
	help     []string // the help command; a git subcommand runs outside any repository
	extra    []string // further help commands whose options also apply (git diff -h for log)
	base     string   // the command with {} where options go
	operand  string   // a word the program accepts where an option's separate value may land
	safe     string   // an option on our list, to bundle and to prove listed options pass
	danger   []string // options that run programs, write, follow symlinks out or read listed files
	git      bool     // help in git's parse-options style: a short shares its long's value
	noAbbrev bool     // the program never abbreviates (long names are checked against git itself)
	find     bool
}

var roProbes = map[string]roProbe{
	"ls":        {base: "ls {} src", safe: "-l", danger: []string{"--dereference", "-L"}},
	"cat":       {base: "cat {} README.md", safe: "-n"},
	"tac":       {base: "tac {} README.md", safe: "-b"},
	"head":      {base: "head {} README.md", safe: "-q"},
	"tail":      {base: "tail {} README.md", safe: "-q", danger: []string{"--follow", "--retry", "-f", "-F"}},
	"wc":        {base: "wc {} README.md", safe: "-l", danger: []string{"--files0-from"}},
	"nl":        {base: "nl {} README.md", safe: "-p"},
	"cut":       {base: "cut -f1 {} README.md", safe: "-s"},
	"sort":      {base: "sort {} README.md", safe: "-n", danger: []string{"--compress-program", "--output", "--temporary-directory", "--files0-from", "--random-source", "-o", "-T"}},
	"uniq":      {base: "uniq {} README.md", safe: "-c"},
	"diff":      {base: "diff {} README.md src/main.go", safe: "-q", danger: []string{"--paginate", "--recursive", "-l", "-r"}},
	"cmp":       {base: "cmp {} README.md src/main.go", safe: "-s"},
	"stat":      {base: "stat {} README.md", safe: "-t"},
	"du":        {base: "du {} src", safe: "-s", danger: []string{"--dereference", "--files0-from", "-L"}},
	"df":        {base: "df {} .", safe: "-h"},
	"realpath":  {base: "realpath {} README.md", safe: "-e"},
	"readlink":  {base: "readlink {} README.md", safe: "-f"},
	"md5sum":    {base: "md5sum {} README.md", safe: "-b", danger: []string{"--check", "-c"}},
	"sha1sum":   {base: "sha1sum {} README.md", safe: "-b", danger: []string{"--check", "-c"}},
	"sha256sum": {base: "sha256sum {} README.md", safe: "-b", danger: []string{"--check", "-c"}},
	"sha512sum": {base: "sha512sum {} README.md", safe: "-b", danger: []string{"--check", "-c"}},
	"date":      {base: "date {} +%s", operand: "+%s", safe: "-u", danger: []string{"--set", "-s"}},
	"whoami":    {base: "whoami {}", operand: "x"},
	"uname":     {base: "uname {}", operand: "x", safe: "-s"},
	"id":        {base: "id {}", operand: "x", safe: "-u"},
	"basename":  {base: "basename {} x", operand: "x", safe: "-a"},
	"dirname":   {base: "dirname {} x", operand: "x", safe: "-z"},
	"tr":        {base: "tr {} a b", operand: "x", safe: "-s"},
	"grep":      {base: "grep {} x README.md", safe: "-n", danger: []string{"--dereference-recursive", "-R"}},
	"egrep":     {help: []string{"grep", "--help"}, base: "egrep {} x README.md", safe: "-n", danger: []string{"--dereference-recursive", "-R"}},
	"fgrep":     {help: []string{"grep", "--help"}, base: "fgrep {} x README.md", safe: "-n", danger: []string{"--dereference-recursive", "-R"}},
	"rg": {help: []string{"rg", "-h"}, base: "rg {} x README.md", safe: "-n", noAbbrev: true,
		danger: []string{"--pre", "--pre-glob", "--search-zip", "--follow", "--hostname-bin", "-z", "-L"}},
	"find":         {base: "find . {}", find: true, danger: []string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-follow", "-files0-from", "-L"}},
	"git status":   {help: []string{"git", "status", "-h"}, base: "git status {} README.md", safe: "-s", git: true},
	"git diff":     {help: []string{"git", "diff", "-h"}, base: "git diff {} README.md", safe: "-p", git: true, noAbbrev: true, danger: []string{"--output", "--ext-diff", "--textconv", "--no-index"}},
	"git log":      {help: []string{"git", "log", "-h"}, extra: []string{"git", "diff", "-h"}, base: "git log {} README.md", safe: "-p", git: true, noAbbrev: true, danger: []string{"--output", "--ext-diff", "--textconv", "--show-signature"}},
	"git show":     {help: []string{"git", "show", "-h"}, extra: []string{"git", "diff", "-h"}, base: "git show {} README.md", safe: "-p", git: true, noAbbrev: true, danger: []string{"--output", "--ext-diff", "--textconv", "--show-signature"}},
	"git ls-files": {help: []string{"git", "ls-files", "-h"}, base: "git ls-files {} README.md", safe: "-z", git: true},
	"git blame":    {help: []string{"git", "blame", "-h"}, base: "git blame {} README.md", safe: "-s", git: true},
	"git shortlog": {help: []string{"git", "shortlog", "-h"}, base: "git shortlog {} README.md", safe: "-s", git: true},
	"git branch": {help: []string{"git", "branch", "-h"}, base: "git branch {}", operand: "--all", safe: "-a", git: true,
		danger: []string{"--delete", "--move", "--copy", "--force", "--edit-description", "--set-upstream-to", "--unset-upstream", "--track", "--create-reflog", "-d", "-D", "-m", "-M", "-c", "-C", "-f", "-u", "-t"}},
}

// roBuiltins are the shell builtins on the list with the options bash gives them, by hand.
var roBuiltins = map[string]struct{ base, operand string }{
	"echo": {"echo {} x", "x"}, "printf": {"printf {} x", "x"}, "pwd": {"pwd {}", ""}, "test": {"test {} x", "x"}, "[": {"[ {} x ]", "x"},
}

var roBuiltinOptions = map[string][]string{
	"echo": {"-n", "-e", "-E"}, "printf": {"-v"}, "pwd": {"-L", "-P"},
	"test": {"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x", "-G", "-L", "-N", "-O", "-S", "-z", "-n", "-o", "-v", "-R"},
	"[":    {"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x", "-G", "-L", "-N", "-O", "-S", "-z", "-n", "-o", "-v", "-R"},
}

// roDangerBuiltin are builtin options that must ask.
var roDangerBuiltin = map[string][]string{"printf": {"-v"}, "test": {"-R"}, "[": {"-R"}}

// runHelp runs a help command in a directory outside any git repository and returns its
// output, or skips (fails in CI) when the program is missing.
func runHelp(t testing.TB, argv []string) string {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed; .ci/run must install it", argv[0])
		}
		t.Skipf("%s is not installed", argv[0])
	}
	dir := t.TempDir()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANGUAGE=C", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "GIT_DIR=/nonexistent")
	out, _ := cmd.CombinedOutput() // git SUB -h exits 129
	if len(out) == 0 {
		t.Fatalf("%v printed no help", argv)
	}
	return string(out)
}

var helpSplit = regexp.MustCompile(`  +[^ -]`)

// parseHelp reads the options of a help text in GNU, ripgrep or git style: lines that start
// with blanks and then "-". git says whether a short option shares its long one's value.
func parseHelp(text string, git bool) map[string]helpArg {
	opts := map[string]helpArg{}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == line || !strings.HasPrefix(trimmed, "-") {
			continue
		}
		spec := trimmed
		if loc := helpSplit.FindStringIndex(trimmed); loc != nil {
			spec = trimmed[:loc[0]]
		}
		toks := strings.Fields(strings.ReplaceAll(spec, ",", " "))
		var shorts []string
		longArg := helpArg(0)
		for i := 0; i < len(toks); i++ {
			tok := toks[i]
			placeholder := func() bool {
				if i+1 >= len(toks) {
					return false
				}
				n := toks[i+1]
				return !strings.HasPrefix(n, "-") && (n[0] == '<' || n[0] == '[' || n[0] == '{' || n[0] >= 'A' && n[0] <= 'Z')
			}
			switch {
			case strings.HasPrefix(tok, "--"):
				name := tok[2:]
				names := []string{}
				if rest, ok := strings.CutPrefix(name, "[no-]"); ok {
					name = rest
					names = append(names, "no-")
				}
				cut := strings.IndexAny(name, "=[<")
				arg := helpNone
				if cut >= 0 {
					switch rest := name[cut:]; {
					case strings.HasPrefix(rest, "[="):
						arg = helpOptional
					case strings.HasPrefix(rest, "=") && len(rest) > 1 && rest[1] >= 'a' && rest[1] <= 'z' && !strings.Contains(rest, "<"):
						arg = helpLiteral
					default:
						arg = helpRequired
					}
					name = name[:cut]
				} else if placeholder() {
					arg = helpRequired
					i++
				}
				if name == "" || !regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`).MatchString(name) {
					continue
				}
				for _, n := range append(names, "") {
					opts["--"+n+name] |= arg
				}
				if arg != helpLiteral {
					longArg |= arg
				}
			case len(tok) >= 2 && tok[0] == '-':
				name, rest := tok[:2], tok[2:]
				switch {
				case strings.HasPrefix(rest, "["):
					opts[name] |= helpOptional
				case rest != "":
					continue // -NUM and the like
				case placeholder():
					opts[name] |= helpRequired
					i++
				default:
					shorts = append(shorts, name)
				}
			default:
				i = len(toks) // description text: the option list of this line is over
			}
		}
		for _, s := range shorts {
			switch {
			case longArg&helpRequired != 0, git && longArg&helpOptional != 0:
				opts[s] |= longArg & (helpRequired | helpOptional)
			default:
				opts[s] |= helpNone
			}
		}
	}
	return opts
}

// parseFindHelp reads find's help: whole-word options, each followed by its placeholders.
func parseFindHelp(text string) map[string]int {
	opts := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, " ") || strings.Contains(line, "EXPR") {
			for _, w := range strings.Fields(line) {
				if w == "-not" || w == "-a" || w == "-and" || w == "-o" || w == "-or" {
					opts[w] = 0
				}
			}
			continue
		}
		toks := strings.Fields(line)
		for i := 0; i < len(toks); i++ {
			if !strings.HasPrefix(toks[i], "-") || len(toks[i]) < 2 {
				continue
			}
			name, n := toks[i], 0
			for i+1 < len(toks) && !strings.HasPrefix(toks[i+1], "-") {
				i++
				n++
			}
			if _, seen := opts[name]; !seen || n > opts[name] {
				opts[name] = n
			}
		}
	}
	return opts
}

func (pr roProbe) cmd(opt string) string {
	return strings.Replace(pr.base, "{}", opt, 1)
}

func (pr roProbe) operandWord() string {
	if pr.operand != "" {
		return pr.operand
	}
	return "README.md"
}

// spellings are the ways a command line can give an option the program does not have on our
// list: bare, with an attached value, with a separate value, bundled after a listed flag.
func (pr roProbe) spellings(opt string) []string {
	v := pr.operandWord()
	out := []string{opt}
	if strings.HasPrefix(opt, "--") || pr.find {
		out = append(out, opt+"="+v, opt+" "+v, opt+" sh")
		return out
	}
	out = append(out, opt+v, opt+" "+v)
	if pr.safe != "" && len(pr.safe) == 2 {
		out = append(out, pr.safe+opt[1:], pr.safe+opt[1:]+" "+v)
	}
	return out
}

func mustDecide(t *testing.T, p *Policy, cmd string, want Decision) {
	t.Helper()
	if got := p.Check(bash(cmd)); got.Decision != want {
		t.Errorf("%s: %s (%s); want %s", cmd, got.Decision, got.Reason, want)
	}
}

// TestReadOnlyAgainstHelp is the check against each program's own help.
func TestReadOnlyAgainstHelp(t *testing.T) {
	f := newFixture(t)
	p := f.policy(ModeStandard)
	var names []string
	for name := range roTable {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := roBuiltins[name]; ok {
			continue
		}
		pr, ok := roProbes[name]
		if !ok {
			t.Errorf("read-only entry %q has no roProbe: add how to read its help, or take it off the list", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			prog := roPrograms[name]
			help := pr.help
			if help == nil {
				help = []string{name, "--help"}
			}
			text := runHelp(t, help)
			if pr.extra != nil {
				text += "\n" + runHelp(t, pr.extra)
			}
			mustDecide(t, p, pr.cmd(""), Allow)
			if pr.safe != "" {
				mustDecide(t, p, pr.cmd(pr.safe), Allow)
			}
			if pr.find {
				checkFindHelp(t, p, pr, prog, parseFindHelp(text))
				return
			}
			opts := parseHelp(text, pr.git)
			if len(opts) < 2 {
				t.Fatalf("read only %d options from %v; the help format changed", len(opts), help)
			}
			helpLongs := map[string]bool{}
			for opt, h := range opts {
				long := strings.HasPrefix(opt, "--")
				var ours argKind
				var listed bool
				if long {
					helpLongs[opt[2:]] = true
					ours, listed = prog.long[opt[2:]]
				} else {
					ours, listed = prog.short[opt[1]]
				}
				if !listed {
					for _, s := range pr.spellings(opt) {
						mustDecide(t, p, pr.cmd(s), Ask)
					}
					continue
				}
				want := h.kind()
				if ours == argPath {
					ours = argValue
				}
				// Exactly: a short option whose value is optional takes the rest of its bundle,
				// so reading it as a flag would let a later letter swallow the next word
				// (date -Id --set=x sets the clock).
				if ours != want {
					t.Errorf("%s: our list says %s takes %v, its help says %v", name, opt, ours, want)
				}
			}
			if !pr.noAbbrev {
				for long := range prog.long {
					base, isNo := strings.CutPrefix(long, "no-")
					if !helpLongs[long] && !(pr.git && (isNo && helpLongs[base] || helpLongs["no-"+long])) && !(name == "git shortlog" && roPrograms["git log"].long[long] == roPrograms["git shortlog"].long[long]) {
						t.Errorf("%s: --%s is on our list but not in its help; the program may read it as an abbreviation of another option", name, long)
					}
				}
			}
			for _, d := range pr.danger {
				if _, listed := prog.long[strings.TrimPrefix(d, "--")]; listed && strings.HasPrefix(d, "--") {
					t.Errorf("%s: the dangerous option %s is on our list", name, d)
				}
				for _, s := range pr.spellings(d) {
					mustDecide(t, p, pr.cmd(s), Ask)
				}
				if !strings.HasPrefix(d, "--") {
					continue
				}
				for n := 3; n < len(d); n++ {
					abbr := d[:n]
					if _, exact := opts[abbr]; exact {
						continue // the program takes an exact name over an abbreviation
					}
					for _, s := range []string{abbr, abbr + "=sh", abbr + " sh", abbr + "=" + pr.operandWord()} {
						mustDecide(t, p, pr.cmd(s), Ask)
					}
				}
			}
		})
	}
}

func checkFindHelp(t *testing.T, p *Policy, pr roProbe, prog *roProgram, opts map[string]int) {
	if len(opts) < 20 {
		t.Fatalf("read only %d options from find --help; the help format changed", len(opts))
	}
	for opt, n := range opts {
		ours, listed := prog.long[strings.TrimPrefix(opt, "-")]
		if !listed || strings.HasPrefix(opt, "--") {
			for _, s := range pr.spellings(opt) {
				mustDecide(t, p, pr.cmd(s), Ask)
			}
			continue
		}
		if (ours == argNone) != (n == 0) || n > 1 {
			t.Errorf("find: our list says %s takes %v, its help shows %d values", opt, ours, n)
		}
	}
	for name := range prog.long {
		if _, ok := opts["-"+name]; !ok && name != "help" && name != "version" {
			t.Errorf("find: -%s is on our list but not in its help", name)
		}
	}
	for _, d := range pr.danger {
		for _, s := range pr.spellings(d) {
			mustDecide(t, p, pr.cmd(s), Ask)
		}
	}
}

// TestReadOnlyBuiltins: the shell builtins on the list, against hand-written option lists.
func TestReadOnlyBuiltins(t *testing.T) {
	f := newFixture(t)
	p := f.policy(ModeStandard)
	for name, b := range roBuiltins {
		pr := roProbe{base: b.base, operand: b.operand}
		prog := roPrograms[name]
		mustDecide(t, p, pr.cmd(""), Allow)
		for _, opt := range roBuiltinOptions[name] {
			_, listed := prog.short[opt[1]]
			isOp := prog.operands == operandTest && contains(testOperators, opt)
			if !listed && !isOp && !prog.anyWords {
				for _, s := range pr.spellings(opt) {
					mustDecide(t, p, pr.cmd(s), Ask)
				}
			}
		}
		for _, d := range roDangerBuiltin[name] {
			mustDecide(t, p, pr.cmd(d), Ask)
		}
	}
}

// TestReadOnlyGitOptions runs git to check the options on our list that git's -h does not show
// (revision and diff options of log, show and diff): git must know each by its exact name, and
// take a separate value exactly when our list says so. A value-taking option would swallow the
// next word; here the next word is --output=FILE, so FILE appears exactly when git did not.
func TestReadOnlyGitOptions(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo, "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, step := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "a"}} {
		if out, err := git(step...); err != nil {
			t.Fatalf("git %v: %v %s", step, err, out)
		}
	}
	for _, sub := range []string{"log", "show", "diff"} {
		prog := roPrograms["git "+sub]
		check := func(opt string, kind argKind) {
			if opt == "-h" {
				return // prints help and exits before reading further
			}
			out := filepath.Join(repo, "out")
			os.Remove(out)
			msg, _ := git(sub, opt, "--output="+out, "HEAD")
			if kind == argOptional && strings.Contains(msg, "unrecognized argument: "+opt) {
				msg, _ = git(sub, opt+"=x", "--output="+out, "HEAD") // some take only --opt=value
			}
			if strings.Contains(msg, "unrecognized argument: "+opt) || strings.Contains(msg, "invalid option: "+opt) || strings.Contains(msg, "unknown option") && strings.Contains(msg, opt) {
				t.Errorf("git %s does not know %s: %s", sub, opt, msg)
				return
			}
			_, err := os.Stat(out)
			took := err != nil
			if wantTake := kind == argValue || kind == argPath; took != wantTake {
				t.Errorf("git %s %s: our list says it takes a separate value: %v; git: %v (%s)", sub, opt, wantTake, took, strings.TrimSpace(msg))
			}
		}
		for name, kind := range prog.long {
			check("--"+name, kind)
		}
		for c, kind := range prog.short {
			check("-"+string(c), kind)
		}
	}
}

package permission

import (
	"strings"
)

// roSpec describes a command on the fixed read-only list.
type roSpec struct {
	// paths: every argument (and flag value) is checked as a path that must stay readable.
	paths bool
	// skip: how many words (the name, a git subcommand) come before the arguments.
	skip int
	// reject returns why these arguments make the command more than a read, "" if they don't.
	reject func(args []wordInfo) string
}

// readOnlySpec returns the spec of a read-only command, looked up by its words.
func readOnlySpec(args []wordInfo) (roSpec, bool) {
	if len(args) == 0 || !args[0].plain || args[0].glob {
		return roSpec{}, false
	}
	switch args[0].lit {
	case "ls", "cat", "head", "tail", "wc", "nl", "cut", "diff", "cmp", "stat", "du", "df",
		"realpath", "readlink", "md5sum", "sha1sum", "sha256sum", "sha512sum", "test", "[", "jq":
		return roSpec{paths: true, skip: 1}, true
	case "pwd", "echo", "printf", "whoami", "uname", "which", "tr", "basename", "dirname", "id":
		return roSpec{skip: 1}, true
	case "grep", "egrep", "fgrep":
		return roSpec{paths: true, skip: 1, reject: rejectFlags("R", "--dereference-recursive")}, true
	case "rg":
		return roSpec{paths: true, skip: 1, reject: rejectFlags("Lz", "--pre", "--pre-glob", "--follow", "--search-zip")}, true
	case "sort":
		return roSpec{paths: true, skip: 1, reject: rejectFlags("o", "--output", "--compress-program")}, true
	case "date":
		return roSpec{paths: true, skip: 1, reject: rejectFlags("s", "--set")}, true
	case "find":
		return roSpec{paths: true, skip: 1, reject: rejectFind}, true
	case "git":
		if len(args) < 2 || !args[1].plain {
			return roSpec{}, false
		}
		switch args[1].lit {
		case "status", "diff", "log", "show", "ls-files", "blame", "shortlog", "rev-parse":
			return roSpec{paths: true, skip: 2, reject: rejectFlags("", "--output", "--ext-diff")}, true
		case "branch":
			return roSpec{paths: true, skip: 2, reject: rejectGitBranch}, true
		}
	}
	return roSpec{}, false
}

// rejectFlags rejects any of the short flags (letters, also inside clusters like -Rn) and long
// flags (also in the --flag=value form).
func rejectFlags(short string, long ...string) func([]wordInfo) string {
	return func(args []wordInfo) string {
		for _, a := range args {
			v := a.lit
			if v == "--" {
				return ""
			}
			for _, l := range long {
				if v == l || strings.HasPrefix(v, l+"=") {
					return "it has the flag " + l
				}
			}
			if short != "" && len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v[1:], short) {
				return "it has the flag " + v
			}
		}
		return ""
	}
}

func rejectFind(args []wordInfo) string {
	for _, a := range args {
		switch a.lit {
		case "-exec", "-execdir", "-ok", "-okdir":
			return "find " + a.lit + " runs commands"
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			return "find " + a.lit + " writes or deletes files"
		case "-L", "-follow":
			return "find " + a.lit + " follows symlinks out of the workspace"
		}
	}
	return ""
}

// rejectGitBranch allows listing branches only: flags from a known list, positional words
// only with --list (then they are patterns).
func rejectGitBranch(args []wordInfo) string {
	list := false
	for _, a := range args {
		if a.lit == "--list" || a.lit == "-l" {
			list = true
		}
	}
	for _, a := range args {
		v := a.lit
		name, _, _ := strings.Cut(v, "=")
		switch name {
		case "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current",
			"--sort", "--format", "--color", "--no-color", "--column", "--no-column", "-q", "--quiet",
			"--abbrev", "--no-abbrev", "-i", "--ignore-case", "--omit-empty":
			continue
		}
		if !strings.HasPrefix(v, "-") && list {
			continue
		}
		return "git branch " + v + " may create, rename or delete branches"
	}
	return ""
}

// pathArgs extracts the words of a read-only command that may name files: positional words and
// the values of flags (--file=x, -f/x). why is non-empty when a word cannot be known ahead.
func pathArgs(args []wordInfo) (cands []wordInfo, why string) {
	flags := true
	for _, a := range args {
		if !a.plain {
			return nil, "an argument has expansions that cannot be checked ahead"
		}
		v := a.lit
		switch {
		case flags && v == "--":
			flags = false
		case v == "-" || v == "":
		case flags && strings.HasPrefix(v, "-"):
			if i := strings.IndexByte(v, '='); i >= 0 {
				cands = append(cands, wordInfo{lit: v[i+1:], plain: true, glob: a.glob})
			} else if j := strings.IndexAny(v[1:], "/~."); j >= 0 && strings.ContainsAny(v, "/~") {
				cands = append(cands, wordInfo{lit: v[1+j:], plain: true, glob: a.glob})
			}
		default:
			cands = append(cands, a)
		}
	}
	return cands, ""
}

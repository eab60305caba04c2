package permission

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule is one entry of an allow, deny or ask list, written Tool or Tool(pattern):
// "Read" (every call of Read), "Bash(go test:*)" (shell commands whose words begin with go
// test), "Bash(ls)" (exactly ls), "Edit(src/**)" (a doublestar glob over workspace-relative
// paths, or absolute paths when the pattern is absolute), "WebFetch(*)".
//
// File rules cover a family: a Read rule also covers Grep, Glob and Attach; an Edit or Write
// rule covers both Edit and Write. Read rules with a pattern also apply to the path arguments
// of read-only shell commands (cat .env), and Edit or Write rules with a pattern to the
// targets of shell redirections, so a deny rule cannot be sidestepped through Bash.
type Rule struct {
	// Tool is the tool name, e.g. "Bash".
	Tool string
	// Pattern is what the rule matches within the tool's calls; "" matches every call.
	Pattern string
}

// ParseRule parses a rule as written in configuration or stored after an "Always" approval.
// Its errors say what is wrong and show the expected form.
func ParseRule(s string) (Rule, error) {
	orig := s
	s = strings.TrimSpace(s)
	fail := func(what string) (Rule, error) {
		return Rule{}, fmt.Errorf("permission rule %q: %s; write Tool or Tool(pattern), e.g. Bash(go test:*), Edit(src/**) or Read", orig, what)
	}
	if s == "" {
		return fail("empty rule")
	}
	tool, pattern, hasParen := strings.Cut(s, "(")
	tool = strings.TrimSpace(tool)
	if tool == "" {
		return fail("missing tool name")
	}
	for _, r := range tool {
		if !isToolNameRune(r) {
			if r == ')' {
				return fail(`")" without "("`)
			}
			return fail(fmt.Sprintf("tool name %q has the character %q; tool names are letters, digits, _, - and .", tool, r))
		}
	}
	if !hasParen {
		return Rule{Tool: tool}, nil
	}
	if !strings.HasSuffix(pattern, ")") {
		return fail(`missing closing ")"`)
	}
	pattern = strings.TrimSpace(pattern[:len(pattern)-1])
	if pattern == "" {
		return fail(`empty pattern "()"; leave the parentheses out to match every call`)
	}
	if strings.ContainsRune(pattern, 0) {
		return fail("pattern contains a NUL byte")
	}
	r := Rule{Tool: tool, Pattern: pattern}
	switch {
	case strings.EqualFold(tool, toolBash):
		if _, err := parseBashPattern(pattern); err != nil {
			return fail(err.Error())
		}
	case fileFamily(tool) != "":
		if !doublestar.ValidatePattern(pattern) {
			return fail(fmt.Sprintf("pattern %q is not a valid glob (see doublestar: *, **, ?, [class], {a,b}, \\ escapes)", pattern))
		}
	default:
		if !doublestar.ValidatePattern(pattern) {
			return fail(fmt.Sprintf("pattern %q is not a valid glob", pattern))
		}
	}
	return r, nil
}

func isToolNameRune(r rune) bool {
	return r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// String returns the rule in the form ParseRule reads.
func (r Rule) String() string {
	if r.Pattern == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Pattern + ")"
}

// bashPattern is the parsed pattern of a Bash rule.
type bashPattern struct {
	any    bool     // "*": every command line
	words  []string // the literal words the command must begin with
	prefix bool     // ":*" or " *": more words may follow
}

func parseBashPattern(p string) (bashPattern, error) {
	p = strings.TrimSpace(p)
	if p == "*" || p == ":*" {
		return bashPattern{any: true}, nil
	}
	var bp bashPattern
	switch {
	case strings.HasSuffix(p, ":*"):
		bp.prefix = true
		p = strings.TrimSuffix(p, ":*")
	case strings.HasSuffix(p, " *"):
		bp.prefix = true
		p = strings.TrimSuffix(p, " *")
	}
	bp.words = strings.Fields(p)
	if len(bp.words) == 0 {
		return bp, errors.New("no command words before :*")
	}
	for _, w := range bp.words {
		if strings.ContainsAny(w, "*?") {
			return bp, fmt.Errorf("wildcard in %q: Bash rules are word prefixes like Bash(go test:*) (a trailing :* allows any further words) or exact commands like Bash(ls)", w)
		}
	}
	return bp, nil
}

// The tools whose arguments the checker understands.
const (
	toolBash      = "Bash"
	toolRead      = "Read"
	toolWrite     = "Write"
	toolEdit      = "Edit"
	toolGrep      = "Grep"
	toolGlob      = "Glob"
	toolAttach    = "Attach"
	toolTodoWrite = "TodoWrite"
	toolRecall    = "Recall"
	toolAgent     = "Agent"
)

// fileFamily returns "read" or "write" for tools whose rules are path globs, "" otherwise.
func fileFamily(tool string) string {
	switch {
	case strings.EqualFold(tool, toolRead), strings.EqualFold(tool, toolGrep),
		strings.EqualFold(tool, toolGlob), strings.EqualFold(tool, toolAttach):
		return "read"
	case strings.EqualFold(tool, toolEdit), strings.EqualFold(tool, toolWrite):
		return "write"
	}
	return ""
}

// ruleCovers reports whether a rule written for ruleTool applies to a call of callTool.
func ruleCovers(ruleTool, callTool string) bool {
	if strings.EqualFold(ruleTool, callTool) {
		return true
	}
	switch {
	case strings.EqualFold(ruleTool, toolRead):
		return fileFamily(callTool) == "read"
	case strings.EqualFold(ruleTool, toolEdit), strings.EqualFold(ruleTool, toolWrite):
		return fileFamily(callTool) == "write"
	}
	return false
}

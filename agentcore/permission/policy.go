package permission

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Policy is one agent's permission configuration. Build it once per agent (or per turn) and do
// not mutate it while Check may run.
type Policy struct {
	// Mode is the agent's permission mode; "" means ModeStandard, an unknown value ModeStrict.
	Mode Mode
	// Allow, Deny and Ask are the agent's rules. Deny and Ask match when any part of a call
	// matches; Allow only when every part does.
	Allow, Deny, Ask []Rule
	// DisallowedTools are tool names denied outright. An entry with a pattern, like
	// "Bash(curl:*)", works as a deny rule.
	DisallowedTools []string
	// Workspace is the absolute path of the agent's workspace; relative paths resolve here.
	Workspace string
	// MemoryDir is the absolute path of this agent's memory directory (reads and writes are
	// auto-allowed there).
	MemoryDir string
	// MemoryRoot is the absolute directory holding every agent's memory directory; any path
	// under it but outside MemoryDir is another agent's memory and is denied in every mode.
	MemoryRoot string
	// ReadOnlyDirs are extra directories whose reads are auto-allowed (e.g. this agent's
	// overflow files).
	ReadOnlyDirs []string
}

// Call is one tool call as the model sent it.
type Call struct {
	// Tool is the tool name.
	Tool string
	// Args is the JSON object of arguments, exactly as the model sent it.
	Args json.RawMessage
}

// Result is the outcome of Check.
type Result struct {
	// Decision is allow, deny or ask.
	Decision Decision
	// Reason says which step decided and why, for people and for the model.
	Reason string
	// Rule is the rule that decided, if any.
	Rule string
	// Suggest is, for ask, the rule an "Always" approval would store ("Bash(git push:*)",
	// "Edit(src/main.go)"); "" when no rule would be sensible.
	Suggest string
}

// Check classifies one tool call. It is safe for concurrent use, reads the file system to
// resolve paths, and never panics: an internal failure yields ask.
func (p *Policy) Check(c Call) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Result{Decision: Ask, Reason: fmt.Sprintf("the permission check failed (%v); a person must decide", r)}
		}
	}()
	return p.check(c)
}

// checker holds what one Check needs: the policy, the resolved directories and a cache of
// path lookups. It lives for one call only.
type checker struct {
	p    *Policy
	mode Mode
	home string
	res  resolver

	parseBudget int // bytes of sh -c and eval scripts still to parse
	globBudget  int // glob arguments still to expand
	globs       map[string]globResult

	ws, mem, root dir
	ro            []dir
}

func (p *Policy) newChecker() *checker {
	ck := &checker{p: p, globBudget: maxGlobs}
	ck.res.ownProc = "/proc/" + strconv.Itoa(os.Getpid())
	switch p.Mode {
	case "":
		ck.mode = ModeStandard
	case ModeStandard, ModeAcceptEdits, ModeUnrestricted, ModeStrict:
		ck.mode = p.Mode
	default:
		ck.mode = ModeStrict
	}
	if h, err := os.UserHomeDir(); err == nil && len(h) > 1 && h[0] == '/' {
		ck.home = strings.TrimRight(h, "/")
	}
	ck.ws = ck.dir(p.Workspace)
	ck.mem = ck.dir(p.MemoryDir)
	ck.root = ck.dir(p.MemoryRoot)
	for _, d := range p.ReadOnlyDirs {
		if dd := ck.dir(d); dd.ok {
			ck.ro = append(ck.ro, dd)
		}
	}
	return ck
}

// subject is a call seen through the eyes of one kind of tool.
type subject interface {
	// memory returns a reason when the call touches another agent's memory.
	memory() (string, bool)
	// matches reports whether a deny or ask rule with a pattern matches any part of the call,
	// and describes the part.
	matches(r Rule) (string, bool)
	// unreadable returns a reason when the call cannot be understood well enough to allow it
	// in any mode (a shell line that does not parse).
	unreadable() (string, bool)
	// allowedBy reports whether the allow rules (with patterns) cover every part of the call.
	allowedBy(rules []Rule) (Rule, string, bool)
	// auto reports whether step 6 allows the call.
	auto() (string, bool)
	// approval explains why the call needs a person and suggests a rule for "Always".
	approval() (why, suggest string)
}

func (p *Policy) check(c Call) Result {
	ck := p.newChecker()
	var s subject
	switch {
	case strings.EqualFold(c.Tool, toolBash):
		s = ck.bashSubject(c)
	case fileFamily(c.Tool) != "":
		s = ck.fileSubject(c)
	default:
		s = ck.otherSubject(c)
	}
	return ck.decide(c, s)
}

// decide runs the evaluation order over a subject.
func (ck *checker) decide(c Call, s subject) Result {
	// 1. Another agent's memory.
	if why, ok := s.memory(); ok {
		return Result{Decision: Deny, Reason: why + "; no mode or rule allows that"}
	}
	isBash := strings.EqualFold(c.Tool, toolBash)
	applies := func(r Rule) bool {
		return ruleCovers(r.Tool, c.Tool) || isBash && r.Pattern != "" && fileFamily(r.Tool) != ""
	}
	// 2. Disallowed tools and deny rules.
	for _, name := range ck.p.DisallowedTools {
		name = strings.TrimSpace(name)
		if r, err := ParseRule(name); err == nil && r.Pattern != "" {
			if applies(r) {
				if what, ok := s.matches(r); ok {
					return Result{Decision: Deny, Rule: r.String(), Reason: fmt.Sprintf("disallowed_tools entry %s matches %s", r, what)}
				}
			}
			continue
		}
		if strings.EqualFold(name, c.Tool) {
			return Result{Decision: Deny, Rule: name, Reason: fmt.Sprintf("tool %s is in disallowed_tools for this agent; do the work another way or ask a person to change the configuration", c.Tool)}
		}
	}
	if r, what, ok := ck.firstMatch(ck.p.Deny, c, s, applies); ok {
		return Result{Decision: Deny, Rule: r.String(), Reason: fmt.Sprintf("deny rule %s matches %s", r, what)}
	}
	// 3. Ask rules.
	if r, what, ok := ck.firstMatch(ck.p.Ask, c, s, applies); ok {
		return Result{Decision: Ask, Rule: r.String(), Reason: fmt.Sprintf("ask rule %s matches %s: a person must approve it in every mode", r, what)}
	}
	if why, ok := s.unreadable(); ok {
		return Result{Decision: Ask, Reason: why}
	}
	// 4. Unrestricted.
	if ck.mode == ModeUnrestricted {
		return Result{Decision: Allow, Reason: "mode unrestricted allows every call that no deny or ask rule stops"}
	}
	if strings.EqualFold(c.Tool, toolTodoWrite) || strings.EqualFold(c.Tool, toolRecall) {
		return Result{Decision: Allow, Reason: c.Tool + " has no side effects outside the conversation"}
	}
	// 5. Allow rules: a rule without pattern allows the whole tool.
	var patterned []Rule
	for _, r := range ck.p.Allow {
		if !ruleCovers(r.Tool, c.Tool) {
			continue
		}
		if r.Pattern == "" {
			return Result{Decision: Allow, Rule: r.String(), Reason: fmt.Sprintf("allow rule %s allows every %s call", r, c.Tool)}
		}
		patterned = append(patterned, r)
	}
	if len(patterned) > 0 {
		if r, why, ok := s.allowedBy(patterned); ok {
			return Result{Decision: Allow, Rule: r.String(), Reason: why}
		}
	}
	// 6. Auto-allow.
	if ck.mode != ModeStrict {
		if why, ok := s.auto(); ok {
			return Result{Decision: Allow, Reason: why}
		}
	}
	// 7. Ask.
	why, suggest := s.approval()
	if ck.mode == ModeStrict {
		why = "strict mode auto-allows nothing: " + why
	}
	return Result{Decision: Ask, Reason: why, Suggest: suggest}
}

func (ck *checker) firstMatch(rules []Rule, c Call, s subject, applies func(Rule) bool) (Rule, string, bool) {
	for _, r := range rules {
		if !applies(r) {
			continue
		}
		if r.Pattern == "" {
			return r, "every " + c.Tool + " call", true
		}
		if what, ok := s.matches(r); ok {
			return r, what, true
		}
	}
	return Rule{}, "", false
}

// args is a tool call's arguments decoded for lookup. Keys are matched case-insensitively, as
// encoding/json does when a tool decodes into a struct, and every spelling is kept so that a
// call cannot hide a second value from the checker.
type args map[string]json.RawMessage

func decodeArgs(raw json.RawMessage) (args, bool) {
	if len(raw) == 0 {
		return args{}, true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return args{}, false
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, true
}

// strings returns every string value under a key equal to name up to case; bad is true when
// such a key holds something other than a string.
func (a args) strings(name string) (vals []string, bad bool) {
	for k, v := range a {
		if !strings.EqualFold(k, name) {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			if string(v) == "null" {
				continue
			}
			bad = true
			continue
		}
		vals = append(vals, s)
	}
	return vals, bad
}

// allStrings collects every string anywhere in a JSON value.
func allStrings(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return []string{string(raw)}
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

package agentcore

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore/permission"
)

// SubagentType is a kind of sub-agent the Agent tool can start (DESIGN §5):
// its tools, model, permission mode, whether it forks the parent's view by
// default, and its instructions. Types come from the built-ins and from
// Markdown files with front matter (LoadSubagentTypes).
type SubagentType struct {
	Name        string `json:"name"`
	Description string `json:"description"` // one line, shown in the Agent tool's description
	// Tools are the tool names the child gets (those of the parent's set
	// that exist); empty: every tool of the parent's set.
	Tools []string `json:"tools,omitempty"`
	Model string   `json:"model,omitempty"` // "": the parent's model
	// Mode is the child's permission mode; it is capped by the parent's
	// (never looser) and "" means the parent's.
	Mode   permission.Mode `json:"mode,omitempty"`
	Fork   bool            `json:"fork,omitempty"`   // by default, start from a copy of the parent's view
	Prompt string          `json:"prompt,omitempty"` // the body of the file: instructions for the child
	Source string          `json:"source,omitempty"` // the file it came from, or "built-in"
}

// Built-in sub-agent types.
const (
	SubagentGeneral = "general-purpose"
	SubagentExplore = "explore"
)

// BuiltinSubagents returns the built-in types, in the order the Agent tool
// lists them.
func BuiltinSubagents() []SubagentType {
	return []SubagentType{
		{
			Name:        SubagentGeneral,
			Description: "multi-step work: search, edit files, run commands",
			Tools:       []string{"Read", "Write", "Edit", "Bash", "Grep", "Glob", "TodoWrite"},
			Prompt:      "Do the job in the brief completely, then stop. Check your work (run the tests you touched).",
			Source:      "built-in",
		},
		{
			Name:        SubagentExplore,
			Description: "read-only: find and read code, answer questions about it",
			Tools:       []string{"Read", "Grep", "Glob"},
			Prompt:      "You only read: find what the brief asks for and report it with file paths and line numbers.",
			Source:      "built-in",
		},
	}
}

// MergeSubagents returns the built-ins followed by types, a later type
// replacing an earlier one of the same name (a workspace's file wins over
// $SWITCHBOARD_HOME's, which wins over a built-in).
func MergeSubagents(types ...SubagentType) []SubagentType {
	out := BuiltinSubagents()
	for _, t := range types {
		replaced := false
		for i := range out {
			if out[i].Name == t.Name {
				out[i], replaced = t, true
				break
			}
		}
		if !replaced {
			out = append(out, t)
		}
	}
	return out
}

// FindSubagent returns the type named name.
func FindSubagent(types []SubagentType, name string) (SubagentType, bool) {
	for _, t := range types {
		if t.Name == name {
			return t, true
		}
	}
	return SubagentType{}, false
}

// maxSubagentFile bounds a type file.
const maxSubagentFile = 64 << 10

// LoadSubagentTypes reads every *.md file of the given directories (missing
// directories are skipped), in directory order and then by file name. A
// file that cannot be parsed is reported in problems and skipped, so one
// bad file never hides the others.
func LoadSubagentTypes(dirs ...string) (types []SubagentType, problems []error) {
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("read sub-agent types in %s: %w", dir, err))
			continue
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			path := filepath.Join(dir, n)
			b, err := os.ReadFile(path)
			if err != nil {
				problems = append(problems, fmt.Errorf("read sub-agent type %s: %w", path, err))
				continue
			}
			if len(b) > maxSubagentFile {
				problems = append(problems, fmt.Errorf("sub-agent type %s: larger than %d bytes", path, maxSubagentFile))
				continue
			}
			t, err := ParseSubagentType(strings.TrimSuffix(n, ".md"), string(b))
			if err != nil {
				problems = append(problems, fmt.Errorf("sub-agent type %s: %w", path, err))
				continue
			}
			t.Source = path
			types = append(types, t)
		}
	}
	return types, problems
}

// ParseSubagentType parses a type file: front matter between "---" lines
// (name, description, tools, model, permission_mode, fork; "key: value",
// tools as "A, B" or "[A, B]", "# comments"), then the instructions. name defaults to
// fallback (the file's base name). Unknown keys are errors, so a typo is
// not silently ignored.
func ParseSubagentType(fallback, text string) (SubagentType, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	t := SubagentType{Name: fallback}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), maxSubagentFile+1)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return SubagentType{}, errors.New(`the file must start with front matter: a line "---", "key: value" lines (name, description, tools, model, permission_mode, fork), and "---"`)
	}
	closed := false
	line := 1
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "---" {
			closed = true
			break
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			return SubagentType{}, fmt.Errorf("line %d: %q is not \"key: value\"", line, clip(l, 60))
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !strings.HasPrefix(val, `"`) && !strings.HasPrefix(val, "'") {
			if i := strings.Index(val, " #"); i >= 0 {
				val = strings.TrimSpace(val[:i]) // a trailing comment
			}
		}
		val = unquote(val)
		switch key {
		case "name":
			t.Name = val
		case "description":
			t.Description = val
		case "tools":
			t.Tools = splitList(val)
		case "model":
			t.Model = val
		case "permission_mode", "permissionmode", "permission-mode", "mode":
			m, err := permission.ParseMode(val)
			if err != nil {
				return SubagentType{}, fmt.Errorf("line %d: %w", line, err)
			}
			t.Mode = m
		case "fork":
			b, err := strconv.ParseBool(strings.ToLower(val))
			if err != nil {
				return SubagentType{}, fmt.Errorf("line %d: fork %q: use true or false", line, clip(val, 20))
			}
			t.Fork = b
		default:
			return SubagentType{}, fmt.Errorf("line %d: unknown key %q (use name, description, tools, model, permission_mode, fork)", line, clip(key, 40))
		}
	}
	if err := sc.Err(); err != nil {
		return SubagentType{}, fmt.Errorf("read front matter: %w", err)
	}
	if !closed {
		return SubagentType{}, errors.New(`the front matter has no closing "---" line`)
	}
	var body strings.Builder
	for sc.Scan() {
		body.WriteString(sc.Text())
		body.WriteByte('\n')
	}
	t.Prompt = strings.TrimSpace(body.String())
	if !validTypeName(t.Name) {
		return SubagentType{}, fmt.Errorf("name %q: use 1-40 lowercase letters, digits and '-'", clip(t.Name, 50))
	}
	t.Description = strings.Join(strings.Fields(t.Description), " ")
	if t.Description == "" {
		return SubagentType{}, errors.New("description is required: one line saying what this sub-agent is for")
	}
	t.Description = clip(t.Description, 160)
	for _, n := range t.Tools {
		if !validToolName(n) {
			return SubagentType{}, fmt.Errorf("tools: %q is not a tool name", clip(n, 40))
		}
	}
	return t, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

func splitList(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if f = unquote(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func validTypeName(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func validToolName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// modeLooseness orders the permission modes from strictest to loosest.
func modeLooseness(m permission.Mode) int {
	switch m {
	case permission.ModeStrict:
		return 0
	case permission.ModeStandard, "":
		return 1
	case permission.ModeAcceptEdits:
		return 2
	case permission.ModeUnrestricted:
		return 3
	}
	return 0 // an unknown mode is strict (permission.Policy treats it so)
}

// CapMode returns the child's mode: want (the type's; "" for the parent's)
// but never looser than the parent's, so a type cannot grant itself more
// than the agent that starts it has.
func CapMode(parent, want permission.Mode) permission.Mode {
	if parent == "" {
		parent = permission.ModeStandard
	}
	if want == "" || modeLooseness(want) > modeLooseness(parent) {
		return parent
	}
	if _, err := permission.ParseMode(string(want)); err != nil {
		return permission.ModeStrict
	}
	return want
}

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// MaxOutputChars is the most text a tool result carries (DESIGN §5: about
// 30k characters). Longer Bash output is cut head and tail and written in
// full to an overflow file; Read and Grep stop early and say how to go on.
const MaxOutputChars = 30000

// Default returns the whole tool set in a stable order, so the tool
// schemas of every request are byte-identical; its Agent tool offers the
// built-in sub-agent types.
func Default() []agentcore.Tool { return WithSubagents(nil) }

// WithSubagents is Default with an Agent tool that offers types (the
// built-ins and the agent's type files, agentcore.MergeSubagents).
func WithSubagents(types []agentcore.SubagentType) []agentcore.Tool {
	return []agentcore.Tool{
		Read(), Write(), Edit(), Bash(), Grep(), Glob(), TodoWrite(), Recall(), Attach(), Agent(types),
	}
}

// tool is the one implementation of agentcore.Tool; each constructor fills
// in its spec, resource and run functions.
type tool struct {
	diff     func(workspace string, args json.RawMessage) (string, error)
	spec     agentcore.ToolSpec
	resource func(args json.RawMessage, env *agentcore.ToolEnv) agentcore.Resource
	run      func(ctx context.Context, args json.RawMessage, env *agentcore.ToolEnv) agentcore.Result
}

// newTool builds a tool from its name, embedded description and
// hand-written schema. The schema is compacted so specs are small and
// byte-stable; a schema that is not valid JSON is a programming error caught
// by the package's tests.
func newTool(name, description, schema string,
	resource func(json.RawMessage, *agentcore.ToolEnv) agentcore.Resource,
	run func(context.Context, json.RawMessage, *agentcore.ToolEnv) agentcore.Result,
) *tool {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(schema)); err != nil {
		buf.Reset()
		buf.WriteString(`{"type":"object"}`)
	}
	return &tool{
		spec: agentcore.ToolSpec{
			Name:        name,
			Description: strings.TrimSpace(description),
			Parameters:  json.RawMessage(buf.Bytes()),
		},
		resource: resource,
		run:      run,
	}
}

// Spec returns the tool's name, description and JSON schema.
func (t *tool) Spec() agentcore.ToolSpec { return t.spec }

// kindOf is what each tool does, in ACP's vocabulary (read, edit, delete,
// move, search, execute, think, fetch, other).
func kindOf(name string) string {
	switch name {
	case "Read", "Recall":
		return "read"
	case "Grep", "Glob":
		return "search"
	case "Write", "Edit":
		return "edit"
	case "Bash":
		return "execute"
	case "TodoWrite":
		return "think"
	}
	return "other"
}

// Describe implements agentcore.Describer: a one-line Markdown title for
// people ("Bash `go test ./...`") and the tool's kind.
func (t *tool) Describe(args json.RawMessage) (title, kind string) {
	name := t.spec.Name
	s := strings.Join(strings.Fields(agentcore.CallSubject(args)), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	if s == "" {
		return name, kindOf(name)
	}
	return name + " `" + strings.ReplaceAll(s, "`", "'") + "`", kindOf(name)
}

// diffTool is a tool that can show the change a call would make, for
// approval messages (agentcore.DiffPreviewer).
type diffTool struct{ *tool }

// PreviewDiff implements agentcore.DiffPreviewer.
func (t diffTool) PreviewDiff(args json.RawMessage, env *agentcore.ToolEnv) (string, error) {
	ws := ""
	if env != nil {
		ws = env.Workspace
	}
	return t.diff(ws, args)
}

// Resource says what a call with these arguments touches.
func (t *tool) Resource(args json.RawMessage, env *agentcore.ToolEnv) agentcore.Resource {
	if t.resource == nil {
		return agentcore.Resource{Kind: agentcore.ResourceRead}
	}
	return t.resource(args, env)
}

// Run executes one call. A panic inside a tool is turned into an error
// result: a bug in one tool must not take the gateway down with it.
func (t *tool) Run(ctx context.Context, args json.RawMessage, env *agentcore.ToolEnv) (res agentcore.Result) {
	if env == nil {
		env = &agentcore.ToolEnv{}
	}
	defer func() {
		if p := recover(); p != nil {
			res = agentcore.ErrorResult("Internal error in %s: %v. This is a bug in the tool; try another approach.\n%s",
				t.spec.Name, p, firstLines(string(debug.Stack()), 12))
		}
		if env.Redactor != nil {
			res.Content = env.Redactor.Redact(res.Content)
		}
	}()
	return t.run(ctx, args, env)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// decodeArgs parses a call's JSON arguments into v. Empty arguments count
// as {}; anything but a JSON object of the right shape is an error result
// telling the model what to send.
func decodeArgs(args json.RawMessage, v any) (agentcore.Result, bool) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return agentcore.ErrorResult("Invalid arguments: expected a JSON object, got %s. Send a JSON object matching the tool's schema.",
			clip(string(trimmed), 80)), false
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		return agentcore.ErrorResult("Invalid arguments: %v. Send a JSON object matching the tool's schema.", err), false
	}
	return agentcore.Result{}, true
}

// missing is the error result for a required argument that is absent.
func missing(name string) agentcore.Result {
	return agentcore.ErrorResult("Invalid arguments: %s is required. Send a JSON object matching the tool's schema.", name)
}

// flexInt is an integer argument that also accepts a numeric string
// ("200") and a whole float (200.0), which models send often enough.
type flexInt struct {
	Set   bool
	Value int
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*f = flexInt{}
		return nil
	}
	if uq, err := strconv.Unquote(s); err == nil {
		s = strings.TrimSpace(uq)
	}
	if n, err := strconv.Atoi(s); err == nil {
		*f = flexInt{Set: true, Value: n}
		return nil
	}
	fl, err := strconv.ParseFloat(s, 64)
	if err != nil || fl != float64(int64(fl)) || fl > 1<<53 || fl < -(1<<53) {
		return fmt.Errorf("%s is not an integer", clip(string(b), 40))
	}
	*f = flexInt{Set: true, Value: int(fl)}
	return nil
}

// flexBool is a boolean argument that also accepts "true" and "false".
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if uq, err := strconv.Unquote(s); err == nil {
		s = strings.TrimSpace(uq)
	}
	switch strings.ToLower(s) {
	case "true":
		*f = true
	case "false", "null", "":
		*f = false
	default:
		return fmt.Errorf("%s is not a boolean", clip(string(b), 40))
	}
	return nil
}

// resolvePath makes p absolute against the workspace and cleans it.
func resolvePath(workspace, p string) string {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, "~/") || p == "~" {
		// The model means the home directory; the shell would expand it,
		// a file API does not.
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(workspace, p)
	}
	return filepath.Clean(p)
}

// displayPath shows abs relative to the workspace when it lies inside it.
func displayPath(workspace, abs string) string {
	if workspace != "" {
		if rel, err := filepath.Rel(workspace, abs); err == nil && rel != ".." &&
			!strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return abs
}

// within reports whether path is dir or inside it (both cleaned, absolute).
func within(dir, path string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}

// isBinary reports whether b looks like binary data (a NUL byte in it).
func isBinary(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 }

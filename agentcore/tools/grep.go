package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed grep.md
var grepDescription string

const grepSchema = `{
 "type": "object",
 "properties": {
  "pattern": {"type": "string", "description": "Regular expression"},
  "path": {"type": "string", "description": "File or directory (default: the workspace)"},
  "glob": {"type": "string", "description": "Only files matching this glob"},
  "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]}
 },
 "required": ["pattern"]
}`

// Grep limits.
const (
	// GrepMaxFiles is the most files listed in files_with_matches and
	// count modes.
	GrepMaxFiles = 200
	// GrepMaxLines is the most lines shown in content mode.
	GrepMaxLines = 500
	// grepMaxLineChars is where a matching line is cut in content mode.
	grepMaxLineChars = 300
)

// Output modes.
const (
	modeFiles   = "files_with_matches"
	modeContent = "content"
	modeCount   = "count"
)

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	OutputMode string `json:"output_mode"`
}

// grepQuery is one validated search.
type grepQuery struct {
	pattern string
	root    string // absolute file or directory
	glob    string
	mode    string
}

// grepRecord is one result: a file (files mode), a file and its count of
// matching lines (count mode) or one matching line (content mode).
type grepRecord struct {
	path  string // absolute
	line  int
	text  string
	count int
}

// searcher runs a query, calling emit for each record in path order until
// emit returns false. It returns an error message for the model when the
// search itself failed (a bad pattern, say).
type searcher func(ctx context.Context, q grepQuery, env *agentcore.ToolEnv, emit func(grepRecord) bool) error

// Grep returns the Grep tool: ripgrep when it is installed, a Go search
// with the same results otherwise.
func Grep() agentcore.Tool {
	return newTool("Grep", grepDescription, grepSchema, nil,
		func(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
			search := searchGo
			if rg, err := exec.LookPath("rg"); err == nil {
				search = rgSearcher(rg)
			}
			return runGrep(ctx, raw, env, search)
		})
}

func runGrep(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv, search searcher) agentcore.Result {
	var a grepArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	if a.Pattern == "" {
		return missing("pattern")
	}
	q := grepQuery{pattern: a.Pattern, glob: a.Glob, mode: a.OutputMode, root: env.Workspace}
	switch q.mode {
	case "":
		q.mode = modeFiles
	case modeFiles, modeContent, modeCount:
	default:
		return agentcore.ErrorResult("Invalid arguments: output_mode must be one of files_with_matches, content, count; got %q.", a.OutputMode)
	}
	if a.Path != "" {
		q.root = resolvePath(env.Workspace, a.Path)
	}
	shownRoot := displayPath(env.Workspace, q.root)
	if _, err := os.Stat(q.root); err != nil {
		return agentcore.ErrorResult("Path not found: %s. Check it with Glob.", shownRoot)
	}

	limit, unit := GrepMaxFiles, "files"
	if q.mode == modeContent {
		limit, unit = GrepMaxLines, "lines"
	}
	var b strings.Builder
	n, total, truncated := 0, 0, ""
	err := search(ctx, q, env, func(r grepRecord) bool {
		if n == limit {
			truncated = fmt.Sprintf("(results cut at %d %s; narrow the pattern, path or glob)", limit, unit)
			return false
		}
		var entry string
		shown := displayPath(env.Workspace, r.path)
		switch q.mode {
		case modeFiles:
			entry = shown
		case modeCount:
			entry = fmt.Sprintf("%s:%d", shown, r.count)
			total += r.count
		case modeContent:
			entry = fmt.Sprintf("%s:%d:%s", shown, r.line, clip(strings.TrimSuffix(r.text, "\r"), grepMaxLineChars))
		}
		if b.Len()+len(entry) > MaxOutputChars {
			truncated = fmt.Sprintf("(output limit reached after %d results; narrow the pattern, path or glob)", n)
			return false
		}
		b.WriteString(entry)
		b.WriteByte('\n')
		n++
		return true
	})
	if err != nil {
		if ctx.Err() != nil {
			return agentcore.ErrorResult("Grep cancelled.")
		}
		return agentcore.ErrorResult("Grep failed: %v", err)
	}
	if n == 0 {
		return agentcore.Result{Content: fmt.Sprintf("No matches for %q in %s. Try a broader pattern, `(?i)` for case-insensitive, or another path.", a.Pattern, shownRoot)}
	}
	if q.mode == modeCount && truncated == "" {
		fmt.Fprintf(&b, "(%d matching lines in %d files)\n", total, n)
	}
	b.WriteString(truncated)
	return agentcore.Result{Content: strings.TrimSuffix(b.String(), "\n")}
}

package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed glob.md
var globDescription string

const globSchema = `{
 "type": "object",
 "properties": {
  "pattern": {"type": "string", "description": "Glob pattern"},
  "path": {"type": "string", "description": "Directory to search (default: the workspace)"}
 },
 "required": ["pattern"]
}`

// Glob limits.
const (
	// GlobMaxResults is the most paths Glob returns.
	GlobMaxResults = 200
	// walkMaxEntries bounds one walk so a pattern over a huge tree ends.
	walkMaxEntries = 200000
)

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// Glob returns the Glob tool: files matching a doublestar pattern, newest
// first.
func Glob() agentcore.Tool {
	return newTool("Glob", globDescription, globSchema, nil, runGlob)
}

// skipDir reports whether a walk skips a directory by default.
func skipDir(name string) bool { return name == ".git" || name == "node_modules" }

func runGlob(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a globArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	if a.Pattern == "" {
		return missing("pattern")
	}
	root := env.Workspace
	if a.Path != "" {
		root = resolvePath(env.Workspace, a.Path)
	}
	pattern := filepath.ToSlash(a.Pattern)
	if filepath.IsAbs(a.Pattern) {
		// An absolute pattern carries its own root.
		base, rest := doublestar.SplitPattern(pattern)
		root, pattern = filepath.FromSlash(base), rest
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if !doublestar.ValidatePattern(pattern) {
		return agentcore.ErrorResult("Invalid glob pattern %q. Use * for a name part, ** for any directories, {a,b} for alternatives.", a.Pattern)
	}
	shownRoot := displayPath(env.Workspace, root)
	if fi, err := os.Stat(root); err != nil {
		return agentcore.ErrorResult("Directory not found: %s. Check the path.", shownRoot)
	} else if !fi.IsDir() {
		return agentcore.ErrorResult("%s is a file, not a directory; pass its directory as path.", shownRoot)
	}

	type hit struct {
		path string
		mod  time.Time
	}
	var hits []hit
	// Walk only below the pattern's fixed prefix.
	base, _ := doublestar.SplitPattern(pattern)
	start := root
	if base != "." {
		start = filepath.Join(root, filepath.FromSlash(base))
	}
	mentions := func(name string) bool { return strings.Contains(pattern, name) }
	seen := 0
	walkErr := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return fs.SkipAll // nothing there: no matches
			}
			return nil // unreadable entries are skipped, as ls would
		}
		seen++
		if seen%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if seen > walkMaxEntries {
			return errWalkLimit
		}
		if d.IsDir() && p != start && skipDir(d.Name()) && !mentions(d.Name()) {
			return fs.SkipDir
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return nil
		}
		ok, _ := doublestar.Match(pattern, filepath.ToSlash(rel))
		if !ok || d.IsDir() {
			return nil
		}
		var mod time.Time
		if fi, err := d.Info(); err == nil {
			mod = fi.ModTime()
		}
		hits = append(hits, hit{p, mod})
		return nil
	})
	truncatedWalk := errors.Is(walkErr, errWalkLimit)
	if walkErr != nil && !truncatedWalk {
		if ctx.Err() != nil {
			return agentcore.ErrorResult("Glob cancelled.")
		}
		return agentcore.ErrorResult("Glob failed in %s: %v", shownRoot, walkErr)
	}
	if len(hits) == 0 {
		return agentcore.Result{Content: fmt.Sprintf("No files match %q in %s.", a.Pattern, shownRoot)}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if !hits[i].mod.Equal(hits[j].mod) {
			return hits[i].mod.After(hits[j].mod)
		}
		return hits[i].path < hits[j].path
	})
	var b strings.Builder
	for i, h := range hits {
		if i == GlobMaxResults {
			break
		}
		b.WriteString(displayPath(env.Workspace, h.path))
		b.WriteByte('\n')
	}
	if len(hits) > GlobMaxResults {
		fmt.Fprintf(&b, "(showing the %d newest of %d files; use a narrower pattern or path)", GlobMaxResults, len(hits))
	}
	if truncatedWalk {
		fmt.Fprintf(&b, "(stopped after %d entries; use a narrower pattern or path)", walkMaxEntries)
	}
	return agentcore.Result{Content: strings.TrimSuffix(b.String(), "\n")}
}

// errWalkLimit stops a walk that has visited walkMaxEntries entries.
var errWalkLimit = errors.New("walk limit reached")

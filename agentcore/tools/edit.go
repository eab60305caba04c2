package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed edit.md
var editDescription string

const editSchema = `{
 "type": "object",
 "properties": {
  "file_path": {"type": "string", "description": "Absolute, or relative to the workspace"},
  "old_string": {"type": "string", "description": "Exact text to replace"},
  "new_string": {"type": "string", "description": "Replacement text"},
  "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"}
 },
 "required": ["file_path", "old_string", "new_string"]
}`

type editArgs struct {
	FilePath   string   `json:"file_path"`
	OldString  *string  `json:"old_string"`
	NewString  *string  `json:"new_string"`
	ReplaceAll flexBool `json:"replace_all"`
}

// Edit returns the Edit tool: exact text replacement in an existing file.
func Edit() agentcore.Tool {
	t := newTool("Edit", editDescription, editSchema, pathResource, runEdit)
	t.diff = EditDiff
	return diffTool{t}
}

// editPlan is an edit worked out but not yet written.
type editPlan struct {
	path, shown string
	before      string
	after       string
	count       int
}

// planEdit reads the file and applies the replacement in memory. Failures
// are messages for the model.
func planEdit(workspace string, raw json.RawMessage) (editPlan, *agentcore.Result) {
	return planEditWith(workspace, raw, readForEdit)
}

// readForEdit reads the file an edit changes from disk.
func readForEdit(path, shown string) (string, *agentcore.Result) {
	fail := func(format string, args ...any) (string, *agentcore.Result) {
		r := agentcore.ErrorResult(format, args...)
		return "", &r
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fail("File not found: %s. Check the path with Glob, or use Write to create it.", shown)
		}
		return fail("%s", fileError(shown, err))
	}
	if fi.IsDir() {
		return fail("%s is a directory, not a file.", shown)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fail("%s", fileError(shown, err))
	}
	return string(data), nil
}

// planEditWith is planEdit with the file read by load.
func planEditWith(workspace string, raw json.RawMessage, load func(path, shown string) (string, *agentcore.Result)) (editPlan, *agentcore.Result) {
	var a editArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return editPlan{}, &res
	}
	fail := func(format string, args ...any) (editPlan, *agentcore.Result) {
		r := agentcore.ErrorResult(format, args...)
		return editPlan{}, &r
	}
	switch {
	case a.FilePath == "":
		r := missing("file_path")
		return editPlan{}, &r
	case a.OldString == nil:
		r := missing("old_string")
		return editPlan{}, &r
	case a.NewString == nil:
		r := missing("new_string")
		return editPlan{}, &r
	}
	oldS, newS := *a.OldString, *a.NewString
	p := editPlan{path: resolvePath(workspace, a.FilePath)}
	p.shown = displayPath(workspace, p.path)
	if oldS == "" {
		return fail("old_string is empty. To create a file or replace all of it, use Write.")
	}
	if oldS == newS {
		return fail("old_string and new_string are the same; nothing would change.")
	}
	before, res := load(p.path, p.shown)
	if res != nil {
		return editPlan{}, res
	}
	p.before = before
	n := strings.Count(p.before, oldS)
	if n == 0 && strings.Contains(p.before, "\r\n") && strings.Contains(oldS, "\n") {
		// The model writes "\n"; the file uses CRLF line ends.
		oldS = toCRLF(oldS)
		newS = toCRLF(newS)
		n = strings.Count(p.before, oldS)
	}
	switch {
	case n == 0:
		return fail("old_string was not found in %s. Read the file and copy the exact text, including whitespace and indentation, without the line-number prefix.", p.shown)
	case n > 1 && !bool(a.ReplaceAll):
		return fail("old_string occurs %d times in %s; it must occur exactly once. Include more surrounding lines to make it unique, or set replace_all to true to change all %d.", n, p.shown, n)
	}
	if bool(a.ReplaceAll) {
		p.after = strings.ReplaceAll(p.before, oldS, newS)
	} else {
		p.after = strings.Replace(p.before, oldS, newS, 1)
	}
	p.count = n
	return p, nil
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

func runEdit(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var target struct {
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(raw, &target)
	client := env.FileClient(resolvePath(env.Workspace, target.FilePath), true)
	load := readForEdit
	if client != nil {
		load = func(path, shown string) (string, *agentcore.Result) { return clientRead(ctx, client, path, shown) }
	}
	p, res := planEditWith(env.Workspace, raw, load)
	if res != nil {
		return *res
	}
	if client != nil {
		if res := clientWrite(ctx, client, p.path, p.shown, p.after); res != nil {
			return *res
		}
	} else if _, _, err := writeAtomic(p.path, []byte(p.after)); err != nil {
		return agentcore.ErrorResult("Cannot write %s: %v", p.shown, err)
	}
	what := "1 occurrence"
	if p.count > 1 {
		what = fmt.Sprintf("%d occurrences", p.count)
	}
	diff := unifiedDiff(p.shown, p.before, p.after)
	if len(diff) > diffMaxInline {
		diff = clip(diff, diffMaxInline) + "\n… (diff cut)"
	}
	return agentcore.Result{Content: fmt.Sprintf("Edited %s: replaced %s.\n%s", p.shown, what, diff)}
}

// EditDiff returns the unified diff an Edit call with these arguments
// would make, without writing: for approval messages. It fails when the
// edit itself would fail, with the message the model would get.
func EditDiff(workspace string, args json.RawMessage) (string, error) {
	p, res := planEdit(workspace, args)
	if res != nil {
		return "", errors.New(res.Content)
	}
	return unifiedDiff(p.shown, p.before, p.after), nil
}

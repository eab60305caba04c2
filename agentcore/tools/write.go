package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed write.md
var writeDescription string

const writeSchema = `{
 "type": "object",
 "properties": {
  "file_path": {"type": "string", "description": "Absolute, or relative to the workspace"},
  "content": {"type": "string"}
 },
 "required": ["file_path", "content"]
}`

type writeArgs struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

// Write returns the Write tool: create or replace a file atomically.
func Write() agentcore.Tool {
	t := newTool("Write", writeDescription, writeSchema, pathResource, runWrite)
	t.diff = WriteDiff
	return diffTool{t}
}

// pathResource is the resource of Write and Edit: a write to the cleaned
// absolute file_path. Arguments without a usable path touch nothing (the
// call will fail with an error result), so they are a plain read.
func pathResource(raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Resource {
	var a struct {
		FilePath string `json:"file_path"`
	}
	if _, ok := decodeArgs(raw, &a); !ok || a.FilePath == "" {
		return agentcore.Resource{Kind: agentcore.ResourceRead}
	}
	return agentcore.Resource{Kind: agentcore.ResourceWrite, Path: resolvePath(env.Workspace, a.FilePath)}
}

func runWrite(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a writeArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	if a.FilePath == "" {
		return missing("file_path")
	}
	if a.Content == nil {
		return missing("content")
	}
	path := resolvePath(env.Workspace, a.FilePath)
	shown := displayPath(env.Workspace, path)
	if c := env.FileClient(path, true); c != nil {
		return writeViaClient(ctx, c, path, shown, *a.Content)
	}
	existed, oldSize, err := writeAtomic(path, []byte(*a.Content))
	if err != nil {
		return agentcore.ErrorResult("Cannot write %s: %v", shown, err)
	}
	if existed {
		return agentcore.Result{Content: fmt.Sprintf("Overwrote %s (%d bytes, was %d).", shown, len(*a.Content), oldSize)}
	}
	return agentcore.Result{Content: fmt.Sprintf("Created %s (%d bytes).", shown, len(*a.Content))}
}

// WriteDiff returns the unified diff a Write call with these arguments
// would make, without writing: for approval messages. A new file diffs
// against empty content.
func WriteDiff(workspace string, args json.RawMessage) (string, error) {
	var a writeArgs
	if res, ok := decodeArgs(args, &a); !ok {
		return "", errors.New(res.Content)
	}
	if a.FilePath == "" || a.Content == nil {
		return "", errors.New("file_path and content are required")
	}
	path := resolvePath(workspace, a.FilePath)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if isBinary(old) {
		return fmt.Sprintf("(binary file %s replaced: %d bytes)", displayPath(workspace, path), len(*a.Content)), nil
	}
	return unifiedDiff(displayPath(workspace, path), string(old), *a.Content), nil
}

package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed attach.md
var attachDescription string

const attachSchema = `{
 "type": "object",
 "properties": {
  "file_path": {"type": "string", "description": "Absolute, or relative to the workspace"},
  "caption": {"type": "string"}
 },
 "required": ["file_path"]
}`

// AttachMaxBytes is the largest file Attach sends.
const AttachMaxBytes = 20 << 20

type attachArgs struct {
	FilePath string `json:"file_path"`
	Caption  string `json:"caption"`
}

// Attach returns the Attach tool: queue a workspace file to go out with
// the reply (Result.Attachments). The file must be a regular file inside
// the workspace after symlinks are resolved.
func Attach() agentcore.Tool {
	return newTool("Attach", attachDescription, attachSchema, nil, runAttach)
}

func runAttach(_ context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a attachArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	if a.FilePath == "" {
		return missing("file_path")
	}
	path := resolvePath(env.Workspace, a.FilePath)
	shown := displayPath(env.Workspace, path)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return agentcore.ErrorResult("%s", fileError(shown, err))
	}
	ws := env.Workspace
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	if !within(ws, real) {
		return agentcore.ErrorResult("%s is outside the workspace; only workspace files can be attached. Copy it into the workspace first.", shown)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return agentcore.ErrorResult("%s", fileError(shown, err))
	}
	if !fi.Mode().IsRegular() {
		return agentcore.ErrorResult("%s is not a regular file; attach a file (archive a directory first).", shown)
	}
	if fi.Size() > AttachMaxBytes {
		return agentcore.ErrorResult("%s is %s; attachments are limited to %s. Compress or split it.", shown, humanBytes(fi.Size()), humanBytes(AttachMaxBytes))
	}
	text := fmt.Sprintf("%s (%s) will be attached to the reply.", shown, humanBytes(fi.Size()))
	if a.Caption != "" {
		text += " Caption: " + a.Caption
	}
	return agentcore.Result{Content: text, Attachments: []string{real}}
}

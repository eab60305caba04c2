package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/sandbox"
)

// The client routes of Read, Write, Edit and Bash (agentcore.ToolEnv's
// FileClient and ShellClient): the editor of an ACP session reads and
// writes files as it sees them and runs commands in its terminal. Results
// read the same as the local ones, so the model cannot tell the
// difference except where it matters (the editor's terminal is named).

// clientBashOutputLimit is how much of a command's output the client
// keeps (the end of it): enough to fill the clamp and the overflow file.
const clientBashOutputLimit = 1 << 20

// clientRead reads a file through the client, for Read and Edit.
func clientRead(ctx context.Context, c agentcore.Client, path, shown string) (string, *agentcore.Result) {
	rctx, cancel := agentcore.WithClientTimeout(ctx)
	defer cancel()
	text, err := c.ReadTextFile(rctx, path)
	if err != nil {
		r := agentcore.ErrorResult("Cannot read %s through the editor: %v. Check the path with Glob.", shown, clientError(err))
		return "", &r
	}
	return text, nil
}

// clientWrite writes a file through the client.
func clientWrite(ctx context.Context, c agentcore.Client, path, shown, content string) *agentcore.Result {
	wctx, cancel := agentcore.WithClientTimeout(ctx)
	defer cancel()
	if err := c.WriteTextFile(wctx, path, content); err != nil {
		r := agentcore.ErrorResult("Cannot write %s through the editor: %v", shown, clientError(err))
		return &r
	}
	return nil
}

// readViaClient is Read through the client: the editor's view of the
// file (unsaved changes included), numbered like a local read.
func readViaClient(ctx context.Context, c agentcore.Client, path, shown string, offset, limit int) agentcore.Result {
	text, res := clientRead(ctx, c, path, shown)
	if res != nil {
		return *res
	}
	if isBinary([]byte(text[:min(len(text), 8192)])) {
		return binaryResult(shown, []byte(text[:min(len(text), 8192)]))
	}
	if text == "" {
		return agentcore.Result{Content: fmt.Sprintf("(%s is empty)", shown)}
	}
	return readLines(ctx, bufio.NewReader(strings.NewReader(text)), shown, offset, limit, true)
}

// writeViaClient is Write through the client.
func writeViaClient(ctx context.Context, c agentcore.Client, path, shown, content string) agentcore.Result {
	rctx, cancel := agentcore.WithClientTimeout(ctx)
	old, rerr := c.ReadTextFile(rctx, path)
	cancel()
	if res := clientWrite(ctx, c, path, shown, content); res != nil {
		return *res
	}
	if rerr == nil {
		return agentcore.Result{Content: fmt.Sprintf("Overwrote %s (%d bytes, was %d).", shown, len(content), len(old))}
	}
	return agentcore.Result{Content: fmt.Sprintf("Created %s (%d bytes).", shown, len(content))}
}

// bashViaClient is Bash in the client's terminal, with the same timeout
// and the same result text (clamp, overflow file) as a local run.
func bashViaClient(ctx context.Context, c agentcore.Client, env *agentcore.ToolEnv, command string, timeout time.Duration, note string) agentcore.Result {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.RunCommand(rctx, agentcore.ClientCommand{Command: command, Cwd: env.Workspace, OutputLimit: clientBashOutputLimit})
	out := sandbox.Output{Stdout: res.Output, ExitCode: res.ExitCode, Duration: time.Since(start)}
	if env.Redactor != nil {
		out.Stdout = env.Redactor.Redact(out.Stdout)
	}
	switch {
	case ctx.Err() != nil:
		out.Cancelled = true
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		out.TimedOut = true
	case err != nil:
		return agentcore.ErrorResult("%sThe command could not be run in the editor's terminal: %v", note, clientError(err))
	}
	if res.Signal != "" && out.ExitCode == 0 {
		out.ExitCode = -1
	}
	if res.Truncated {
		out.Stdout = "[the beginning of the output was dropped by the editor]\n" + out.Stdout
	}
	return bashResult(out, timeout, note, env)
}

// clientError is a client's error for the model, without the JSON-RPC
// wrapping.
func clientError(err error) string {
	return clip(err.Error(), 300)
}

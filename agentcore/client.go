package agentcore

import (
	"context"
	"path/filepath"
	"strings"
	"time"
)

// Client is a turn's client that does tool work itself: the editor that
// drives an ACP session reads and writes files as it sees them (unsaved
// buffers included) and runs commands in its own terminal. A host passes
// one in Input.Client for the turns of its sessions; the agent's
// ClientRoute (its configuration) says which tools may use it. The
// permission policy applies either way: a call is classified before it
// runs, wherever it runs. Implementations are safe for concurrent use.
type Client interface {
	Abilities() ClientAbilities
	ReadTextFile(ctx context.Context, path string) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
	// RunCommand runs a shell command line and waits for it; when ctx
	// ends the command is killed and the output so far returned with
	// ctx's error.
	RunCommand(ctx context.Context, c ClientCommand) (ClientCommandResult, error)
}

// ClientAbilities is what a client offers.
type ClientAbilities struct {
	ReadFiles, WriteFiles, Terminal bool
}

// ClientCommand is a command for the client's terminal.
type ClientCommand struct {
	Command     string // a shell command line
	Cwd         string // absolute
	OutputLimit int    // bytes of output to keep (the client keeps the end)
}

// ClientCommandResult is how a client's command ended.
type ClientCommandResult struct {
	Output    string // stdout and stderr as the terminal showed them
	Truncated bool   // the beginning was dropped (OutputLimit)
	ExitCode  int    // -1 when killed by a signal
	Signal    string
}

// ClientRoute says which tools an agent lets a client run
// (acp_client_tools): Files routes Read, Write and Edit of paths inside
// the workspace; Shell routes Bash (never for agents confined with bwrap:
// the client's terminal is not confined).
type ClientRoute struct {
	Files, Shell bool
}

// FileClient returns the turn's client for reading (or, with write,
// writing) path, or nil when the call runs here: the agent does not route
// files, the client cannot, or the path is outside the workspace (the
// agent's own memory and overflow files are always read here).
func (e *ToolEnv) FileClient(path string, write bool) Client {
	if e == nil || e.Client == nil || !e.ClientRoute.Files || !inside(e.Workspace, path) {
		return nil
	}
	for _, own := range []string{e.MemoryDir, e.OverflowDir} {
		if inside(own, path) {
			return nil
		}
	}
	ab := e.Client.Abilities()
	if !ab.ReadFiles || (write && !ab.WriteFiles) {
		return nil
	}
	return e.Client
}

// ShellClient returns the turn's client for Bash, or nil when commands
// run here.
func (e *ToolEnv) ShellClient() Client {
	if e == nil || e.Client == nil || !e.ClientRoute.Shell || !e.Client.Abilities().Terminal {
		return nil
	}
	return e.Client
}

func inside(dir, path string) bool {
	if dir == "" || path == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// clientTimeout bounds one client request that has no timeout of its
// own (a file read or write).
const clientTimeout = 2 * time.Minute

// WithClientTimeout bounds ctx for one file request to a client.
func WithClientTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, clientTimeout)
}

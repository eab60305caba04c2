package tools

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/sandbox"
)

//go:embed bash.md
var bashDescription string

const bashSchema = `{
 "type": "object",
 "properties": {
  "command": {"type": "string"},
  "timeout": {"type": "integer", "description": "Milliseconds (default 120000, max 600000)"},
  "description": {"type": "string", "description": "What the command does, in 5-10 words"}
 },
 "required": ["command"]
}`

// Bash timeouts, in milliseconds as the model gives them.
const (
	BashDefaultTimeoutMS = 120000
	BashMaxTimeoutMS     = 600000
)

type bashArgs struct {
	Command     string  `json:"command"`
	Timeout     flexInt `json:"timeout"`
	Description string  `json:"description"`
}

// Bash returns the Bash tool: a shell command run by env.Runner in the
// workspace with the scrubbed environment and confinement of the agent.
func Bash() agentcore.Tool {
	return newTool("Bash", bashDescription, bashSchema,
		func(json.RawMessage, *agentcore.ToolEnv) agentcore.Resource {
			return agentcore.Resource{Kind: agentcore.ResourceExclusive}
		}, runBash)
}

func runBash(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a bashArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	if strings.TrimSpace(a.Command) == "" {
		return missing("command")
	}
	client := env.ShellClient()
	if env.Runner == nil && client == nil {
		return agentcore.ErrorResult("Bash is not available here: no command runner is configured.")
	}
	ms, note := BashDefaultTimeoutMS, ""
	if a.Timeout.Set {
		switch {
		case a.Timeout.Value <= 0:
			return agentcore.ErrorResult("Invalid arguments: timeout is in milliseconds and must be positive, got %d.", a.Timeout.Value)
		case a.Timeout.Value > BashMaxTimeoutMS:
			ms = BashMaxTimeoutMS
			note = fmt.Sprintf("[timeout %d ms is above the maximum; used %d ms]\n", a.Timeout.Value, BashMaxTimeoutMS)
		default:
			ms = a.Timeout.Value
		}
	}
	timeout := time.Duration(ms) * time.Millisecond
	if client != nil {
		return bashViaClient(ctx, client, env, a.Command, timeout, note)
	}
	out, err := env.Runner.Run(ctx, sandbox.Cmd{
		Command:  a.Command,
		Dir:      env.Workspace,
		Env:      env.Env,
		Timeout:  timeout,
		Confine:  env.Confine,
		Network:  env.Network,
		Writable: env.Writable,
		Hidden:   env.Hidden,
	})
	if err != nil {
		return agentcore.ErrorResult("%sThe command could not be run: %v", note, err)
	}
	return bashResult(out, timeout, note, env)
}

// bashResult is a finished command's result: its text, clamped with the
// full output in an overflow file.
func bashResult(out sandbox.Output, timeout time.Duration, note string, env *agentcore.ToolEnv) agentcore.Result {
	text := bashText(out, timeout)
	if clamped, cut := sandbox.Clamp(text, MaxOutputChars); cut {
		text = clamped
		if env.OverflowDir != "" {
			if path, werr := sandbox.WriteOverflow(env.OverflowDir, overflowName("bash"), bashText(out, timeout), env.Redactor); werr == nil {
				text += fmt.Sprintf("\n[output cut; the full output is in %s — Read it with offset/limit or Grep it]", path)
			} else {
				text += fmt.Sprintf("\n[output cut; saving the full output failed: %v]", werr)
			}
		}
	}
	return agentcore.Result{Content: note + text, IsError: out.ExitCode != 0 || out.TimedOut || out.Cancelled}
}

// bashText is the model's view of a finished command: stdout, stderr
// (labelled), then how it ended when that was not success.
func bashText(out sandbox.Output, timeout time.Duration) string {
	var b strings.Builder
	stdout := strings.TrimRight(out.Stdout, "\n")
	stderr := strings.TrimRight(out.Stderr, "\n")
	b.WriteString(stdout)
	if stderr != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("[stderr]\n")
		b.WriteString(stderr)
	}
	var status []string
	switch {
	case out.TimedOut:
		status = append(status, fmt.Sprintf("[timed out after %s — the process group was killed]", seconds(timeout)))
	case out.Cancelled:
		status = append(status, "[cancelled — the process group was killed]")
	case out.ExitCode == -1:
		status = append(status, "[killed by a signal]")
	case out.ExitCode != 0:
		status = append(status, fmt.Sprintf("exit code %d", out.ExitCode))
	}
	for _, s := range status {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
	}
	if b.Len() == 0 {
		return "(no output)"
	}
	return b.String()
}

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// overflowName is a fresh file name for a clamped output.
func overflowName(tool string) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s-%s-%s.txt", tool, time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(r[:]))
}

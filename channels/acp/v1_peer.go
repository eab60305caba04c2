package acp

// Protocol version 1 (see v1.go): one session on a connection, and the
// client's fs/* and terminal/* methods.

import (
	"context"
	"errors"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/switchboard-gw/switchboard/channels"
)

// peerV1 is one session on a version 1 connection.
type peerV1 struct {
	v  *agentV1
	id sdk.SessionId

	mu sync.Mutex
	st v1State
}

func (p *peerV1) send(ctx context.Context, us []sdk.SessionUpdate) {
	conn := p.v.conn.Load()
	if conn == nil {
		return
	}
	for _, u := range us {
		if err := conn.SessionUpdate(context.WithoutCancel(ctx), sdk.SessionNotification{SessionId: p.id, Update: u}); err != nil {
			p.v.a.log.Debug("session update not sent", "session", p.id, "err", err)
		}
	}
}

func (p *peerV1) live(ctx context.Context, ev channels.LiveEvent) {
	p.mu.Lock()
	us := p.st.updates(ev)
	p.mu.Unlock()
	p.send(ctx, us)
}

func (p *peerV1) ask(ctx context.Context, c channels.ApprovalCard, always bool) (string, error) {
	conn := p.v.conn.Load()
	if conn == nil {
		return "", errors.New("not connected")
	}
	id := c.ToolCallID
	if id == "" {
		id = "approval-" + c.ID
	}
	p.mu.Lock()
	ws := p.st.ws
	p.mu.Unlock()
	resp, err := conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: p.id,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(id), Title: sdk.Ptr(titleOr(c.Summary, c.Tool)),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), Content: pendingContent(c, ws)},
		Options: permissionOptionsV1(c, always),
		Meta:    map[string]any{"approvalId": c.ID, "rule": c.Rule, "approvers": c.Approvers}})
	if err != nil {
		return "", err
	}
	return decisionV1(resp.Outcome)
}

// replay shows one past message: the person's text, the agent's tool
// calls with their outcome and its text, notices and pending asks.
func (p *peerV1) replay(ctx context.Context, it channels.HistoryItem) {
	var us []sdk.SessionUpdate
	p.mu.Lock()
	switch it.Role {
	case channels.RoleUser:
		if t := it.Message.Markdown(); t != "" {
			us = append(us, sdk.UpdateUserMessageText(t))
		}
	default:
		for _, part := range it.Message.Parts {
			switch x := part.(type) {
			case channels.ToolActivity:
				us = append(us, p.st.tool(x, nil)...)
			case channels.Text:
				if x.Markdown != "" {
					us = append(us, sdk.UpdateAgentMessageText(x.Markdown+"\n\n"))
				}
			case channels.Reasoning:
				us = append(us, sdk.UpdateAgentThoughtText(x.Text))
			case channels.Plan:
				us = append(us, planV1(x))
			case channels.Notice:
				us = append(us, sdk.UpdateAgentMessageText(x.Text+"\n\n"))
			}
		}
	}
	p.mu.Unlock()
	p.send(ctx, us)
}

func (p *peerV1) commands(ctx context.Context, cmds []channels.Command) {
	var list []sdk.AvailableCommand
	for _, c := range cmds {
		ac := sdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Args != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: c.Args}}
		}
		list = append(list, ac)
	}
	p.send(ctx, []sdk.SessionUpdate{{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: list}}})
}

func (p *peerV1) readFile(ctx context.Context, path string) (string, error) {
	conn := p.v.conn.Load()
	if conn == nil {
		return "", errors.New("not connected")
	}
	res, err := conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: p.id, Path: path})
	if err != nil {
		return "", clientErrV1(err)
	}
	return res.Content, nil
}

func (p *peerV1) writeFile(ctx context.Context, path, content string) error {
	conn := p.v.conn.Load()
	if conn == nil {
		return errors.New("not connected")
	}
	_, err := conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: p.id, Path: path, Content: content})
	return clientErrV1(err)
}

// runCommand runs a shell command line in a client terminal: create, wait
// for the exit (kill when ctx ends), read the output, release.
func (p *peerV1) runCommand(ctx context.Context, c channels.ClientCommand) (channels.ClientCommandResult, error) {
	conn := p.v.conn.Load()
	if conn == nil {
		return channels.ClientCommandResult{}, errors.New("not connected")
	}
	req := sdk.CreateTerminalRequest{SessionId: p.id, Command: "/bin/sh", Args: []string{"-c", c.Command}}
	if c.Cwd != "" {
		req.Cwd = sdk.Ptr(c.Cwd)
	}
	if c.OutputLimit > 0 {
		req.OutputByteLimit = sdk.Ptr(c.OutputLimit)
	}
	term, err := conn.CreateTerminal(ctx, req)
	if err != nil {
		return channels.ClientCommandResult{}, clientErrV1(err)
	}
	bg := context.WithoutCancel(ctx)
	defer func() {
		_, _ = conn.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: p.id, TerminalId: term.TerminalId})
	}()
	var res channels.ClientCommandResult
	exit, werr := conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: p.id, TerminalId: term.TerminalId})
	if werr != nil {
		_, _ = conn.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: p.id, TerminalId: term.TerminalId})
		res.ExitCode = -1
	} else {
		if exit.ExitCode != nil {
			res.ExitCode = *exit.ExitCode
		}
		if exit.Signal != nil {
			res.Signal, res.ExitCode = *exit.Signal, -1
		}
	}
	out, err := conn.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: p.id, TerminalId: term.TerminalId})
	if err == nil {
		res.Output, res.Truncated = out.Output, out.Truncated
	}
	if werr != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, clientErrV1(werr)
	}
	return res, nil
}

// clientErrV1 is a client's JSON-RPC error as plain text.
func clientErrV1(err error) error {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		msg := re.Message
		if d, ok := re.Data.(map[string]any); ok {
			if e, ok := d["error"].(string); ok && e != "" {
				msg += ": " + e
			}
		}
		return errors.New(msg)
	}
	return err
}

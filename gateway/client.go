package gateway

import (
	"context"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// turnClient is a surface's client (channels.ClientTools) at one location,
// as the agent core's turn uses it (agentcore.Client): the gateway
// translates, so neither side imports the other.
type turnClient struct {
	ct  channels.ClientTools
	loc channels.Location
}

// clientAt returns the client of a location's surface, or nil when it
// has none.
func clientAt(ad channels.Adapter, loc channels.Location) agentcore.Client {
	ct, ok := ad.(channels.ClientTools)
	if !ok || ct.ClientAbilities(loc) == (channels.ClientAbilities{}) {
		return nil
	}
	return turnClient{ct: ct, loc: loc}
}

func (c turnClient) Abilities() agentcore.ClientAbilities {
	a := c.ct.ClientAbilities(c.loc)
	return agentcore.ClientAbilities{ReadFiles: a.ReadFiles, WriteFiles: a.WriteFiles, Terminal: a.Terminal}
}

func (c turnClient) ReadTextFile(ctx context.Context, path string) (string, error) {
	return c.ct.ReadTextFile(ctx, c.loc, path)
}

func (c turnClient) WriteTextFile(ctx context.Context, path, content string) error {
	return c.ct.WriteTextFile(ctx, c.loc, path, content)
}

func (c turnClient) RunCommand(ctx context.Context, cmd agentcore.ClientCommand) (agentcore.ClientCommandResult, error) {
	r, err := c.ct.RunCommand(ctx, c.loc, channels.ClientCommand{Command: cmd.Command, Cwd: cmd.Cwd, OutputLimit: cmd.OutputLimit})
	return agentcore.ClientCommandResult{Output: r.Output, Truncated: r.Truncated, ExitCode: r.ExitCode, Signal: r.Signal}, err
}

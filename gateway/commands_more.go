package gateway

import (
	"context"
	"strings"

	"github.com/switchboard-gw/switchboard/channels"
)

func (g *Gateway) agentAt(ctx context.Context, loc channels.Location) (string, bool) {
	if b, ok, err := g.binding(ctx, loc); err == nil && ok {
		return b.AgentID, true
	}
	id := g.opts.Channels[loc.Channel].Agent
	_, ok := g.opts.Agents[id]
	return id, ok
}

func (g *Gateway) memoryCommand(ctx context.Context, loc channels.Location, args []string, admin bool) string {
	agentID, ok := g.agentAt(ctx, loc)
	if !ok {
		return "No agent here."
	}
	m := g.opts.Agents[agentID]
	sub := "log"
	if len(args) > 0 {
		sub = strings.ToLower(args[0])
	}
	var text string
	var err error
	switch {
	case sub == "log":
		text, err = m.MemoryLogText(ctx, 10)
	case (sub == "show" || sub == "diff") && len(args) == 2:
		text, err = m.MemoryShowText(ctx, args[1])
	case sub == "revert" && len(args) == 2:
		if !admin {
			return "Only an admin can revert memory."
		}
		text, err = m.MemoryRevertText(ctx, args[1])
	default:
		return "Usage: /memory [log | show REV | diff REV | revert REV]"
	}
	if err != nil {
		return "Memory: " + channels.EscapeMarkdown(err.Error())
	}
	return text
}

func (g *Gateway) reconfigure(ctx context.Context, loc channels.Location, name string, args []string) string {
	agentID, ok := g.agentAt(ctx, loc)
	if !ok {
		return "No agent here."
	}
	r := g.opts.Agents[agentID]
	if len(args) != 1 {
		if name == "/mode" {
			return "Usage: /mode <standard|acceptEdits|unrestricted|strict>"
		}
		return "Usage: /model <name>"
	}
	var err error
	if name == "/mode" {
		err = r.SetMode(args[0])
	} else {
		err = r.SetModel(args[0])
	}
	if err != nil {
		return channels.EscapeMarkdown(err.Error())
	}
	what := "permission mode"
	if name == "/model" {
		what = "model"
	}
	return "The " + what + " of " + agentID + " is now **" + channels.EscapeMarkdown(args[0]) + "** (until restart)."
}

package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed agent.md
var agentDescription string

type agentArgs struct {
	Description  string    `json:"description"`
	Prompt       string    `json:"prompt"`
	SubagentType string    `json:"subagent_type"`
	Fork         *flexBool `json:"fork"`
	Background   *flexBool `json:"background"`
}

// maxBriefChars bounds a brief.
const maxBriefChars = 100_000

// Agent returns the Agent tool for the given sub-agent types (the
// built-ins when none are given): it starts a task through env.Tasks. The
// types and their one-line descriptions are part of the tool's
// description, so the set is fixed at construction and the spec stays
// byte-stable.
func Agent(types []agentcore.SubagentType) agentcore.Tool {
	if len(types) == 0 {
		types = agentcore.BuiltinSubagents()
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(agentDescription))
	names := make([]string, 0, len(types))
	for _, t := range types {
		fmt.Fprintf(&b, "\n- %s: %s", t.Name, t.Description)
		names = append(names, t.Name)
	}
	enum, _ := json.Marshal(names)
	schema := `{
 "type": "object",
 "properties": {
  "description": {"type": "string"},
  "prompt": {"type": "string"},
  "subagent_type": {"type": "string", "enum": ` + string(enum) + `},
  "fork": {"type": "boolean"},
  "background": {"type": "boolean"}
 },
 "required": ["description", "prompt", "subagent_type"]
}`
	return newTool(agentcore.ToolAgent, b.String(), schema, nil, runAgent)
}

func runAgent(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a agentArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	a.Prompt = strings.TrimSpace(a.Prompt)
	switch {
	case a.Prompt == "":
		return missing("prompt")
	case strings.TrimSpace(a.SubagentType) == "":
		return missing("subagent_type")
	case len(a.Prompt) > maxBriefChars:
		return agentcore.ErrorResult("The prompt is %d characters; keep a brief under %d (point the sub-agent at files instead of pasting them).", len(a.Prompt), maxBriefChars)
	}
	if env.Tasks == nil {
		return agentcore.ErrorResult("Sub-agents are not available here; do the work yourself.")
	}
	desc := strings.TrimSpace(a.Description)
	if desc == "" {
		desc = clip(strings.Join(strings.Fields(a.Prompt), " "), 60)
	}
	req := agentcore.TaskRequest{Description: desc, Prompt: a.Prompt, Type: strings.TrimSpace(a.SubagentType), ToolCallID: env.ToolCallID}
	if a.Fork != nil {
		v := bool(*a.Fork)
		req.Fork = &v
	}
	if a.Background != nil {
		v := bool(*a.Background)
		req.Background = &v
	}
	t, err := env.Tasks.StartTask(ctx, req)
	if errors.Is(err, agentcore.ErrNoTasks) {
		return agentcore.ErrorResult("Sub-agents are not available here; do the work yourself.")
	}
	if err != nil {
		return agentcore.ErrorResult("The sub-agent was not started: %v.", err)
	}
	res := agentcore.TaskStarted(t)
	res.Task = &t
	return res
}

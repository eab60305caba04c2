package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed todowrite.md
var todoDescription string

const todoSchema = `{
 "type": "object",
 "properties": {
  "todos": {
   "type": "array",
   "items": {
    "type": "object",
    "properties": {
     "content": {"type": "string"},
     "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
     "priority": {"type": "string", "enum": ["high", "medium", "low"]}
    },
    "required": ["content", "status"]
   }
  }
 },
 "required": ["todos"]
}`

// TodoMaxItems bounds a plan.
const TodoMaxItems = 100

type todoArgs struct {
	Todos *[]agentcore.Todo `json:"todos"`
}

// TodoWrite returns the TodoWrite tool: the agent's plan, validated and
// returned in Result.Todos for the loop to emit as a plan event. It has no
// side effects.
func TodoWrite() agentcore.Tool {
	return newTool("TodoWrite", todoDescription, todoSchema, nil, runTodoWrite)
}

func runTodoWrite(_ context.Context, raw json.RawMessage, _ *agentcore.ToolEnv) agentcore.Result {
	var a todoArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	if a.Todos == nil {
		return missing("todos")
	}
	todos := *a.Todos
	if len(todos) > TodoMaxItems {
		return agentcore.ErrorResult("The plan has %d items; keep it to %d or fewer.", len(todos), TodoMaxItems)
	}
	var problems []string
	counts := map[string]int{}
	out := make([]agentcore.Todo, 0, len(todos))
	for i, t := range todos {
		t.Content = strings.TrimSpace(t.Content)
		t.Status = strings.TrimSpace(t.Status)
		t.Priority = strings.TrimSpace(t.Priority)
		if t.Content == "" {
			problems = append(problems, fmt.Sprintf("item %d: content is empty", i+1))
		}
		switch t.Status {
		case "pending", "in_progress", "completed":
		default:
			problems = append(problems, fmt.Sprintf("item %d: status %q is not pending, in_progress or completed", i+1, t.Status))
		}
		switch t.Priority {
		case "", "high", "medium", "low":
		default:
			problems = append(problems, fmt.Sprintf("item %d: priority %q is not high, medium or low", i+1, t.Priority))
		}
		counts[t.Status]++
		out = append(out, t)
	}
	if len(problems) > 0 {
		return agentcore.ErrorResult("The plan was not updated: %s.", strings.Join(problems, "; "))
	}
	if len(out) == 0 {
		return agentcore.Result{Content: "Plan cleared.", Todos: out}
	}
	text := fmt.Sprintf("Plan updated: %d items (%d completed, %d in progress, %d pending).",
		len(out), counts["completed"], counts["in_progress"], counts["pending"])
	if counts["in_progress"] > 1 {
		text += " Note: keep only one item in_progress at a time."
	}
	return agentcore.Result{Content: text, Todos: out}
}

package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

//go:embed recall.md
var recallDescription string

const recallSchema = `{
 "type": "object",
 "properties": {
  "query": {"type": "string"},
  "limit": {"type": "integer", "description": "Max hits (default 10, max 50)"}
 },
 "required": ["query"]
}`

// Recall limits.
const (
	RecallDefaultLimit = 10
	RecallMaxLimit     = 50
	recallSnippetChars = 300
)

type recallArgs struct {
	Query string  `json:"query"`
	Limit flexInt `json:"limit"`
}

// Recall returns the Recall tool: full-text search over the whole
// transcript of the current conversation through env.Recall.
func Recall() agentcore.Tool {
	return newTool("Recall", recallDescription, recallSchema, nil, runRecall)
}

func runRecall(ctx context.Context, raw json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a recallArgs
	if res, ok := decodeArgs(raw, &a); !ok {
		return res
	}
	q := strings.TrimSpace(a.Query)
	if q == "" {
		return missing("query")
	}
	if env.Recall == nil {
		return agentcore.ErrorResult("Recall is not available here: this conversation has no searchable transcript.")
	}
	limit := RecallDefaultLimit
	if a.Limit.Set && a.Limit.Value > 0 {
		limit = min(a.Limit.Value, RecallMaxLimit)
	}
	hits, err := env.Recall.Search(ctx, env.ConversationID, q, limit)
	if err != nil {
		if ctx.Err() != nil {
			return agentcore.ErrorResult("Recall cancelled.")
		}
		return agentcore.ErrorResult("Search failed: %v. Try simpler words without punctuation.", err)
	}
	if len(hits) == 0 {
		return agentcore.Result{Content: fmt.Sprintf("No messages match %q. Try other or fewer words, or a word's stem.", q)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matches:\n", len(hits))
	for _, h := range hits {
		snippet := clip(strings.Join(strings.Fields(h.Snippet), " "), recallSnippetChars)
		fmt.Fprintf(&b, "[seq %d · %s · %s] %s (id: %s)\n", h.Seq, h.Role, h.Created.UTC().Format("2006-01-02 15:04"), snippet, h.MessageID)
	}
	return agentcore.Result{Content: strings.TrimSuffix(b.String(), "\n")}
}

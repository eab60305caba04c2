package agentcore

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestToolJSONSame: a tool encoded once (encodedTool) is sent as the same
// JSON as the param it replaces.
func TestToolJSONSame(t *testing.T) {
	spec := ToolSpec{Name: "Bash", Description: "run", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}
	a, _ := json.Marshal(openai.ChatCompletionFunctionTool(functionDefinition(spec)))
	b, _ := json.Marshal(encodedTool(spec))
	if string(a) != string(b) {
		t.Fatalf("%s\n%s", a, b)
	}
	t.Log(string(b))
}

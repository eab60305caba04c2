package agentcore

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestToolJSONSame: a tool encoded once (toolJSON) is sent as the same
// JSON as the SDK's param for it.
func TestToolJSONSame(t *testing.T) {
	spec := ToolSpec{Name: "Bash", Description: "run", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}
	a, _ := json.Marshal(openai.ChatCompletionFunctionTool(functionDefinition(spec)))
	b, err := NewOpenAI(OpenAIOptions{}).toolJSON(spec)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("%s\n%s", a, b)
	}
	t.Log(string(b))
}

package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/sandbox"
)

// testEnv is a tool environment over a fresh workspace.
func testEnv(t *testing.T) *agentcore.ToolEnv {
	t.Helper()
	return &agentcore.ToolEnv{
		AgentID:        "main",
		ConversationID: "conv-1",
		Workspace:      t.TempDir(),
		OverflowDir:    filepath.Join(t.TempDir(), "overflow"),
	}
}

// writeFiles creates files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func run(t *testing.T, tl agentcore.Tool, env *agentcore.ToolEnv, args string) agentcore.Result {
	t.Helper()
	return tl.Run(context.Background(), json.RawMessage(args), env)
}

func TestDefaultOrderAndSpecs(t *testing.T) {
	var names []string
	total := 0
	for _, tl := range Default() {
		s := tl.Spec()
		names = append(names, s.Name)
		if s.Description == "" {
			t.Errorf("%s: empty description", s.Name)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", s.Name, err)
		}
		if schema.Type != "object" || len(schema.Properties) == 0 {
			t.Errorf("%s: schema %s is not an object schema", s.Name, s.Parameters)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", s.Name, r)
			}
		}
		total += len(s.Name) + len(s.Description) + len(s.Parameters)
	}
	want := []string{"Read", "Write", "Edit", "Bash", "Grep", "Glob", "TodoWrite", "Recall", "Attach", "Agent"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Default() order (-want +got):\n%s", diff)
	}
	t.Logf("total characters of all tool specs (name+description+schema): %d", total)
	if total > 6000 {
		t.Errorf("tool specs take %d characters; the budget is 6000", total)
	}
	// Specs are byte-stable across constructions.
	a, _ := json.Marshal(Default()[0].Spec())
	b, _ := json.Marshal(Read().Spec())
	if string(a) != string(b) {
		t.Error("Read spec differs between constructions")
	}
}

// The argument contract: the names models are trained on.
func TestArgumentNames(t *testing.T) {
	want := map[string][]string{
		"Read":      {"file_path", "limit", "offset"},
		"Write":     {"content", "file_path"},
		"Edit":      {"file_path", "new_string", "old_string", "replace_all"},
		"Bash":      {"command", "description", "timeout"},
		"Grep":      {"glob", "output_mode", "path", "pattern"},
		"Glob":      {"path", "pattern"},
		"TodoWrite": {"todos"},
		"Recall":    {"limit", "query"},
		"Attach":    {"caption", "file_path"},
		"Agent":     {"background", "description", "fork", "prompt", "subagent_type"},
	}
	for _, tl := range Default() {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.Spec().Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		var got []string
		for k := range schema.Properties {
			got = append(got, k)
		}
		if diff := cmp.Diff(want[tl.Spec().Name], got, sortStrings); diff != "" {
			t.Errorf("%s arguments (-want +got):\n%s", tl.Spec().Name, diff)
		}
	}
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func TestInvalidArguments(t *testing.T) {
	env := testEnv(t)
	for _, tl := range Default() {
		for _, args := range []string{`not json`, `[1,2]`, `"a string"`, `{"file_path": 5, "pattern": 5, "command": 5, "todos": 5, "query": 5}`, `{`} {
			res := run(t, tl, env, args)
			if !res.IsError || !strings.HasPrefix(res.Content, "Invalid arguments: ") || !strings.Contains(res.Content, "Send a JSON object") {
				t.Errorf("%s(%s) = %+v, want an invalid-arguments error", tl.Spec().Name, args, res)
			}
		}
		// Every tool has a required argument.
		for _, args := range []string{``, `{}`, `null`} {
			if res := run(t, tl, env, args); !res.IsError || !strings.Contains(res.Content, "Invalid arguments") {
				t.Errorf("%s(%q) = %+v, want a missing-argument error", tl.Spec().Name, args, res)
			}
		}
	}
}

func TestNilEnvDoesNotPanic(t *testing.T) {
	for _, tl := range Default() {
		res := tl.Run(context.Background(), json.RawMessage(`{"file_path":"x","pattern":"x","command":"true","todos":[],"query":"x","content":""}`), nil)
		if res.Content == "" {
			t.Errorf("%s with nil env: empty result", tl.Spec().Name)
		}
	}
}

func TestResources(t *testing.T) {
	env := testEnv(t)
	ws := env.Workspace
	tests := []struct {
		tool agentcore.Tool
		args string
		want agentcore.Resource
	}{
		{Read(), `{"file_path":"a.txt"}`, agentcore.Resource{Kind: agentcore.ResourceRead}},
		{Write(), `{"file_path":"sub/../a.txt","content":""}`, agentcore.Resource{Kind: agentcore.ResourceWrite, Path: filepath.Join(ws, "a.txt")}},
		{Edit(), `{"file_path":"/tmp/x/../y.txt"}`, agentcore.Resource{Kind: agentcore.ResourceWrite, Path: "/tmp/y.txt"}},
		{Edit(), `garbage`, agentcore.Resource{Kind: agentcore.ResourceRead}},
		{Bash(), `{"command":"ls"}`, agentcore.Resource{Kind: agentcore.ResourceExclusive}},
		{Grep(), `{"pattern":"x"}`, agentcore.Resource{Kind: agentcore.ResourceRead}},
		{Glob(), `{"pattern":"x"}`, agentcore.Resource{Kind: agentcore.ResourceRead}},
		{TodoWrite(), `{"todos":[]}`, agentcore.Resource{Kind: agentcore.ResourceRead}},
		{Recall(), `{"query":"x"}`, agentcore.Resource{Kind: agentcore.ResourceRead}},
		{Attach(), `{"file_path":"a"}`, agentcore.Resource{Kind: agentcore.ResourceRead}},
	}
	for _, tt := range tests {
		got := tt.tool.Resource(json.RawMessage(tt.args), env)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s(%s) resource (-want +got):\n%s", tt.tool.Spec().Name, tt.args, diff)
		}
	}
}

func TestFlexibleNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want flexInt
		err  bool
	}{
		{`5`, flexInt{true, 5}, false},
		{`"5"`, flexInt{true, 5}, false},
		{`5.0`, flexInt{true, 5}, false},
		{`null`, flexInt{}, false},
		{`5.5`, flexInt{}, true},
		{`"five"`, flexInt{}, true},
		{`1e300`, flexInt{}, true},
	}
	for _, tt := range tests {
		var got flexInt
		err := json.Unmarshal([]byte(tt.in), &got)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("flexInt(%s) = %+v, %v; want %+v, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestResultsAreRedacted(t *testing.T) {
	env := testEnv(t)
	env.Redactor = sandbox.NewRedactor("canary-Read-s3cret")
	writeFiles(t, env.Workspace, map[string]string{"cfg.env": "TOKEN=canary-Read-s3cret\n"})
	for _, c := range []struct {
		tool agentcore.Tool
		args string
	}{
		{Read(), `{"file_path":"cfg.env"}`},
		{Grep(), `{"pattern":"TOKEN","output_mode":"content"}`},
		{Edit(), `{"file_path":"cfg.env","old_string":"TOKEN=","new_string":"KEY="}`},
	} {
		res := run(t, c.tool, env, c.args)
		if strings.Contains(res.Content, "canary-Read-s3cret") || !strings.Contains(res.Content, sandbox.Redacted) {
			t.Errorf("%s result not redacted: %q", c.tool.Spec().Name, res.Content)
		}
	}
}

func TestPanicBecomesErrorResult(t *testing.T) {
	tl := newTool("Boom", "explodes", `{"type":"object","properties":{"x":{"type":"string"}}}`, nil,
		func(context.Context, json.RawMessage, *agentcore.ToolEnv) agentcore.Result { panic("kaboom") })
	res := tl.Run(context.Background(), nil, testEnv(t))
	if !res.IsError || !strings.HasPrefix(res.Content, "Internal error in Boom: kaboom.") {
		t.Fatalf("got %+v", res)
	}
}

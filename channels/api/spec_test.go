package api

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The served OpenAPI document and the route table describe the same
// operations: every route is documented, every documented operation is
// routed, each with its path parameters, a 401 answer and, where it takes
// a body, a request schema.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var spec struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			Parameters []struct {
				Name, In string
			} `json:"parameters"`
			RequestBody *struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiSpec, &spec); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Errorf("openapi %q", spec.OpenAPI)
	}
	a := &Adapter{}
	var routed, documented []string
	for _, rt := range a.routeTable() {
		routed = append(routed, rt.method+" "+rt.path)
	}
	param := regexp.MustCompile(`\{([a-z]+)\}`)
	for path, ops := range spec.Paths {
		for method, op := range ops {
			name := strings.ToUpper(method) + " " + path
			documented = append(documented, name)
			for _, m := range param.FindAllStringSubmatch(path, -1) {
				if !slices.ContainsFunc(op.Parameters, func(p struct{ Name, In string }) bool { return p.Name == m[1] && p.In == "path" }) {
					t.Errorf("%s: path parameter %s is not declared", name, m[1])
				}
			}
			if _, ok := op.Responses["401"]; !ok {
				t.Errorf("%s: no 401 answer documented", name)
			}
			if method == "post" && name != "POST /v1/conversations/{id}/cancel" && (op.RequestBody == nil || op.RequestBody.Content["application/json"] == nil) {
				t.Errorf("%s: no JSON request body documented", name)
			}
		}
	}
	slices.Sort(routed)
	slices.Sort(documented)
	if !slices.Equal(routed, documented) {
		t.Errorf("routes and spec differ:\n routed     %v\n documented %v", routed, documented)
	}
	// Every $ref resolves.
	refs := regexp.MustCompile(`"#/components/schemas/([A-Za-z]+)"`).FindAllStringSubmatch(string(openapiSpec), -1)
	for _, r := range refs {
		if _, ok := spec.Components.Schemas[r[1]]; !ok {
			t.Errorf("$ref to missing schema %s", r[1])
		}
	}
}

// Every field the API writes is in its schema, so the spec says what the
// answers hold.
func TestOpenAPISchemasCoverTheAnswers(t *testing.T) {
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiSpec, &spec); err != nil {
		t.Fatal(err)
	}
	for schema, v := range map[string]any{
		"Conversation": conversationJSON{}, "Message": messageJSON{}, "ToolCall": toolCallJSON{}, "Approval": approvalJSON{},
		"Queued": queuedJSON{}, "DecisionResult": decisionJSON{}, "Agent": agentJSON{}, "NewMessage": postMessage{},
		"Decision": decideBody{}, "NewConversation": createConversation{},
	} {
		b, _ := json.Marshal(v)
		var fields map[string]any
		_ = json.Unmarshal(b, &fields)
		// Fields left out when empty are found by their tags.
		for _, f := range jsonFields(v) {
			fields[f] = true
		}
		for f := range fields {
			if _, ok := spec.Components.Schemas[schema].Properties[f]; !ok {
				t.Errorf("schema %s lacks %q", schema, f)
			}
		}
	}
}

func jsonFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// readmeStreamJSON reads the stream-json section of the README: the fields
// documented for each event type (the table), and the tokens of the init
// and result paragraphs.
func readmeStreamJSON(t *testing.T) (byType map[string]map[string]bool, result map[string]bool) {
	t.Helper()
	readme := readRepoFile(t, "README.md")
	start := strings.Index(readme, "**stream-json**")
	end := strings.Index(readme, "In (`--input-format stream-json`)")
	if start < 0 || end < start {
		t.Fatal("README.md has no stream-json section")
	}
	sec := readme[start:end]
	code := regexp.MustCompile("`([^`]*)`")
	word := regexp.MustCompile(`[A-Za-z_]+`)
	tokens := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, c := range code.FindAllStringSubmatch(s, -1) {
			for _, w := range word.FindAllString(c[1], -1) {
				m[w] = true
			}
		}
		return m
	}
	byType = map[string]map[string]bool{}
	var prev map[string]bool
	for _, l := range strings.Split(sec, "\n") {
		cells := strings.Split(l, " | ")
		if !strings.HasPrefix(l, "| `") || len(cells) < 2 {
			continue
		}
		rest := strings.Join(cells[1:], " | ")
		fields := tokens(rest)
		if strings.Contains(rest, "as above") {
			for k := range prev {
				fields[k] = true
			}
		}
		for typ := range tokens(cells[0]) {
			byType[typ] = fields
		}
		prev = fields
	}
	resStart := strings.Index(sec, "The result:")
	if resStart < 0 {
		t.Fatal("README's stream-json section does not describe the result")
	}
	return byType, tokens(sec[resStart:])
}

// TestReadmeStreamJSONMatchesEvents runs a session that emits every kind
// of event the loop produces today and checks each field that goes out is
// documented in the README under its event type.
func TestReadmeStreamJSONMatchesEvents(t *testing.T) {
	todo := `{"todos":[{"content":"write the file","status":"in_progress","priority":"high"}]}`
	e := newEnv(t,
		fakemodel.Step{Reasoning: "I should make the file", Text: "Making it.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "Bash", Arguments: `{"command":"touch made"}`}}},
		fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "c2", Name: "TodoWrite", Arguments: todo}}},
		fakemodel.Step{Text: "done"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "run", "--input-format", "stream-json", "--output-format", "stream-json")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(stdout)
	var events []map[string]any
	next := func(typ string) map[string]any {
		t.Helper()
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("waiting for %s: %v\n%s", typ, err, stderr.String())
			}
			events = append(events, m)
			if m["type"] == typ {
				return m
			}
		}
	}
	next("init")
	stdin.Write([]byte(`{"type":"user","content":"make a file"}` + "\n"))
	ask := next("approval_request")
	next("result")
	id := ask["approval"].(map[string]any)["id"].(string)
	stdin.Write([]byte(`{"type":"approval","approvalId":"` + id + `","decision":"allow"}` + "\n"))
	next("plan")
	next("result")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}

	documented, resultDoc := readmeStreamJSON(t)
	common := map[string]bool{"type": true, "runId": true, "seqId": true, "agentId": true, "conversationId": true}
	seen := map[string]bool{}
	for _, ev := range events {
		typ := ev["type"].(string)
		seen[typ] = true
		var doc map[string]bool
		switch typ {
		case "init":
			continue // its fields are listed in the sentence before the table
		case "result":
			doc = resultDoc
		default:
			var ok bool
			if doc, ok = documented[typ]; !ok {
				t.Errorf("event type %q is emitted but has no row in the README's stream-json table", typ)
				continue
			}
		}
		for k, v := range ev {
			if !common[k] && !doc[k] {
				t.Errorf("%s carries %q, which the README does not document for it", typ, k)
			}
			if obj, ok := v.(map[string]any); ok && (k == "approval" || k == "usage") {
				for nk := range obj {
					if !doc[nk] {
						t.Errorf("%s.%s carries %q, which the README does not document", typ, k, nk)
					}
				}
			}
		}
	}
	for _, typ := range []string{"assistant_delta", "reasoning_delta", "assistant_message", "tool_call", "tool_result", "approval_request", "approval_decision", "plan", "result"} {
		if !seen[typ] {
			t.Errorf("the session emitted no %s event; the check did not cover it", typ)
		}
	}
}

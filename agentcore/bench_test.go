package agentcore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// BenchmarkTurnTwoStep runs one scripted two-step turn per iteration —
// the model calls a tool, then answers — through the whole loop: a new
// conversation, the real sqlite store, the real provider over HTTP/SSE to
// an instant fake model, permissions and the real tool. Read measures the
// loop itself; Bash adds a shell process (and its process group handling).
func BenchmarkTurnTwoStep(b *testing.B) {
	for _, tc := range []struct {
		name, tool string
		args       func(ws string) string
	}{
		{"Read", "Read", func(ws string) string {
			a, _ := json.Marshal(map[string]string{"file_path": filepath.Join(ws, "a.txt")})
			return string(a)
		}},
		{"Bash", "Bash", func(string) string { return `{"command":"echo hi"}` }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := newWorld(b)
			if err := os.WriteFile(filepath.Join(w.ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			args := tc.args(w.ws)
			var n atomic.Int64
			w.model.SetResponder(func(req fakemodel.Request) fakemodel.Step {
				if req.LastMessage().Role == "tool" {
					return fakemodel.Step{Text: "done"}
				}
				// Call ids must be unique per conversation (see the report on
				// reused ids); a counter keeps them so.
				id := fmt.Sprintf("call_%d", n.Add(1))
				return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: tc.tool, Arguments: args}}}
			})
			ag := w.agent(agentOpts{mode: permission.ModeUnrestricted})
			ctx := context.Background()
			in := userInput("go")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c, err := ag.NewConversation(ctx)
				if err != nil {
					b.Fatal(err)
				}
				res, err := ag.Turn(ctx, c.ID, in, agentcore.Discard)
				if err != nil {
					b.Fatal(err)
				}
				if res.StopReason != agentcore.StopEndTurn || res.Steps != 2 {
					b.Fatalf("turn ended %s after %d steps (%s)", res.StopReason, res.Steps, res.Error)
				}
			}
		})
	}
}

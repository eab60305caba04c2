package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// TestRunBoundedModelOutput drives the binary against models that never
// stop or stall, and a command that outlasts the turn: each run ends with an error naming the
// limit that was hit, the transcript stays valid, and the conversation
// takes the next message.
func TestRunBoundedModelOutput(t *testing.T) {
	e := newEnv(t,
		fakemodel.Step{Text: "Here it comes: ", Endless: fakemodel.EndlessText},
		fakemodel.Step{Text: "Short answer."},
		fakemodel.Step{Text: "Thinking", Stall: true},
		fakemodel.Step{Endless: fakemodel.EndlessArguments},
		bashStep("call_sleep", "sleep 60"),
		fakemodel.Step{Text: "Still here."},
	)
	e.writeConfig(fmt.Sprintf(`[providers.default]
base_url = %q
model = "test-model"
stream_idle_timeout = "500ms"

[agents.main]
workspace = %q
max_step_output = 65536
turn_timeout = "3s"
`, e.model.URL(), e.workspace))

	for i, tc := range []struct {
		args []string
		want string // in the result; "" for success
	}{
		{[]string{"-p", "write forever"}, "max_step_output (64 KiB)"},
		{[]string{"-p", "answer briefly", "--continue"}, ""},
		{[]string{"-p", "think", "--continue"}, "stream_idle_timeout"},
		{[]string{"-p", "call a tool forever", "--continue", "--permission-mode", "unrestricted"}, "max_step_output"},
		{[]string{"-p", "take your time", "--continue", "--permission-mode", "unrestricted"}, "turn_timeout (3s)"},
		{[]string{"-p", "still there?", "--continue"}, ""},
	} {
		r := e.run("", append([]string{"run", "--output-format", "json"}, tc.args...)...)
		res := resultLine(t, r.stdout)
		text := fmt.Sprint(res["result"], " ", res["error"])
		switch {
		case tc.want == "" && res["subtype"] != "success":
			t.Fatalf("run %d: result %v\nstderr: %s", i, res, r.stderr)
		case tc.want != "" && (res["subtype"] != "error" || !strings.Contains(text, tc.want)):
			t.Fatalf("run %d: result %v; want an error naming %s\nstderr: %s", i, res, tc.want, r.stderr)
		}
		validTranscript(t, e.transcript())
	}
	if n := len(e.model.Requests()); n != 6 {
		t.Errorf("the model got %d requests, want 6 (no retries of bounded steps)", n)
	}
}

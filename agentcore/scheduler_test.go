package agentcore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/agentcoretest"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// probe watches the calls of gated test tools: each call reports its start,
// then waits until the test releases it. Overlaps are checked at the moment
// a call starts, against the calls that started and have not ended.
type probe struct {
	started chan string // call labels, as they start

	mu         sync.Mutex
	release    map[string]chan struct{}
	active     map[string]agentcore.Resource
	violations []string
	log        []string // "start X" / "end X", in the order they happened
}

func newProbe(labels ...string) *probe {
	p := &probe{started: make(chan string, len(labels)), release: map[string]chan struct{}{}, active: map[string]agentcore.Resource{}}
	for _, l := range labels {
		p.release[l] = make(chan struct{})
	}
	return p
}

func (p *probe) enter(label string, res agentcore.Resource) {
	p.mu.Lock()
	for other, o := range p.active {
		switch {
		case res.Kind == agentcore.ResourceExclusive || o.Kind == agentcore.ResourceExclusive:
			p.violations = append(p.violations, fmt.Sprintf("%s started while %s was running (exclusive)", label, other))
		case res.Kind == agentcore.ResourceWrite && o.Kind == agentcore.ResourceWrite && res.Path == o.Path:
			p.violations = append(p.violations, fmt.Sprintf("%s started while %s was writing %s", label, other, res.Path))
		}
	}
	p.active[label] = res
	p.log = append(p.log, "start "+label)
	ch := p.release[label]
	p.mu.Unlock()
	p.started <- label
	<-ch
	p.mu.Lock()
	delete(p.active, label)
	p.log = append(p.log, "end "+label)
	p.mu.Unlock()
}

// gated is a test tool whose calls block in the probe. Its resource comes
// from its kind and the call's "path" argument; each call is labelled by
// its "label" argument and returns it.
type gated struct {
	name string
	kind agentcore.ResourceKind
	p    *probe
}

type gatedArgs struct {
	Label   string `json:"label"`
	Path    string `json:"path,omitempty"`
	Command string `json:"command,omitempty"` // for the permission checker's shell parser
}

func (g *gated) Spec() agentcore.ToolSpec {
	return agentcore.ToolSpec{Name: g.name, Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (g *gated) Resource(args json.RawMessage, _ *agentcore.ToolEnv) agentcore.Resource {
	var a gatedArgs
	_ = json.Unmarshal(args, &a)
	return agentcore.Resource{Kind: g.kind, Path: a.Path}
}

func (g *gated) Run(_ context.Context, args json.RawMessage, env *agentcore.ToolEnv) agentcore.Result {
	var a gatedArgs
	_ = json.Unmarshal(args, &a)
	g.p.enter(a.Label, g.Resource(args, env))
	return agentcore.Result{Content: "result of " + a.Label}
}

// TestSchedulerResourceOrder runs one step with three reads, two writes to
// the same path and a shell call. The reads must run at the same time
// (none is released until all three have started), writes to one path
// never overlap, the shell call runs alone, and results come back in call
// order.
func TestSchedulerResourceOrder(t *testing.T) {
	type call struct{ label, tool, path string }
	calls := []call{
		{"R1", "Read", "/ws/a"}, {"R2", "Read", "/ws/b"}, {"W1", "Write", "/ws/out"},
		{"R3", "Read", "/ws/c"}, {"W2", "Write", "/ws/out"}, {"B1", "Bash", ""},
	}
	var labels []string
	var tcs []fakemodel.ToolCall
	for i, c := range calls {
		labels = append(labels, c.label)
		a := gatedArgs{Label: c.label, Path: c.path}
		if c.tool == "Bash" {
			a.Command = "true"
		}
		args, _ := json.Marshal(a)
		tcs = append(tcs, fakemodel.ToolCall{ID: fmt.Sprintf("call_%d_%s", i, c.label), Name: c.tool, Arguments: string(args)})
	}
	p := newProbe(labels...)
	set := agentcore.NewTools(
		&gated{"Read", agentcore.ResourceRead, p},
		&gated{"Write", agentcore.ResourceWrite, p},
		&gated{"Bash", agentcore.ResourceExclusive, p},
	)
	w := newWorld(t, fakemodel.Step{ToolCalls: tcs}, fakemodel.Step{Text: "all done"})
	ag := w.agent(agentOpts{mode: permission.ModeUnrestricted, tools: set})
	conv := w.conversation(ag)

	done := make(chan agentcore.TurnResult, 1)
	go func() {
		res, err := ag.Turn(context.Background(), conv, userInput("go"), nil)
		if err != nil {
			res.Error = err.Error()
		}
		done <- res
	}()

	// Every call is held once it starts. Reads are released only when all
	// three have started: if they did not run at the same time that never
	// happens and the deadline fails the test. Other calls are released
	// when no further call has started for a short while, so that a
	// scheduler that wrongly ran a conflicting call at the same time would
	// have started it while the first was still held, where the probe
	// records the overlap. The window only gives a wrong scheduler the
	// chance to show itself; it never decides whether a correct one passes.
	const window = 100 * time.Millisecond
	deadline := time.After(30 * time.Second)
	isRead := func(l string) bool { return strings.HasPrefix(l, "R") }
	var held []string
	reads, released := 0, 0
	quiet := time.NewTimer(window)
	defer quiet.Stop()
	for released < len(labels) {
		select {
		case l := <-p.started:
			held = append(held, l)
			if isRead(l) {
				reads++
			}
			quiet.Reset(window)
		case <-quiet.C:
			var keep []string
			for _, l := range held {
				if isRead(l) && reads < 3 {
					keep = append(keep, l)
					continue
				}
				close(p.release[l])
				released++
			}
			held = keep
			quiet.Reset(window)
		case res := <-done:
			t.Fatalf("the turn ended before every call ran: %s (%s)", res.StopReason, res.Error)
		case <-deadline:
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("stuck with %v held (reads must run at the same time); log %v", held, p.log)
		}
	}
	var res agentcore.TurnResult
	select {
	case res = <-done:
	case <-deadline:
		t.Fatal("the turn did not finish")
	}
	if res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("turn ended %s (%s)", res.StopReason, res.Error)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.violations) > 0 {
		t.Errorf("overlaps: %v\nlog: %v", p.violations, p.log)
	}
	// B1 ran alone: everything started before it ended before it started,
	// and nothing started until it ended.
	bs, be := slices.Index(p.log, "start B1"), slices.Index(p.log, "end B1")
	if be != bs+1 {
		t.Errorf("B1 did not run alone: %v", p.log)
	}
	// Results in call order.
	req := w.model.Requests()[1]
	var got []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			got = append(got, m.Text())
		}
	}
	var want []string
	for _, l := range labels {
		want = append(want, "result of "+l)
	}
	if !slices.Equal(got, want) {
		t.Errorf("tool results in order %q, want %q", got, want)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

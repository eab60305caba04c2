package agentcore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/switchboard-gw/switchboard/sandbox"
)

// ResourceKind is how a tool call uses shared state, for the scheduler.
type ResourceKind int

// Resource kinds. Reads run in parallel; writes are serialized per path;
// exclusive calls (Bash, unknown tools) run alone behind one lock.
const (
	ResourceRead ResourceKind = iota
	ResourceWrite
	ResourceExclusive
)

// Resource is what one call touches.
type Resource struct {
	Kind ResourceKind
	Path string // absolute path for ResourceWrite
}

// Result is what a tool call returns to the model. Errors are results with
// IsError set, never Go errors or panics.
type Result struct {
	Content string
	IsError bool
	// Todos is set by TodoWrite: the plan, emitted as a plan event.
	Todos []Todo
	// Attachments are workspace files queued to go out with the reply.
	Attachments []string
	// Task is set by the Agent tool: the task it started. A foreground
	// task (Background false) parks the turn until the task ends; its
	// report then becomes this call's result.
	Task *Task
}

// ErrorResult is a convenience for a failed call the model can act on.
func ErrorResult(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// Recaller searches the conversation's whole transcript (the Recall tool).
type Recaller interface {
	Search(ctx context.Context, conversationID, query string, limit int) ([]SearchHit, error)
}

// ToolEnv is what a tool call may use. It is built per turn by the loop and
// shared read-only by the calls of a step.
type ToolEnv struct {
	AgentID        string
	ConversationID string
	Workspace      string // absolute
	MemoryDir      string // absolute; this agent's memory repository
	OverflowDir    string // where clamped outputs are written in full
	Runner         *sandbox.Runner
	Redactor       *sandbox.Redactor
	// Shell settings for Bash.
	Confine  sandbox.Confinement
	Network  bool
	Env      []string // scrubbed environment for tool processes
	Writable []string // writable dirs inside the sandbox
	Hidden   []string // hidden dirs inside the sandbox
	Recall   Recaller
	// Tasks starts sub-agent tasks (the Agent tool); nil where the host
	// runs none. Set by the loop per turn.
	Tasks TaskStarter
	// ToolCallID is the id of the call being run (set by the loop on each
	// call's copy of the environment).
	ToolCallID string
	// ClientRoute is which tools the agent lets a turn's client run (set
	// by cmd from acp_client_tools); Client is the turn's client
	// (Input.Client), nil when there is none. Tools ask FileClient and
	// ShellClient.
	ClientRoute ClientRoute
	Client      Client
}

// Tool is one capability the model can call. Implementations are safe for
// concurrent use; Run never panics on bad arguments.
type Tool interface {
	Spec() ToolSpec
	// Resource says what a call with these arguments touches.
	Resource(args json.RawMessage, env *ToolEnv) Resource
	Run(ctx context.Context, args json.RawMessage, env *ToolEnv) Result
}

// Describer is implemented by tools that describe a call for people: a
// one-line Markdown title and what kind of thing it does (read, edit,
// delete, move, search, execute, think, fetch, other). Hosts show these
// instead of guessing from tool names.
type Describer interface {
	Describe(args json.RawMessage) (title, kind string)
}

// Describe returns the title and kind of a call of the named tool; a tool
// without a Describer is "name" of kind "other".
func (s *Tools) Describe(name string, args json.RawMessage) (title, kind string) {
	if t, ok := s.byName[name]; ok {
		if d, ok := t.(Describer); ok {
			return d.Describe(args)
		}
	}
	return name, "other"
}

// Tools is a set of tools by name.
type Tools struct {
	byName map[string]Tool
	order  []string
}

// NewTools builds a tool set; later tools with the same name replace
// earlier ones.
func NewTools(ts ...Tool) *Tools {
	s := &Tools{byName: map[string]Tool{}}
	for _, t := range ts {
		name := t.Spec().Name
		if _, ok := s.byName[name]; !ok {
			s.order = append(s.order, name)
		}
		s.byName[name] = t
	}
	return s
}

// Get returns the named tool.
func (s *Tools) Get(name string) (Tool, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Without returns a copy of the set without the named tools.
func (s *Tools) Without(names ...string) *Tools {
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	var keep []Tool
	for _, n := range s.order {
		if !drop[n] {
			keep = append(keep, s.byName[n])
		}
	}
	return NewTools(keep...)
}

// Only returns a copy of the set with only the named tools (in the set's
// order); names the set does not have are ignored.
func (s *Tools) Only(names ...string) *Tools {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var keep []Tool
	for _, n := range s.order {
		if want[n] {
			keep = append(keep, s.byName[n])
		}
	}
	return NewTools(keep...)
}

// Names returns the tool names in registration order.
func (s *Tools) Names() []string { return append([]string(nil), s.order...) }

// Specs returns the tool specs in a stable order (registration order), so
// that the tool schemas of every request are byte-identical.
func (s *Tools) Specs() []ToolSpec {
	out := make([]ToolSpec, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.byName[n].Spec())
	}
	return out
}

// unknownTool is the result for a call of a tool that does not exist.
func (s *Tools) unknownTool(name string) Result {
	names := s.Names()
	sort.Strings(names)
	return ErrorResult("Tool not found: %s. Available: %s", name, strings.Join(names, ", "))
}

// Package agentcore runs agents: the single turn loop every host uses
// (chat gateway, terminal chat, headless run, later ACP and HTTP), the
// event model those hosts consume, the OpenAI-compatible provider, the
// context (system prompt compiled once from memory, <system-reminder>
// parts, compaction against the whole-request budget), tool execution with
// permission checks, and the storage ports it needs (ports.go), which the
// store package implements.
//
// A turn (Agent.Turn) takes the conversation's lease, settles tool calls an
// earlier step left open (a call that started before a crash is answered
// "outcome unknown"), appends the input, then steps the model until it
// stops. A permission "ask" stores an approval and ends the turn with
// requires_approval; nothing waits in memory for a person, and a later
// Turn with InputResume continues once every approval of the step is
// decided, in this process or another.
//
// The Agent tool starts sub-agent tasks (task.go): a child conversation of
// the same agent that the host works like any other; a turn of it runs
// with the type's tools and instructions, a policy no looser than the
// agent's and no memory (task_turn.go). A foreground task parks the
// parent's turn (StopWaitingForTask) until its report becomes the call's
// result; a background one returns a task id and its report arrives as an
// InputNotification, which waits while the conversation is parked.
//
// Every turn and step is bounded: a step that streams more than
// Config.MaxStepOutput bytes, or whose server goes silent for the
// provider's idle timeout, fails and keeps nothing of its partial output;
// a turn that runs past Config.TurnTimeout stops with an error. Each ends
// the turn with StopError and a message, and the transcript stays valid.
//
// Concurrency: an Agent is safe for concurrent use by many conversations.
// A conversation runs one turn at a time across processes, enforced by its
// lease in the store (Turn returns ErrBusy while another worker holds it).
// A turn's events reach its Sink in order from the turn's goroutine; tool
// calls of one step run concurrently where their resources allow (reads in
// parallel, writes serialized per path, Bash and unknown tools alone) and
// their results are appended in call order.
//
// Writes: a turn buffers its records (commit.go, TurnWrite) and stores them
// in one write where they must be durable — before a batch of tool calls
// runs (the calls on record first), right after tool results, before a
// compaction, before steered messages are marked consumed — and at its end
// with the lease's release; a host (Input.Host, TurnHost) folds its own
// records into the first and last. A turn that dies before a write loses
// only what the model said since the last one: the host reruns the input.
//
// Memory: nothing is kept per conversation between turns. An Agent holds
// its configuration, the /mode and /model read at the latest turn, and the
// provider's encoded tool specs (one per tool); a turn's view, budget and
// pending records live only while it runs.
package agentcore

// Package gateway connects chat surfaces (channels) to agents (agentcore):
// it authenticates people, dedupes platform retries, binds chat locations
// to conversations, queues inputs durably, runs one worker per busy
// conversation under the conversation's lease, renders a turn's events
// back to the chat (streamed edits, tool activity, approval buttons), and
// delivers every outbound message through a durable outbox.
//
// Concurrency: a Gateway is safe for concurrent use by all adapters.
// Inbound events are acknowledged only after they are written to the
// queue. Each conversation is worked by at most one worker at a time, and
// its items are processed in arrival order; different conversations run
// concurrently. No goroutine waits in memory for a person: an approval
// parks the turn in the store, and a decision enqueues a resume item.
// Sub-agent tasks are conversations like any other: their items are
// worked by the same workers at the parent turn's location (at most
// AgentOptions.MaxTasks running per agent), their activity is one edited
// status line per task, and their end, report and the parent's
// notification are written in the transaction that completes their last
// item (tasks.go).
// Gateway.Run owns every goroutine it starts and waits for them before it
// returns.
package gateway

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
//
// Writes: a plain text turn is four write transactions end to end — the
// intake's Enqueue (EnqueueNew for a chat's first message: its
// conversation and binding in the same write), the turn's start (TakeItem: the item's attempt with the
// conversation's lease), its end (FinishTurn: the agent core's records, the
// item done, the reply and the asks' messages in the outbox, the parked
// message, the lease released) and the delivery (MarkSent); see turnhost.go.
//
// Memory: nothing is kept for a conversation that is not working. The
// state in memory, and its bounds:
//   - workers: one entry per conversation with a worker running (at most
//     the busy ones; removed when its queue is empty); Options.Workers
//     turns at once, on at most Options.Workers goroutines (plus those
//     waiting out a backoff); the busy conversations beyond them wait in
//     a queue, an entry each, not on goroutines.
//   - a running turn's stream (turn view, live-event queue, page refs) and
//     typing loop: freed when the turn ends. A parked turn's message lives
//     in the store (settings), not here.
//   - outbox: a goroutine per location being delivered to (at most 64), the
//     items handed to them (at most 4,096; past that they wait in the store
//     for a scan) and the locations whose items wait for a scan (at most
//     10,000; past that every item waits for one), and the items not due yet
//     that hold their chats (at most 10,000, read at start too: an earlier
//     process's retries).
//   - rate limits: none kept; an adapter's retry_after becomes the item's
//     next attempt time in the store.
//   - metrics: label values per channel, kind and stop reason.
package gateway

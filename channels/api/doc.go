// Package api is the HTTP API channel: programs start conversations, queue
// turns, follow each conversation's one event stream and decide approvals,
// with the guarantees the chat surfaces have. It is an adapter on the same
// gateway as the others (channels.Adapter and channels.LiveSurface), served
// under /v1/ on the [http] listener; GET /v1/openapi.json is the reference.
//
// Identity: a bearer token (compared as digests, in constant time) names
// the caller, "api:<token name>"; a conversation belongs to the token that
// started it and lives at Location{Channel: "api", Account: <token name>,
// ChatID: <conversation id>}.
//
// Durability: POST .../messages answers 202 only after the gateway queued
// the input (channels.Queuer, or OnInbound returning nil), with the input's
// id; an Idempotency-Key becomes the inbound's EventID, which the gateway
// dedupes, so a retry queues once. Every live event of a turn at an API
// location is written to the Store's event log before any client sees it,
// and streams read only the log: an event's SSE id "<runId>:<seqId>"
// resumes a stream exactly after it, also after a restart, while the event
// is retained (Options.Retention). The store assigns seqIds per run, so a
// later turn that adds events to an earlier run (a resumed tool call)
// continues its numbering instead of repeating it. The API adds turn_start
// (with the user's input), turn_end (also for turns a stopped process left
// open: stopReason "restarted"), user_message and chat_message events.
//
// Concurrency: an Adapter is safe for concurrent use. Live is called by the
// gateway from one goroutine per turn and writes to the store before it
// returns; HTTP handlers run concurrently; a per-conversation lock puts an
// input's user_message before its turn's turn_start. Start owns the prune
// loop and returns when its context ends, which also ends every stream.
package api

// Package channelstest provides a fake in-memory channels.Adapter for
// gateway tests.
//
// The fake records every Send, Edit, Delete, ephemeral send and typing call
// with the message contents (and their rendering for the fake's
// capabilities), lets a test deliver inbound messages and button presses
// through the Handler it was started with, and can be told to fail the next
// N sends or edits with a chosen error (for example a
// *channels.RateLimitError). Tests wait for outcomes with WaitFor, which
// blocks on a channel until a predicate over the records holds or the
// context ends; no sleeping or polling.
//
// Conformance is the adapter contract suite every adapter runs against its
// own fake platform (a Platform; optional abilities: Failer for platforms
// that can refuse a send, NoRedelivery for platforms that wait for an
// acknowledgement but never deliver a refused event again, CommandLister for
// platforms that show registered commands). The fake adapter passes it with
// FakePlatform.
//
// Concurrency: every method of Adapter is safe for concurrent use. Handler
// calls made by Inbound and Press run on the caller's goroutine, outside the
// fake's lock, so a handler may call Send or Edit re-entrantly.
package channelstest

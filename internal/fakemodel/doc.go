// Package fakemodel is a scripted OpenAI-compatible chat-completions server
// that speaks real HTTP and Server-Sent Events on 127.0.0.1, so tests
// exercise openai-go and our provider at the wire (DESIGN §9).
//
// A Server answers POST /v1/chat/completions from a script of Steps, in
// order: each Step is streamed the way OpenAI streams (a role chunk, content
// and reasoning deltas, tool-call deltas with arguments in fragments, a
// finish_reason chunk, a usage chunk when stream_options.include_usage is
// set, then [DONE]), or answered with an HTTP error, or sent as a broken
// stream, or a hostile one: a stream that never ends (Endless), one huge
// chunk (HugeChunk), a stream that stops sending but stays open (Stall).
// When the script is empty a responder set with SetResponder
// computes the Step from the request; without one the server answers 500
// "fakemodel: script exhausted" so a test that asks more than it scripted
// fails visibly. GET /v1/models lists the model.
//
// Every request is recorded exactly as received (body bytes, headers,
// arrival time) before it is answered; Requests and WaitRequests read them.
// WaitIdle waits until no answer is in progress (every stream finished or
// its client went away), which is how a test sees a client close a stream.
//
// Concurrency: all methods of Server are safe for concurrent use. Requests
// take Steps in the order they arrive at the handler. Close (or the test's
// Cleanup for New) stops the HTTP server and waits for handlers to return;
// a Step held open by Block or BlockMidStream is released when the client
// goes away.
package fakemodel

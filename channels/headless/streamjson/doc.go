// Package streamjson is the codec of the stream-json scripting interface
// (DESIGN §7; field names are a contract): the input lines a program writes
// to `switchboard run --input-format stream-json` and the init, result and
// error lines `run --output-format stream-json` prints around the events of
// the one event stream (which are relayed as the agent core emits them).
//
// Concurrency: the package has no state; its functions are safe to call
// from any goroutine. An Encoder is safe for concurrent use.
package streamjson

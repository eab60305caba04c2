//go:build race

package gateway_test

// raceEnabled: the race detector slows the load test about tenfold, so
// under -race it runs a tenth of the conversations; .ci/run runs the full
// load without -race.
const raceEnabled = true

// Command fakemodel-server serves the scripted fake model
// (internal/fakemodel) for benchmarks of the whole binary: every
// conversation gets a Bash `echo hi` tool call, then, once the tool result
// is in, the answer "The command printed hi." It prints the base URL on
// one line and runs until interrupted.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func main() {
	srv := fakemodel.NewServer()
	defer srv.Close()
	var n atomic.Int64
	srv.SetResponder(func(req fakemodel.Request) fakemodel.Step {
		if req.LastMessage().Role == "tool" {
			return fakemodel.Step{Text: "The command printed hi."}
		}
		id := fmt.Sprintf("call_%d", n.Add(1))
		return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Bash", Arguments: `{"command":"echo hi"}`}}}
	})
	fmt.Println(srv.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}

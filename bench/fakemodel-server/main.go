// Command fakemodel-server serves the scripted fake model
// (internal/fakemodel) for benchmarks of the whole binary, out of the
// measured process. It prints the base URL on one line and runs until
// interrupted. It keeps no memory per request.
//
//	-mode runp (default): every conversation gets a Bash `echo hi` tool
//	  call, then, once the tool result is in, "The command printed hi."
//	-mode load: bench/internal/loadmodel's mixed script (echo, tools, asks).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync/atomic"
	"syscall"

	"github.com/switchboard-gw/switchboard/bench/internal/loadmodel"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func main() {
	mode := flag.String("mode", "runp", "runp or load")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatalf("fakemodel-server: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatalf("fakemodel-server: %v", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	srv := fakemodel.NewServer()
	defer srv.Close()
	srv.DiscardRequests()
	switch *mode {
	case "runp":
		var n atomic.Int64
		srv.SetResponder(func(req fakemodel.Request) fakemodel.Step {
			if req.LastMessage().Role == "tool" {
				return fakemodel.Step{Text: "The command printed hi."}
			}
			id := fmt.Sprintf("call_%d", n.Add(1))
			return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Bash", Arguments: `{"command":"echo hi"}`}}}
		})
	case "load":
		srv.SetResponder(new(loadmodel.Responder).Respond)
	default:
		log.Fatalf("fakemodel-server: unknown -mode %q (runp or load)", *mode)
	}
	fmt.Println(srv.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}

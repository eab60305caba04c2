package fakemodel

import (
	"fmt"
	"sync"
)

// Router answers requests from several scripts: classify names the script
// of each request, so conversations that run concurrently (an agent and
// its sub-agents) each get their own answers in their own order whatever
// the order in which their requests arrive. Install it with
// SetResponder(r.Respond). A request whose script is empty is answered
// with a 500 naming the script.
type Router struct {
	classify func(Request) string

	mu      sync.Mutex
	scripts map[string][]Step
	seen    map[string][]Request
}

// NewRouter returns a Router that picks scripts with classify.
func NewRouter(classify func(Request) string) *Router {
	return &Router{classify: classify, scripts: map[string][]Step{}, seen: map[string][]Request{}}
}

// Add appends steps to the named script.
func (r *Router) Add(script string, steps ...Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scripts[script] = append(r.scripts[script], steps...)
}

// Respond answers req from its script (for SetResponder).
func (r *Router) Respond(req Request) Step {
	name := r.classify(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[name] = append(r.seen[name], req)
	q := r.scripts[name]
	if len(q) == 0 {
		return Step{Status: 500, ErrorBody: fmt.Sprintf(`{"error":{"message":"fakemodel: script %q exhausted"}}`, name)}
	}
	r.scripts[name] = q[1:]
	return q[0]
}

// Requests returns the requests the named script answered, in order.
func (r *Router) Requests(script string) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.seen[script]...)
}

package discordtest

import (
	"net/http"
	"sync"
)

// Hold is a message create the fake makes but does not answer yet: the
// message is stored (and dispatched) as usual, and the answer waits until
// Release, or until the client goes away — so a test can kill the client
// inside the send and see what its retry does. Create it with HoldCreate.
type Hold struct {
	match   func(Message) bool
	taken   bool // guarded by Server.mu
	caught  chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	msg     Message
}

// HoldCreate holds the answer of the next successful message create whose
// message satisfies match (nil: any). Holds queue, each catching one
// create. Closing the server releases them all.
func (s *Server) HoldCreate(match func(Message) bool) *Hold {
	h := &Hold{match: match, caught: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds = append(s.holds, h)
	return h
}

// Caught is closed when the hold has caught a create.
func (h *Hold) Caught() <-chan struct{} { return h.caught }

// Message is the message the caught create made (after Caught).
func (h *Hold) Message() Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msg
}

// Release lets the held answer go (it is safe to call more than once).
func (h *Hold) Release() { h.once.Do(func() { close(h.release) }) }

// hold waits, for a successful create whose answer is out, while a hold
// catches it.
func (s *Server) hold(r *http.Request, out any) {
	m, ok := out.(map[string]any)
	if !ok {
		return
	}
	id, _ := m["id"].(string)
	s.mu.Lock()
	var h *Hold
	var msg Message
	if stored, ok := s.byID[id]; ok {
		for _, c := range s.holds {
			if !c.taken && (c.match == nil || c.match(*stored)) {
				h, msg = c, *stored
				h.taken = true
				break
			}
		}
	}
	s.mu.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	h.msg = msg
	h.mu.Unlock()
	close(h.caught)
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
}

// releaseHolds releases every hold (the server is closing).
func (s *Server) releaseHolds() {
	s.mu.Lock()
	hs := s.holds
	s.mu.Unlock()
	for _, h := range hs {
		h.Release()
	}
}

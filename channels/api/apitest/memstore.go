// Package apitest holds the contract suite of the API channel's storage
// port (api.Store), which store's tests run, and an in-memory Store for
// tests of the channel itself.
package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels/api"
)

// MemStore is an api.Store in memory, safe for concurrent use.
type MemStore struct {
	mu      sync.Mutex
	convs   []api.Conversation
	events  []api.Event
	convPos int64
	evPos   int64
	// FailAppends, when > 0, makes that many AppendEvent calls fail.
	FailAppends int
}

var _ api.Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{} }

// AddConversation implements api.Store.
func (m *MemStore) AddConversation(ctx context.Context, c api.Conversation) (api.Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.ID == "" || c.Account == "" {
		return api.Conversation{}, fmt.Errorf("add conversation: id and account are required")
	}
	for _, o := range m.convs {
		if o.ID == c.ID {
			return api.Conversation{}, fmt.Errorf("add conversation %s: exists", c.ID)
		}
	}
	if c.Created.IsZero() {
		c.Created = time.Now().UTC()
	}
	m.convPos++
	c.Pos = m.convPos
	m.convs = append(m.convs, c)
	return c, nil
}

// APIConversation implements api.Store.
func (m *MemStore) APIConversation(ctx context.Context, id string) (api.Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.convs {
		if c.ID == id {
			return c, nil
		}
	}
	return api.Conversation{}, fmt.Errorf("conversation %s: %w", id, api.ErrNotFound)
}

// APIConversations implements api.Store.
func (m *MemStore) APIConversations(ctx context.Context, account string, beforePos int64, limit int) ([]api.Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []api.Conversation
	for i := len(m.convs) - 1; i >= 0; i-- {
		c := m.convs[i]
		if c.Account == account && (beforePos <= 0 || c.Pos < beforePos) {
			out = append(out, c)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// AppendEvent implements api.Store.
func (m *MemStore) AppendEvent(ctx context.Context, ev api.Event) (api.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.FailAppends > 0 {
		m.FailAppends--
		return api.Event{}, fmt.Errorf("append: injected failure")
	}
	if ev.ConversationID == "" || ev.RunID == "" || ev.Type == "" {
		return api.Event{}, fmt.Errorf("append: conversation, run and type are required")
	}
	if !json.Valid(ev.Data) || !strings.HasPrefix(strings.TrimSpace(string(ev.Data)), "{") {
		return api.Event{}, fmt.Errorf("append: data is not a JSON object")
	}
	var seq int64
	for _, o := range m.events {
		if o.ConversationID == ev.ConversationID && o.RunID == ev.RunID {
			seq = max(seq, o.SeqID)
		}
	}
	if ev.At.IsZero() {
		ev.At = time.Now().UTC()
	}
	m.evPos++
	ev.Pos, ev.SeqID = m.evPos, seq+1
	ev.Data = slices.Clone(ev.Data)
	m.events = append(m.events, ev)
	return ev, nil
}

// EventsAfter implements api.Store.
func (m *MemStore) EventsAfter(ctx context.Context, conversationID string, afterPos int64, limit int) ([]api.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []api.Event
	for _, ev := range m.events {
		if ev.ConversationID == conversationID && ev.Pos > afterPos {
			out = append(out, ev)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// EventByID implements api.Store.
func (m *MemStore) EventByID(ctx context.Context, conversationID, runID string, seqID int64) (api.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ev := range m.events {
		if ev.ConversationID == conversationID && ev.RunID == runID && ev.SeqID == seqID {
			return ev, nil
		}
	}
	return api.Event{}, fmt.Errorf("event %s:%d: %w", runID, seqID, api.ErrNotFound)
}

// LastEvent implements api.Store.
func (m *MemStore) LastEvent(ctx context.Context, q api.EventQuery) (api.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.events) - 1; i >= 0; i-- {
		ev := m.events[i]
		if ev.ConversationID != q.ConversationID || (q.BeforePos > 0 && ev.Pos >= q.BeforePos) ||
			(q.InputID != "" && ev.InputID != q.InputID) || (len(q.Types) > 0 && !slices.Contains(q.Types, ev.Type)) {
			continue
		}
		return ev, nil
	}
	return api.Event{}, fmt.Errorf("last event of %s: %w", q.ConversationID, api.ErrNotFound)
}

// PruneEvents implements api.Store.
func (m *MemStore) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.events)
	m.events = slices.DeleteFunc(m.events, func(ev api.Event) bool { return ev.At.Before(before) })
	return int64(n - len(m.events)), nil
}

// Events returns every stored event of a conversation, in order.
func (m *MemStore) Events(conversationID string) []api.Event {
	evs, _ := m.EventsAfter(context.Background(), conversationID, 0, 0)
	return evs
}

package api

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned (wrapped) by Store when a record does not exist
// (or an event is no longer retained).
var ErrNotFound = errors.New("not found")

// Conversation is one conversation an API caller started.
type Conversation struct {
	ID      string
	Account string // the token name that started it and may use it
	Agent   string
	Title   string
	Created time.Time
	// Pos orders the conversations (a caller's list is newest first) and
	// is the list's page cursor; the store assigns it.
	Pos int64
}

// Event is one event of a conversation's stream as the API stores it.
type Event struct {
	ConversationID string
	// Pos is the event's position in the store's order (assigned by the
	// store, increasing).
	Pos int64
	// RunID and SeqID are the event's stream identity (its SSE id). The
	// store assigns SeqID: 1 + the highest SeqID of RunID in the
	// conversation, so seqIds count a run's events without gaps or repeats
	// even when a later turn adds events to an earlier run.
	RunID string
	SeqID int64
	Type  string
	// InputID is the input the event belongs to ("" for none).
	InputID string
	// Data is the event as JSON (an object); the API sets runId, seqId and
	// inputId in it when it sends the event.
	Data []byte
	At   time.Time
}

// EventQuery selects the newest event matching every set field.
type EventQuery struct {
	ConversationID string // required
	BeforePos      int64  // only events before this position (0: any)
	Types          []string
	InputID        string
}

// Store is the API's storage port: the conversations each caller started
// and the retained event log. store implements it; apitest holds its
// contract suite and an in-memory implementation.
type Store interface {
	// AddConversation records a conversation (Pos and, when zero, Created
	// are assigned). Adding an id twice is an error.
	AddConversation(ctx context.Context, c Conversation) (Conversation, error)
	// APIConversation returns a conversation by id, or ErrNotFound.
	APIConversation(ctx context.Context, id string) (Conversation, error)
	// APIConversations returns up to limit of account's conversations with
	// Pos below beforePos (0: from the newest), newest first.
	APIConversations(ctx context.Context, account string, beforePos int64, limit int) ([]Conversation, error)

	// AppendEvent stores ev (ConversationID, RunID, Type and Data
	// required), assigning Pos, SeqID and, when zero, At, and returns it.
	AppendEvent(ctx context.Context, ev Event) (Event, error)
	// EventsAfter returns up to limit events of a conversation after
	// position afterPos (0: from the oldest retained), in order.
	EventsAfter(ctx context.Context, conversationID string, afterPos int64, limit int) ([]Event, error)
	// EventByID returns the event with a stream identity, or ErrNotFound.
	EventByID(ctx context.Context, conversationID, runID string, seqID int64) (Event, error)
	// LastEvent returns the newest event matching q, or ErrNotFound.
	LastEvent(ctx context.Context, q EventQuery) (Event, error)
	// PruneEvents deletes events stored before a time and reports how many.
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
}

package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// ErrNotFound is returned by the gateway's storage ports when a record
// does not exist.
var ErrNotFound = errors.New("not found")

// Binding maps a chat location to a conversation (and so to an agent).
type Binding struct {
	Location       string // channels.Location.String()
	AgentID        string
	ConversationID string
	Created        time.Time
}

// Bindings stores location → conversation bindings.
type Bindings interface {
	// Binding returns the binding of a location or ErrNotFound.
	Binding(ctx context.Context, location string) (Binding, error)
	// Bind creates or replaces the binding of b.Location.
	Bind(ctx context.Context, b Binding) error
	// BindingsOf returns the bindings that point at a conversation.
	BindingsOf(ctx context.Context, conversationID string) ([]Binding, error)
}

// ItemKind says what a queue item asks the worker to do.
type ItemKind string

// Queue item kinds.
const (
	ItemMessage      ItemKind = "message"      // a person's message: a turn
	ItemResume       ItemKind = "resume"       // continue a turn parked on approvals
	ItemNotification ItemKind = "notification" // a harness message (task report)
	ItemCommand      ItemKind = "command"      // a /command from the command table
)

// Item is one durable unit of work for a conversation's worker.
type Item struct {
	ID             int64
	ConversationID string
	AgentID        string
	Kind           ItemKind
	// Location is where replies go (channels.Location.String()).
	Location string
	// Channel is the location's channel, set by the store: a process works
	// only the items of the channels it runs.
	Channel string
	// Payload is the item's JSON body (for messages: the inbound text,
	// sender and attachments as the gateway encodes them).
	Payload []byte
	Created time.Time
	// Attempts counts how often a worker took the item; an item taken by
	// a process that died is taken again.
	Attempts int
}

// Queue is the durable per-conversation work queue. Items of one
// conversation are worked in ID order.
type Queue interface {
	// Enqueue stores an item. Dedupe keys are global (callers prefix them
	// with the channel). When dedupeKey is not empty and was seen within
	// its expiry, nothing is stored and enqueued is false: the
	// platform retried an event it already delivered; id is then the item
	// stored under the key the first time (0 when the store does not know
	// it). The dedupe key and the item are written in one transaction.
	Enqueue(ctx context.Context, it Item, dedupeKey string, dedupeTTL time.Duration) (id int64, enqueued bool, err error)
	// Peek returns the oldest unfinished item of a conversation, or
	// ErrNotFound. When the item's channel is one of channels (nil: any),
	// its Attempts are incremented; otherwise it is returned untouched,
	// for the process that runs its channel.
	Peek(ctx context.Context, conversationID string, channels []string) (Item, error)
	// Complete marks an item done (it is never returned again). Completing
	// an unknown or already done item is ErrNotFound, so a turn worked
	// twice can never complete (and reply) twice.
	Complete(ctx context.Context, id int64) error
	// Pending returns the unfinished items of a conversation in order.
	Pending(ctx context.Context, conversationID string) ([]Item, error)
	// Busy lists conversations that have unfinished items in one of
	// channels (nil: any), for recovery after a restart and for noticing
	// items other processes queued.
	Busy(ctx context.Context, channels []string) ([]string, error)
	// ClaimDedupe records a dedupe key as Enqueue does, without an item
	// (commands that act at once); fresh is false for a key seen within
	// its expiry.
	ClaimDedupe(ctx context.Context, key string, ttl time.Duration) (fresh bool, err error)
	// Rebind binds b.Location to b.ConversationID and moves the location's
	// unfinished items queued after item afterID to the new conversation,
	// in one transaction (/new: messages sent after it go to the new
	// conversation).
	Rebind(ctx context.Context, b Binding, afterID int64) error
	// LatestIDs returns the newest queue and outbox item ids, so a process
	// notices items other processes wrote.
	LatestIDs(ctx context.Context) (queue, outbox int64, err error)
}

// Pairing is a one-time code an unknown user got in a DM; an admin
// approves it to allow the user.
type Pairing struct {
	Code     string
	Channel  string
	UserID   string // bare platform id
	UserName string
	Location string // the DM where the code was given
	Created  time.Time
	Expires  time.Time
	Approved bool
}

// Pairings stores pairing codes and paired users.
type Pairings interface {
	// CreatePairing gives p's user a pending code and says whether to send
	// it. A user with an unexpired pending code gets that code back (one
	// code per user); otherwise p is stored, and while the channel then
	// holds more than limit pending codes the oldest other users' codes are
	// evicted, so strangers cannot keep real users from pairing. notify is
	// true at most once per notifyEvery per user — the store records now
	// as the user's last notice when it returns true — so a stranger who
	// writes again and again gets one code message an hour. A user whose
	// code was evicted within notifyEvery gets the zero Pairing and false:
	// no new code until the interval has passed.
	CreatePairing(ctx context.Context, p Pairing, limit int, notifyEvery time.Duration, now time.Time) (stored Pairing, notify bool, err error)
	// ApprovePairing marks an unexpired pending code approved and the user
	// paired; ErrNotFound when no such pending code exists.
	ApprovePairing(ctx context.Context, code string, now time.Time) (Pairing, error)
	// Paired reports whether channel:userID has been paired.
	Paired(ctx context.Context, channel, userID string) (bool, error)
}

// ButtonAction is what an approval button does.
type ButtonAction string

// Button actions.
const (
	ButtonApprove ButtonAction = "approve"
	ButtonAlways  ButtonAction = "always"
	ButtonDeny    ButtonAction = "deny"
	// ButtonStop stops a running turn; its ApprovalID field holds the
	// conversation id.
	ButtonStop ButtonAction = "stop"
)

// Button is the record behind an opaque button token.
type Button struct {
	Token      string
	ApprovalID string
	Action     ButtonAction
	Created    time.Time
}

// ApprovalPost is one posted copy of an approval message.
type ApprovalPost struct {
	ApprovalID string
	Location   string
	MessageID  string // platform message id, "" until sent
	OutboxID   int64  // the outbox item that sends it
}

// Buttons stores button tokens and where approval messages were posted.
type Buttons interface {
	CreateButtons(ctx context.Context, bs []Button) error
	// Button looks a token up; ErrNotFound for unknown tokens.
	Button(ctx context.Context, token string) (Button, error)
	// ApprovalButtons returns the buttons of an approval.
	ApprovalButtons(ctx context.Context, approvalID string) ([]Button, error)
	// PostApproval stores an approval's buttons, the outbox items posting
	// it and a post record per item in one transaction, and returns the
	// items' ids.
	PostApproval(ctx context.Context, bs []Button, posts []Outbound) ([]int64, error)
	AddApprovalPost(ctx context.Context, p ApprovalPost) error
	ApprovalPosts(ctx context.Context, approvalID string) ([]ApprovalPost, error)
}

// OutboundKind says what an outbox item does on the platform.
type OutboundKind string

// Outbound kinds.
const (
	OutboundSend      OutboundKind = "send"
	OutboundEdit      OutboundKind = "edit"
	OutboundEphemeral OutboundKind = "ephemeral" // a message only UserID sees (a send where the surface cannot)
)

// Outbound is one durable outgoing platform call.
type Outbound struct {
	ID       int64
	Kind     OutboundKind
	Location string // channels.Location.String()
	// MessageID is the platform message to edit (OutboundEdit), or, once
	// sent, the id the platform gave a sent message.
	MessageID string
	// EditOf names another outbox item whose sent message this edit
	// targets, for edits queued before that send happened.
	EditOf int64
	// UserID is the bare platform id of the one recipient of an
	// OutboundEphemeral item.
	UserID string
	// Body is the message as the gateway encodes it (JSON).
	Body     []byte
	Attempts int
	NextAt   time.Time
	Created  time.Time
	Sent     bool
	LastErr  string
}

// Outbox stores outgoing platform calls until they succeed.
type Outbox interface {
	// EnqueueOutbound stores items and returns their ids, in order.
	EnqueueOutbound(ctx context.Context, items ...Outbound) ([]int64, error)
	// DueOutboundAfter returns unsent items of the given channels (nil:
	// any) whose NextAt has come and whose id is above after (the
	// outbox's scan cursor), oldest first.
	DueOutboundAfter(ctx context.Context, channels []string, now time.Time, after int64, limit int) ([]Outbound, error)
	// WaitingOutbound returns unsent items of the given channels (nil:
	// any) whose NextAt is after now, oldest first, with at least ID,
	// Location and NextAt set (read when the outbox starts: their chats
	// wait for them).
	WaitingOutbound(ctx context.Context, channels []string, now time.Time, limit int) ([]Outbound, error)
	// OutboundItem returns one item.
	OutboundItem(ctx context.Context, id int64) (Outbound, error)
	// OutboundSent reports whether an item is marked sent (the check
	// before each delivery, without reading its body).
	OutboundSent(ctx context.Context, id int64) (bool, error)
	// MarkSent records success and the platform message id.
	MarkSent(ctx context.Context, id int64, messageID string) error
	// Retry records a failure and when to try again; permanent failures
	// are marked sent with LastErr set, so they are never retried.
	Retry(ctx context.Context, id int64, next time.Time, lastErr string, permanent bool) error
}

// ChatPosts is implemented by stores that can say what the outbox has on
// record as posted in a chat (a location without its thread, and its
// threads): the largest numeric message id of an item created before
// before, a send or an edit's target ("" for none), and every numeric
// message id above it on record (not nil when there is a record). The outbox hands them to the adapter with a send that an earlier
// attempt may have posted (channels.Message.PostedBefore, PostedSince).
type ChatPosts interface {
	ChatPosts(ctx context.Context, chat string, before time.Time) (last string, since []string, err error)
}

// CompleteWith is implemented by stores that can complete a queue item
// and enqueue outbound items in one transaction, so a turn's final reply
// is durable exactly when its input is marked done.
type CompleteWith interface {
	CompleteWithOutbound(ctx context.Context, itemID int64, items ...Outbound) ([]int64, error)
}

// Deciding is the one decide path's storage: a decision is one
// transaction.
type Deciding interface {
	// DecideAndResume records d on the approval if it is still pending and,
	// in the same transaction: adds the Always rule (agentcore.Approvals.Decide
	// semantics), queues an edit of every posted copy of the approval with
	// the body edit(decided approval) returns, and, when no approval of the
	// conversation is still pending, enqueues resume (its Location defaults
	// to the approval's Location, else the conversation's newest binding).
	// decided is false, and nothing is written, when the approval was not
	// pending; resumed says the resume was queued.
	DecideAndResume(ctx context.Context, approvalID string, d agentcore.Decision, edit func(agentcore.Approval) []byte, resume Item) (ap agentcore.Approval, decided, resumed bool, err error)
}

// DecisionEditor is implemented by stores that can queue the edits of an
// approval's posted copies in the transaction of any decision, also one
// the agent core records itself (settling an ask when a new message comes
// or it expires). The gateway installs its rendering at New.
type DecisionEditor interface {
	SetDecisionEdit(edit func(agentcore.Approval) []byte)
}

// Settings stores small durable settings by scope (a location's /queue
// mode: scope "location:<location>").
type Settings interface {
	Settings(ctx context.Context, scope string) (map[string]string, error)
	SetSetting(ctx context.Context, scope, key, value string) error
}

// Setting is one durable setting (Settings.SetSetting: "" deletes it).
type Setting struct{ Scope, Key, Value string }

// TurnPost records where an approval of a finishing turn is posted: the
// outbox item that posts it is TurnEnd.Outbound[Outbound].
type TurnPost struct {
	ApprovalID string
	Location   string
	Outbound   int
}

// TurnEnd is everything a finished turn stores, in one transaction: the
// agent core's last records (they release the lease), the queue items it
// completes, its reply and approval messages in the outbox, the approvals'
// buttons and posts, and settings (the parked turn's message).
type TurnEnd struct {
	Turn agentcore.TurnWrite
	// Complete lists queue items to mark done. The first must be
	// unfinished: otherwise nothing at all is stored and the error wraps
	// ErrNotFound (a turn worked twice never replies twice). The others
	// (collected messages) are completed when still unfinished. Empty:
	// the item stays queued (shutdown: the next start continues).
	Complete []int64
	Outbound []Outbound
	Buttons  []Button
	Posts    []TurnPost
	Settings []Setting
}

// Turns stores a turn's first and last writes together with the gateway's
// records (agentcore.TurnHost), so a plain text turn is four write
// transactions end to end: intake, TakeItem, FinishTurn, MarkSent.
type Turns interface {
	// TakeItem takes the conversation's lease for owner for ttl
	// (agentcore.Leases.AcquireLease's semantics) and counts an attempt
	// of item id, in one transaction, returning the attempts so far. ok
	// is false, and nothing is written, when another owner holds the
	// lease; the error wraps ErrNotFound, and nothing is written, when
	// the item is no longer unfinished in that conversation.
	TakeItem(ctx context.Context, id int64, conversationID, owner string, ttl time.Duration) (attempts int, ok bool, err error)
	// FinishTurn stores e in one transaction (e.Turn with
	// agentcore.TurnStore.CommitTurn's semantics).
	FinishTurn(ctx context.Context, e TurnEnd) (Finished, error)
	// EnqueueNew is Enqueue (same dedupe semantics) for a message to a
	// location that was not bound: in the same transaction it creates
	// conv (with its agent) and binds b.Location to it, so a new
	// conversation's first message is one write. When the location was
	// bound meanwhile, the item goes to that binding's conversation and
	// conv is not created; when the dedupe key was seen, nothing is
	// stored. It returns the binding the item went to.
	EnqueueNew(ctx context.Context, conv agentcore.Conversation, b Binding, it Item, dedupeKey string, dedupeTTL time.Duration) (Binding, int64, bool, error)
}

// Finished is what FinishTurn stored.
type Finished struct {
	Messages []agentcore.Message // e.Turn's messages as stored (Seq set)
	Outbound []int64             // the ids of e.Outbound, in order
}

// Store is every storage port the gateway needs.
type Store interface {
	Bindings
	Queue
	Pairings
	Buttons
	Outbox
	CompleteWith
	Deciding
	Settings
	TaskStore
	Turns
}

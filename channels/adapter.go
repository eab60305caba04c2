package channels

import (
	"context"
	"fmt"
	"time"
)

// Adapter connects one chat surface (a Slack workspace, a Telegram bot, the
// web page, an ACP session) to the gateway. It knows chat platforms, not
// agents. Send, Edit, Capabilities and any optional ability may be called
// concurrently, also while Start runs.
type Adapter interface {
	// Name is the channel name used in locations and qualified identities,
	// e.g. "telegram". It never changes.
	Name() string
	// Start receives platform events and hands them to h until ctx ends,
	// reconnecting after failures. It returns nil when ctx ends and an error
	// only when it cannot run at all (bad credentials, listener in use).
	// An adapter acknowledges a platform event (or advances its polling
	// offset) only after h.OnInbound returned nil for it.
	Start(ctx context.Context, h Handler) error
	// Send posts m at loc and returns a reference for later edits. When the
	// rendered message is longer than the platform allows, Send posts several
	// platform messages and returns the reference of the first one.
	Send(ctx context.Context, loc Location, m Message) (MessageRef, error)
	// Edit replaces the content of a message Send returned. An edit that
	// changes nothing succeeds. Surfaces that cannot edit return an error
	// for which IsPermanent is true and errors.Is(err, ErrNotSupported).
	Edit(ctx context.Context, ref MessageRef, m Message) error
	// Capabilities says what the surface can show; it is constant for the
	// adapter's lifetime.
	Capabilities() Capabilities
}

// Typer is an optional Adapter ability: show "typing…" at a location. One
// call lasts a few seconds on most platforms; callers repeat it while a turn
// runs.
type Typer interface {
	Typing(ctx context.Context, loc Location) error
}

// Deleter is an optional Adapter ability: remove a message that was sent.
type Deleter interface {
	Delete(ctx context.Context, ref MessageRef) error
}

// EphemeralSender is an optional Adapter ability: show a message at loc that
// only the user with the platform id userID can see (Slack ephemeral
// messages, Discord ephemeral replies).
type EphemeralSender interface {
	SendEphemeral(ctx context.Context, loc Location, userID string, m Message) error
}

// Handler receives what an adapter reads from its platform. The gateway
// implements it. Calls may arrive concurrently.
type Handler interface {
	// OnInbound returns only after the inbound was durably accepted (or
	// deliberately ignored); a nil error tells the adapter it may
	// acknowledge the platform event. A non-nil error means "not accepted,
	// deliver again": the adapter must not acknowledge.
	OnInbound(ctx context.Context, in Inbound) error
	// OnAction handles a button press. The adapter delivers the returned
	// reply to the presser (an alert or toast where the platform has one,
	// else an ephemeral or ordinary message); an empty reply only
	// acknowledges the press.
	OnAction(ctx context.Context, a Action) (ActionReply, error)
}

// HistoryHandler is implemented by handlers that let browsing surfaces (the
// web page, ACP session lists) read past conversations. Such adapters
// discover it by type assertion on the Handler they were started with.
type HistoryHandler interface {
	// Conversations lists the conversations the qualified identity who may
	// see, most recently active first.
	Conversations(ctx context.Context, who string) ([]ConversationInfo, error)
	// History returns the visible messages of the conversation at a
	// location of this surface (the one its binding names; for surfaces
	// that reopen listed conversations by id, a chat id that is a
	// conversation id), oldest first, with its pending approvals as cards
	// whose buttons work.
	History(ctx context.Context, loc Location) ([]HistoryItem, error)
}

// ConversationInfo describes one conversation in a list.
type ConversationInfo struct {
	ID        string
	Agent     string // agent name
	Title     string // a short human title; may be empty
	UpdatedAt time.Time
	// Location is where this surface shows the conversation: the location
	// of this channel it is bound to (zero when none). A surface reopens a
	// listed conversation there, so commands, pending approvals and buttons
	// keep working after any restart.
	Location Location
	// Elsewhere lists the other channels the conversation lives in
	// ("telegram", "slack"), for people.
	Elsewhere []string
}

// Role says who wrote a HistoryItem.
type Role string

// Roles of history items.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system" // notices, approvals, task reports
)

// HistoryItem is one visible message of a conversation.
type HistoryItem struct {
	ID      string
	Role    Role
	User    User // the author when Role is RoleUser
	Message Message
	At      time.Time
}

// User is a person on a platform. ID is the platform's stable id (a Telegram
// numeric id, a Slack U… id); use QualifiedID to name them across channels.
type User struct {
	ID       string
	Name     string // display name; may be empty
	Username string // handle without "@"; may be empty
}

// Inbound is one message a person wrote, normalized by an adapter.
type Inbound struct {
	// EventID is the platform's id for this delivery, stable across the
	// platform's retries; the gateway dedupes on (channel, EventID).
	EventID  string
	Location Location
	User     User
	// Text is the message text as the user wrote it, with platform markup
	// and the bot's own mention removed.
	Text        string
	Attachments []Attachment
	// Mentioned: the bot was mentioned. DirectMessage: a one-to-one chat.
	// ReplyToBot: the message replies to one of the bot's messages.
	Mentioned, DirectMessage, ReplyToBot bool
	// RoleAllowed and RoleAdmin are facts only the platform knows: the
	// platform says the user is allowed / an admin by role (Discord roles
	// listed in allow_roles / admin_roles). The gateway treats them like
	// membership in allow_users / admins; adapters without roles leave them
	// false.
	RoleAllowed, RoleAdmin bool
	// ReplyTo is the platform id of the message this one replies to, if any.
	ReplyTo string
	// MessageID is the platform id of this message, for threading replies
	// to it; may be empty. The gateway passes it back unchanged as the
	// Message.ReplyTo of the answer, so an adapter may put a handle there.
	MessageID string
	At        time.Time
}

// Action is a press on a button the gateway sent.
type Action struct {
	// EventID is the platform's id for this press (callback query id,
	// interaction id), for dedupe.
	EventID  string
	Location Location
	User     User
	// Token is the opaque Button.Token of the pressed button (≤ MaxTokenLen
	// bytes).
	Token string
	// Message is the message that carried the button.
	Message MessageRef
	// RoleAllowed and RoleAdmin are Inbound's: the platform says the
	// presser is allowed / an admin by role (Discord allow_roles /
	// admin_roles), so an admin by role may decide others' asks and choose
	// Always, like a configured admin.
	RoleAllowed, RoleAdmin bool
}

// ActionReply is what the presser of a button is told. Text empty means
// "acknowledge silently".
type ActionReply struct {
	Text string
	// Alert asks for a modal alert instead of a passing toast where the
	// platform distinguishes them (Telegram show_alert).
	Alert bool
}

// MessageRef names a message an adapter sent, for later edits.
type MessageRef struct {
	Location Location
	// ID is the platform message id (Telegram message_id, Slack ts,
	// Discord snowflake), opaque to the gateway.
	ID string
}

// String returns "location#id", for logs.
func (r MessageRef) String() string { return r.Location.String() + "#" + r.ID }

// Capabilities says what a surface can show, so the gateway branches on
// abilities rather than platform names.
type Capabilities struct {
	// MaxMessageLen is the longest message in the Dialect's measure (see
	// Chunk); 0 means no limit.
	MaxMessageLen int
	// Edit: messages can be edited (the gateway streams a turn by editing
	// its message; without it only the final message is sent). Buttons:
	// inline buttons with callbacks (without them an approval says how to
	// answer with /approve and /deny). Typing: a typing indicator (Typer),
	// renewed every TypingEvery while a turn runs. Ephemeral: messages only
	// one user sees (EphemeralSender), used for refusals. Upload: files can
	// be sent (without it the gateway names the file instead). RichParts:
	// the surface shows reasoning, tool output and plans as their own
	// elements (web, ACP), so the gateway includes Reasoning parts and
	// ToolActivity.Output for it.
	Edit, Buttons, Typing, Ephemeral, Upload, RichParts bool
	// TypingEvery is how long one Typing call lasts on the platform
	// (Telegram: about 5 s, so 4 s); 0 means one call per turn.
	TypingEvery time.Duration
	// Dialect is the markup the surface's text uses.
	Dialect Dialect
}

// Dialect is a platform text markup.
type Dialect int

// Dialects. Plain is the zero value: text without markup.
const (
	Plain           Dialect = iota // no markup, no escaping
	SlackMrkdwn                    // Slack mrkdwn
	TelegramHTML                   // Telegram Bot API parse_mode=HTML
	DiscordMarkdown                // Discord's Markdown
	HTML                           // HTML for the web page
)

var dialectNames = [...]string{"plain", "slack", "telegram", "discord", "html"}

// String returns the dialect's name: plain, slack, telegram, discord or html.
func (d Dialect) String() string {
	if d < 0 || int(d) >= len(dialectNames) {
		return fmt.Sprintf("Dialect(%d)", int(d))
	}
	return dialectNames[d]
}

// ParseDialect is the inverse of Dialect.String.
func ParseDialect(s string) (Dialect, error) {
	for i, n := range dialectNames {
		if n == s {
			return Dialect(i), nil
		}
	}
	return Plain, fmt.Errorf("unknown dialect %q: use plain, slack, telegram, discord or html", s)
}

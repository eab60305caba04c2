package channels

import (
	"context"
	"time"
)

// Optional adapter abilities beyond Typer, Deleter and EphemeralSender (see
// adapter.go). The gateway discovers each by type assertion on the Adapter;
// an adapter implements only those its platform has.

// DirectMessenger is an optional Adapter ability: name, or open, the
// one-to-one chat with a user, so the gateway can post there (approval routes
// like "slack:U012ABCDEF", pairing replies). Telegram: the user id is the
// chat id; Slack: conversations.open; Discord: create DM. It returns a
// permanent error when the platform refuses (the user blocked the bot, has
// DMs closed).
type DirectMessenger interface {
	DirectLocation(ctx context.Context, userID string) (Location, error)
}

// Command is one entry of the gateway's command table, as adapters register
// it natively (Telegram setMyCommands, Slack slash-command help, Discord
// application commands). The gateway owns the table; adapters only show it.
type Command struct {
	// Name is the command without its slash: lowercase letters, digits and
	// '_', at most 32 characters (every platform's limit).
	Name string
	// Args describes the arguments for people, e.g. "[id] [reason]"; empty
	// when the command takes none.
	Args string
	// Description is one line, at most 100 characters.
	Description string
	// AdminOnly: only the channel's admins may use it (platforms that can
	// hide commands by permission may do so).
	AdminOnly bool
}

// CommandRegistrar is an optional Adapter ability: register the gateway's
// commands with the platform so its clients offer them. The gateway calls it
// after Start began, and again with backoff when it fails. A command a user
// invokes natively (a Slack slash command, a Discord interaction) reaches the
// gateway as an ordinary Inbound whose Text is "/name args", so the gateway
// has one dispatch for typed and native commands.
type CommandRegistrar interface {
	RegisterCommands(ctx context.Context, cmds []Command) error
}

// LiveSurface is an optional Adapter ability for surfaces that render a turn
// live from its typed events (the web page, ACP, the HTTP API) instead of
// edited snapshots. When an adapter implements it, the gateway sends it every
// event of a turn running for one of its locations, in the order the turn
// produced them, and does not stream snapshot edits to it; the turn's final
// message still arrives through Send or Edit (durably, from the outbox), so
// a surface that missed live events (a restart) still shows the outcome.
//
// Live is called from one goroutine per turn and must not block for long:
// a surface buffers and drops (or coalesces) what it cannot deliver in time.
// Events of one turn never interleave with each other; events of different
// turns (different conversations) may arrive concurrently.
type LiveSurface interface {
	Live(ctx context.Context, ev LiveEvent)
}

// LiveKind names a live event.
type LiveKind string

// Live event kinds.
const (
	LiveTurnStart LiveKind = "turn_start"      // a turn began (InputID names its input)
	LiveText      LiveKind = "text_delta"      // Text: a piece of the answer (OTID names the slice)
	LiveReasoning LiveKind = "reasoning_delta" // Text: a piece of the model's thinking
	LiveMessage   LiveKind = "message"         // Text: a complete assistant slice (UUID, OTID)
	LiveTool      LiveKind = "tool"            // Tool: a call started, or its status changed
	LivePlan      LiveKind = "plan"            // Plan: the agent's to-do list now
	LiveApproval  LiveKind = "approval"        // Approval: a call waits for a person
	LiveTask      LiveKind = "task"            // Task: a sub-agent task started, progressed or ended
	LiveTurnEnd   LiveKind = "turn_end"        // StopReason, Usage, Error: the turn ended
)

// LiveEvent is one event of a running turn. Identity follows the stream
// rules of DESIGN §7: RunID+SeqID is a replay cursor within a step, UUID a
// message id, OTID an assistant or reasoning slice (keyed with Kind),
// ToolActivity.ID the tool call.
type LiveEvent struct {
	Kind           LiveKind
	Location       Location
	ConversationID string
	TurnID         string
	// InputID is the id of the input message the turn answers (a queued
	// message, a resume, a task notification).
	InputID string
	RunID   string
	SeqID   int64
	UUID    string
	OTID    string
	Text    string
	At      time.Time

	Tool     *ToolActivity // LiveTool
	Plan     *Plan         // LivePlan
	Approval *ApprovalCard // LiveApproval
	Task     *TaskActivity // LiveTask

	StopReason string // LiveTurnEnd: end_turn, requires_approval, cancelled, error, max_steps, max_tokens
	Usage      Usage  // LiveTurnEnd
	Steps      int    // LiveTurnEnd: model calls the turn made
	Error      string // LiveTurnEnd: what went wrong, for people

	// Wire is the agent core's event in the stream-json wire form (DESIGN
	// §7: type, runId, seqId, uuid, otid, toolCallId, …), for surfaces that
	// relay the one event stream as is; empty for turn_start and turn_end.
	Wire []byte
}

// Usage counts a turn's tokens.
type Usage struct {
	InputTokens, OutputTokens, CachedTokens int64
}

// ApprovalCard is a pending ask as a surface shows it: what would run, why it
// asks, and the buttons (whose tokens decide it through OnAction).
type ApprovalCard struct {
	ID         string // the approval id (for typed /approve ID)
	ToolCallID string
	Tool       string // tool name
	Summary    string // one line: what would run
	Reason     string // why the policy asks
	Diff       string // unified diff of an edit, if any
	Workdir    string
	Rule       string // the rule Always would store ("" when not offered)
	Requester  string // qualified id of who started the turn
	Approvers  string // who may decide, for people ("telegram:1 or an admin")
	Task       string // the sub-agent task asking, if any
	Buttons    Buttons
	Expires    time.Time
}

// TaskActivity is one sub-agent task as a surface shows it.
type TaskActivity struct {
	ID          string
	Type        string // sub-agent type, e.g. explore
	Description string
	Status      string // running, waiting, done, failed, cancelled
	Progress    string // the latest summarized child activity
	Duration    time.Duration
}

// Decider is implemented by handlers that let a surface decide an approval
// by its id rather than by a button token (stream-json approval lines, ACP
// permission answers, the terminal's prompt). Adapters discover it by type
// assertion on the Handler they were started with. It goes through the same
// decide path as a button press: the same approver checks, the same
// transaction.
type Decider interface {
	Decide(ctx context.Context, d Decision) (DecisionReply, error)
}

// Decision actions.
const (
	DecideAllow  = "allow"
	DecideAlways = "always"
	DecideDeny   = "deny"
)

// Decision is one answer to an approval.
type Decision struct {
	ApprovalID string
	Action     string // DecideAllow, DecideAlways or DecideDeny
	Reason     string
	User       User     // who decides (on this surface)
	Location   Location // where they decide
}

// DecisionReply is what a decision did.
type DecisionReply struct {
	Text    string // for the person, plain text
	Refused bool   // not allowed, already decided or expired
	Decided bool   // the decision took effect
	Resumed bool   // it was the turn's last ask: the turn continues
	// Wire is the approval_decision event in the stream-json wire form,
	// when the decision took effect.
	Wire []byte
}

// ClientTools is an optional Adapter ability of surfaces whose client can
// do tool work itself: an ACP editor reads and writes files as it sees
// them (unsaved buffers included) and runs commands in its terminal. The
// gateway hands it to the turns of the adapter's locations; the agent's
// configuration (acp_client_tools) says which tools use it, and the
// permission policy applies either way.
type ClientTools interface {
	// ClientAbilities says what the client at loc offers; zero when there
	// is no client there (a session that ended).
	ClientAbilities(loc Location) ClientAbilities
	ReadTextFile(ctx context.Context, loc Location, path string) (string, error)
	WriteTextFile(ctx context.Context, loc Location, path, content string) error
	// RunCommand runs a shell command line in the client's terminal and
	// waits for it; when ctx ends the command is killed and the output so
	// far returned with ctx's error.
	RunCommand(ctx context.Context, loc Location, c ClientCommand) (ClientCommandResult, error)
}

// ClientAbilities is what a client offers.
type ClientAbilities struct {
	ReadFiles, WriteFiles, Terminal bool
}

// ClientCommand is a command for a client's terminal.
type ClientCommand struct {
	Command     string // a shell command line
	Cwd         string // absolute
	OutputLimit int    // bytes of output the client keeps (the end)
}

// ClientCommandResult is how a client's command ended.
type ClientCommandResult struct {
	Output    string
	Truncated bool   // the beginning was dropped
	ExitCode  int    // -1 when killed by a signal
	Signal    string // the signal's name, when killed by one
}

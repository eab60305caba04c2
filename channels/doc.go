// Package channels is the contract between the gateway and the chat surfaces
// (Slack, Discord, Telegram, the web page, ACP), and the rendering every chat
// surface shares.
//
// The contract: an [Adapter] turns platform events into normalized [Inbound]
// messages and [Action] button presses, hands them to a [Handler], and sends
// or edits platform-neutral [Message] values made of typed parts ([Text],
// [Reasoning], [ToolActivity], [Plan], [Buttons], [Attachment], [Notice]).
// A [Location] names where people talk; its String form is a stable binding
// key. Optional abilities (typing indicators, deleting, ephemeral replies) are
// small interfaces discovered by type assertion, the way http.Flusher is.
// Adapters report failures with typed errors ([RateLimitError], [Permanent])
// so the outbox can retry without knowing platforms.
//
// The rendering: [Render] parses Markdown once with goldmark and writes it in
// a platform [Dialect] with that dialect's escaping, so text from users and
// models cannot inject markup or mass mentions. [Chunk] splits rendered text
// under a platform limit at paragraph, line or word boundaries, closing and
// reopening code blocks and Telegram HTML tags across the split.
// [RenderMessage] combines both for a whole [Message].
//
// Concurrency: the package has no mutable state. Render, Chunk,
// RenderMessage, ParseLocation and the other functions are safe to call from
// any number of goroutines. Values of the contract types are plain data; share
// them read-only. Implementations of [Adapter] must allow Send, Edit and the
// optional abilities to be called concurrently with each other and with a
// running Start; a [Handler] must allow concurrent OnInbound and OnAction
// calls, since platforms deliver events concurrently.
package channels

// Package telegram is the Telegram channel: a channels.Adapter over the Bot
// API, using github.com/go-telegram/bot for requests and its own getUpdates
// loop for receiving.
//
// Receiving. In polling mode (the default) Start runs a getUpdates long-poll
// loop; the offset moves past an update only after Handler.OnInbound
// returned nil for it, so a process that dies re-reads what it had not
// handed over (the gateway dedupes on EventID, the update_id). The
// library's own loop is not used: it acknowledges updates before handlers
// run. Network and server failures are retried forever with exponential
// backoff (capped at 30 s), logged once per outage and once on recovery. In
// webhook mode Start calls setWebhook with the secret and waits;
// WebhookHandler checks X-Telegram-Bot-Api-Secret-Token (401 otherwise) and
// answers 200 only after the handler accepted the update.
//
// Converting. Updates become channels.Inbound (text or caption with the
// bot's own mention removed, "/cmd@thisbot args" normalized to "/cmd args"
// and counted as a mention, a command addressed to another bot dropped,
// DM / mention / reply-to-bot flags, forum topics as Location.ThreadID,
// photos downloaded into attachments within Options.MaxDownload) or channels.Action (button
// presses, always answered with answerCallbackQuery). Messages from bots and
// other update kinds are acknowledged and dropped. The conversion is a pure
// function of the update JSON and the bot's identity.
//
// Abilities. Typing (sendChatAction, which lasts about 5 s: Capabilities
// says TypingEvery 4 s). RegisterCommands puts the gateway's command table
// in Telegram's "/" menu with setMyCommands (Start registers nothing).
// DirectLocation names the private chat with a user, whose chat id is the
// user id: the same Location the user's own DMs arrive at.
//
// Sending. Messages are rendered to Telegram HTML by channels.RenderMessage
// and split under 4,096 characters; buttons become an inline keyboard of our
// own minimal type on the first message (the library's type serializes
// copy_text, which Telegram rejects); attachments go out as documents. Every
// call for a location in a forum topic carries its message_thread_id.
// Errors are classified for the outbox: 429 as *channels.RateLimitError with
// retry_after, other 4xx as channels.Permanent, the rest transient. The bot
// token, which is part of every request URL, is removed from every error
// and log line.
//
// Concurrency: Send, Edit, Typing, Capabilities and WebhookHandler may be
// called from any number of goroutines, also while Start runs. Start may be
// called once; in polling mode it calls the Handler from its own goroutine,
// one update at a time in update order; in webhook mode the Handler runs on
// the HTTP server's goroutines, concurrently as Telegram delivers. The
// adapter starts no goroutines of its own (the library starts one per
// request to stream its body, which ends with the request).
//
// Memory: the adapter keeps nothing per chat or user.
package telegram

// Package discord is the Discord channel: a channels.Adapter over the
// gateway websocket and the REST API, using github.com/bwmarrin/discordgo
// for the connection and requests.
//
// Receiving. Start opens the gateway with the intents it needs (guilds,
// guild messages, direct messages and the privileged message content) and
// owns reconnecting: discordgo's own reconnect loop is off, and after each
// disconnect Start reopens with backoff, which resumes the session when
// Discord allows it (missed events are replayed) and identifies afresh
// otherwise. Liveness is judged by heartbeat acks and traffic: when neither
// arrived for Options.StaleAfter the connection is closed and reopened.
// Dispatches are queued by discordgo's reading goroutine (SyncEvents) and
// handed over by one worker in gateway order; a message the handler does
// not accept is retried with backoff (the gateway has no redelivery).
// Interactions go to a few other workers so they are acknowledged within
// Discord's 3 s even while a message is being handled.
//
// Catch-up. A fresh IDENTIFY does not replay what was posted while the bot
// was away. After every READY the worker asks Options.Locations for the
// bound locations and reads each one's messages after the newest it had
// seen there (at most Options.CatchUp ago), oldest first, through the same
// path as live messages. EventID is the message id, so a message handed
// over again (after a crash) is dropped by the gateway's dedupe; within one
// process the adapter remembers what it handed over.
//
// Converting. MESSAGE_CREATE becomes channels.Inbound unless it is the
// bot's own message, another bot's (unless AllowBots), a system message, or
// outside Guilds or AllowedChannels (a thread counts as its parent). The
// bot's mention is removed from the text, other mentions read "@name". A
// member's roles set Inbound.RoleAllowed / RoleAdmin from AllowRoles /
// AdminRoles. Images are downloaded (bounded) into attachments, other files
// become a note. With AutoThread, a mention in a text channel opens a thread
// from that message before it is handed over; the thread has the message's
// id, so opening it again (a retry, a catch-up) finds it. The conversion is
// a pure function of the JSON, the channel and the bot's identity.
//
// Sending. Messages are rendered in Discord Markdown and split under 2,000
// characters; buttons become action rows whose custom_id is the opaque
// token; attachments are uploaded; allowed_mentions parses nothing, so text
// cannot ping @everyone, roles or users. Each message carries a nonce derived
// from Message.Key with enforce_nonce, so a send retried after a crash
// posts once. Button presses are acknowledged with a deferred update and the
// handler's reply reaches the presser as an ephemeral followup. Slash
// commands are acknowledged with an ephemeral message and handed over as
// "/name args" with an interaction handle as MessageID; the reply the
// gateway sends with that handle as ReplyTo replaces the acknowledgement
// (while the interaction's token lives, 15 minutes; it stays in memory).
//
// Rate limits. discordgo's limiter sleeps without a context for as long as
// Discord says; here the adapter's HTTP transport reads the rate-limit
// headers instead (and hides them from discordgo): a request for an
// exhausted bucket waits for its reset when that is at most
// Options.RateLimitWait and otherwise fails at once with
// *channels.RateLimitError, as a 429 does, so the outbox retries later and
// no worker blocks for long. Other 4xx answers are channels.Permanent. The
// bot token and interaction tokens are removed from every error and log.
//
// Concurrency: Send, Edit, Delete, Typing, DirectLocation, RegisterCommands
// and Capabilities may be called from any number of goroutines, also while
// Start runs. Start may be called once. It calls the Handler's OnInbound
// from one goroutine for messages (in gateway order) and from up to four
// others for commands and OnAction; all of them end before Start returns.
// discordgo's own reading and heartbeat goroutines end when the session is
// closed, which Start does before returning.
//
// Memory: nothing grows with the number of chats. Channel facts (4,096,
// each for an hour) and DM channels by user (10,000, a day) are bounded
// caches (channels.Cache: least recently used out first, idle entries
// expire); the received log
// keeps the last 20,000 message ids and the newest id per channel (20,000,
// then it starts over and catch-up falls back to its window); interaction
// tokens expire after 15 minutes; exhausted rate-limit buckets are kept
// while they last (past 4,096, the expired ones go).
package discord

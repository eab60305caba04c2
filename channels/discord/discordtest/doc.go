// Package discordtest is a fake Discord for tests: the real discordgo
// client, pointed at it through a host-rewriting HTTP transport (discordgo's
// endpoints are fixed at init), talks to its REST API under /api/v9 and to
// its gateway websocket under /gw/ on 127.0.0.1.
//
// Gateway: GET /gateway names the fake's ws:// URL; a connection gets op 10
// hello, must IDENTIFY (op 2, with the bot token and at least
// RequiredIntents, else it is closed with 4004 or 4014) and then receives
// READY and dispatches with sequence numbers; heartbeats (op 1) are
// acknowledged (op 11) unless StopAcks. A RESUME (op 6) of the current
// session replays the dispatches after the client's sequence and sends
// RESUMED; of an unknown session it gets op 9 (invalid session).
// DropConnection cuts the connection (the session survives);
// InvalidateSession forgets the session, so what is posted until the next
// IDENTIFY is never dispatched and only catch-up can find it.
//
// REST: channels, channel messages (create with JSON or multipart uploads,
// nonce with enforce_nonce returning the message already made, edit, delete,
// list with ?after=), threads from messages (a second one for the same
// message is refused with 160004, as on Discord), typing, DMs, guild
// members, interaction callbacks (one per interaction) and webhook
// followups and edits, application commands (bulk overwrite). Buttons are
// validated the way Discord does (rows of at most five, custom ids of at
// most 100 characters). FailNextRateLimited and FailNextError make the next
// message create or edit fail (429 with retry_after in body and headers, or
// a JSON error code); ExhaustBucket makes a success say the bucket is
// empty; HoldCreate makes a message create wait for its answer (the message
// is made) until released or the client goes away. GET /users/@me and
// /applications/@me answer the bot and its application (whose flags say
// whether the message content intent is on: NoMessageContentIntent turns
// it off, and then an IDENTIFY asking for it is closed with 4014). Every
// REST call is recorded with the time it was answered.
//
// The bot's own messages are dispatched back to it (MESSAGE_CREATE), as
// Discord does, so loop protection is exercised by every test.
//
// Concurrency: all methods are safe for concurrent use. Wait, WaitGateway,
// WaitCallback and WaitFollowup block on a channel that is closed on every
// change until their condition holds or the context ends; nothing sleeps.
// The server is closed by a t.Cleanup registered in New.
package discordtest

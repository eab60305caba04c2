// Package slacktest is a fake Slack for tests: the real slack-go client
// (Web API and Socket Mode) talks to it over HTTP and a websocket on
// 127.0.0.1, exactly as it would to slack.com.
//
// Web API (URL() is the api_url): auth.test, apps.connections.open (with
// the app token; it answers a ws://127.0.0.1 URL), chat.postMessage,
// chat.update, chat.delete, chat.postEphemeral, chat.getPermalink,
// conversations.open, conversations.replies, conversations.history,
// users.info, and the external upload flow (files.getUploadURLExternal, the
// upload URL, files.completeUploadExternal); private file URLs serve the
// bot token only; response URLs record ephemeral answers. Requests may be
// forms or JSON, the token a form field or a bearer header; every call is
// recorded (Calls). Answers to the bot token carry its scopes in
// X-OAuth-Scopes (DefaultScopes, or SetScopes). The fake checks what Slack
// checks and what switchboard relies on: every block must have a unique
// block_id, sections at most
// 3,000 characters, buttons at most 75-character labels with unique
// action_ids, text at most 40,000 characters; thread_ts must name a thread
// root. FailNext makes the next call of a method answer 429 with a
// Retry-After or ok:false with an error code; RefuseReplies makes a root
// answer cannot_reply_to_message.
//
// Socket Mode (the default delivery): the websocket (the upgrade accepts
// Origin https://api.slack.com) sends hello, pings every PingEvery, and
// envelopes, and reads acknowledgements. An events_api envelope not
// acknowledged within RedeliverAfter is delivered again, three times at
// most, with retry_attempt counted, as a new envelope of the same event.
// Silence makes the connection go deaf while staying open (no pings, no
// envelopes; events emitted meanwhile are lost), Drop closes it, Refresh
// sends Slack's disconnect request. DeliverHTTP switches to the HTTP Events
// API instead: events, interactions and slash commands are posted signed
// with SigningSecret to the adapter's routes, events again until they are
// answered 200 (X-Slack-Retry-Num).
//
// People act with Post (a message, with the app_mention and message events
// Slack emits; InThread, WithFile, Quietly, ByBot), Press/Click (a button
// press, whose reply Press waits for) and Command (/switchboard). The bot's
// own posts emit message events too, as on Slack.
//
// Concurrency: all methods are safe for concurrent use. WaitFor blocks on
// a channel closed at every change, until its condition holds or the context
// ends; nothing sleeps. The server and every goroutine it started are
// stopped by a t.Cleanup registered in New.
package slacktest

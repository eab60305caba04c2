// Package telegramtest is a fake Telegram Bot API server for tests: the real
// go-telegram/bot client (and switchboard's own getUpdates loop) talk to it
// over HTTP on 127.0.0.1, exactly as they would to api.telegram.org.
//
// It serves /bot<token>/<method> for the methods switchboard uses (getMe,
// getUpdates with long polling and offsets, sendMessage, editMessageText,
// sendChatAction, sendDocument, answerCallbackQuery, setMyCommands (checked
// as Telegram does), deleteMyCommands, setWebhook, deleteWebhook,
// getWebhookInfo, getFile) and /file/bot<token>/<path> for file downloads.
// Requests may be multipart forms, URL-encoded forms or JSON.
// Every call is recorded (method, parameters, uploaded files, time, the
// status answered) so tests can assert what went over the wire, for example
// that every call for a forum topic carried the same message_thread_id.
//
// Tests queue updates with AddMessage, AddCallback or AddUpdate; an update
// stays pending, and is answered again to every getUpdates call (a client
// that restarts without an offset gets it again), until a call with a
// higher offset acknowledges it, as on Telegram. Adding an update with an
// id that was already acknowledged delivers it again (a platform retry)
// until a later call's offset passes it once more. After DeliverWebhooks
// the server instead POSTs pending updates to the webhook the bot set, with
// its secret, until one is answered 2xx, as Telegram does in webhook mode;
// Acked tells either acknowledgement. FailNext makes the next call of a
// method fail, e.g. with 429 and parameters.retry_after.
//
// NewServer starts the same fake outside tests (the crash campaign in
// bench/crash keeps it running across restarts of the binary). Each Call
// records the id of the message a send created, and each Message when it
// was sent, so a checker can tell which call made which message.
//
// The server also behaves like Telegram where switchboard relies on it:
// editing a message to identical content answers 400 "message is not
// modified", editing an unknown message answers 400 "message to edit not
// found", and an inline keyboard button carrying copy_text or a
// callback_data outside 1..64 bytes is rejected with 400.
//
// WaitPolling tells a test that the client is connected and long-polling.
//
// Concurrency: all methods are safe for concurrent use. WaitCall, WaitOffset
// and WaitPolling block on a channel that is closed on every change, until
// their condition holds or the context ends; nothing polls, and the only
// timed wait is the webhook's retry delay after a refused post. The server
// is closed by a t.Cleanup registered in New; pending long polls and webhook
// posts return at once when it closes, and Close waits for the webhook
// delivery goroutine.
package telegramtest

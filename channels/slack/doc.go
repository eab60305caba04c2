// Package slack is the Slack channel: a channels.Adapter over Slack's Web
// API and either Socket Mode or the HTTP Events API, using
// github.com/slack-go/slack (with its socketmode package) for requests and
// the websocket.
//
// Receiving. In Socket Mode (the default) Start opens a connection with the
// app-level token and handles its envelopes: an Events API envelope is
// acknowledged only after Handler.OnInbound returned nil for it (a refused
// one is left for Slack to deliver again); button presses and slash
// commands are acknowledged at once, within Slack's 3 s, and handled after.
// The connection is judged alive by traffic, not by its state: every byte
// read (Slack's pings included) counts, and a connection silent for
// Options.IdleTimeout is replaced, as is one that fails or that Slack asks
// to close, with exponential backoff. In HTTP mode Routes gives the handlers
// for POST /slack/events, /slack/interactions and /slack/commands; every
// request's signature is checked over the raw body with the signing secret
// (401 for a missing or wrong one, or a timestamp more than five minutes
// off), url_verification is answered, an event gets 200 only after the
// gateway accepted it (500 otherwise, so that Slack retries), and retries
// of an accepted event are acknowledged without handing it over again.
//
// Catch-up. After every connection (and once at start in HTTP mode) the
// adapter asks Options.Threads for the conversations the gateway has bound
// and reads what was posted there while events were not arriving: replies
// in bound threads (conversations.replies) and top-level messages of bound
// DMs (conversations.history), within Options.CatchUpWindow; it hands over
// those it did not hand over already. A live event waits while a pass
// lists the bound conversations, and one for a conversation the pass has
// not reached yet catches that conversation up first (behind.go), so what
// was missed reaches the gateway before what was posted since.
//
// Order. Slack does not promise event order (a retried event comes late;
// HTTP requests race), so a reply in a new thread can come before the
// mention that starts it. The gateway ignores such a reply
// (channels.Queued.Ignored: no mention, a thread it does not know); the
// adapter holds it, neither accepted nor seen, and when a later message in
// that thread is taken, hands over again the held replies posted after it,
// oldest first (orphans.go).
//
// Converting. A message's EventID is its channel and ts, so the app_mention
// and message events of one post, Slack's retries and a catch-up read of it
// all dedupe to one. A top-level post in a channel becomes a thread
// conversation rooted at itself (Location.ThreadID is the root ts), replies
// carry the root's ts, DMs are the chat itself (a thread in a DM is its own
// location). The bot's mention is removed from the text and sets Mentioned;
// a reply in a thread the bot started or posted in sets ReplyToBot; other
// mentions, channel links and links become readable text with display
// names (users.info, cached). Messages of bots (this one included), edits,
// deletions and other subtypes are dropped. Images a user posts are
// downloaded (Options.MaxDownload) into attachments. A slash command
// "/switchboard status now" becomes an Inbound whose text is "/status now";
// "/switchboard help" is answered from the registered command table. The
// conversion is a pure function of the payload and the bot's identity
// (convert.go).
//
// Sending. Text is rendered to mrkdwn by channels.RenderMessage and posted
// as section blocks (MaxMessageLen 3,000, one section); buttons become
// actions blocks whose every block has a block_id and whose buttons carry
// the opaque token as value and action_id. A press's reply reaches only
// the presser (response_url, else chat.postEphemeral). Attachments are
// uploaded into the thread with the external upload API. A reply Slack
// refuses to thread (cannot_reply_to_message) is posted in the channel with
// a link to the thread. A keyed send (Message.Key) carries its key in the
// message metadata, and a send the gateway marks as maybe posted already
// (Message.MaybeSentSince: the process died between the post and recording
// it, or the answer was lost) first reads the conversation since then and
// reuses the bot's post with that key, so a retried approval card is not
// posted twice (resend.go). Errors are classified for the outbox: 429 as
// *channels.RateLimitError with Retry-After (the SDK's own retries are off),
// refusals as channels.Permanent, the rest transient. The tokens and the
// signing secret are removed from every error and log line.
//
// Concurrency: Send, Edit, Delete, SendEphemeral, DirectLocation,
// RegisterCommands, Capabilities and the Routes handlers may be called from
// any number of goroutines, also while Start runs. Start may be called once.
// In Socket Mode it calls OnInbound from one goroutine, one event at a time
// in arrival order, and OnAction and command OnInbound calls from four
// workers; catch-up runs on its own goroutine, so OnInbound calls may be
// concurrent. In HTTP mode events are handed over on the HTTP server's
// goroutines. Every goroutine the adapter starts ends before Start returns
// (the SDK's websocket reader ends when its connection closes, just after).
//
// Memory: nothing grows with the number of chats. The adapter's memories
// are LRU maps whose entries also expire (cache.go): display names (2,000,
// 1 h), accepted event and message ids (20,000, 2 h), threads the bot
// posted in (5,000, 7 days), the newest message seen per thread for
// catch-up (5,000, 2 h); held thread replies (500 threads, 20 each, 10 min;
// only the draft is held: images are fetched again when handed over).
package slack

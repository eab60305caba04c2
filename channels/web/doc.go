// Package web is the local web page channel: a page served on the gateway's
// HTTP listener where one person (the owner) talks with agents, with the same
// Approve / Always / Deny buttons the chat apps show.
//
// The adapter is a [channels.Adapter] named "web". A chat on the page is the
// location {Channel: "web", Account: "local", ChatID: id}: "New chat" makes a
// random id; a conversation listed by the handler's
// [channels.HistoryHandler] is opened with its ConversationInfo.ID as the
// chat id, and that id is what the page passes back to History. So the
// gateway should list a conversation that already has a web chat under that
// chat id, and bind an unbound web location whose chat id names one of the
// person's conversations to that conversation. The person is
// the identity "web:" + Options.User.
//
// HTTP surface ([Adapter.Handler]): GET / (the page, or a login form),
// POST /login, GET /?token=… (a Jupyter-style one-time link that sets the
// session cookie and redirects to /), /static/… (embedded JS and CSS), and
// the JSON API under /api/ that needs the session cookie; every POST there
// also needs the header "X-Switchboard: 1" so another origin cannot forge
// one without a CORS preflight. Live updates are Server-Sent Events on
// GET /api/chats/{chat}/events: every Send or Edit pushes the whole current
// state of that message, identified by an event id "<epoch>-<seq>" so an
// EventSource that reconnects gets exactly what changed since.
//
// Abilities: Typer (the page shows "typing…" for 8 s, so TypingEvery is
// 6 s), Deleter, EphemeralSender, and CommandRegistrar: the gateway's
// command table becomes the page's "/" hints. Send cuts a message over
// MaxMessageLen into several with channels.Paginate.
//
// Trust: text from users and models reaches the DOM through textContent,
// except two fields rendered server-side by [channels.Render] in the HTML
// dialect, which escapes every literal and keeps only safe links: a Text
// part's "html" and a tool activity's "title_html". The page sets them with
// innerHTML; nothing else is ever parsed as HTML. The Content-Security-Policy
// forbids inline and foreign scripts, so a rendering bug still cannot run
// script.
//
// Concurrency: Send, Edit, Delete, SendEphemeral, Typing, SetNotice and
// Capabilities may be called from any goroutine, also while Start runs and
// while the HTTP handler serves requests; one mutex guards the in-memory
// state (sessions, the last 200 messages of each chat, files).
// Memory is bounded, not per chat: at most 64 logins, 500 chats, 200
// messages per chat and 4,000 over all chats (past that, and after 15 idle
// minutes, chats nobody watches are dropped, least recently changed first;
// their pages reload them from History), files only of kept messages, and
// failed logins of at most 4,096 client addresses for a minute.
// Send and Edit never block on the page: subscribers get a one-slot wake-up
// signal and pull the messages that changed, so a slow or gone browser costs
// nothing and cannot miss a change (changes coalesce). The adapter starts no
// goroutines of its own; each event stream runs in its request's goroutine
// and ends when the client goes away or Start's context ends. Start stores
// the handler and returns when its context ends; before Start and after it
// returned, API calls that need the handler answer 503.
package web

// Package acp is the surface of `switchboard acp`: the Agent Client
// Protocol on stdio, so editors (Zed, JetBrains, Emacs agent-shell, Neovim
// plugins) drive the same agents as the chat apps. It is an adapter like
// the others, on the local channel ("local"; the person in the editor is
// local:<OS user name>): one ACP session is one conversation, and the ACP
// sessionId is the conversation id, stable across session/new,
// session/list and session/load. A prompt goes to the gateway's queue as
// an ordinary Inbound; the turn's typed events come back live
// (channels.LiveSurface) and become session updates; an ask becomes
// session/request_permission, answered through the gateway's one decide
// path (channels.Decider), so the same ask can be answered on the web page
// or a phone instead, and the prompt continues either way.
//
// The protocol mapping of ACP version 1 lives in the v1 files (v1.go,
// v1_content.go, v1_peer.go): the acp.Agent methods, content blocks to message text and attachments, live
// events to session/update kinds, approval cards to permission options,
// stop reasons. Everything else (sessions, the prompt's life, commands) is
// protocol-neutral, so a mapping of a later revision can sit beside it.
//
// Concurrency: Start serves the connection until its context ends; the
// SDK runs each request on its own goroutine. Each session has one pump
// goroutine that turns live events into updates in the order the turn
// produced them, so Live (called by the gateway from one goroutine per
// turn) never blocks on the editor. Send, Edit, Live and the optional
// abilities may be called concurrently. Done is closed when the editor
// closes the connection.
package acp

package discord

import (
	"net/url"
	"strconv"
)

// Permission is one Discord permission the bot needs, with why.
type Permission struct {
	Name string
	Bit  uint // the permission is 1 << Bit
	Why  string
}

// Permissions are exactly the permissions the adapter uses, and why.
func Permissions() []Permission {
	return []Permission{
		{"View Channels", 10, "see the channels it answers in"},
		{"Send Messages", 11, "answer in channels"},
		{"Attach Files", 15, "send the files the agent attaches"},
		{"Read Message History", 16, "catch up on messages posted while it was offline"},
		{"Create Public Threads", 35, "open a thread for a conversation (auto_thread)"},
		{"Send Messages in Threads", 38, "answer in threads and forum posts"},
	}
}

// Scopes are the OAuth2 scopes of the invite: the bot user, and slash
// commands.
func Scopes() []string { return []string{"bot", "applications.commands"} }

// InviteURL is the OAuth2 URL that adds the application's bot to a server
// with Permissions and Scopes.
func InviteURL(applicationID string) string {
	var bits uint64
	for _, p := range Permissions() {
		bits |= 1 << p.Bit
	}
	q := url.Values{
		"client_id":   {applicationID},
		"scope":       {Scopes()[0] + " " + Scopes()[1]},
		"permissions": {strconv.FormatUint(bits, 10)},
	}
	return "https://discord.com/oauth2/authorize?" + q.Encode()
}

package channels

import (
	"fmt"
	"strings"
)

// Location is where people talk: a channel (the adapter's Name), the bot
// account on it, a chat (a Telegram chat, a Slack or Discord channel, a web
// session) and optionally a thread (a Slack thread ts, a Telegram forum topic,
// a Discord thread). The zero ThreadID means the chat itself.
type Location struct {
	Channel  string
	Account  string
	ChatID   string
	ThreadID string
}

// String returns the location as "channel:account:chat[:thread]" with ':'
// and '%' (and control characters) in each field percent-encoded. The form is
// stable: it is stored as a binding key. ParseLocation reverses it.
func (l Location) String() string {
	var b strings.Builder
	b.WriteString(escapeField(l.Channel))
	b.WriteByte(':')
	b.WriteString(escapeField(l.Account))
	b.WriteByte(':')
	b.WriteString(escapeField(l.ChatID))
	if l.ThreadID != "" {
		b.WriteByte(':')
		b.WriteString(escapeField(l.ThreadID))
	}
	return b.String()
}

// Chat returns the location without its thread.
func (l Location) Chat() Location {
	l.ThreadID = ""
	return l
}

// IsZero reports whether l is the zero Location.
func (l Location) IsZero() bool { return l == Location{} }

// ParseLocation parses the form Location.String produces. Channel and ChatID
// must be non-empty; Account and ThreadID may be empty.
func ParseLocation(s string) (Location, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return Location{}, fmt.Errorf("parse location %q: want channel:account:chat[:thread]", s)
	}
	fields := make([]string, 4)
	for i, p := range parts {
		f, err := unescapeField(p)
		if err != nil {
			return Location{}, fmt.Errorf("parse location %q: %w", s, err)
		}
		fields[i] = f
	}
	l := Location{Channel: fields[0], Account: fields[1], ChatID: fields[2], ThreadID: fields[3]}
	if l.Channel == "" || l.ChatID == "" {
		return Location{}, fmt.Errorf("parse location %q: channel and chat id must not be empty", s)
	}
	if len(parts) == 4 && l.ThreadID == "" {
		return Location{}, fmt.Errorf("parse location %q: empty thread id; omit the last ':' instead", s)
	}
	return l, nil
}

func escapeField(s string) string {
	if !strings.ContainsFunc(s, needsEscape) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(rune(c)) {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func needsEscape(r rune) bool { return r == ':' || r == '%' || r < 0x20 || r == 0x7f }

func unescapeField(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", fmt.Errorf("bad escape at byte %d", i)
		}
		b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// QualifiedID names a platform user across channels: "telegram:4242",
// "slack:U012ABCDEF", "web:alice".
func QualifiedID(channel, id string) string { return channel + ":" + id }

// ParseIdentity splits a qualified id "channel:id". The channel is a
// lowercase name ([a-z][a-z0-9_-]*); the id is everything after the first
// ':' and must not be empty.
func ParseIdentity(s string) (channel, id string, err error) {
	channel, id, ok := strings.Cut(s, ":")
	if !ok || id == "" || !validChannelName(channel) {
		return "", "", fmt.Errorf("parse identity %q: want channel:id, e.g. telegram:4242", s)
	}
	return channel, id, nil
}

func validChannelName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

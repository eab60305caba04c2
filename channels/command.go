package channels

import "strings"

// CommandName returns the command a message text invokes ("/status args" →
// "status"), or "" when the text is no command: a first word of a slash and
// [a-z0-9_] only, so that a path such as "/etc/hosts" is a message. Surfaces
// and the gateway use the same rule.
func CommandName(text string) string {
	fields := strings.Fields(text)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "/") {
		return ""
	}
	name := strings.ToLower(fields[0][1:])
	if name == "" || len(name) > 32 {
		return ""
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return ""
		}
	}
	return name
}

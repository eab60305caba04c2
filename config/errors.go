package config

import (
	"fmt"
	"strings"
)

// Error is one problem found in a config file. Every parse and validation
// error of a file carries the file name, the 1-based line and the dotted key
// it is about, so the user can go straight to it.
type Error struct {
	File string // the file name as given to Parse (or the config path for Load)
	Line int    // 1-based; 0 when the problem has no place in a file (e.g. an environment variable)
	Key  string // dotted key path such as "agents.main.permission_mode"; "" for syntax errors
	Msg  string // what is wrong and, where it helps, what to do

	// unknown marks an unknown key; it is printed as "unknown key KEY" so the
	// message reads naturally. Msg then holds only an optional hint.
	unknown bool
}

// Error formats the problem as "file:line: key: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.unknown {
		b.WriteString("unknown key ")
		b.WriteString(e.Key)
		if e.Msg != "" {
			b.WriteString(" ")
			b.WriteString(e.Msg)
		}
		return b.String()
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one config file, in line order. Its Error
// method prints one problem per line. errors.As finds the individual *Error
// values through Unwrap.
type Errors []*Error

// Error prints one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

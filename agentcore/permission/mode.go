package permission

import (
	"fmt"
	"strings"
)

// Mode is how permissive a policy is once the invariants and the deny and ask rules have had
// their say.
type Mode string

// The permission modes.
const (
	// ModeStandard auto-allows reads in the workspace and read-only shell commands; edits ask.
	ModeStandard Mode = "standard"
	// ModeAcceptEdits is ModeStandard plus writes and edits inside the workspace.
	ModeAcceptEdits Mode = "acceptEdits"
	// ModeUnrestricted allows every call that no invariant, deny rule or ask rule stops.
	ModeUnrestricted Mode = "unrestricted"
	// ModeStrict auto-allows nothing: every call not allowed by a rule asks.
	ModeStrict Mode = "strict"
)

// ParseMode validates a mode name from configuration. The empty string means ModeStandard.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case "":
		return ModeStandard, nil
	case ModeStandard, ModeAcceptEdits, ModeUnrestricted, ModeStrict:
		return m, nil
	}
	return "", fmt.Errorf("unknown permission mode %q: use one of standard, acceptEdits, unrestricted, strict", s)
}

// Decision is the outcome of a permission check.
type Decision string

// The decisions.
const (
	// Allow runs the call.
	Allow Decision = "allow"
	// Deny refuses the call; the reason goes back to the model.
	Deny Decision = "deny"
	// Ask parks the turn until a person decides.
	Ask Decision = "ask"
)

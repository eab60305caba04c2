package permission

import "strings"

// subcommandPrograms are the programs whose second word is a subcommand, the only ones an
// "Always" approval stores a prefix rule for. Each lists the subcommands whose next word is a
// subcommand again (docker compose up, npm run build).
var subcommandPrograms = map[string][]string{
	"git":       {"stash", "remote", "submodule", "worktree", "notes", "bisect", "lfs"},
	"go":        {"mod", "work", "tool"},
	"npm":       {"run", "run-script"},
	"pnpm":      {"run"},
	"yarn":      {"run"},
	"cargo":     nil,
	"make":      nil,
	"docker":    {"compose", "container", "image", "network", "volume", "buildx", "system", "context"},
	"podman":    {"compose", "container", "image", "network", "volume", "system"},
	"kubectl":   {"config", "rollout", "auth"},
	"helm":      {"repo", "plugin"},
	"terraform": {"state", "workspace"},
	"gh":        {"pr", "issue", "repo", "run", "workflow", "release"},
	"mvn":       nil,
	"gradle":    nil,
	"dotnet":    nil,
	"rustup":    {"toolchain", "target", "component"},
}

// suggestBash returns the rule an "Always" approval of c would store. For a program with a
// subcommand table it is the program and its subcommand as a prefix (git push origin main →
// Bash(git push:*)), stopping before the first word that is not a plain subcommand name: a
// flag (git -C x push), a path or "." never form a prefix. Every other command — find,
// interpreters, shells, wrappers like sudo or xargs, rm and other destructive programs — stores
// the exact command, so approving it once more never allows different arguments. Nothing is
// suggested when no rule could match the command (variable assignments, expansions, words a
// rule cannot spell).
func suggestBash(c *shellCmd) string {
	if c.other != "" || c.assigns || len(c.args) == 0 {
		return ""
	}
	words := make([]string, len(c.args))
	for i, w := range c.args {
		if !w.plain || w.glob || w.lit == "" || strings.ContainsAny(w.lit, " \t\n\r*?()\\\"'`$;&|<>") {
			return ""
		}
		words[i] = w.lit
	}
	if nested, ok := subcommandPrograms[words[0]]; ok && len(words) > 1 && isSubcommand(words[1]) {
		n := 2
		if contains(nested, words[1]) && len(words) > 2 && isSubcommand(words[2]) {
			n = 3
		}
		return Rule{Tool: toolBash, Pattern: strings.Join(words[:n], " ") + ":*"}.String()
	}
	return Rule{Tool: toolBash, Pattern: strings.Join(words, " ")}.String()
}

// isSubcommand reports a word that can only be a subcommand name: a letter, then letters,
// digits, -, _ or :. Flags, paths, "." and values like key=value are not.
func isSubcommand(w string) bool {
	for i, r := range w {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '_' || r == ':'):
		default:
			return false
		}
	}
	return w != ""
}

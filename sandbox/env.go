package sandbox

import (
	"maps"
	"slices"
	"strings"
)

// IsSecretName reports whether an environment variable name looks like it
// holds a credential: *_TOKEN, *_KEY, *_SECRET, *_PASSWORD, *_API_KEY,
// *_CREDENTIALS, AWS_SECRET_ACCESS_KEY and the like, case-insensitively.
// PWD and OLDPWD (the working directory) are not secrets; DB_PWD is.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	if up == "PWD" || up == "OLDPWD" {
		return false
	}
	for _, part := range strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if isSecretWord(part) {
			return true
		}
		// Run-together components: GITHUBTOKEN, AWSSECRETACCESSKEY.
		for _, suf := range [...]string{"TOKEN", "SECRET", "PASSWORD", "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY"} {
			if strings.HasSuffix(part, suf) {
				return true
			}
		}
	}
	return false
}

// isSecretWord reports whether one name component (split at '_', '-', '.')
// marks a variable as holding a credential.
func isSecretWord(part string) bool {
	switch part {
	case "TOKEN", "TOKENS", "KEY", "KEYS", "APIKEY", "SECRET", "SECRETS",
		"PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PASSPHRASE", "PWD",
		"CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "COOKIE", "PRIVATE":
		return true
	}
	return false
}

// allowedName reports whether a gateway variable may pass to a tool process.
// Everything else is dropped: the gateway's environment is where bot tokens
// and provider keys live, and names alone cannot tell a harmless variable
// from a credential (DATABASE_URL, SSH_AUTH_SOCK).
func allowedName(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE",
		"TERM", "COLORTERM", "NO_COLOR", "TZ", "TMPDIR", "PWD", "HOSTNAME",
		"SSL_CERT_FILE", "SSL_CERT_DIR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// validEnvEntry rejects names and values that exec would refuse or that
// would change the meaning of the entry.
func validEnvEntry(name, value string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00") && !strings.Contains(value, "\x00")
}

// ScrubEnv builds the environment of a tool process. From environ (the
// gateway's own, as from os.Environ) it keeps only an allowlist of harmless
// variables (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM,
// COLORTERM, NO_COLOR, TZ, TMPDIR, PWD, HOSTNAME, SSL_CERT_FILE,
// SSL_CERT_DIR), and drops any whose name [IsSecretName] or whose value
// contains a secret known to secrets. Then it adds extra (the agent's
// configured env), which may use any name but is still dropped when its
// value contains a known secret: configuration must not smuggle the
// gateway's own credentials into a tool. Extra entries override inherited
// ones. Malformed entries are dropped. The result is in a stable order:
// inherited variables in their original order, then extra sorted by name.
// It is never nil, so exec never falls back to the gateway's environment.
func ScrubEnv(environ []string, extra map[string]string, secrets *Redactor) []string {
	out := []string{}
	index := map[string]int{}
	put := func(name, value string) {
		kv := name + "=" + value
		if i, ok := index[name]; ok {
			out[i] = kv
			return
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !validEnvEntry(name, value) || !allowedName(name) || IsSecretName(name) || secrets.Contains(value) {
			continue
		}
		put(name, value)
	}
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		value := extra[name]
		if !validEnvEntry(name, value) || secrets.Contains(value) {
			continue
		}
		put(name, value)
	}
	return out
}

package config

import (
	"fmt"
	"strings"
)

// IsSecretName reports whether an environment variable name looks like it
// holds a secret: it ends in _TOKEN, _KEY, _SECRET or _PASSWORD (or is one of
// TOKEN, KEY, SECRET, PASSWORD), in any case. Values of such variables that a
// config references are returned by [Config.Secrets].
func IsSecretName(name string) bool {
	upper := strings.ToUpper(name)
	for _, suffix := range [...]string{"_TOKEN", "_KEY", "_SECRET", "_PASSWORD"} {
		if strings.HasSuffix(upper, suffix) || upper == suffix[1:] {
			return true
		}
	}
	return false
}

// expansion records one ${VAR} reference that was replaced.
type expansion struct {
	name, value string
}

// expand replaces every ${VAR} in s with the variable's value from env and
// every $$ with a single $. A $ followed by anything else is kept as it is. An
// unset variable, an unterminated ${ or an invalid name is an error; its
// message is meant to follow "file:line: key: ".
func expand(s string, env Env) (string, []expansion, error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	var used []expansion
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", nil, fmt.Errorf("unterminated ${ in %q: close it with } or write $$ for a literal $", s)
			}
			name := s[i+2 : i+2+end]
			if !validEnvName(name) {
				return "", nil, fmt.Errorf("${%s} is not a valid variable reference: use ${NAME} with letters, digits and _, or $$ for a literal $", name)
			}
			value, ok := env(name)
			if !ok {
				return "", nil, fmt.Errorf("environment variable %s is not set (referenced as ${%s}): set it, or write $$ for a literal $", name, name)
			}
			used = append(used, expansion{name: name, value: value})
			b.WriteString(value)
			i += 2 + end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), used, nil
}

// validEnvName reports whether name is a portable environment variable name.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

package permission

import (
	"fmt"
	"strings"
)

// memorySpelling is one way a command line may write the memory root, with this agent's own
// directory relative to it.
type memorySpelling struct {
	root string // e.g. "/home/u/.switchboard/memory" or "~/.switchboard/memory"
	own  string // e.g. "agent-a"; "" when this agent's memory is not under the root
}

func (ck *checker) memorySpellings() []memorySpelling {
	if !ck.root.ok {
		return nil
	}
	own := func(root, mem string) string {
		if ck.mem.ok && under(mem, root) && mem != root {
			return strings.TrimPrefix(mem[len(root):], "/")
		}
		return ""
	}
	sp := []memorySpelling{{ck.root.lex, own(ck.root.lex, ck.mem.lex)}}
	if ck.root.real != ck.root.lex {
		sp = append(sp, memorySpelling{ck.root.real, own(ck.root.real, ck.mem.real)})
	}
	if ck.home != "" && under(ck.root.lex, ck.home) && ck.root.lex != ck.home {
		rel := ck.root.lex[len(ck.home):]
		o := own(ck.root.lex, ck.mem.lex)
		for _, h := range []string{"~", "$HOME", "${HOME}"} {
			sp = append(sp, memorySpelling{h + rel, o})
		}
	}
	return sp
}

// isNameByte reports bytes that continue a path component name in shell text.
func isNameByte(c byte) bool {
	return c == '.' || c == '_' || c == '-' || c == '~' || c == '+' || c == '@' ||
		c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// mentionsOtherMemory scans raw text (a command line, an unknown tool's argument) for a path
// into the memory root that is not this agent's own directory. It is a second line of defence
// behind the parsed checks: it also catches paths inside scripts (python -c "open('...')"),
// and it treats the root itself, a wildcard or an expansion right under it as another agent's.
func (ck *checker) mentionsOtherMemory(s string) (string, bool) {
	for _, sp := range ck.memorySpellings() {
		for from := 0; from < len(s); {
			i := strings.Index(s[from:], sp.root)
			if i < 0 {
				break
			}
			i += from
			from = i + 1
			if i > 0 && (isNameByte(s[i-1]) || s[i-1] == '$' || s[i-1] == '{') && !(sp.root[0] == '/' && s[i-1] == '/') {
				continue // part of a longer name: /x/home/... is another path
			}
			j := i + len(sp.root)
			if j < len(s) && s[j] != '/' && isNameByte(s[j]) {
				continue // /memory-old is a sibling of the root, not the root
			}
			rest := ""
			if j < len(s) && s[j] == '/' {
				rest = strings.TrimLeft(s[j:], "/")
			}
			if sp.own != "" && strings.HasPrefix(rest, sp.own) && componentEnds(rest[len(sp.own):]) {
				continue
			}
			end := j
			for end < len(s) && s[end] != ' ' && s[end] != '\n' && s[end] != '\t' && s[end] != ';' && s[end] != '|' && s[end] != '&' && end-i < 200 {
				end++
			}
			return fmt.Sprintf("%s is under the memory root and is not this agent's memory directory", s[i:end]), true
		}
	}
	return "", false
}

// componentEnds reports whether text right after a directory name ends that name for sure:
// the name is followed by /, the end, a separator, or a closing quote. A glob character, an
// expansion, an escape or a quote that glues more text on could make it a different name.
func componentEnds(after string) bool {
	continues := func(c byte) bool {
		return isNameByte(c) || strings.IndexByte("*?[{$\\`", c) >= 0
	}
	if after == "" || after[0] == '/' {
		return true
	}
	switch c := after[0]; {
	case c == '"' || c == '\'':
		return len(after) == 1 || after[1] == '/' || !continues(after[1]) && after[1] != '"' && after[1] != '\''
	case continues(c):
		return false
	}
	return true
}

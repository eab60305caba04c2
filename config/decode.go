package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// maxIndexDepth bounds how deep indexLines records key paths. Our deepest
// key is agents.NAME.env.VAR (4), plus one for array elements.
const maxIndexDepth = 8

// pathSep joins key parts into position-index keys. It cannot occur in a key
// part that means anything to us, and a collision would only cost a line
// number, never correctness.
const pathSep = "\x00"

// document is a parsed TOML file: its values as go-toml decodes them, plus the
// line where every key (and every array element) appears.
type document struct {
	root  map[string]any
	lines map[string]int
}

// parseDocument decodes data and indexes the line of every key. Syntax and
// TOML-semantic errors (duplicate keys, redefined tables) come back as *Error
// with the line go-toml reports.
func parseDocument(name string, data []byte) (*document, error) {
	root := map[string]any{}
	if err := toml.Unmarshal(data, &root); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			return nil, &Error{File: name, Line: max(line, 1), Key: displayKey(de.Key()), Msg: "invalid TOML: " + strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return nil, &Error{File: name, Line: 1, Msg: "invalid TOML: " + err.Error()}
	}
	return &document{root: root, lines: indexLines(data)}, nil
}

// indexLines walks the document with go-toml's low-level parser and records,
// for every key path (parts joined by pathSep), the line it first appears on.
// Array elements are recorded as path + pathSep + "#i". Implicitly created
// tables get the line of the first key or header that creates them.
func indexLines(data []byte) map[string]int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineOf := func(n *unstable.Node) int {
		if n == nil {
			return 0
		}
		off := int(n.Raw.Offset)
		if n.Raw.Length == 0 && off == 0 {
			return 0
		}
		return sort.Search(len(starts), func(i int) bool { return starts[i] > off })
	}

	lines := map[string]int{}
	// record notes the line of prefix+parts and of every intermediate
	// table it creates. Paths deeper than maxIndexDepth are not indexed (no
	// key of ours is that deep; errors there use the nearest indexed
	// ancestor's line), which keeps hostile nesting linear.
	record := func(prefix string, depth int, parts []string, line int) (string, int) {
		k := prefix
		for _, part := range parts {
			if depth >= maxIndexDepth {
				return k, depth
			}
			if depth > 0 {
				k += pathSep
			}
			k += part
			depth++
			if _, ok := lines[k]; !ok && line > 0 {
				lines[k] = line
			}
		}
		return k, depth
	}
	keyOf := func(it unstable.Iterator) ([]string, int) {
		var parts []string
		line := 0
		for it.Next() {
			if line == 0 {
				line = lineOf(it.Node())
			}
			parts = append(parts, string(it.Node().Data))
		}
		return parts, line
	}

	var walkKeyValue func(prefix string, depth int, kv *unstable.Node)
	walkKeyValue = func(prefix string, depth int, kv *unstable.Node) {
		parts, line := keyOf(kv.Key())
		path, depth := record(prefix, depth, parts, line)
		if depth >= maxIndexDepth {
			return
		}
		v := kv.Value()
		switch v.Kind {
		case unstable.InlineTable:
			it := v.Children()
			for it.Next() {
				if n := it.Node(); n.Kind == unstable.KeyValue {
					walkKeyValue(path, depth, n)
				}
			}
		case unstable.Array:
			// Only the elements' own lines matter (arrays of strings);
			// nothing of ours nests inside array elements.
			it := v.Children()
			i := 0
			for it.Next() {
				n := it.Node()
				if n.Kind == unstable.Comment {
					continue
				}
				elemLine := lineOf(n)
				if elemLine == 0 {
					elemLine = line
				}
				record(path, depth, []string{"#" + strconv.Itoa(i)}, elemLine)
				i++
			}
		}
	}

	var p unstable.Parser
	p.Reset(data)
	current, depth := "", 0
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			parts, line := keyOf(e.Key())
			current, depth = record("", 0, parts, line)
		case unstable.ArrayTable:
			// No key of ours is an array of tables; decoding reports the
			// array at the header's line, so keys below need no lines.
			parts, line := keyOf(e.Key())
			record("", 0, parts, line)
			current, depth = "", maxIndexDepth
		case unstable.KeyValue:
			if depth < maxIndexDepth {
				walkKeyValue(current, depth, e)
			}
		}
	}
	return lines
}

// displayKey formats key parts as a dotted TOML key, quoting parts that are
// not bare keys.
func displayKey(parts []string) string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if strings.HasPrefix(p, "#") && len(out) > 0 {
			// Array element: show as key[i].
			out[len(out)-1] += "[" + p[1:] + "]"
			continue
		}
		if isBareKey(p) {
			out = append(out, p)
		} else {
			out = append(out, strconv.Quote(p))
		}
	}
	return strings.Join(out, ".")
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// decoder turns a document into typed values, collecting every problem with
// its line. It expands ${VAR} in every string it hands out and remembers the
// values of secret-looking variables.
type decoder struct {
	file    string
	env     Env
	doc     *document
	errs    Errors
	secrets []string
}

// errorf records a problem about the key at path.
func (d *decoder) errorf(path []string, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: d.line(path), Key: displayKey(path), Msg: fmt.Sprintf(format, args...)})
}

// line returns the line of path, or of its nearest ancestor that has one, or
// 1 when nothing does (an empty document).
func (d *decoder) line(path []string) int {
	for n := len(path); n > 0; n-- {
		if l, ok := d.doc.lines[strings.Join(path[:n], pathSep)]; ok {
			return l
		}
	}
	return 1
}

// table reads the keys of one TOML table. Every key read is marked known;
// done reports the keys that were never asked for as unknown.
type table struct {
	d     *decoder
	path  []string
	m     map[string]any
	known map[string]bool
}

func (d *decoder) table(path []string, m map[string]any) *table {
	return &table{d: d, path: path, m: m, known: map[string]bool{}}
}

func (t *table) keyPath(key string) []string {
	return append(append([]string(nil), t.path...), key)
}

// get returns the raw value of key and marks key known.
func (t *table) get(key string) (any, bool) {
	t.known[key] = true
	v, ok := t.m[key]
	return v, ok
}

// has reports whether key is present (and marks it known).
func (t *table) has(key string) bool {
	_, ok := t.get(key)
	return ok
}

// line returns the line of key in this table.
func (t *table) line(key string) int { return t.d.line(t.keyPath(key)) }

// errorf records a problem about key in this table.
func (t *table) errorf(key string, format string, args ...any) {
	t.d.errorf(t.keyPath(key), format, args...)
}

// done reports every key present but never read as unknown, suggesting the
// closest known key for likely typos.
func (t *table) done() {
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		if !t.known[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := t.keyPath(k)
		hint := ""
		if s := suggest(k, t.known); s != "" {
			hint = fmt.Sprintf("(did you mean %s?)", s)
		}
		t.d.errs = append(t.d.errs, &Error{File: t.d.file, Line: t.d.line(path), Key: displayKey(path), Msg: hint, unknown: true})
	}
}

// expandAt expands ${VAR} in s, the value at path, recording errors and
// secrets.
func (d *decoder) expandAt(path []string, s string) (string, bool) {
	out, used, err := expand(s, d.env)
	if err != nil {
		d.errorf(path, "%v", err)
		return "", false
	}
	for _, u := range used {
		if IsSecretName(u.name) && u.value != "" {
			d.secrets = append(d.secrets, u.value)
		}
	}
	return out, true
}

// str reads an optional string; ok is false when it is absent or wrong.
func (t *table) str(key string) (string, bool) {
	v, present := t.get(key)
	if !present {
		return "", false
	}
	s, isString := v.(string)
	if !isString {
		t.errorf(key, "expected a string, got %s", describe(v))
		return "", false
	}
	return t.d.expandAt(t.keyPath(key), s)
}

// boolean reads a bool, returning def when it is absent or wrong.
func (t *table) boolean(key string, def bool) bool {
	v, present := t.get(key)
	if !present {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		t.errorf(key, "expected true or false, got %s", describe(v))
		return def
	}
	return b
}

// positiveInt reads an integer that must be at least 1, returning def when it
// is absent or wrong.
func (t *table) positiveInt(key string, def int) int {
	v, present := t.get(key)
	if !present {
		return def
	}
	n, ok := v.(int64)
	if !ok {
		t.errorf(key, "expected an integer, got %s", describe(v))
		return def
	}
	if n < 1 || n > math.MaxInt32 {
		t.errorf(key, "%d is out of range: use a whole number from 1 to %d", n, math.MaxInt32)
		return def
	}
	return int(n)
}

// duration reads a duration string such as "12h" or "1s" that must be
// positive, returning def when it is absent or wrong.
func (t *table) duration(key string, def time.Duration) time.Duration {
	s, ok := t.str(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.errorf(key, "%q is not a duration: write it like \"12h\", \"30m\" or \"1s\"", s)
		return def
	}
	if d <= 0 {
		t.errorf(key, "%q must be longer than zero", s)
		return def
	}
	return d
}

// strings reads an array of strings; with allowInts, integers are accepted
// too and kept as their decimal text (for numeric user ids). Each element is
// passed to check (with its path) when check is not nil.
func (t *table) strings(key string, allowInts bool, check func(path []string, s string) bool) []string {
	v, present := t.get(key)
	if !present {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		t.errorf(key, "expected an array of strings, got %s", describe(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		path := t.keyPath(key)
		path = append(path, "#"+strconv.Itoa(i))
		var s string
		switch e := e.(type) {
		case string:
			var ok bool
			if s, ok = t.d.expandAt(path, e); !ok {
				continue
			}
		case int64:
			if !allowInts {
				t.d.errorf(path, "expected a string, got %s", describe(e))
				continue
			}
			s = strconv.FormatInt(e, 10)
		default:
			t.d.errorf(path, "expected a string, got %s", describe(e))
			continue
		}
		if check != nil && !check(path, s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// sub reads a nested table. It returns nil when key is absent or not a table
// (the latter is recorded as an error).
func (t *table) sub(key string) *table {
	v, present := t.get(key)
	if !present {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.errorf(key, "expected a table, got %s", describe(v))
		return nil
	}
	return t.d.table(t.keyPath(key), m)
}

// describe names a decoded TOML value's type (and short scalars' values) for
// error messages.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date/time"
	}
}

// suggest returns the known key closest to k when it is a plausible typo.
func suggest(k string, known map[string]bool) string {
	best, bestDist := "", 3
	for cand := range known {
		d := editDistance(k, cand)
		if d < bestDist || d == bestDist && cand < best {
			best, bestDist = cand, d
		}
	}
	if bestDist > 2 || bestDist >= len(k) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt32
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// skipRest marks every key of the table known: a disabled channel's other
// keys are neither checked nor reported.
func (t *table) skipRest() {
	for k := range t.m {
		t.known[k] = true
	}
}

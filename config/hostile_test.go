package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseHostileNesting parses documents built to make a careless indexer
// quadratic or worse: deep arrays, deep inline tables, long dotted keys. Each
// must come back with an error naming a line, not hang or crash.
func TestParseHostileNesting(t *testing.T) {
	const n = 5000
	docs := map[string]string{
		"nested arrays":        "[agents.main]\nallow = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		"nested inline tables": "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n",
		"long dotted key":      strings.Repeat("k.", n) + "k = 1\n",
		"long table header":    "[" + strings.Repeat("k.", n) + "k]\n",
		"many tables":          manyTables(1000),
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("h.toml", []byte(doc), t.TempDir(), MapEnv(nil))
			if err == nil || !strings.HasPrefix(err.Error(), "h.toml:") {
				t.Fatalf("Parse error = %.200v; want an error naming h.toml:LINE", err)
			}
		})
	}
}

// manyTables makes n agents, each with one misspelt key.
func manyTables(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[agents.a%d]\nmax_stepz = 1\n", i)
	}
	return b.String()
}

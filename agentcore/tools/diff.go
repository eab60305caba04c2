package tools

import (
	"fmt"
	"strings"
)

// Diff limits: a diff is for people and the model to glance at, not to
// apply, so large ones are cut.
const (
	diffContext   = 2    // unchanged lines around each change
	diffMaxLines  = 80   // lines of hunk body shown
	diffMaxLCS    = 4e6  // cells of the LCS table before falling back to -/+ blocks
	diffMaxInline = 4000 // characters of a diff inside a tool result
)

type diffOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// unifiedDiff renders the change from before to after as unified-diff
// hunks headed by name. It is empty when nothing changed.
func unifiedDiff(name, before, after string) string {
	if before == after {
		return ""
	}
	a, b := splitLines(before), splitLines(after)
	ops := diffLines(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	shown := 0
	for _, h := range hunks(ops) {
		if shown >= diffMaxLines {
			out.WriteString("… (diff cut)\n")
			break
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", h.aStart, h.aLen, h.bStart, h.bLen)
		for _, op := range h.ops {
			if shown >= diffMaxLines {
				break
			}
			out.WriteByte(op.kind)
			out.WriteString(clip(op.text, 500))
			out.WriteByte('\n')
			shown++
		}
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffLines is a line diff: common prefix and suffix are trimmed and the
// middle is aligned by longest common subsequence when small enough, else
// shown as a removed block followed by an added block.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if float64(len(ma)+1)*float64(len(mb)+1) <= diffMaxLCS {
		ops = append(ops, lcsOps(ma, mb)...)
	} else {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

func lcsOps(a, b []string) []diffOp {
	n, m := len(a), len(b)
	// t[i][j] is the LCS length of a[i:] and b[j:].
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i++
			j++
		case t[i+1][j] >= t[i][j+1]:
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', b[j]})
	}
	return ops
}

type hunk struct {
	aStart, aLen, bStart, bLen int
	ops                        []diffOp
}

// hunks groups changed lines with diffContext lines of context, merging
// groups whose context would overlap.
func hunks(ops []diffOp) []hunk {
	var out []hunk
	aLine := make([]int, len(ops)) // 1-based line numbers before each op
	bLine := make([]int, len(ops))
	ai, bi := 1, 1
	for k, op := range ops {
		aLine[k], bLine[k] = ai, bi
		if op.kind != '+' {
			ai++
		}
		if op.kind != '-' {
			bi++
		}
	}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(k-diffContext, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// A run of context: stop if it is longer than two contexts.
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		h := hunk{aStart: aLine[start], bStart: bLine[start], ops: ops[start:end]}
		for _, op := range h.ops {
			if op.kind != '+' {
				h.aLen++
			}
			if op.kind != '-' {
				h.bLen++
			}
		}
		if h.aLen == 0 {
			h.aStart--
		}
		if h.bLen == 0 {
			h.bStart--
		}
		out = append(out, h)
		k = end
	}
	return out
}

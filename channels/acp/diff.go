package acp

import (
	"path/filepath"
	"strings"
)

// fileDiff is one file's change in a unified diff, as the old and the new
// text of its hunks (what editors show as a diff). NewFile: the file did
// not exist before.
type fileDiff struct {
	Path     string
	Old, New string
	NewFile  bool
}

// hunkGap stands for the unchanged lines between two hunks, on both sides.
const hunkGap = "⋯"

// parseUnified splits a unified diff (the tools' Diff of an edit) into its
// files. Relative paths are resolved against workspace. Lines it does not
// understand are ignored: the diff is for people to glance at.
func parseUnified(diff, workspace string) []fileDiff {
	var out []fileDiff
	var cur *fileDiff
	var old, neu []string
	hunks := 0
	finish := func() {
		if cur != nil && hunks > 0 {
			cur.Old, cur.New = strings.Join(old, "\n"), strings.Join(neu, "\n")
			out = append(out, *cur)
		}
		cur, old, neu, hunks = nil, nil, nil, 0
	}
	lines := strings.Split(diff, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			finish()
			from, to := diffPath(l[4:]), diffPath(lines[i+1][4:])
			p := to
			if p == "" || p == "/dev/null" {
				p = from
			}
			if p == "" || p == "/dev/null" {
				continue
			}
			if !filepath.IsAbs(p) && workspace != "" {
				p = filepath.Join(workspace, p)
			}
			cur = &fileDiff{Path: p, NewFile: from == "/dev/null"}
			i++
		case cur == nil:
		case strings.HasPrefix(l, "@@"):
			if hunks > 0 {
				old, neu = append(old, hunkGap), append(neu, hunkGap)
			}
			if hunks == 0 && strings.HasPrefix(l, "@@ -0,0 ") {
				cur.NewFile = true
			}
			hunks++
		case hunks == 0:
		case strings.HasPrefix(l, "+"):
			neu = append(neu, l[1:])
		case strings.HasPrefix(l, "-"):
			old = append(old, l[1:])
		case strings.HasPrefix(l, " "):
			old, neu = append(old, l[1:]), append(neu, l[1:])
		case l == "":
			// A trailing newline, or an empty context line stripped by a
			// sender: nothing to show.
		case strings.HasPrefix(l, "…"):
			old, neu = append(old, hunkGap), append(neu, hunkGap)
		}
	}
	finish()
	return out
}

// diffPath is a path of a ---/+++ header without its a/ or b/ prefix and
// without a trailing timestamp.
func diffPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

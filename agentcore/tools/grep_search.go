package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// rgSearcher searches with ripgrep, run directly (no shell) with
// --no-config so a user's ripgrep config cannot change the results, and
// --sort=path so records arrive in the same order as searchGo's walk.
func rgSearcher(rg string) searcher {
	return func(ctx context.Context, q grepQuery, env *agentcore.ToolEnv, emit func(grepRecord) bool) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		args := []string{"--no-config", "--color=never", "--sort=path", "--null", "--with-filename",
			"--glob=!node_modules"}
		if q.glob != "" {
			args = append(args, "--glob="+q.glob)
		}
		switch q.mode {
		case modeFiles:
			args = append(args, "--files-with-matches")
		case modeCount:
			args = append(args, "--count")
		case modeContent:
			args = append(args, "--line-number", "--no-heading")
		}
		args = append(args, "--regexp="+q.pattern, "--", q.root)
		cmd := exec.CommandContext(ctx, rg, args...)
		// Globs are matched relative to rg's working directory: make that
		// the search root, as searchGo does.
		cmd.Dir = q.root
		if fi, err := os.Stat(q.root); err == nil && !fi.IsDir() {
			cmd.Dir = filepath.Dir(q.root)
		}
		cmd.Env = env.Env
		if cmd.Env == nil {
			cmd.Env = []string{} // not the gateway's environment
		}
		cmd.WaitDelay = 2 * time.Second
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return fmt.Errorf("rg: %w", err)
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start rg: %w", err)
		}
		stopped, perr := parseRG(bufio.NewReaderSize(out, 64<<10), q.mode, emit)
		if stopped {
			cancel() // we have enough; rg need not finish
		}
		werr := cmd.Wait()
		switch {
		case stopped:
			return nil
		case perr != nil:
			return perr
		case werr == nil:
			return nil
		}
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			switch ee.ExitCode() {
			case 1: // no match
				return nil
			case 2:
				msg := strings.TrimSpace(stderr.String())
				if isRGPatternError(msg) {
					return fmt.Errorf("invalid pattern: %s", clip(msg, 600))
				}
				// Exit 2 also means some file could not be read; the
				// results found elsewhere still stand.
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("rg: %w: %s", werr, clip(strings.TrimSpace(stderr.String()), 600))
	}
}

func isRGPatternError(msg string) bool {
	return strings.Contains(msg, "regex parse error") || strings.Contains(msg, "error parsing glob") ||
		strings.Contains(msg, "regex could not be compiled") || strings.Contains(msg, "unrecognized escape")
}

// parseRG reads rg's --null output. It reports whether emit asked to stop.
func parseRG(r *bufio.Reader, mode string, emit func(grepRecord) bool) (stopped bool, err error) {
	for {
		var rec grepRecord
		if mode == modeFiles {
			p, err := r.ReadString(0)
			if p == "" && err != nil {
				return false, ignoreEOF(err)
			}
			rec.path = strings.TrimSuffix(p, "\x00")
		} else {
			line, _, err := readLine(r, 64<<10)
			if line == nil && err != nil {
				return false, ignoreEOF(err)
			}
			path, rest, ok := bytes.Cut(line, []byte{0})
			if !ok {
				continue
			}
			rec.path = string(path)
			if mode == modeCount {
				rec.count, _ = strconv.Atoi(string(rest))
			} else {
				num, text, _ := bytes.Cut(rest, []byte{':'})
				rec.line, _ = strconv.Atoi(string(num))
				rec.text = string(text)
			}
		}
		if !emit(rec) {
			return true, nil
		}
	}
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// searchGo is the search used when rg is not installed: Go regexp
// (RE2, close to ripgrep's syntax), a walk in path order that skips hidden
// entries and node_modules, globs matched with doublestar the way rg
// matches them (a glob without a slash matches the base name), and files
// with a NUL byte skipped as binary. Unlike rg it does not read .gitignore.
func searchGo(ctx context.Context, q grepQuery, _ *agentcore.ToolEnv, emit func(grepRecord) bool) error {
	re, err := regexp.Compile(q.pattern)
	if err != nil {
		return fmt.Errorf("invalid pattern: %w", err)
	}
	negate := strings.HasPrefix(q.glob, "!")
	glob := strings.TrimPrefix(q.glob, "!")
	if glob != "" && !doublestar.ValidatePattern(glob) {
		return fmt.Errorf("invalid glob %q", q.glob)
	}
	seen := 0
	err = filepath.WalkDir(q.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped, as rg does
		}
		seen++
		if seen%256 == 1 && ctx.Err() != nil {
			return ctx.Err()
		}
		if p != q.root {
			name := d.Name()
			if strings.HasPrefix(name, ".") || (d.IsDir() && name == "node_modules") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if glob != "" && p != q.root {
			rel, _ := filepath.Rel(q.root, p)
			target := filepath.ToSlash(rel)
			if !strings.Contains(strings.TrimPrefix(glob, "**/"), "/") {
				target = d.Name()
			}
			ok, _ := doublestar.Match(strings.TrimPrefix(glob, "/"), target)
			if ok == negate {
				return nil
			}
		}
		rec, matched, err := grepFile(p, re, q.mode, emit)
		if err != nil {
			return err
		}
		if matched && q.mode != modeContent && !emit(rec) {
			return errStopWalk
		}
		return nil
	})
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

// grepFile searches one file. In content mode it emits each matching line
// itself; otherwise it returns the file's record.
func grepFile(path string, re *regexp.Regexp, mode string, emit func(grepRecord) bool) (grepRecord, bool, error) {
	rec := grepRecord{path: path}
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 || isBinary(data) {
		return rec, false, nil
	}
	var lines []grepRecord
	for n, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if !re.Match(line) {
			continue
		}
		rec.count++
		if mode == modeFiles {
			return rec, true, nil
		}
		if mode == modeContent {
			lines = append(lines, grepRecord{path: path, line: n + 1, text: string(line)})
		}
	}
	for _, l := range lines {
		if !emit(l) {
			return rec, false, errStopWalk
		}
	}
	return rec, rec.count > 0, nil
}

// errStopWalk ends a walk early once the caller has enough results.
var errStopWalk = errors.New("enough results")

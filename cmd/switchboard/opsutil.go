package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-gw/switchboard/config"
	"github.com/switchboard-gw/switchboard/store"
)

// dbFileName is the database inside the data directory.
const dbFileName = "switchboard.db"

// locateWith finds the data directory and config file like loadConfig,
// with file (a --config flag) taking the place of $SWITCHBOARD_CONFIG when
// it is not empty.
func locateWith(file string, env config.Env) (config.Paths, config.Env, error) {
	if file != "" {
		base := env
		env = func(k string) (string, bool) {
			if k == "SWITCHBOARD_CONFIG" {
				return file, true
			}
			return base(k)
		}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return config.Paths{}, env, fmt.Errorf("find the current directory: %w", err)
	}
	paths, err := config.Locate(env, cwd)
	return paths, env, err
}

// loadConfigWith is loadConfig with an optional --config file.
func loadConfigWith(file string) (*config.Config, error) {
	paths, env, err := locateWith(file, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return config.Load(paths, env)
}

// errNoData means the data directory holds no database yet.
var errNoData = errors.New("no database yet")

// openExistingStore opens the database of the data directory home without
// creating one: commands that only read say "nothing yet" instead of
// leaving an empty database behind.
func openExistingStore(ctx context.Context, home string) (*store.DB, error) {
	path := filepath.Join(home, dbFileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, errNoData)
	} else if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return store.Open(ctx, path)
}

// oneLine shortens s to at most n runes on one line, marking a cut with "…".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// shortAge formats how long ago t was, for listings: "12s", "5m", "3h", "4d".
func shortAge(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// printJSON prints v indented, for --json.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// orDash stands in for an empty table cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

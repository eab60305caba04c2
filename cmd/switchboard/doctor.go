package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/config"
	"github.com/switchboard-gw/switchboard/sandbox"
)

// checkStatus is how one doctor check ended. Only fail makes doctor exit
// non-zero.
type checkStatus string

const (
	statusOK   checkStatus = "ok"
	statusWarn checkStatus = "warn"
	statusFail checkStatus = "fail"
	statusSkip checkStatus = "skip"
)

// checkResult is one line of doctor's report: what was checked, what was
// found and, when something is wrong, what to do.
type checkResult struct {
	Check   string      `json:"check"`
	Status  checkStatus `json:"status"`
	Message string      `json:"message"`
	Fix     string      `json:"fix,omitempty"`
}

// doctorReport is everything doctor found.
type doctorReport struct {
	OK         bool          `json:"ok"`
	ConfigFile string        `json:"configFile,omitempty"`
	Home       string        `json:"home,omitempty"`
	Checks     []checkResult `json:"checks"`
}

// failures counts failed and warned checks.
func (r doctorReport) failures() (fails, warns int) {
	for _, c := range r.Checks {
		switch c.Status {
		case statusFail:
			fails++
		case statusWarn:
			warns++
		}
	}
	return fails, warns
}

// doctor runs the checks. Its dependencies are explicit so tests can point
// them at fakes; newDoctor gives the real ones.
type doctor struct {
	env      config.Env
	http     *http.Client
	lookPath func(string) (string, error)
	// bwrapWorks reports whether bubblewrap can create the sandbox.
	bwrapWorks func() bool
}

func newDoctor() *doctor {
	return &doctor{
		env:        os.LookupEnv,
		http:       &http.Client{Timeout: 5 * time.Second},
		lookPath:   exec.LookPath,
		bwrapWorks: sandbox.BwrapAvailable,
	}
}

func newDoctorCmd(s *streams) *cobra.Command {
	var configFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the set-up and say what to fix: config, data directory, model, channels, tools, port",
		Long: `Check the set-up, one line per check with what to do when something is wrong:
the config, the data directory and its permissions, the model endpoint and
model, each channel's credentials (and webhook in webhook mode), bubblewrap
where an agent is sandboxed, ripgrep, and the [http] listen port.

Exit status: 0 when nothing failed (warnings do not fail), 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := newDoctor().run(cmd.Context(), configFile)
			if asJSON {
				if err := printJSON(s.out, rep); err != nil {
					return err
				}
			} else {
				printDoctor(s.out, rep)
			}
			if !rep.OK {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "config file (default: $SWITCHBOARD_CONFIG, else $SWITCHBOARD_HOME/switchboard.toml)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// run performs every check in order. A config that does not load skips
// the checks that need it (they would only repeat its problem).
func (d *doctor) run(ctx context.Context, configFile string) doctorReport {
	var rep doctorReport
	add := func(rs ...checkResult) { rep.Checks = append(rep.Checks, rs...) }

	paths, env, err := locateWith(configFile, d.env)
	if err != nil {
		add(checkResult{Check: "config", Status: statusFail, Message: err.Error()})
		rep.OK = false
		return rep
	}
	rep.ConfigFile, rep.Home = paths.ConfigFile, paths.Home
	cfg, cfgResult := checkConfig(paths, env)
	add(cfgResult)
	add(checkDataDir(paths.Home))
	if cfg == nil {
		for _, name := range []string{"model", "channels", "sandbox", "listen"} {
			add(checkResult{Check: name, Status: statusSkip, Message: "not checked: the config does not load"})
		}
		add(d.checkRipgrep())
	} else {
		add(d.checkModels(ctx, cfg)...)
		for _, ch := range chatChannels() {
			if ch.enabled(cfg) {
				add(ch.check(ctx, d, cfg)...)
			}
		}
		add(d.checkSandbox(cfg)...)
		add(d.checkRipgrep())
		add(d.checkListen(ctx, cfg.HTTP.Listen))
	}
	fails, _ := rep.failures()
	rep.OK = fails == 0
	return rep
}

// statusLabel is the fixed-width label of a status in the text report.
func statusLabel(s checkStatus) string {
	switch s {
	case statusOK:
		return "ok  "
	case statusWarn:
		return "warn"
	case statusFail:
		return "FAIL"
	}
	return "skip"
}

func printDoctor(w io.Writer, rep doctorReport) {
	width := 0
	for _, c := range rep.Checks {
		width = max(width, len(c.Check))
	}
	for _, c := range rep.Checks {
		line := c.Message
		if c.Fix != "" {
			line += ": " + c.Fix
		}
		fmt.Fprintf(w, "%s  %-*s  %s\n", statusLabel(c.Status), width, c.Check, line)
	}
	fails, warns := rep.failures()
	switch {
	case fails > 0:
		fmt.Fprintf(w, "%d problem(s)%s: fix the FAIL lines, then run `switchboard doctor` again.\n", fails, warnSuffix(warns))
	case warns > 0:
		fmt.Fprintf(w, "Ready, with %d warning(s). Start it with `switchboard serve`.\n", warns)
	default:
		fmt.Fprintln(w, "All checks passed. Start it with `switchboard serve`.")
	}
}

func warnSuffix(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and %d warning(s)", n)
}

// plural returns "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// joinAnd joins names for a message: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

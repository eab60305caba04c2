package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/switchboard-gw/switchboard/config"
)

type initFlags struct {
	configFile     string
	force          bool
	nonInteractive bool
	skipDoctor     bool
	answers        initAnswers
}

func newInitCmd(s *streams) *cobra.Command {
	f := &initFlags{}
	for _, ch := range chatChannels() {
		if ch.init != nil {
			f.answers.channels = append(f.answers.channels, ch.init())
		}
	}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a first switchboard.toml (asking in a terminal, or from flags), then run doctor",
		Long: `Write a commented, valid switchboard.toml to $SWITCHBOARD_HOME (or --config PATH):
the model endpoint and model, the agent's workspace, the listen address and
which chat channels to enable. In a terminal it asks, offering the flags'
values as defaults; otherwise (or with --non-interactive) it takes the flags.
Tokens and keys are written as ${ENV} references, never as values. An
existing file is kept unless --force is given (then it is saved as .bak).
Finally it runs doctor on the new file.

  switchboard init
  switchboard init --non-interactive --model qwen3:8b
  switchboard init --non-interactive --base-url https://api.openai.com/v1 \
      --model gpt-4.1-mini --api-key-env OPENAI_API_KEY --telegram --telegram-user 4242`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInit(cmd.Context(), s, f)
		},
	}
	fl := cmd.Flags()
	a := &f.answers
	fl.StringVar(&f.configFile, "config", "", "where to write (default: $SWITCHBOARD_CONFIG, else $SWITCHBOARD_HOME/switchboard.toml)")
	fl.BoolVar(&f.force, "force", false, "replace an existing file (it is kept as FILE.bak)")
	fl.BoolVar(&f.nonInteractive, "non-interactive", false, "ask nothing, even in a terminal: take the flags")
	fl.BoolVar(&f.skipDoctor, "skip-doctor", false, "do not run doctor after writing")
	fl.StringVar(&a.baseURL, "base-url", "", "the OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else a local Ollama at "+config.OllamaBaseURL+")")
	fl.StringVar(&a.model, "model", "", "the model name (default: $SWITCHBOARD_MODEL)")
	fl.StringVar(&a.apiKeyEnv, "api-key-env", "", "environment variable holding the endpoint's API key (default: none, for a local server)")
	fl.StringVar(&a.workspace, "workspace", "", "the directory the agent's tools work in (default: the current directory)")
	fl.StringVar(&a.permissionMode, "permission-mode", config.ModeStandard, "standard | acceptEdits | unrestricted | strict")
	fl.StringVar(&a.sandbox, "sandbox", config.SandboxNone, "none | bwrap")
	fl.StringVar(&a.listen, "listen", config.DefaultListen, "the [http] listen address")
	fl.StringVar(&a.webTokenEnv, "web-token-env", "", "environment variable holding the web page's login token (default: none, a login link per start)")
	for _, ch := range a.channels {
		ch.flags(fl)
	}
	return cmd
}

func runInit(ctx context.Context, s *streams, f *initFlags) error {
	path, err := initTarget(f.configFile)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil && !f.force {
		return fmt.Errorf("%s exists: keep it (check it with `switchboard doctor`), or pass --force to replace it (the old one is kept as %s.bak)", path, path)
	}
	a := &f.answers
	if err := a.fillDefaults(os.LookupEnv); err != nil {
		return err
	}
	if !f.nonInteractive && isTerminal(s.in) {
		fmt.Fprintf(s.out, "switchboard init writes %s. Press Enter to keep the [default].\n\n", path)
		p := &prompter{r: bufio.NewReader(s.in), w: s.out}
		if err := a.ask(ctx, p); err != nil {
			return err
		}
		fmt.Fprintln(s.out)
	} else if a.model == "" {
		return errors.New("no model given: pass --model NAME (e.g. --model qwen3:8b) or set SWITCHBOARD_MODEL")
	}
	if err := a.check(); err != nil {
		return err
	}
	data := a.render(time.Now())
	if err := validateInitConfig(path, data, a.envRefs(), os.LookupEnv); err != nil {
		return fmt.Errorf("the config init would write does not validate (a bug; please report it): %w", err)
	}
	if err := writeConfigFile(path, []byte(data), f.force); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "Wrote %s.\n", path)
	if f.configFile != "" {
		fmt.Fprintf(s.out, "It is not the default place: run switchboard with SWITCHBOARD_CONFIG=%s (or --config).\n", path)
	}
	for _, r := range a.envRefs() {
		if v, ok := os.LookupEnv(r.name); !ok || v == "" {
			fmt.Fprintf(s.out, "Before serve, put %s in the environment as %s (export %s=…).\n", r.what, r.name, r.name)
		}
	}
	if f.skipDoctor {
		return nil
	}
	fmt.Fprintln(s.out, "\nChecking the set-up (switchboard doctor):")
	printDoctor(s.out, newDoctor().run(ctx, path))
	return nil
}

// initTarget is where init writes: --config, else $SWITCHBOARD_CONFIG,
// else the data directory's switchboard.toml.
func initTarget(flag string) (string, error) {
	if flag == "" {
		flag = os.Getenv("SWITCHBOARD_CONFIG")
	}
	if flag != "" {
		return filepath.Abs(flag)
	}
	// Locate without SWITCHBOARD_CONFIG: it insists the file exists.
	paths, _, err := locateWith("", func(k string) (string, bool) {
		if k == "SWITCHBOARD_CONFIG" {
			return "", false
		}
		return os.LookupEnv(k)
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(paths.Home, config.FileName), nil
}

// fillDefaults completes what flags left empty from the environment.
func (a *initAnswers) fillDefaults(env config.Env) error {
	if a.baseURL == "" {
		if v, ok := env("OPENAI_BASE_URL"); ok && v != "" {
			a.baseURL = v
		} else {
			a.baseURL = config.OllamaBaseURL
		}
	}
	if a.model == "" {
		a.model, _ = env("SWITCHBOARD_MODEL")
	}
	if a.workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("find the current directory: %w", err)
		}
		a.workspace = wd
	}
	ws, err := filepath.Abs(a.workspace)
	if err != nil {
		return err
	}
	a.workspace = ws
	return nil
}

// check validates the answers that the config's own validation would
// report less directly.
func (a *initAnswers) check() error {
	if err := checkBaseURL(a.baseURL); err != nil {
		return fmt.Errorf("--base-url: %w", err)
	}
	if err := checkWorkspace(a.workspace); err != nil {
		return fmt.Errorf("--workspace: %w", err)
	}
	for flag, v := range map[string]string{"--api-key-env": a.apiKeyEnv, "--web-token-env": a.webTokenEnv} {
		if err := checkOptionalEnvName(v); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
	}
	for _, ch := range a.channels {
		if err := ch.check(); err != nil {
			return err
		}
	}
	return nil
}

func checkWorkspace(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w (create it first)", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// ask asks for everything in a terminal, offering the current answers as
// defaults.
func (a *initAnswers) ask(ctx context.Context, p *prompter) error {
	var err error
	if a.baseURL, err = p.askValid("Model endpoint (an OpenAI-compatible base URL)", a.baseURL, checkBaseURL); err != nil {
		return err
	}
	models := fetchModelIDs(ctx, a.baseURL)
	if len(models) > 0 {
		fmt.Fprintf(p.w, "  It lists: %s\n", oneLine(strings.Join(models, ", "), 200))
		if a.model == "" {
			a.model = models[0]
		}
	}
	if a.model, err = p.askValid("Model", a.model, func(s string) error {
		if s == "" {
			return errors.New("a model name is needed, e.g. qwen3:8b")
		}
		return nil
	}); err != nil {
		return err
	}
	keyDefault := a.apiKeyEnv
	if keyDefault == "" && !loopbackURL(a.baseURL) {
		keyDefault = "OPENAI_API_KEY"
	}
	if a.apiKeyEnv, err = p.askValid("Environment variable holding the API key (\"-\" for none)", orDash(keyDefault), func(s string) error {
		if s == "-" {
			return nil
		}
		return checkEnvName(s)
	}); err != nil {
		return err
	}
	if a.apiKeyEnv == "-" {
		a.apiKeyEnv = ""
	}
	if a.workspace, err = p.askValid("Directory the agent's tools work in", a.workspace, func(s string) error {
		if !filepath.IsAbs(s) {
			return errors.New("write the full path")
		}
		return checkWorkspace(s)
	}); err != nil {
		return err
	}
	for _, ch := range a.channels {
		if err := ch.ask(p); err != nil {
			return err
		}
	}
	return nil
}

// fetchModelIDs asks the endpoint which models it serves, briefly; nil
// when it does not answer.
func fetchModelIDs(ctx context.Context, baseURL string) []string {
	d := &doctor{http: &http.Client{Timeout: 2 * time.Second}}
	ans := d.listModels(ctx, baseURL, "")
	var ids []string
	for _, m := range ans.models {
		ids = append(ids, m.ID)
	}
	return ids
}

// validateInitConfig parses the file as config would, with placeholders
// for the variables it references that are not set yet.
func validateInitConfig(path, data string, refs []envRef, env config.Env) error {
	placeholders := map[string]string{}
	for _, r := range refs {
		placeholders[r.name] = r.placeholder
	}
	withPlaceholders := func(k string) (string, bool) {
		if v, ok := env(k); ok && v != "" {
			return v, true
		}
		v, ok := placeholders[k]
		return v, ok
	}
	cfg, err := config.Parse(path, []byte(data), filepath.Dir(path), withPlaceholders)
	if err != nil {
		return err
	}
	return validateRules(cfg)
}

// writeConfigFile writes data to path (0600, its directory 0700) through a
// temporary file, never over an existing file unless force, which keeps
// the old one as path.bak.
func writeConfigFile(path string, data []byte, force bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".switchboard-init-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if force {
		if _, err := os.Stat(path); err == nil {
			if err := os.Rename(path, path+".bak"); err != nil {
				return fmt.Errorf("keep the old %s as .bak: %w", path, err)
			}
		}
		return os.Rename(tmp.Name(), path)
	}
	// Link fails when path appeared meanwhile: never overwrite.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists: pass --force to replace it", path)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// isTerminal reports whether r is a terminal (it has terminal
// attributes; /dev/null and pipes do not).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// prompter asks questions on a terminal.
type prompter struct {
	r *bufio.Reader
	w io.Writer
}

// errNoAnswer ends init when the terminal closes mid-way.
var errNoAnswer = errors.New("init: the input ended before every question was answered; nothing was written")

// askLine prints the question with its default and returns the answer, or
// the default for an empty line.
func (p *prompter) askLine(question, def string) (string, error) {
	if def != "" {
		fmt.Fprintf(p.w, "%s [%s]: ", question, def)
	} else {
		fmt.Fprintf(p.w, "%s: ", question)
	}
	s, err := p.r.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(p.w)
		return "", errNoAnswer
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	return s, nil
}

// askValid asks until check accepts the answer (three tries).
func (p *prompter) askValid(question, def string, check func(string) error) (string, error) {
	for range 3 {
		s, err := p.askLine(question, def)
		if err != nil {
			return "", err
		}
		if err := check(s); err != nil {
			fmt.Fprintf(p.w, "  %v\n", err)
			continue
		}
		return s, nil
	}
	return "", fmt.Errorf("init: no valid answer to %q; nothing was written", question)
}

func (p *prompter) yesNo(question string, def bool) (bool, error) {
	d := "y/N"
	if def {
		d = "Y/n"
	}
	for range 3 {
		s, err := p.askLine(question+" ["+d+"]", "")
		if err != nil {
			return false, err
		}
		switch strings.ToLower(s) {
		case "":
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
		fmt.Fprintln(p.w, "  answer y or n")
	}
	return false, fmt.Errorf("init: no answer y or n to %q; nothing was written", question)
}

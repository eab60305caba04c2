package main

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/config"
)

// tomlBlock is one ```toml fence of a Markdown file.
type tomlBlock struct {
	line int // of the opening fence
	text string
}

// tomlBlocks extracts every ```toml block of a Markdown document.
func tomlBlocks(t *testing.T, path string) []tomlBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tomlBlock
	var cur *tomlBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(l) == "```toml":
			cur = &tomlBlock{line: n}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: unterminated ```toml block", path, cur.line)
	}
	return out
}

var (
	envRefRE    = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	workspaceRE = regexp.MustCompile(`(?m)^(\s*workspace\s*=\s*)"([^"]*)"`)
)

// plausibleEnv gives each ${VAR} a value of the shape its name suggests.
func plausibleEnv(names []string, home string) map[string]string {
	env := map[string]string{"HOME": home}
	for _, n := range names {
		u := strings.ToUpper(n)
		switch {
		case strings.Contains(u, "TELEGRAM") && strings.HasSuffix(u, "TOKEN"):
			env[n] = "123456:ABC-def_placeholder"
		case strings.Contains(u, "SLACK") && strings.HasSuffix(u, "BOT_TOKEN"):
			env[n] = "xoxb-placeholder-0123456789"
		case strings.Contains(u, "SLACK") && strings.HasSuffix(u, "APP_TOKEN"):
			env[n] = "xapp-placeholder-0123456789"
		case strings.HasSuffix(u, "SECRET"):
			env[n] = "placeholder-secret-0123456789"
		case strings.HasSuffix(u, "LISTEN"):
			env[n] = "0.0.0.0:7700"
		case strings.HasSuffix(u, "URL"):
			env[n] = "https://example.com/v1"
		default:
			env[n] = "placeholder-value-0123456789"
		}
	}
	return env
}

// validateTOMLBlock checks one block as a config file: its ${VAR}s set to
// plausible values, the workspaces it names created in a temp directory.
func validateTOMLBlock(t *testing.T, name, text string) error {
	_, err := parseTOMLBlock(t, name, text)
	return err
}

func parseTOMLBlock(t *testing.T, name, text string) (*config.Config, error) {
	t.Helper()
	base := t.TempDir()
	home := filepath.Join(base, "home")
	// Absolute workspaces (/srv/project) move under the temp directory;
	// relative and ~ ones are created where config resolves them.
	text = workspaceRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := workspaceRE.FindStringSubmatch(m)
		ws := sub[2]
		var dir string
		switch {
		case filepath.IsAbs(ws):
			dir = filepath.Join(base, "abs", ws)
			ws = dir
		case ws == "~" || strings.HasPrefix(ws, "~/"):
			dir = filepath.Join(home, strings.TrimPrefix(ws, "~"))
		default:
			dir = filepath.Join(base, ws)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return sub[1] + tomlString(ws)
	})
	var names []string
	for _, m := range envRefRE.FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	cfg, err := config.Parse(name, []byte(text), base, config.MapEnv(plausibleEnv(names, home)))
	if err != nil {
		return nil, err
	}
	return cfg, validateRules(cfg)
}

// TestReadmeTOMLBlocksValidate: every config example in the README is a
// config that loads.
func TestReadmeTOMLBlocksValidate(t *testing.T) {
	readme := filepath.Join("..", "..", "README.md")
	blocks := tomlBlocks(t, readme)
	if len(blocks) == 0 {
		t.Fatalf("README.md has %d ```toml blocks: the test would check nothing", len(blocks))
	}
	for _, b := range blocks {
		// Blank lines in front make config's line numbers README's.
		text := strings.Repeat("\n", b.line) + b.text
		cfg, err := parseTOMLBlock(t, "README.md", text)
		if err != nil {
			t.Errorf("the ```toml block at README.md:%d does not validate:\n%v", b.line, err)
			continue
		}
		// A reader copying an example for a local model must not need a key.
		for _, p := range cfg.Providers {
			if loopbackURL(p.BaseURL) && p.APIKey != "" {
				t.Errorf("the ```toml block at README.md:%d sets api_key for the local endpoint %s", b.line, p.BaseURL)
			}
		}
	}
}

// TestTOMLBlockCheckCatchesBadConfig: the README check fails on a block
// that would fail for a user.
func TestTOMLBlockCheckCatchesBadConfig(t *testing.T) {
	for _, bad := range []string{
		"[channels.telegram]\ntoken = \"${TELEGRAM_BOT_TOKEN}\"\nmode = \"webhook\"\n",
		"[agents.main]\npermission_mode = \"yolo\"\n",
		"[agents.main]\nallow = [\"Bash(\"]\n",
		"[http]\nlisten = \"7700\"\n",
	} {
		if err := validateTOMLBlock(t, "bad.toml", bad); err == nil {
			t.Errorf("block validated but must not:\n%s", bad)
		}
	}
}

// TestReadmeCommandsExist: every command in the README's Commands table
// is one the binary has.
func TestReadmeCommandsExist(t *testing.T) {
	root := newRootCmd(os.Stdin, io.Discard, io.Discard)
	row := regexp.MustCompile("^\\| `switchboard ([^`]*)`")
	n := 0
	for _, l := range strings.Split(readRepoFile(t, "README.md"), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var words []string
		for _, w := range strings.Fields(m[1]) {
			if strings.ToLower(w) != w || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "-") {
				break
			}
			words = append(words, w)
		}
		cmd, rest, err := root.Find(words)
		if err != nil || len(rest) > 0 || cmd == root {
			t.Errorf("README names `switchboard %s`, which the binary does not have", strings.Join(words, " "))
		}
		n++
	}
	if n < 10 {
		t.Fatalf("found %d command rows in README.md; the table moved?", n)
	}
}

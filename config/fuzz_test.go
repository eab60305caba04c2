package config

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// errLine is what every line of a Parse error must start with: the file name
// and a line number.
var errLine = regexp.MustCompile(`^fuzz\.toml:[1-9][0-9]*: `)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, every error
// line must carry file:line, and a config that parses must print.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		issue2Example,
		issue2Example + issue3Keys,
		issue5Example,
		issue6Example,
		"[providers.default]\nmodle = 1\n",
		"[agents.main]\npermission_mode = \"yolo\"\nallow = [\"Bash(x\", 3, \"${NOPE}\"]\n",
		"[[agents]]\n[[agents]]\n[agents.x]\n",
		"a.b.c = { d = [1, [2, {e = 3}]] }\n",
		"[channels.telegram]\ntoken = \"\"\nmode = \"webhook\"\n",
		"[channels]\nweb = { token = \"$${X}${X}\" }\n",
		"x = \"\xff\"\n",
		"[agents.main.env]\n\"\" = \"\"\n",
		"providers = []\nagents = \"x\"\nhttp = 1\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	env := MapEnv(map[string]string{"X": "x-value", "TELEGRAM_BOT_TOKEN": "1:abc", "OPENAI_API_KEY": "sk-fuzz"})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.toml", data, dir, env)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !errLine.MatchString(line) {
					t.Fatalf("error line without file:line: %q", line)
				}
			}
			return
		}
		if len(cfg.Providers) == 0 || len(cfg.Agents) == 0 {
			t.Fatalf("config without providers or agents: %+v", cfg)
		}
		var out bytes.Buffer
		if err := cfg.WriteMasked(&out); err != nil {
			t.Fatalf("WriteMasked: %v", err)
		}
		// Names and enum values are printed unmasked; they are bare keys,
		// so only secrets with other characters can be checked reliably.
		for _, s := range cfg.Secrets() {
			// A secret made of the mask and its quotes ("'***") is in every
			// masked value as written; it cannot be told from the mask.
			if strings.Contains(`"`+masked+`"`, s) || strings.Contains(`'`+masked+`'`, s) {
				continue
			}
			if len(s) >= 4 && !isBareKey(s) && strings.Contains(out.String(), s) {
				t.Fatalf("WriteMasked reveals %q", s)
			}
		}
	})
}

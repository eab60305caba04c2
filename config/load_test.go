package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLocate(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "cwd")
	userHome := filepath.Join(root, "user")
	sbHome := filepath.Join(root, "sbhome")
	explicit := filepath.Join(root, "etc", "custom.toml")
	writeFile(t, explicit, "")
	writeFile(t, filepath.Join(sbHome, "switchboard.toml"), "")
	writeFile(t, filepath.Join(cwd, "rel.toml"), "")
	if err := os.MkdirAll(filepath.Join(userHome, ".switchboard"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		env  map[string]string
		want Paths
		err  string
	}{
		{
			name: "HOME only, no file: zero config in cwd",
			env:  map[string]string{"HOME": userHome},
			want: Paths{Home: filepath.Join(userHome, ".switchboard"), BaseDir: cwd},
		},
		{
			name: "SWITCHBOARD_HOME with a file in it",
			env:  map[string]string{"HOME": userHome, "SWITCHBOARD_HOME": sbHome},
			want: Paths{Home: sbHome, ConfigFile: filepath.Join(sbHome, "switchboard.toml"), BaseDir: sbHome},
		},
		{
			name: "SWITCHBOARD_CONFIG wins over the home file",
			env:  map[string]string{"SWITCHBOARD_HOME": sbHome, "SWITCHBOARD_CONFIG": explicit},
			want: Paths{Home: sbHome, ConfigFile: explicit, BaseDir: filepath.Dir(explicit)},
		},
		{
			name: "relative SWITCHBOARD_CONFIG and SWITCHBOARD_HOME resolve against cwd",
			env:  map[string]string{"SWITCHBOARD_HOME": "data", "SWITCHBOARD_CONFIG": "rel.toml"},
			want: Paths{Home: filepath.Join(cwd, "data"), ConfigFile: filepath.Join(cwd, "rel.toml"), BaseDir: cwd},
		},
		{
			name: "empty variables count as unset",
			env:  map[string]string{"HOME": userHome, "SWITCHBOARD_HOME": "", "SWITCHBOARD_CONFIG": ""},
			want: Paths{Home: filepath.Join(userHome, ".switchboard"), BaseDir: cwd},
		},
		{
			name: "missing SWITCHBOARD_CONFIG is an error",
			env:  map[string]string{"HOME": userHome, "SWITCHBOARD_CONFIG": filepath.Join(root, "nope.toml")},
			err:  "SWITCHBOARD_CONFIG names " + filepath.Join(root, "nope.toml") + ", which does not exist",
		},
		{
			name: "SWITCHBOARD_CONFIG naming a directory is an error",
			env:  map[string]string{"HOME": userHome, "SWITCHBOARD_CONFIG": root},
			err:  "which is a directory",
		},
		{
			name: "no home at all",
			env:  map[string]string{},
			err:  "neither SWITCHBOARD_HOME nor HOME is set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Locate(MapEnv(tt.env), cwd)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Locate error = %v; want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Cwd = cwd
			if got != tt.want {
				t.Errorf("Locate = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

func TestZeroConfig(t *testing.T) {
	cwd := t.TempDir()
	tests := []struct {
		name                   string
		env                    map[string]string
		baseURL, apiKey, model string
	}{
		{"nothing: local Ollama, no model", nil, OllamaBaseURL, "", ""},
		{"model only", map[string]string{"SWITCHBOARD_MODEL": "qwen3:8b"}, OllamaBaseURL, "", "qwen3:8b"},
		{"key only: OpenAI", map[string]string{"OPENAI_API_KEY": "sk-a", "SWITCHBOARD_MODEL": "gpt-x"}, OpenAIBaseURL, "sk-a", "gpt-x"},
		{"base URL only", map[string]string{"OPENAI_BASE_URL": "http://10.0.0.2:8000/v1"}, "http://10.0.0.2:8000/v1", "", ""},
		{"base URL and key", map[string]string{"OPENAI_BASE_URL": "https://openrouter.ai/api/v1", "OPENAI_API_KEY": "sk-or"}, "https://openrouter.ai/api/v1", "sk-or", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(Paths{Home: "/h", BaseDir: cwd}, MapEnv(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Providers["default"]
			want := Provider{Name: "default", BaseURL: tt.baseURL, APIKey: tt.apiKey, Model: tt.model, ContextWindow: 32768, MaxOutputTokens: 4096, StreamIdleTimeout: 2 * time.Minute}
			if p != want || len(cfg.Providers) != 1 {
				t.Errorf("providers = %+v; want only %+v", cfg.Providers, want)
			}
			a := cfg.Agents["main"]
			if a.Provider != "default" || a.Workspace != cwd || len(cfg.Agents) != 1 {
				t.Errorf("agents = %+v; want only main on default in %s", cfg.Agents, cwd)
			}
			if cfg.Home != "/h" || cfg.File != "" {
				t.Errorf("Home, File = %q, %q", cfg.Home, cfg.File)
			}
			err = p.Check()
			if tt.model == "" {
				if err == nil || !strings.Contains(err.Error(), "set SWITCHBOARD_MODEL") || !strings.Contains(err.Error(), "[providers.default]") {
					t.Errorf("Check() = %v; want advice to set SWITCHBOARD_MODEL or model under [providers.default]", err)
				}
			} else if err != nil {
				t.Errorf("Check() = %v", err)
			}
		})
	}

	t.Run("bad OPENAI_BASE_URL", func(t *testing.T) {
		_, err := Load(Paths{Home: "/h", BaseDir: cwd}, MapEnv(map[string]string{"OPENAI_BASE_URL": "localhost:1"}))
		if err == nil || !strings.Contains(err.Error(), `OPENAI_BASE_URL: "localhost:1" is not an http(s) URL`) {
			t.Errorf("Load error = %v", err)
		}
	})
}

func TestProvidersIgnoreEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := MapEnv(map[string]string{"SWITCHBOARD_MODEL": "env-model", "OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://env/v1"})
	cfg, err := Parse("f.toml", []byte("[providers.mine]\nbase_url = \"http://mine/v1\"\n"), dir, env)
	if err != nil {
		t.Fatal(err)
	}
	want := Provider{Name: "mine", BaseURL: "http://mine/v1", ContextWindow: 32768, MaxOutputTokens: 4096, StreamIdleTimeout: 2 * time.Minute}
	if len(cfg.Providers) != 1 || cfg.Providers["mine"] != want {
		t.Errorf("providers = %+v; want only %+v (environment ignored)", cfg.Providers, want)
	}
	if a := cfg.Agents["main"]; a.Provider != "mine" {
		t.Errorf("main agent provider = %q; want the only provider, mine", a.Provider)
	}
	if cfg.Providers["mine"].Check() == nil {
		t.Error("Check() passed without a model")
	}
}

func TestProviderFor(t *testing.T) {
	doc := "[providers.p]\nmodel = \"base\"\n[agents.a]\n[agents.b]\nmodel = \"override\"\n"
	cfg, err := Parse("f.toml", []byte(doc), t.TempDir(), MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	for agent, model := range map[string]string{"a": "base", "b": "override"} {
		p, err := cfg.ProviderFor(cfg.Agents[agent])
		if err != nil || p.Model != model {
			t.Errorf("ProviderFor(%s) = %q, %v; want model %q", agent, p.Model, err, model)
		}
	}
	if _, err := cfg.ProviderFor(Agent{Name: "x", Provider: "gone"}); err == nil {
		t.Error("ProviderFor with an unknown provider succeeded")
	}
}

// TestLoadRelativeWorkspace loads a file found through SWITCHBOARD_CONFIG and
// checks relative workspaces resolve against the file's directory, not cwd.
func TestLoadRelativeWorkspace(t *testing.T) {
	root := t.TempDir()
	confDir := filepath.Join(root, "conf")
	cwd := filepath.Join(root, "elsewhere")
	for _, d := range []string{filepath.Join(confDir, "proj"), filepath.Join(root, "sibling"), cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(confDir, "switchboard.toml")
	writeFile(t, file, `
[agents.here]
workspace = "."
[agents.proj]
workspace = "proj"
[agents.up]
workspace = "../sibling/"
[agents.home]
workspace = "~"
`)
	env := MapEnv(map[string]string{"HOME": root, "SWITCHBOARD_CONFIG": file})
	paths, err := Locate(env, cwd)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(paths, env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"here": confDir, "proj": filepath.Join(confDir, "proj"), "up": filepath.Join(root, "sibling"), "home": root}
	for name, ws := range want {
		if got := cfg.Agents[name].Workspace; got != ws {
			t.Errorf("agent %s workspace = %q; want %q", name, got, ws)
		}
	}
	if cfg.File != file {
		t.Errorf("File = %q; want %q", cfg.File, file)
	}

	writeFile(t, file, "[agents.main]\npermission_mode = \"yolo\"\n")
	_, err = Load(paths, env)
	if err == nil || !strings.HasPrefix(err.Error(), file+":2: agents.main.permission_mode:") {
		t.Errorf("Load error = %v; want it to name %s:2", err, file)
	}
}

// A config file without [agents] still gives the default agent the current
// directory as workspace (not the file's directory, which is usually the
// data directory).
func TestDefaultAgentWorksInCwd(t *testing.T) {
	dir := t.TempDir()
	home, cwd := filepath.Join(dir, "home"), filepath.Join(dir, "cwd")
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, FileName), []byte("[http]\nlisten = \"127.0.0.1:7701\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths, err := Locate(MapEnv(map[string]string{"SWITCHBOARD_HOME": home, "SWITCHBOARD_MODEL": "m"}), cwd)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(paths, MapEnv(map[string]string{"SWITCHBOARD_MODEL": "m"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agents[DefaultAgent].Workspace; got != cwd {
		t.Fatalf("default agent workspace = %s, want the current directory %s", got, cwd)
	}
}

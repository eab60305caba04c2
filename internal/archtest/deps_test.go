package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/switchboard-gw/switchboard"

type pkg struct {
	ImportPath string
	Deps       []string
}

// listPackages runs `go list -deps` over the module's non-test packages
// and returns each with its transitive project dependencies.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", mod+"/...")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		var own []string
		for _, d := range p.Deps {
			if strings.HasPrefix(d, mod+"/") {
				own = append(own, strings.TrimPrefix(d, mod+"/"))
			}
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, mod+"/")
		p.Deps = own
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages; the test is not looking at the module", len(pkgs))
	}
	return pkgs
}

func under(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }

// allowed says whether package p may depend (transitively) on package d.
func allowed(p, d string) (bool, string) {
	switch {
	case under(d, "cmd"):
		return false, "nothing imports cmd"
	case under(d, "config") && !under(p, "cmd"):
		return false, "only cmd reads config"
	case under(d, "internal/fakemodel") && !under(p, "cmd") && !under(p, "bench"):
		return false, "the fake model is for tests and benchmarks only"
	case under(d, "internal/httpguard") && !under(p, "cmd"):
		return false, "the listener's guard is wired by cmd only"
	}
	switch {
	case under(p, "memfs"), under(p, "sandbox"), under(p, "config"), under(p, "internal/httpguard"):
		return false, "memfs, sandbox, config and internal/httpguard are leaves"
	case p == "channels":
		return false, "channels imports no project package"
	case under(p, "channels"):
		// An adapter may use its own sub-packages (a codec, its fake).
		own := strings.Join(strings.SplitN(p, "/", 3)[:2], "/")
		return d == "channels" || under(d, own), "a channel adapter imports channels only"
	case under(p, "agentcore"):
		return under(d, "agentcore") || under(d, "memfs") || under(d, "sandbox"),
			"agentcore imports memfs and sandbox, never channels, gateway or store"
	case under(p, "gateway"):
		return under(d, "gateway") || under(d, "channels") || under(d, "agentcore") || under(d, "memfs") || under(d, "sandbox"),
			"gateway imports channels and agentcore, never store"
	case under(p, "store"):
		return under(d, "agentcore") || under(d, "gateway") || under(d, "channels") || under(d, "memfs") || under(d, "sandbox"),
			"store implements the ports of agentcore and gateway"
	}
	return true, ""
}

func TestImportRules(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, d := range p.Deps {
			if ok, why := allowed(p.ImportPath, d); !ok {
				t.Errorf("%s depends on %s: %s (DESIGN §3)", p.ImportPath, d, why)
			}
		}
	}
}

func TestRulesCatchViolations(t *testing.T) {
	bad := [][2]string{
		{"agentcore", "store"},
		{"agentcore", "gateway"},
		{"agentcore/tools", "channels"},
		{"channels/telegram", "gateway"},
		{"channels/telegram", "agentcore"},
		{"channels/headless", "channels/telegram"},
		{"gateway", "store"},
		{"gateway", "config"},
		{"memfs", "sandbox"},
		{"sandbox", "agentcore"},
		{"store", "cmd/switchboard"},
		{"agentcore", "internal/fakemodel"},
		{"gateway", "internal/httpguard"},
		{"channels/web", "internal/httpguard"},
		{"internal/httpguard", "config"},
	}
	for _, c := range bad {
		if ok, _ := allowed(c[0], c[1]); ok {
			t.Errorf("allowed(%s, %s) = true, want a violation", c[0], c[1])
		}
	}
	good := [][2]string{
		{"cmd/switchboard", "config"},
		{"cmd/switchboard", "store"},
		{"agentcore", "sandbox"},
		{"agentcore", "agentcore/permission"},
		{"store", "agentcore"},
		{"gateway", "channels"},
		{"channels/telegram", "channels"},
		{"channels/headless", "channels/headless/streamjson"},
		{"cmd/switchboard", "internal/httpguard"},
	}
	for _, c := range good {
		if ok, why := allowed(c[0], c[1]); !ok {
			t.Errorf("allowed(%s, %s) = false (%s), want allowed", c[0], c[1], why)
		}
	}
}

// thirdParty lists the only outside modules a package may import directly
// (DESIGN §3: leaves use the standard library plus their one dependency;
// an adapter uses its platform's SDK). Packages not listed are free.
var thirdParty = map[string][]string{
	"config":                         {"github.com/pelletier/go-toml/v2"},
	"memfs":                          {"github.com/go-git/go-git/v5", "golang.org/x/sys"},
	"sandbox":                        {"golang.org/x/sys"},
	"channels":                       {"github.com/yuin/goldmark"},
	"channels/channelstest":          {},
	"channels/telegram":              {"github.com/go-telegram/bot"},
	"channels/telegram/telegramtest": {},
	"channels/discord":               {"github.com/bwmarrin/discordgo", "github.com/gorilla/websocket"},
	"channels/discord/discordtest":   {"github.com/gorilla/websocket"},
	"channels/slack":                 {"github.com/slack-go/slack", "github.com/gorilla/websocket"},
	"channels/slack/slacktest":       {"github.com/coder/websocket"},
	"channels/web":                   {},
	"channels/headless":              {},
	"channels/headless/streamjson":   {},
	"channels/terminal":              {},
	"channels/acp":                   {"github.com/coder/acp-go-sdk"},
	"agentcore/permission":           {"mvdan.cc/sh/v3", "github.com/bmatcuk/doublestar/v4"},
	"internal/httpguard":             {},
}

// directImports returns each module package's direct non-test imports.
func directImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", mod+"/...")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		imports[strings.TrimPrefix(p.ImportPath, mod+"/")] = p.Imports
	}
	return imports
}

// thirdPartyViolations reports the outside imports not allowed by rules.
func thirdPartyViolations(imports map[string][]string, rules map[string][]string) []string {
	var bad []string
	for pkg, allowedMods := range rules {
		for _, imp := range imports[pkg] {
			first, _, _ := strings.Cut(imp, "/")
			if !strings.Contains(first, ".") || strings.HasPrefix(imp, mod+"/") {
				continue // standard library, or a project package (TestImportRules)
			}
			if !moduleAllowed(imp, allowedMods) {
				bad = append(bad, pkg+" imports "+imp)
			}
		}
	}
	return bad
}

func moduleAllowed(imp string, mods []string) bool {
	for _, m := range mods {
		if imp == m || strings.HasPrefix(imp, m+"/") {
			return true
		}
	}
	return false
}

func TestThirdPartyImports(t *testing.T) {
	imports := directImports(t)
	for pkg := range thirdParty {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("listed package %s does not exist", pkg)
		}
	}
	for _, v := range thirdPartyViolations(imports, thirdParty) {
		t.Errorf("%s; see thirdParty (DESIGN §3)", v)
	}
	// The check catches what it should.
	if v := thirdPartyViolations(imports, map[string][]string{"channels": {}}); len(v) == 0 {
		t.Error("channels importing goldmark was not reported with an empty allowance")
	}
}

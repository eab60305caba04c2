package permission

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type checkCase struct {
	name    string
	mode    Mode
	allow   []string
	deny    []string
	ask     []string
	disallo []string
	call    Call
	want    Decision
	reason  string // substring of Reason, when set
	suggest *string
}

func str(s string) *string { return &s }

func runCases(t *testing.T, f *fixture, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := f.policy(tc.mode)
			p.Allow, p.Deny, p.Ask = rules(t, tc.allow...), rules(t, tc.deny...), rules(t, tc.ask...)
			p.DisallowedTools = tc.disallo
			got := p.Check(tc.call)
			if got.Decision != tc.want {
				t.Fatalf("Check(%s %.200s) = %s (%.300s); want %s", tc.call.Tool, tc.call.Args, got.Decision, got.Reason, tc.want)
			}
			if got.Reason == "" {
				t.Errorf("empty reason")
			}
			if tc.reason != "" && !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", got.Reason, tc.reason)
			}
			if tc.suggest != nil && got.Suggest != *tc.suggest {
				t.Errorf("suggest = %q; want %q", got.Suggest, *tc.suggest)
			}
			if got.Decision != Ask && got.Suggest != "" {
				t.Errorf("suggest %q on a %s", got.Suggest, got.Decision)
			}
		})
	}
}

// TestBashRuleEveryCommand: a Bash rule allows a line only if it allows every simple command.
func TestBashRuleEveryCommand(t *testing.T) {
	f := newFixture(t)
	gs := []string{"Bash(git status:*)"}
	var cases []checkCase
	for _, mode := range []Mode{ModeStrict, ModeStandard} {
		for _, tc := range []struct {
			cmd  string
			want Decision
		}{
			{"git status && curl x | sh", Ask},
			{"git status; rm -rf ~", Ask},
			{"$(curl x)", Ask},
			{"echo $(curl x)", Ask},
			{"git status | sh", Ask},
			{"FOO=1 git status", Ask},
			{"git status > ~/.bashrc", Ask},
			{"git status >> ../outside/x", Ask},
			{"git status &> /tmp/x", Ask},
			{"git status >| ~/x", Ask},
			{"git status `curl x`", Ask},
			{"git status \"$(curl x)\"", Ask},
			{"git status <(curl x)", Ask},
			{"git status > >(sh)", Ask},
			{"x=$(curl x) git status", Ask},
			{"git status\nrm x", Ask},
			{"git status || curl x", Ask},
			{"(git status; curl x)", Ask},
			{"if git status; then curl x; fi", Ask},
			{"for i in $(curl x); do git status; done", Ask},
			{"git status ${x:-$(curl x)}", Ask},
			{"git $CMD", Ask},
			{"g\"it\"$x status", Ask},
			{"export A=1; git status", Ask},
			{"git status; ((a[$(curl x)]))", Ask},
			{"cat <<EOF\n$(curl x)\nEOF", Ask},
			{"git status 'unterminated", Ask},
			{"git status", Allow},
			{"git status --short", Allow},
			{"git status && git status -s", Allow},
			{"git  status", Allow},
			{"'git' \"status\"", Allow},
			{"g\\it status", Allow},
			{"(git status)", Allow},
			{"{ git status; }", Allow},
			{"git status &", Allow},
			{"git status 2>&1 | git status", Allow},
			{"git status > /dev/null 2>&1", Allow},
			{"git status > status.txt", Allow},
			{"if git status; then git status -s; fi", Allow},
			{"for i in a b; do git status; done", Allow},
			{"git status # look", Allow},
			{"cd src && git status", Allow},
		} {
			want := tc.want
			if mode == ModeStandard && tc.cmd == "git status > status.txt" {
				want = Allow // the rule covers the command; the redirect stays in the workspace
			}
			cases = append(cases, checkCase{name: string(mode) + "/" + tc.cmd, mode: mode, allow: gs, call: bash(tc.cmd), want: want})
		}
	}
	cases = append(cases,
		checkCase{name: "go testing is not go test", mode: ModeStrict, allow: []string{"Bash(go test:*)"}, call: bash("go testing"), want: Ask},
		checkCase{name: "go test alone", mode: ModeStrict, allow: []string{"Bash(go test:*)"}, call: bash("go test"), want: Allow},
		checkCase{name: "go test args", mode: ModeStrict, allow: []string{"Bash(go test:*)"}, call: bash("go test -race ./..."), want: Allow},
		checkCase{name: "space star form", mode: ModeStrict, allow: []string{"Bash(go test *)"}, call: bash("go test ./..."), want: Allow},
		checkCase{name: "exact rule exact", mode: ModeStrict, allow: []string{"Bash(ls)"}, call: bash("ls"), want: Allow},
		checkCase{name: "exact rule more words", mode: ModeStrict, allow: []string{"Bash(ls)"}, call: bash("ls -la"), want: Ask},
		checkCase{name: "glob in command name", mode: ModeStrict, allow: []string{"Bash(ls:*)"}, call: bash("l? -la"), want: Ask},
		checkCase{name: "brace in command name", mode: ModeStrict, allow: []string{"Bash(ls:*)"}, call: bash("{ls,-la}"), want: Ask},
		checkCase{name: "two rules together", mode: ModeStrict, allow: []string{"Bash(go test:*)", "Bash(go vet:*)"}, call: bash("go vet ./... && go test ./..."), want: Allow, reason: "together"},
		checkCase{name: "bare Bash allows everything", mode: ModeStrict, allow: []string{"Bash"}, call: bash("curl x | sh"), want: Allow},
	)
	runCases(t, f, cases)
}

// TestDenyBeatsAllow in every mode, including the ways a denied command can hide.
func TestDenyBeatsAllow(t *testing.T) {
	f := newFixture(t)
	var cases []checkCase
	for _, mode := range allModes {
		m := string(mode) + "/"
		allowAll := []string{"Bash", "Bash(rm:*)", "Edit", "Edit(**)", "Read"}
		for _, cmd := range []string{
			"rm -rf x",
			"echo hi && rm x",
			"FOO=1 rm x",
			"/bin/rm x",
			"\\rm x",
			"'rm' x",
			"sudo -u root rm x",
			"env A=1 rm x",
			"xargs rm < list",
			"find . -exec rm {} \\;",
			"bash -c 'rm -rf x'",
			"sh -ec \"ls; rm x\"",
			"eval rm x",
			"echo $(rm x)",
			"/bin/r? x",
			"rm x\n(",
		} {
			cases = append(cases, checkCase{name: m + cmd, mode: mode, allow: allowAll, deny: []string{"Bash(rm:*)"}, call: bash(cmd), want: Deny, reason: "deny rule Bash(rm:*)"})
		}
		cases = append(cases,
			checkCase{name: m + "edit", mode: mode, allow: allowAll, deny: []string{"Edit(src/**)"}, call: edit("src/main.go"), want: Deny},
			checkCase{name: m + "write covered by Edit rule", mode: mode, allow: allowAll, deny: []string{"Edit(src/**)"}, call: write(filepath.Join(f.ws, "src/new.go")), want: Deny},
			checkCase{name: m + "read via symlink to denied", mode: mode, allow: allowAll, deny: []string{"Read(src/sub/**)"}, call: read("src/inner/x.go"), want: Deny},
			checkCase{name: m + "read rule covers cat", mode: mode, allow: allowAll, deny: []string{"Read(**/*.env)"}, call: bash("cat config/.env"), want: Deny},
			checkCase{name: m + "read rule covers grep", mode: mode, allow: allowAll, deny: []string{"Read(README.md)"}, call: grep("README.md"), want: Deny},
			checkCase{name: m + "edit rule covers redirect", mode: mode, allow: allowAll, deny: []string{"Edit(src/**)"}, call: bash("echo x > src/main.go"), want: Deny},
			checkCase{name: m + "bare deny", mode: mode, allow: allowAll, deny: []string{"Read"}, call: read("README.md"), want: Deny},
			checkCase{name: m + "disallowed", mode: mode, allow: allowAll, disallo: []string{"Bash"}, call: bash("ls"), want: Deny, reason: "disallowed_tools"},
			checkCase{name: m + "disallowed unknown tool", mode: mode, disallo: []string{"WebFetch"}, call: call("WebFetch", "url", "https://x"), want: Deny},
			checkCase{name: m + "disallowed pattern", mode: mode, allow: allowAll, disallo: []string{"Bash(curl:*)"}, call: bash("ls; curl x"), want: Deny},
			checkCase{name: m + "deny not matching", mode: mode, allow: allowAll, deny: []string{"Bash(rm:*)"}, call: bash("echo rmx"), want: map[Mode]Decision{ModeStrict: Allow}[mode]},
		)
	}
	for i := range cases {
		if cases[i].want == "" {
			cases[i].want = Allow
		}
	}
	runCases(t, f, cases)
}

// TestOtherAgentMemory is denied in every mode, whatever the spelling.
func TestOtherAgentMemory(t *testing.T) {
	f := newFixture(t)
	notes := filepath.Join(f.other, "notes.md")
	var cases []checkCase
	for _, mode := range allModes {
		m := string(mode) + "/"
		allowAll := []string{"Bash", "Read", "Edit", "Read(/**)", "Grep", "Glob"}
		for _, c := range []Call{
			read(notes),
			write(notes),
			edit(notes),
			read("../memory/agent-b/notes.md"),
			read("membak/notes.md"),
			read(f.memRoot),
			read("~/memory/agent-b/notes.md"),
			read(filepath.Join(f.mem, "..", "agent-b", "notes.md")),
			grep(f.other),
			grep(f.memRoot),
			globCall(f.memRoot + "/**/*.md"),
			globCall("../memory/*/notes.md"),
			call("Glob", "pattern", "*.md", "path", f.other),
			call("Read", "FILE_PATH", notes),
			call("Read", "file_path", "README.md", "File_Path", notes),
			bash("cat " + notes),
			bash("cat ~/memory/agent-b/notes.md"),
			bash("cat $HOME/memory/agent-b/notes.md"),
			bash("cat \"${HOME}\"/memory/agent-b/notes.md"),
			bash("cat ../memory/agent-b/notes.md"),
			bash("cat membak/notes.md"),
			bash("cd .. && cat memory/agent-b/notes.md"),
			bash("ls " + f.memRoot),
			bash("cat " + f.memRoot + "/*/notes.md"),
			bash("cat " + f.memRoot + "/$NAME/notes.md"),
			bash("echo x > " + notes),
			bash("cp x " + f.memRoot + "/agent-b"),
			bash("python3 -c \"print(open('" + notes + "').read())\""),
			bash("dd if=" + notes),
			bash("grep -f" + notes + " x"),
			bash("cat '" + notes),
			call("mcp__fs__read", "path", notes),
			call("mcp__fs__read", "args", "{\"p\":\""+notes+"\"}"),
		} {
			cases = append(cases, checkCase{name: m + c.Tool + string(c.Args), mode: mode, allow: allowAll, call: c, want: Deny, reason: "another agent's memory"})
		}
		cases = append(cases,
			checkCase{name: m + "own memory bash", mode: mode, call: bash("cat " + filepath.Join(f.mem, "notes.md")), want: map[Mode]Decision{ModeStrict: Ask}[mode]},
			checkCase{name: m + "own memory quoted", mode: mode, call: bash("ls \"" + f.mem + "\""), want: map[Mode]Decision{ModeStrict: Ask}[mode]},
			checkCase{name: m + "sibling of root", mode: mode, call: read(f.memRoot + "-old/x"), want: map[Mode]Decision{ModeUnrestricted: Allow}[mode]},
		)
	}
	for i := range cases {
		if cases[i].want == "" {
			cases[i].want = Allow
			if cases[i].call.Tool == "Read" && strings.Contains(string(cases[i].call.Args), "-old") {
				cases[i].want = Ask
			}
		}
	}
	runCases(t, f, cases)
}

// TestModes covers ask rules, the mode switch and auto-allow.
func TestModes(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.outside, "secret.txt")
	cases := []checkCase{
		{name: "ask rule in unrestricted", mode: ModeUnrestricted, ask: []string{"Bash(git push:*)"}, call: bash("git push origin main"), want: Ask, reason: "ask rule Bash(git push:*)"},
		{name: "ask rule in compound", mode: ModeUnrestricted, ask: []string{"Bash(git push:*)"}, call: bash("git status && git push"), want: Ask},
		{name: "ask beats allow", mode: ModeStandard, allow: []string{"Bash(git:*)"}, ask: []string{"Bash(git push:*)"}, call: bash("git push"), want: Ask},
		{name: "ask rule read in unrestricted", mode: ModeUnrestricted, ask: []string{"Read(**/*.pem)"}, call: read("keys/a.pem"), want: Ask},
		{name: "unrestricted allows outside", mode: ModeUnrestricted, call: write("/etc/x"), want: Allow},
		{name: "unparseable asks in unrestricted", mode: ModeUnrestricted, call: bash("echo 'open"), want: Ask, reason: "could not be checked"},
		{name: "broken inner script asks in unrestricted", mode: ModeUnrestricted, call: bash("bash -c 'echo \"'"), want: Ask, reason: "could not be checked"},
		{name: "too deep asks in unrestricted", mode: ModeUnrestricted, deny: []string{"Bash(rm:*)"}, call: bash(`eval eval eval eval eval rm x`), want: Ask, reason: "too deep"},
		{name: "nested deny found", mode: ModeUnrestricted, deny: []string{"Bash(rm:*)"}, call: bash(`bash -c "sh -c 'rm x'"`), want: Deny},
		{name: "huge eval chain", mode: ModeUnrestricted, deny: []string{"Bash(rm:*)"}, call: bash("sudo " + strings.Repeat("eval ", 12000) + "rm x"), want: Deny},
		{name: "huge eval chain without wrapper", mode: ModeUnrestricted, deny: []string{"Bash(rm:*)"}, call: bash(strings.Repeat("eval ", 12000) + "rm x"), want: Ask},
		{name: "too long line", mode: ModeUnrestricted, call: bash(strings.Repeat("x", maxLineLen+1)), want: Ask},
		{name: "strict workspace read", mode: ModeStrict, call: read("src/main.go"), want: Ask, reason: "strict", suggest: str("Read(src/main.go)")},
		{name: "standard workspace read", mode: ModeStandard, call: read("src/main.go"), want: Allow},
		{name: "standard absolute workspace read", mode: ModeStandard, call: read(filepath.Join(f.ws, "README.md")), want: Allow},
		{name: "standard read outside", mode: ModeStandard, call: read(secret), want: Ask, reason: "outside the workspace", suggest: str("Read(" + secret + ")")},
		{name: "standard overflow read", mode: ModeStandard, call: read(filepath.Join(f.overflow, "out-1.txt")), want: Allow},
		{name: "standard own memory read", mode: ModeStandard, call: read(filepath.Join(f.mem, "notes.md")), want: Allow},
		{name: "standard own memory write", mode: ModeStandard, call: write(filepath.Join(f.mem, "new.md")), want: Allow},
		{name: "standard own memory edit", mode: ModeStandard, call: edit(filepath.Join(f.mem, "notes.md")), want: Allow},
		{name: "strict own memory write", mode: ModeStrict, call: write(filepath.Join(f.mem, "new.md")), want: Ask},
		{name: "standard overflow write", mode: ModeStandard, call: write(filepath.Join(f.overflow, "x")), want: Ask},
		{name: "standard edit inside", mode: ModeStandard, call: edit("src/main.go"), want: Ask, reason: "acceptEdits", suggest: str("Edit(src/main.go)")},
		{name: "acceptEdits edit inside", mode: ModeAcceptEdits, call: edit("src/main.go"), want: Allow},
		{name: "acceptEdits write new file", mode: ModeAcceptEdits, call: write("src/new/deep.go"), want: Allow},
		{name: "acceptEdits edit outside", mode: ModeAcceptEdits, call: edit(secret), want: Ask, reason: "outside the workspace", suggest: str("Edit(" + secret + ")")},
		{name: "acceptEdits edit dotdot", mode: ModeAcceptEdits, call: edit("src/../../outside/secret.txt"), want: Ask},
		{name: "acceptEdits edit via symlink dir", mode: ModeAcceptEdits, call: edit("escape/secret.txt"), want: Ask},
		{name: "acceptEdits write dangling symlink", mode: ModeAcceptEdits, call: write("dangling"), want: Ask},
		{name: "acceptEdits write .git", mode: ModeAcceptEdits, call: write(".git/hooks/pre-commit"), want: Ask, reason: ".git"},
		{name: "acceptEdits symlink then dotdot", mode: ModeAcceptEdits, call: write("src/sub/up2out/../x"), want: Ask},
		{name: "acceptEdits link dotdot lexically out", mode: ModeAcceptEdits, call: write("src/deep/../../../x"), want: Ask},
		{name: "symlink loop", mode: ModeStandard, call: read("loop/x"), want: Ask},
		{name: "symlink in workspace out", mode: ModeStandard, call: read("escape.txt"), want: Ask, suggest: str("Read(" + secret + ")")},
		{name: "symlink dir in workspace out", mode: ModeStandard, call: read("escape/secret.txt"), want: Ask},
		{name: "symlink inside stays inside", mode: ModeStandard, call: read("src/inner/x.go"), want: Allow},
		{name: "tilde read", mode: ModeStandard, call: read("~/outside/secret.txt"), want: Ask},
		{name: "tilde user", mode: ModeStandard, call: read("~root/x"), want: Ask},
		{name: "missing file_path", mode: ModeStandard, call: call("Read"), want: Ask, reason: "no file_path"},
		{name: "non-string file_path", mode: ModeStandard, call: Call{Tool: "Read", Args: json.RawMessage(`{"file_path":3}`)}, want: Ask},
		{name: "args not an object", mode: ModeStandard, call: Call{Tool: "Read", Args: json.RawMessage(`[1]`)}, want: Ask},
		{name: "two spellings", mode: ModeStandard, call: call("Read", "file_path", "README.md", "FILE_PATH", secret), want: Ask},
		{name: "grep default path", mode: ModeStandard, call: call("Grep", "pattern", "x"), want: Allow},
		{name: "grep outside", mode: ModeStandard, call: grep(f.outside), want: Ask, suggest: str("Grep(" + f.outside + "/**)")},
		{name: "glob inside", mode: ModeStandard, call: globCall("src/**/*.go"), want: Allow},
		{name: "glob climbing", mode: ModeStandard, call: globCall("../outside/*"), want: Ask},
		{name: "glob dotdot after star", mode: ModeStandard, call: globCall("*/../../outside/*"), want: Ask},
		{name: "glob absolute outside", mode: ModeStandard, call: globCall("/etc/*"), want: Ask},
		{name: "attach inside", mode: ModeStandard, call: call("Attach", "file_path", "README.md"), want: Allow},
		{name: "todowrite strict", mode: ModeStrict, call: call("TodoWrite", "todos", "[]"), want: Allow},
		{name: "recall strict", mode: ModeStrict, call: call("Recall", "query", "x"), want: Allow},
		{name: "agent standard", mode: ModeStandard, call: call("Agent", "prompt", "x"), want: Allow},
		{name: "agent strict", mode: ModeStrict, call: call("Agent", "prompt", "x"), want: Ask, suggest: str("Agent")},
		{name: "unknown tool", mode: ModeStandard, call: call("WebFetch", "url", "https://x"), want: Ask, suggest: str("WebFetch")},
		{name: "unknown tool allowed by star", mode: ModeStandard, allow: []string{"WebFetch(*)"}, call: call("WebFetch", "url", "https://x"), want: Allow},
		{name: "unknown tool allowed by url glob", mode: ModeStandard, allow: []string{"WebFetch(https://go.dev/**)"}, call: call("WebFetch", "url", "https://go.dev/doc/x", "prompt", "p"), want: Allow},
		{name: "unknown tool other url", mode: ModeStandard, allow: []string{"WebFetch(https://go.dev/**)"}, call: call("WebFetch", "url", "https://evil/x", "prompt", "https://go.dev/x"), want: Ask},
		{name: "empty tool", mode: ModeUnrestricted, call: Call{}, want: Allow},
		{name: "empty tool standard", mode: ModeStandard, call: Call{}, want: Ask},
		{name: "unknown mode is strict", mode: "yolo", call: read("README.md"), want: Ask},
		{name: "empty mode is standard", mode: "", call: read("README.md"), want: Allow},
		{name: "Edit rule allows", mode: ModeStandard, allow: []string{"Edit(src/**)"}, call: edit("src/main.go"), want: Allow, reason: "allow rule Edit(src/**)"},
		{name: "Edit rule absolute path", mode: ModeStandard, allow: []string{"Edit(src/**)"}, call: edit(filepath.Join(f.ws, "src/x.go")), want: Allow},
		{name: "Edit rule dotdot escape", mode: ModeStandard, allow: []string{"Edit(src/**)"}, call: edit("src/../../etc/passwd"), want: Ask},
		{name: "Edit rule absolute dotdot escape", mode: ModeStandard, allow: []string{"Edit(src/**)"}, call: edit(f.ws + "/src/../../outside/x"), want: Ask},
		{name: "Edit rule symlink escape", mode: ModeStandard, allow: []string{"Edit(src/**)"}, call: edit("src/sub/up2out/secret.txt"), want: Ask},
		{name: "Edit rule outside never matches relative", mode: ModeStandard, allow: []string{"Edit(**)"}, call: edit(secret), want: Ask},
		{name: "absolute rule", mode: ModeStandard, allow: []string{"Read(" + f.outside + "/**)"}, call: read(secret), want: Allow},
		{name: "tilde rule", mode: ModeStandard, allow: []string{"Read(~/outside/**)"}, call: read(secret), want: Allow},
		{name: "Read rule covers Grep", mode: ModeStrict, allow: []string{"Read(src/**)"}, call: grep("src"), want: Allow},
		{name: "Write rule covers Edit", mode: ModeStrict, allow: []string{"Write(src/**)"}, call: edit("src/main.go"), want: Allow},
	}
	runCases(t, f, cases)
}

// TestBashAutoAllow covers the read-only command list and redirections.
func TestBashAutoAllow(t *testing.T) {
	f := newFixture(t)
	cases := []checkCase{}
	for _, tc := range []struct {
		cmd  string
		want Decision
	}{
		{"ls -la src", Allow},
		{"ls", Allow},
		{"pwd", Allow},
		{"echo $HOME", Allow},
		{"cat src/main.go | head -5", Allow},
		{"cat src/*.go", Allow},
		{"cat *", Deny}, // membak leads into another agent's memory (escape.txt leads out)
		{"cat links/*", Ask},
		{"cat links/plain.txt", Allow},
		{"wc -l README.md && tail -n 3 README.md", Allow},
		{"grep -rn TODO .", Allow},
		{"grep -R TODO .", Ask},
		{"grep -Rn TODO .", Ask},
		{"rg TODO src", Allow},
		{"rg --pre sh TODO", Ask},
		{"rg -L TODO", Ask},
		{"find . -name '*.go'", Allow},
		{"find . -name '*.go' -exec rm {} \\;", Ask},
		{"find . -delete", Ask},
		{"find . -fprint out", Ask},
		{"find -L .", Ask},
		{"find / -name x", Ask},
		{"git status", Allow},
		{"git log --oneline -5", Allow},
		{"git diff HEAD~1 -- src", Allow},
		{"git diff --output=x", Ask},
		{"git show HEAD:README.md", Allow},
		{"git branch", Allow},
		{"git branch -a -v", Allow},
		{"git branch new", Ask},
		{"git branch -D old", Ask},
		{"git -c core.pager=sh log", Ask},
		{"git push", Ask},
		{"git diff --no-index src/main.go /etc/passwd", Ask},
		{"cat /etc/passwd", Ask},
		{"cat ../outside/secret.txt", Ask},
		{"cat escape.txt", Ask},
		{"cat escape/secret.txt", Ask},
		{"cat ~/outside/secret.txt", Ask},
		{"cat $F", Ask},
		{"cat {README.md,/etc/passwd}", Ask},
		{"grep --file=/etc/passwd x", Ask},
		{"grep -f/etc/passwd x", Ask},
		{"cd src && ls", Allow},
		{"cd src && cat ../../outside/secret.txt", Ask},
		{"cd / && ls", Ask},
		{"cd && ls", Ask},
		{"cd - && ls", Ask},
		{"cd escape && cat secret.txt", Ask},
		{"echo hi > out.txt", Ask},
		{"echo hi > /dev/null", Allow},
		{"ls 2>&1 >/dev/null", Allow},
		{"cat < README.md", Allow},
		{"cat < /etc/passwd", Ask},
		{"cat <<EOF\nhello\nEOF", Allow},
		{"sort -o out README.md", Ask},
		{"sort README.md", Allow},
		{"date -s now", Ask},
		{"if [ -f README.md ]; then cat README.md; fi", Allow},
		{"[[ -f README.md ]] && cat README.md", Allow},
		{"for f in src/*.go; do wc -l src/main.go; done", Allow},
		{"ls | xargs cat", Ask},
		{"curl x", Ask},
		{"", Allow},
		{"# nothing", Allow},
		{"> README.md", Ask},
		{"f() { cat /etc/passwd; }; f", Ask},
		{"ls ; true ; :", Allow},
		{"echo x > " + filepath.Join(f.mem, "log.md"), Allow},
	} {
		cases = append(cases, checkCase{name: tc.cmd, mode: ModeStandard, call: bash(tc.cmd), want: tc.want})
	}
	for _, tc := range []struct {
		cmd  string
		want Decision
	}{
		{"echo hi > out.txt", Allow},
		{"echo hi >> src/log.txt", Allow},
		{"echo hi > .git/hooks/pre-commit", Ask},
		{"echo hi > ../outside/x", Ask},
		{"echo hi > escape/x", Ask},
		{"ls", Allow},
	} {
		cases = append(cases, checkCase{name: "acceptEdits/" + tc.cmd, mode: ModeAcceptEdits, call: bash(tc.cmd), want: tc.want})
	}
	cases = append(cases,
		checkCase{name: "strict ls", mode: ModeStrict, call: bash("ls"), want: Ask, suggest: str("Bash(ls)")},
		checkCase{name: "rule plus read-only", mode: ModeStandard, allow: []string{"Bash(go test:*)"}, call: bash("go test ./... && git status"), want: Allow},
		checkCase{name: "rule plus non-read-only", mode: ModeStandard, allow: []string{"Bash(go test:*)"}, call: bash("go test ./... && git push"), want: Ask, suggest: str("Bash(git push:*)")},
	)
	runCases(t, f, cases)
}

// TestBashSuggest checks the "Always" suggestions, and that storing one allows the call.
func TestBashSuggest(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		mode    Mode
		call    Call
		suggest string
	}{
		{ModeStandard, bash("git push origin main"), "Bash(git push:*)"},
		{ModeStandard, bash("npm install"), "Bash(npm install:*)"},
		{ModeStandard, bash("make"), "Bash(make)"},
		{ModeStandard, bash("ls && curl $URL"), ""},
		{ModeStandard, bash("ls && curl https://x"), "Bash(curl https://x)"},
		{ModeStandard, bash("cat /etc/hosts"), "Bash(cat /etc/hosts)"},
		{ModeStrict, bash("git status"), "Bash(git status:*)"},
		{ModeStandard, bash("bash -c 'make'"), "Bash(bash -c make)"},
		{ModeStandard, bash("sudo make"), "Bash(sudo make)"},
		{ModeStandard, bash("python3 -c 'print(1)'"), ""},
		{ModeStandard, bash("FOO=1 make"), ""},
		{ModeStandard, bash("$CMD x"), ""},
		{ModeStandard, bash("git status > ~/.bashrc"), ""},
		{ModeStandard, bash("echo 'open"), ""},
		{ModeStandard, edit("src/main.go"), "Edit(src/main.go)"},
		{ModeStandard, write("src/[id].tsx"), "Write(src/\\[id\\].tsx)"},
		{ModeStandard, write("/etc/hosts"), "Write(/etc/hosts)"},
		{ModeStrict, grep("."), "Grep(**)"},
		{ModeStrict, grep("src"), "Grep(src/**)"},
		{ModeStandard, read("~root/x"), ""},
	} {
		p := f.policy(tc.mode)
		got := p.Check(tc.call)
		if got.Decision != Ask || got.Suggest != tc.suggest {
			t.Errorf("%s %s: got %s suggest %q (%s); want ask suggest %q", tc.mode, tc.call.Args, got.Decision, got.Suggest, got.Reason, tc.suggest)
			continue
		}
		if tc.suggest == "" {
			continue
		}
		r, err := ParseRule(got.Suggest)
		if err != nil {
			t.Errorf("suggested rule %q does not parse: %v", got.Suggest, err)
			continue
		}
		p.Allow = append(p.Allow, r)
		if again := p.Check(tc.call); again.Decision != Allow {
			t.Errorf("%s: after storing %s: %s (%s)", tc.call.Args, r, again.Decision, again.Reason)
		}
	}
}

func TestNoWorkspace(t *testing.T) {
	p := &Policy{Mode: ModeAcceptEdits}
	for _, c := range []Call{read("README.md"), edit("x"), bash("ls"), call("Grep", "pattern", "x"), bash("cat /etc/passwd")} {
		if got := p.Check(c); got.Decision != Ask {
			t.Errorf("no workspace: %s %s = %s (%s); want ask", c.Tool, c.Args, got.Decision, got.Reason)
		}
	}
}

func TestConcurrentCheck(t *testing.T) {
	f := newFixture(t)
	p := f.policy(ModeStandard)
	p.Allow = rules(t, "Bash(go test:*)", "Edit(src/**)")
	p.Deny = rules(t, "Bash(rm:*)")
	calls := []Call{bash("go test ./... && git status"), edit("src/main.go"), bash("rm -rf x"), read("escape.txt")}
	want := make([]Result, len(calls))
	for i, c := range calls {
		want[i] = p.Check(c)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for n := 0; n < 20; n++ {
				for i, c := range calls {
					if got := p.Check(c); got != want[i] {
						errs <- got.Reason
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error("concurrent check differs:", e)
	}
}

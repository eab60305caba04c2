package permission

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// roCases has, for every entry of roTable, commands the list allows and commands that must ask
// in standard mode with no rules. Every entry must have both.
var roCases = map[string]struct{ allow, ask []string }{
	"ls": {
		allow: []string{"ls", "ls -la src", "ls -1 --color=never src", "ls --sort=time -r", "ls -I '*.go' src", "ls -w 80", "ls -- src"},
		ask:   []string{"ls -L src", "ls --dereference", "ls --deref", "ls -lL", "ls --al", "ls /etc", "ls --hide"},
	},
	"cat": {
		allow: []string{"cat README.md", "cat -n src/main.go", "cat -An README.md", "cat - README.md", "cat src/*.go"},
		ask:   []string{"cat /etc/passwd", "cat escape.txt", "cat --num README.md", "cat -z README.md", "cat links/*"},
	},
	"tac":  {allow: []string{"tac README.md", "tac -s x README.md"}, ask: []string{"tac ../outside/secret.txt", "tac --sep=x README.md"}},
	"head": {allow: []string{"head -5 README.md", "head -n 5 README.md", "head -n5 README.md", "head --lines=5 README.md", "head -qn3 README.md"}, ask: []string{"head --line=5 README.md", "head -n", "head -5 /etc/passwd"}},
	"tail": {allow: []string{"tail -n 3 README.md", "tail -3 README.md", "tail -n +2 README.md"}, ask: []string{"tail -f README.md", "tail --follow README.md", "tail -F README.md", "tail --pid=1 README.md"}},
	"wc":   {allow: []string{"wc -l README.md", "wc -lwc src/main.go"}, ask: []string{"wc --files0-from=list", "wc --files0-from list", "wc --files0=list"}},
	"nl":   {allow: []string{"nl -ba README.md", "nl -w 3 README.md"}, ask: []string{"nl -x README.md"}},
	"cut":  {allow: []string{"cut -d: -f1 README.md", "cut -d , -f 2 README.md", "cut --fields=1 README.md"}, ask: []string{"cut -f1 /etc/passwd"}},
	"sort": {
		allow: []string{"sort README.md", "sort -rn -k2 README.md", "sort -t: -k 2 README.md", "sort --check=quiet README.md", "sort -u -- README.md"},
		ask: []string{"sort --compress-prog=sh README.md", "sort --compress-program=sh README.md", "sort --compress-program sh README.md",
			"sort --out=.git/config README.md", "sort --output=x README.md", "sort -o x README.md", "sort -ox README.md", "sort -rno x README.md",
			"sort -T /tmp README.md", "sort --temporary-directory=/tmp README.md", "sort --random-source=/etc/passwd README.md", "sort --files0-from=l"},
	},
	"uniq":      {allow: []string{"uniq README.md", "uniq -c README.md", "sort README.md | uniq -c"}, ask: []string{"uniq README.md out.txt", "uniq --grou README.md"}},
	"diff":      {allow: []string{"diff README.md src/main.go", "diff -u README.md src/main.go", "diff --color=always -U 3 README.md src/main.go"}, ask: []string{"diff -r src links", "diff src links", "diff -l README.md src/main.go", "diff --paginate README.md src/main.go", "diff README.md /etc/passwd"}},
	"cmp":       {allow: []string{"cmp README.md src/main.go", "cmp -s README.md src/main.go"}, ask: []string{"cmp README.md /etc/passwd"}},
	"stat":      {allow: []string{"stat README.md", "stat -c %s README.md", "stat --format=%n src", "stat -L src/inner"}, ask: []string{"stat /etc/passwd", "stat --form=%s README.md"}},
	"du":        {allow: []string{"du -sh src", "du -d 1", "du --max-depth=1 ."}, ask: []string{"du -L .", "du --dereference", "du --files0-from=x", "du /etc"}},
	"df":        {allow: []string{"df -h .", "df --output=source ."}, ask: []string{"df --sync", "df /etc/passwd"}},
	"realpath":  {allow: []string{"realpath src/main.go", "realpath --relative-to=src README.md"}, ask: []string{"realpath --relative-to=/etc README.md", "realpath escape.txt"}},
	"readlink":  {allow: []string{"readlink -f src/inner"}, ask: []string{"readlink escape.txt", "readlink --canon src"}},
	"md5sum":    {allow: []string{"md5sum README.md"}, ask: []string{"md5sum -c sums", "md5sum --check sums"}},
	"sha1sum":   {allow: []string{"sha1sum README.md"}, ask: []string{"sha1sum -c sums"}},
	"sha256sum": {allow: []string{"sha256sum README.md", "sha256sum --tag src/main.go"}, ask: []string{"sha256sum -c sums", "sha256sum --status -c sums"}},
	"sha512sum": {allow: []string{"sha512sum README.md"}, ask: []string{"sha512sum --check sums"}},
	"date": {allow: []string{"date", "date +%s", "date -u +%Y", "date -d yesterday", "date -r README.md", "date --iso-8601=seconds"},
		ask: []string{"date -s now", "date --set=now", "date --se=now", "date 010100002030", "date -r /etc/passwd", "date -Id --set=now", "date -Id --se now"}},
	"whoami":   {allow: []string{"whoami"}, ask: []string{"whoami -x"}},
	"uname":    {allow: []string{"uname -a", "uname -sr"}, ask: []string{"uname --al"}},
	"id":       {allow: []string{"id", "id -u", "id -un root"}, ask: []string{"id --us"}},
	"basename": {allow: []string{"basename /a/b.go .go", "basename -s .go /etc/x.go"}, ask: []string{"basename --suf=.go x"}},
	"dirname":  {allow: []string{"dirname /etc/passwd"}, ask: []string{"dirname -x a"}},
	"tr":       {allow: []string{"tr a-z A-Z", "tr -d '\\n'"}, ask: []string{"tr --del x", "tr -x a b", "tr a $B"}},
	"grep": {
		allow: []string{"grep -rn TODO .", "grep -rn --include='*.go' TODO src", "grep -e x -e y README.md", "grep -C2 x README.md", "grep -5 x README.md", "grep -f README.md src/main.go", "grep -d recurse x ."},
		ask: []string{"grep -R TODO .", "grep -Rn TODO .", "grep --dereference-recursive TODO .", "grep --dereference TODO .", "grep --deref TODO .",
			"grep -rn x escape", "grep --file=/etc/passwd x", "grep -f/etc/passwd x", "grep -f /etc/passwd x", "grep --exclude-from=/etc/passwd x ."},
	},
	"egrep": {allow: []string{"egrep -rn 'a|b' ."}, ask: []string{"egrep -R x ."}},
	"fgrep": {allow: []string{"fgrep -rn x ."}, ask: []string{"fgrep --dereference-r x ."}},
	"rg": {
		allow: []string{"rg TODO src", "rg -n -i --glob '*.go' TODO", "rg -tgo -A2 x", "rg --files src", "rg -uu x", "rg --no-config x", "rg -f README.md src"},
		ask: []string{"rg --pre sh TODO", "rg --pre=sh TODO", "rg --pre-glob '*' --pre sh x", "rg -z x", "rg --search-zip x", "rg -L TODO", "rg --follow x",
			"rg --hostname-bin=sh x", "rg --foll x", "rg -f=/etc/passwd x", "rg x /etc"},
	},
	"find": {
		allow: []string{"find . -name '*.go'", "find src -type f -newer README.md", "find . -maxdepth 2 -iname x -print0", "find . \\( -name a -o -name b \\) -print", "find . ! -name x", "find", "find -H ."},
		ask: []string{"find . -name '*.go' -exec rm {} \\;", "find . -execdir sh -c x \\;", "find . -ok rm {} \\;", "find . -delete", "find . -fprint out",
			"find . -fprintf out %p", "find . -fls out", "find -L .", "find . -follow", "find / -name x", "find . -newer /etc/passwd", "find -files0-from list"},
	},
	"git status": {
		allow: []string{"git status", "git status --short", "git status -sb", "git status --porcelain=v1", "git status -uno", "git --no-pager status", "git -P status src"},
		ask:   []string{"git -c core.fsmonitor=x status", "git -C .. status", "git --git-dir=x status", "git --work-tree=/ status", "git status --porc", "git -p status", "git --bare status", "git status /etc"},
	},
	"git diff": {
		allow: []string{"git diff", "git diff HEAD~1 -- src", "git diff --stat", "git diff --cached", "git diff -U5 --word-diff", "git diff --no-ext-diff"},
		ask:   []string{"git diff --output=x", "git diff --output x", "git diff --out=x", "git diff --ext-diff", "git diff --textconv", "git diff --no-index src/main.go /etc/passwd", "git diff --no-index a b"},
	},
	"git log": {
		allow: []string{"git log --oneline -5", "git log -n 3 --format=%H", "git log --since=yesterday --author x", "git log -p -- src", "git log --graph --all"},
		ask:   []string{"git log --output=x", "git log --show-signature", "git log -L 1,2:x", "git log --onel"},
	},
	"git show":     {allow: []string{"git show HEAD:README.md", "git show --stat HEAD"}, ask: []string{"git show --ext-diff", "git show --output=/tmp/x", "git show --textconv HEAD"}},
	"git ls-files": {allow: []string{"git ls-files", "git ls-files -z --others --exclude-standard"}, ask: []string{"git ls-files -X /etc/passwd", "git ls-files --with-tree"}},
	"git blame":    {allow: []string{"git blame README.md", "git blame -L 1,3 README.md"}, ask: []string{"git blame --contents /etc/passwd README.md", "git blame --cont x README.md"}},
	"git shortlog": {allow: []string{"git shortlog -sn", "git shortlog -sn --all"}, ask: []string{"git shortlog --sum"}},
	"git branch": {
		allow: []string{"git branch", "git branch -a -v", "git branch --list 'feat*'", "git branch -l x", "git branch --show-current", "git branch --contains HEAD"},
		ask:   []string{"git branch new", "git branch -D old", "git branch -d old", "git branch -m a b", "git branch --edit-description", "git branch -u origin/x", "git branch --lis x", "git branch -f x"},
	},
	"echo":   {allow: []string{"echo hi", "echo $HOME", "echo --anything -x"}, ask: []string{"echo x > out.txt"}},
	"printf": {allow: []string{"printf '%s\\n' a b"}, ask: []string{"printf -v PATH /tmp", "printf $F"}},
	"pwd":    {allow: []string{"pwd", "pwd -P"}, ask: []string{"pwd -x"}},
	"test":   {allow: []string{"test -f README.md", "test -d src -a -e src/main.go", "test ! -e x"}, ask: []string{"test -f /etc/shadow", "test -f escape.txt", "test -q x"}},
	"[":      {allow: []string{"[ -f README.md ]", "[ a = a ]"}, ask: []string{"[ -f README.md", "[ -e /proc/1/environ ]"}},
}

// TestReadOnlyList checks every entry of the read-only list with commands it allows and
// commands that must ask.
func TestReadOnlyList(t *testing.T) {
	f := newFixture(t)
	p := f.policy(ModeStandard)
	var names []string
	for name := range roTable {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c, ok := roCases[name]
		if !ok || len(c.allow) == 0 || len(c.ask) == 0 {
			t.Errorf("read-only entry %q has no allow and ask cases in roCases", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			for _, cmd := range c.allow {
				if got := p.Check(bash(cmd)); got.Decision != Allow {
					t.Errorf("%s: %s (%s); want allow", cmd, got.Decision, got.Reason)
				}
			}
			for _, cmd := range c.ask {
				if got := p.Check(bash(cmd)); got.Decision != Ask {
					t.Errorf("%s: %s (%s); want ask", cmd, got.Decision, got.Reason)
				}
			}
		})
	}
	for name := range roCases {
		if _, ok := roTable[name]; !ok {
			t.Errorf("roCases has %q, which is not on the read-only list", name)
		}
	}
}

// TestReadOnlyGlobs: globs are expanded the way bash will before options are read, and a glob
// followed by .. asks.
func TestReadOnlyGlobs(t *testing.T) {
	f := newFixture(t)
	for name, content := range map[string]string{"--compress-prog=sh": "", "-o": "", "q/-R": ""} {
		p := filepath.Join(f.ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "src", "sub", "link")); err != nil {
		t.Fatal(err)
	}
	cases := []checkCase{}
	for _, tc := range []struct {
		cmd  string
		want Decision
	}{
		{"sort *compress*", Ask},      // expands to --compress-prog=sh
		{"sort -- *compress*", Allow}, // after -- it is a file name
		{"grep -r x q/*", Allow},      // q/-R is a path, not an option
		{"grep -r x ./*compress*", Allow},
		{"cat -?", Ask},   // -o
		{"cat ./*", Deny}, // ./membak leads into another agent's memory
		{"cd src && cat ../m*/notes.md", Deny},
		{"cat src/sub/l*/../x", Ask}, // .. after a wildcard
		{"cat */../../outside/secret.txt", Ask},
		{"cat src/sub/link/../x", Ask}, // link is followed first: outside/../x
		{"ls src/*/", Allow},
		{"cat src/[m]ain.go", Allow},
		{"cat src/[!x]ain.go", Allow},
		{"cat src/'*'*.go", Ask}, // quoted and unquoted wildcards mixed
		{"cat .*", Ask},          // .. matches .* in older bash
		{"cat src/.*", Allow},    // src/. and src/..
	} {
		cases = append(cases, checkCase{name: tc.cmd, mode: ModeStandard, call: bash(tc.cmd), want: tc.want})
	}
	runCases(t, f, cases)
}

// TestReadOnlyGitRepository: git is auto-allowed only where its config is the workspace's
// protected .git, not a bare repository the agent may have planted.
func TestReadOnlyGitRepository(t *testing.T) {
	f := newFixture(t)
	bare := filepath.Join(f.ws, "src", "bare")
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(bare, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bare, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, f, []checkCase{
		{name: "workspace", mode: ModeStandard, call: bash("git status"), want: Allow},
		{name: "subdir", mode: ModeStandard, call: bash("cd src && git status"), want: Allow},
		{name: "bare", mode: ModeStandard, call: bash("cd src/bare && git status"), want: Ask, reason: "HEAD"},
		{name: "bare glob cd", mode: ModeStandard, call: bash("cd src/b* && git log"), want: Ask},
		{name: "gitconfig in workspace", mode: ModeStandard, call: bash("git status"), want: Allow},
	})
}

// TestKernelFS: /proc and /sys are never auto-allowed, also through symlinks in the workspace.
// File tools run inside the gateway, so their /proc/self (and /dev/fd, /dev/stdin) is the
// gateway itself: denied in every mode.
func TestKernelFS(t *testing.T) {
	f := newFixture(t)
	if err := os.Symlink("/proc/self", filepath.Join(f.ws, "self")); err != nil {
		t.Fatal(err)
	}
	for _, mode := range allModes {
		p := f.policy(mode)
		p.ReadOnlyDirs = append(p.ReadOnlyDirs, "/proc", "/sys")
		if mode != ModeUnrestricted {
			for _, c := range []Call{
				bash("cat /proc/self/environ"), bash("cat /proc/1/environ"), bash("cat /proc/*/environ"), bash("cat self/environ"),
				bash("ls /sys/kernel"), bash("cd /proc/self && cat environ"), bash("cat < /proc/self/environ"), bash("cat /dev/fd/3"),
				read("/proc/1/environ"), grep("/proc"), read("/sys/kernel/notes"),
			} {
				if got := p.Check(c); got.Decision != Ask {
					t.Errorf("%s %s: %s (%s); want ask", mode, c.Args, got.Decision, got.Reason)
				}
			}
		}
		for _, c := range []Call{
			read("/proc/self/environ"), read("self/environ"), read("/proc/thread-self/environ"), read("/dev/fd/3"), read("/dev/stdin"),
			read(filepath.Join("/proc", strconv.Itoa(os.Getpid()), "mem")), grep("/proc/self"), globCall("/proc/self/*"),
			call("Attach", "file_path", "/proc/self/environ"), write("/proc/self/attr/current"),
		} {
			p.Allow = rules(t, "Read", "Grep", "Glob", "Attach", "Write")
			if got := p.Check(c); got.Decision != Deny {
				t.Errorf("%s %s %s: %s (%s); want deny", mode, c.Tool, c.Args, got.Decision, got.Reason)
			}
		}
	}
}

// TestMemoryGitDir: this agent's memory repository's .git is harness-owned.
func TestMemoryGitDir(t *testing.T) {
	f := newFixture(t)
	var cases []checkCase
	for _, mode := range []Mode{ModeStandard, ModeAcceptEdits} {
		m := string(mode) + "/"
		cases = append(cases,
			checkCase{name: m + "write memory", mode: mode, call: write(filepath.Join(f.mem, "x.md")), want: Allow},
			checkCase{name: m + "write memory .git", mode: mode, call: write(filepath.Join(f.mem, ".git", "config")), want: Ask, reason: ".git"},
			checkCase{name: m + "edit memory .git hook", mode: mode, call: edit(filepath.Join(f.mem, ".git", "hooks", "post-commit")), want: Ask},
			checkCase{name: m + "redirect memory .git", mode: mode, call: bash("echo x > " + filepath.Join(f.mem, ".git", "config")), want: Ask},
			checkCase{name: m + "redirect memory .GIT", mode: mode, call: bash("echo x >> " + filepath.Join(f.mem, ".GIT", "config")), want: Ask},
			checkCase{name: m + "read memory .git", mode: mode, call: read(filepath.Join(f.mem, ".git", "config")), want: Allow},
		)
	}
	cases = append(cases, checkCase{name: "rule-allowed redirect", mode: ModeStandard, allow: []string{"Bash(go test:*)"}, call: bash("go test > " + filepath.Join(f.mem, ".git", "config")), want: Ask})
	runCases(t, f, cases)
}

// TestReadOnlyGlobOrder: bash orders matches by locale, so which match becomes an option's
// value is not known; every match is checked as a read.
func TestReadOnlyGlobOrder(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.ws, "o")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(dir, "Escape.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "-delete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "-n"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, f, []checkCase{
		{name: "dash match is not an option", mode: ModeStandard, call: bash("cat -?"), want: Ask, reason: "take as an option"},
		{name: "dash match after --", mode: ModeStandard, call: bash("cat -- -?"), want: Allow},
		{name: "value position", mode: ModeStandard, call: bash("grep -e o/*.txt"), want: Ask},
		{name: "find dash match", mode: ModeStandard, call: bash("cd o && find . -?elete"), want: Ask},
		{name: "find dash match no --", mode: ModeStandard, call: bash("find o/-* ."), want: Allow},
		{name: "after -- in a value", mode: ModeStandard, call: bash("cd o && grep -e -- -f -?elete a.txt"), want: Ask},
	})
}

// TestOtherAgentMemorySpellings: globs, .. after symlinks, cd into globs or through symlinks
// all lead to another agent's memory, and every mode denies them.
func TestOtherAgentMemorySpellings(t *testing.T) {
	f := newFixture(t)
	var cases []checkCase
	for _, mode := range allModes {
		m := string(mode) + "/"
		for _, cmd := range []string{
			"cat memb*/notes.md",
			"cat m?mbak/notes.md",
			"cat src/sub/up2out/../memory/agent-b/notes.md",
			"cat src/*/up2out/../memory/agent-b/notes.md",
			"cat ../*/agent-b/notes.md",
			"cat ../m*/a*-b/notes.md",
			"cd memb* && cat notes.md",
			"cd membak && cat notes.md",
			"cd -P src/sub/up2out/.. && cat memory/agent-b/notes.md",
			"cd src && cat ../memb*/notes.md",
			"ls */",
			"cp memb*/notes.md x",
			"wc -l < membak/notes.md",
			"tar cf x.tar ../memory/*",
		} {
			cases = append(cases, checkCase{name: m + cmd, mode: mode, allow: []string{"Bash"}, call: bash(cmd), want: Deny, reason: "another agent's memory"})
		}
		// bash's cd is logical: cd up2out/.. goes back to src/sub, so this reads src/sub/memory.
		cases = append(cases, checkCase{name: m + "logical cd", mode: mode, allow: []string{"Bash"}, call: bash("cd src/sub/up2out/.. && cat memory/agent-b/notes.md"),
			want: Allow})
	}
	runCases(t, f, cases)
}

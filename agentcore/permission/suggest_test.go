package permission

import "testing"

// TestAlwaysRule: the rule an "Always" approval stores never widens over options or positions.
func TestAlwaysRule(t *testing.T) {
	f := newFixture(t)
	p := f.policy(ModeStrict)
	for _, tc := range []struct{ cmd, rule string }{
		{"git push origin main", "Bash(git push:*)"},
		{"git push", "Bash(git push:*)"},
		{"git -C /tmp/x push", "Bash(git -C /tmp/x push)"},
		{"git -c core.pager=sh log", "Bash(git -c core.pager=sh log)"},
		{"git --git-dir=x status", "Bash(git --git-dir=x status)"},
		{"git stash pop", "Bash(git stash pop:*)"},
		{"git stash", "Bash(git stash:*)"},
		{"git remote add origin x", "Bash(git remote add:*)"},
		{"go test -race ./...", "Bash(go test:*)"},
		{"go mod tidy", "Bash(go mod tidy:*)"},
		{"go -C sub test", "Bash(go -C sub test)"},
		{"npm run build", "Bash(npm run build:*)"},
		{"npm install", "Bash(npm install:*)"},
		{"cargo build --release", "Bash(cargo build:*)"},
		{"make test", "Bash(make test:*)"},
		{"make", "Bash(make)"},
		{"make -f evil.mk", "Bash(make -f evil.mk)"},
		{"make build/out.o", "Bash(make build/out.o)"},
		{"docker compose up -d", "Bash(docker compose up:*)"},
		{"kubectl get pods", "Bash(kubectl get:*)"},
		{"find . -name x", "Bash(find . -name x)"},
		{"find . -delete", "Bash(find . -delete)"},
		{"rm -rf build", "Bash(rm -rf build)"},
		{"rm -rf .", "Bash(rm -rf .)"},
		{"chmod -R 777 .", "Bash(chmod -R 777 .)"},
		{"chown root x", "Bash(chown root x)"},
		{"dd if=/dev/zero of=x", "Bash(dd if=/dev/zero of=x)"},
		{"mv a b", "Bash(mv a b)"},
		{"python3 script.py", "Bash(python3 script.py)"},
		{"node index.js", "Bash(node index.js)"},
		{"bash build.sh", "Bash(bash build.sh)"},
		{"sh -c make", "Bash(sh -c make)"},
		{"sudo make install", "Bash(sudo make install)"},
		{"env A=1 make", "Bash(env A=1 make)"},
		{"xargs rm", "Bash(xargs rm)"},
		{"timeout 5 make", "Bash(timeout 5 make)"},
		{"nice make", "Bash(nice make)"},
		{"./run.sh test", "Bash(./run.sh test)"},
		{"/usr/bin/git push", "Bash(/usr/bin/git push)"},
		{"ls", "Bash(ls)"},
		{"ls -la", "Bash(ls -la)"},
		{"curl https://example.com", "Bash(curl https://example.com)"},
		{"python3 -c 'print(1)'", ""},
		{"rm -rf 'my dir'", ""},
		{"rm *.o", ""},
		{"FOO=1 make", ""},
		{"$CMD x", ""},
		{"make $TARGET", ""},
		{"find . -exec rm {} \\;", ""},
	} {
		got := p.Check(bash(tc.cmd))
		if got.Decision != Ask || got.Suggest != tc.rule {
			t.Errorf("%s: %s, Always stores %q; want %q", tc.cmd, got.Decision, got.Suggest, tc.rule)
			continue
		}
		if tc.rule == "" {
			continue
		}
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Errorf("%s: rule %q does not parse: %v", tc.cmd, tc.rule, err)
			continue
		}
		q := f.policy(ModeStrict)
		q.Allow = []Rule{r}
		if again := q.Check(bash(tc.cmd)); again.Decision != Allow {
			t.Errorf("%s: after storing %s: %s (%s)", tc.cmd, r, again.Decision, again.Reason)
		}
		bp, _ := parseBashPattern(r.Pattern)
		if !bp.prefix {
			// An exact rule allows nothing more: one extra argument asks again.
			if again := q.Check(bash(tc.cmd + " extra")); again.Decision == Allow {
				t.Errorf("%s: exact rule %s also allows an extra argument", tc.cmd, r)
			}
		}
	}
}

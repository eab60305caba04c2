package permission

import "testing"

func BenchmarkCheck(b *testing.B) {
	f := newFixture(b)
	p := f.policy(ModeAcceptEdits)
	p.Allow = rules(b, "Bash(go test:*)", "Bash(go vet:*)", "Edit(src/**)")
	p.Deny = rules(b, "Bash(rm:*)", "Read(**/*.env)")
	p.Ask = rules(b, "Bash(git push:*)")
	for _, bc := range []struct {
		name string
		call Call
		want Decision
	}{
		{"bash-compound", bash("cd src && go vet ./... && go test -race ./... 2>&1 | tail -n 20 && git status --short > /dev/null"), Allow},
		{"edit", edit("src/main.go"), Allow},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if got := p.Check(bc.call); got.Decision != bc.want {
				b.Fatalf("%s: %s (%s)", bc.name, got.Decision, got.Reason)
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Check(bc.call)
			}
		})
	}
}

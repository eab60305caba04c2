package permission

import (
	"sort"
	"strings"
	"testing"
)

// helpOracle is what the oracle knows about one program: only its parsed help and the list of
// dangerous options, never our read-only table.
type helpOracle struct {
	name  string
	pr    roProbe
	opts  map[string]helpArg
	longs []string
	short []string
}

// mustAsk says whether getopt-style parsing of words reaches a dangerous option or a long
// spelling that is not an exact option (an abbreviation or an unknown name): the checker must
// not allow either. "" means the oracle makes no claim.
func (o helpOracle) mustAsk(words []string) string {
	danger := func(opt string) bool { return contains(o.pr.danger, opt) }
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			return ""
		case w == "-" || !strings.HasPrefix(w, "-"):
			continue
		case strings.HasPrefix(w, "--"):
			name, _, hasEq := strings.Cut(w, "=")
			h, exact := o.opts[name]
			if !exact {
				if !o.pr.noAbbrev {
					return "not an exact option: " + w
				}
				for _, d := range o.pr.danger {
					if strings.HasPrefix(d, name) {
						return "abbreviates the dangerous " + d + ": " + w
					}
				}
				return "" // the program reads exact names only; it would refuse this one
			}
			if danger(name) {
				return "dangerous: " + w
			}
			if !hasEq && h.kind() == argValue {
				i++
			}
		default:
			for j := 1; j < len(w); j++ {
				opt := "-" + w[j:j+1]
				if danger(opt) {
					return "dangerous " + opt + " in " + w
				}
				h, known := o.opts[opt]
				if !known {
					break // the program refuses the word
				}
				if k := h.kind(); k == argValue || k == argOptional {
					if j == len(w)-1 && k == argValue {
						i++
					}
					break
				}
			}
		}
	}
	return ""
}

// FuzzReadOnlyOptions generates option spellings — exact names, abbreviations, attached and
// separate values, bundled short options, dangerous options — for the programs on the
// read-only list, and checks each command against an oracle built from the programs' own help
// and the list of dangerous options: whatever the oracle says must ask is never allowed.
func FuzzReadOnlyOptions(f *testing.F) {
	fx := newFixture(f)
	p := fx.policy(ModeStandard)
	var oracles []helpOracle
	var names []string
	for name, pr := range roProbes {
		if !pr.find {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		pr := roProbes[name]
		help := pr.help
		if help == nil {
			help = []string{name, "--help"}
		}
		text := runHelp(f, help)
		if pr.extra != nil {
			text += "\n" + runHelp(f, pr.extra)
		}
		o := helpOracle{name: name, pr: pr, opts: parseHelp(text, pr.git)}
		for opt := range o.opts {
			if strings.HasPrefix(opt, "--") {
				o.longs = append(o.longs, opt)
			} else {
				o.short = append(o.short, opt)
			}
		}
		o.longs = append(o.longs, pr.danger...)
		sort.Strings(o.longs)
		sort.Strings(o.short)
		oracles = append(oracles, o)
	}
	for _, s := range []struct {
		prog uint8
		gen  string
	}{
		{0, "\x01\x05\x03"}, {1, "\x02\x00\x07\x01"}, {7, "\x03\x02\x01\x00\x04"}, {20, "\x01\x01\x09\x02\x05"},
	} {
		f.Add(s.prog, []byte(s.gen))
	}
	f.Fuzz(func(t *testing.T, prog uint8, gen []byte) {
		o := oracles[int(prog)%len(oracles)]
		next := func() int {
			if len(gen) == 0 {
				return 0
			}
			b := int(gen[0])
			gen = gen[1:]
			return b
		}
		value := func() string {
			if next()%2 == 0 {
				return "sh"
			}
			return o.pr.operandWord()
		}
		var words []string
		for n := 0; n < 6 && len(gen) > 0; n++ {
			switch next() % 6 {
			case 0, 1: // a long option, maybe cut short, bare or with a value
				if len(o.longs) == 0 {
					continue
				}
				opt := o.longs[next()%len(o.longs)]
				if !strings.HasPrefix(opt, "--") {
					opt = "-" + strings.TrimLeft(opt, "-")
					words = append(words, opt)
					continue
				}
				if cut := next() % (len(opt) + 1); cut >= 3 {
					opt = opt[:cut]
				}
				switch next() % 3 {
				case 0:
					words = append(words, opt)
				case 1:
					words = append(words, opt+"="+value())
				default:
					words = append(words, opt, value())
				}
			case 2, 3: // a bundle of short options, maybe with an attached or separate value
				if len(o.short) == 0 {
					continue
				}
				w := "-"
				for k := next()%3 + 1; k > 0; k-- {
					w += o.short[next()%len(o.short)][1:]
				}
				switch next() % 3 {
				case 1:
					w += value()
				case 2:
					words = append(words, w)
					w = value()
				}
				words = append(words, w)
			case 4:
				words = append(words, "--")
			default:
				words = append(words, value())
			}
		}
		for _, w := range words {
			if strings.ContainsAny(w, "'\"\\ $`;&|<>(){}*?[]#~!") {
				return // a word the shell would change; out of scope here
			}
		}
		cmd := o.pr.cmd(strings.Join(words, " "))
		if why := o.mustAsk(words); why != "" {
			if got := p.Check(bash(cmd)); got.Decision == Allow {
				t.Fatalf("%s: allowed (%s), but %s", cmd, got.Reason, why)
			}
		}
	})
}

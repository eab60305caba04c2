package permission

import (
	"strings"
)

// The read-only list is an allowlist: each program names exactly the options it accepts, and any
// other option, any abbreviation of a long option (GNU getopt and git accept unambiguous
// prefixes, so --compress-prog=sh is --compress-program=sh) and any unknown long option asks.
// Options that run programs, write files, follow symlinks while recursing, or read files named
// inside other files are left out on purpose; roTable's comments say which.
//
// opts is a list of entries separated by spaces. An entry is aliases separated by commas — one
// character is a short option (-x), longer is a long one (--name, or -name for find) — and an
// optional suffix: "=" takes a value (--opt=v, --opt v, -ov, -o v), "=@" takes a value naming a
// file that is read (checked like a path operand), "=?" takes an optional value that must be
// attached (--opt=v, -ov).

// argKind is what an option does with a value.
type argKind uint8

const (
	argNone     argKind = iota // a flag
	argValue                   // a required value
	argPath                    // a required value that names a file the program reads
	argOptional                // an optional value, attached only
)

// operandKind is what the words that are not options mean.
type operandKind uint8

const (
	operandPaths operandKind = iota // files read: each must stay readable
	operandText                     // words that name no file
	operandDate                     // date: only +FORMAT (other operands set the clock)
	operandTest                     // test and [: an expression whose words are checked as paths
)

// roEntry is one program of the read-only list as written in roTable.
type roEntry struct {
	opts     string
	operands operandKind
	// numeric accepts -NUM (head -5, grep -2, git log -3).
	numeric bool
	// maxOperands limits the operands (uniq's second operand is a file it writes); 0 is no limit.
	maxOperands int
	// noDirs asks when a path names a directory (diff reads the files inside, following symlinks).
	noDirs bool
	// singleDash: options are whole words like -name (find); nothing is bundled.
	singleDash bool
	// listOnly names the option without which operands are refused (git branch NAME creates a
	// branch; with --list the operands are patterns).
	listOnly string
	// anyWords accepts every word, also expansions (echo treats all of them as text).
	anyWords bool
	// git: this is a git subcommand; the repository it runs in is checked first.
	git bool
}

const gnu = " help version"

// gitDiffOpts are the diff options shared by git diff, log and show, without --output (writes a
// file), --ext-diff and --textconv (run configured programs) and --no-index (compares any files).
const gitDiffOpts = " p,u,patch s,no-patch U,unified=? W,function-context raw patch-with-raw patch-with-stat" +
	" numstat shortstat X,dirstat=? cumulative dirstat-by-file=? check summary name-only name-status stat=?" +
	" stat-width= stat-name-width= stat-graph-width= stat-count= compact-summary binary full-index color=?" +
	" no-color ws-error-highlight= z abbrev=? no-abbrev src-prefix= dst-prefix= line-prefix= no-prefix" +
	" inter-hunk-context= B,break-rewrites=? M,find-renames=? D,irreversible-delete C,find-copies=?" +
	" find-copies-harder no-renames rename-empty no-rename-empty l= minimal w,ignore-all-space" +
	" b,ignore-space-change ignore-space-at-eol ignore-cr-at-eol ignore-blank-lines I,ignore-matching-lines=" +
	" indent-heuristic no-indent-heuristic patience histogram diff-algorithm= anchored= word-diff=?" +
	" word-diff-regex= color-words=? color-moved=? no-color-moved color-moved-ws= relative=? no-relative" +
	" a,text R exit-code quiet no-ext-diff no-textconv ignore-submodules=? submodule=? S= G= pickaxe-all" +
	" pickaxe-regex O=@ diff-filter= find-object= h"

// gitLogOpts are git log's and show's own options (revision walking and formatting), without
// --show-signature (runs gpg) and -L (reads line ranges of a file given inside the value).
const gitLogOpts = gitDiffOpts + " q source use-mailmap mailmap no-mailmap clear-decorations decorate-refs=" +
	" decorate-refs-exclude= decorate=? no-decorate n,max-count= skip= since= after= until= before=" +
	" author= committer= grep= i,regexp-ignore-case E,extended-regexp F,fixed-strings all-match invert-grep" +
	" merges no-merges first-parent all branches=? tags=? remotes=? glob= exclude= reflog g,walk-reflogs" +
	" cherry-pick left-only right-only boundary simplify-by-decoration full-history ancestry-path=?" +
	" date-order author-date-order topo-order reverse no-walk=? pretty=? format=? abbrev-commit" +
	" no-abbrev-commit oneline encoding= expand-tabs=? no-expand-tabs notes=? no-notes relative-date date=" +
	" parents children left-right graph c cc m t follow log-size"

// roTable is the read-only list. Keys are program names, or "git SUB" for git subcommands.
// Left out on purpose: ls/du -L (follow symlinks while recursing), tail -f (never ends), wc/du/
// sort --files0-from and sha*sum -c (read files named inside a file), sort -o, -T and
// --compress-program (write files, run a program), grep -R (follows symlinks), rg --pre,
// --pre-glob, -z and -L (run programs, follow symlinks), diff -r and -l (follows symlinks, runs
// pr), find -exec*, -ok*, -delete, -fprint*, -fls, -L, -follow and -files0-from, date -s, git
// -c, -C, --git-dir and --work-tree (choose config and repository), printf -v (assigns a shell
// variable such as PATH). jq (its filters import files), which and git rev-parse (their help
// cannot be checked against this list) are not on it.
var roTable = map[string]roEntry{
	"ls": {opts: "a,all A,almost-all author b,escape block-size= B,ignore-backups c C color=? d,directory D,dired" +
		" f F classify=? file-type format= full-time g group-directories-first G,no-group h,human-readable si" +
		" H,dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink=? indicator-style=" +
		" i,inode I,ignore= k,kibibytes l m n,numeric-uid-gid N,literal o p q,hide-control-chars" +
		" show-control-chars Q,quote-name quoting-style= r,reverse R,recursive s,size S sort= time= time-style=" +
		" t T,tabsize= u U v w,width= x X Z,context zero 1" + gnu},
	"cat":  {opts: "A,show-all b,number-nonblank e E,show-ends n,number s,squeeze-blank t T,show-tabs u v,show-nonprinting" + gnu},
	"tac":  {opts: "b,before r,regex s,separator=" + gnu},
	"head": {opts: "c,bytes= n,lines= q,quiet,silent v,verbose z,zero-terminated" + gnu, numeric: true},
	"tail": {opts: "c,bytes= n,lines= q,quiet,silent v,verbose z,zero-terminated" + gnu, numeric: true},
	"wc":   {opts: "c,bytes m,chars l,lines L,max-line-length w,words" + gnu},
	"nl": {opts: "b,body-numbering= d,section-delimiter= f,footer-numbering= h,header-numbering= i,line-increment=" +
		" l,join-blank-lines= n,number-format= p,no-renumber s,number-separator= v,starting-line-number=" +
		" w,number-width=" + gnu},
	"cut": {opts: "b,bytes= c,characters= d,delimiter= f,fields= n complement s,only-delimited output-delimiter=" +
		" z,zero-terminated" + gnu},
	"sort": {opts: "b,ignore-leading-blanks d,dictionary-order f,ignore-case g,general-numeric-sort" +
		" i,ignore-nonprinting M,month-sort h,human-numeric-sort n,numeric-sort R,random-sort r,reverse sort=" +
		" V,version-sort batch-size= c C check=? debug k,key= m,merge s,stable S,buffer-size= t,field-separator=" +
		" parallel= u,unique z,zero-terminated" + gnu},
	"uniq": {opts: "c,count d,repeated D all-repeated=? f,skip-fields= group=? i,ignore-case s,skip-chars= u,unique" +
		" z,zero-terminated w,check-chars=" + gnu, maxOperands: 1},
	"diff": {opts: "normal q,brief s,report-identical-files c C= context=? u U= unified=? e,ed n,rcs y,side-by-side" +
		" W,width= left-column suppress-common-lines p,show-c-function F,show-function-line= label= t,expand-tabs" +
		" T,initial-tab tabsize= suppress-blank-empty N,new-file unidirectional-new-file ignore-file-name-case" +
		" no-ignore-file-name-case x,exclude= X,exclude-from=@ from-file=@ to-file=@ i,ignore-case" +
		" E,ignore-tab-expansion Z,ignore-trailing-space b,ignore-space-change w,ignore-all-space" +
		" B,ignore-blank-lines I,ignore-matching-lines= a,text strip-trailing-cr D,ifdef= line-format= d,minimal" +
		" horizon-lines= speed-large-files color=? palette= help v,version", noDirs: true},
	"cmp":  {opts: "b,print-bytes i,ignore-initial= l,verbose n,bytes= s,quiet,silent help v,version"},
	"stat": {opts: "L,dereference f,file-system cached= c,format= printf= t,terse" + gnu},
	"du": {opts: "0,null a,all apparent-size B,block-size= b,bytes c,total D,dereference-args d,max-depth= H" +
		" h,human-readable inodes k l,count-links m P,no-dereference S,separate-dirs si s,summarize t,threshold=" +
		" time=? time-style= X,exclude-from=@ exclude= x,one-file-system" + gnu},
	"df": {opts: "a,all B,block-size= h,human-readable H,si i,inodes k l,local no-sync output=? P,portability total" +
		" t,type= T,print-type x,exclude-type= v" + gnu},
	"realpath": {opts: "e,canonicalize-existing m,canonicalize-missing L,logical P,physical q,quiet relative-to=@" +
		" relative-base=@ s,strip,no-symlinks z,zero" + gnu},
	"readlink": {opts: "f,canonicalize e,canonicalize-existing m,canonicalize-missing n,no-newline q,quiet s,silent" +
		" v,verbose z,zero" + gnu},
	"md5sum":    {opts: "b,binary tag t,text z,zero" + gnu},
	"sha1sum":   {opts: "b,binary tag t,text z,zero" + gnu},
	"sha256sum": {opts: "b,binary tag t,text z,zero" + gnu},
	"sha512sum": {opts: "b,binary tag t,text z,zero" + gnu},
	"date": {opts: "d,date= debug f,file=@ I=? iso-8601=? resolution R,rfc-email rfc-3339= r,reference=@" +
		" u,utc,universal" + gnu, operands: operandDate},
	"whoami":   {opts: gnu, operands: operandText},
	"uname":    {opts: "a,all s,kernel-name n,nodename r,kernel-release v,kernel-version m,machine p,processor i,hardware-platform o,operating-system" + gnu, operands: operandText},
	"id":       {opts: "a Z,context g,group G,groups n,name r,real u,user z,zero" + gnu, operands: operandText},
	"basename": {opts: "a,multiple s,suffix= z,zero" + gnu, operands: operandText},
	"dirname":  {opts: "z,zero" + gnu, operands: operandText},
	"tr":       {opts: "c,C,complement d,delete s,squeeze-repeats t,truncate-set1" + gnu, operands: operandText},
	"grep": {opts: "E,extended-regexp F,fixed-strings G,basic-regexp P,perl-regexp e,regexp= f,file=@ i,ignore-case" +
		" no-ignore-case w,word-regexp x,line-regexp z,null-data s,no-messages v,invert-match V,version help" +
		" m,max-count= b,byte-offset n,line-number line-buffered H,with-filename h,no-filename label=" +
		" o,only-matching q,quiet,silent binary-files= a,text I d,directories= D,devices= r,recursive include=" +
		" exclude= exclude-from=@ exclude-dir= L,files-without-match l,files-with-matches c,count T,initial-tab" +
		" Z,null B,before-context= A,after-context= C,context= group-separator= no-group-separator color=?" +
		" colour=? U,binary", numeric: true},
	"rg": {opts: "A,after-context= B,before-context= binary block-buffered b,byte-offset s,case-sensitive color=" +
		" colors= column C,context= context-separator= c,count count-matches crlf debug dfa-size-limit=" +
		" E,encoding= engine= field-context-separator= field-match-separator= f,file=@ files" +
		" l,files-with-matches files-without-match F,fixed-strings g,glob= glob-case-insensitive h,help heading" +
		" .,hidden iglob= i,ignore-case ignore-file=@ ignore-file-case-insensitive include-zero v,invert-match" +
		" json line-buffered n,line-number x,line-regexp M,max-columns= max-columns-preview m,max-count=" +
		" max-depth= max-filesize= mmap U,multiline multiline-dotall no-config I,no-filename no-heading" +
		" no-ignore no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global no-ignore-messages" +
		" no-ignore-parent no-ignore-vcs N,no-line-number no-messages no-mmap no-require-git no-unicode 0,null" +
		" null-data one-file-system o,only-matching passthru path-separator= P,pcre2 p,pretty q,quiet" +
		" regex-size-limit= e,regexp= r,replace= S,smart-case sort= sortr= stats a,text j,threads= trim t,type=" +
		" type-add= type-clear= type-list T,type-not= u,unrestricted V,version vimgrep H,with-filename" +
		" w,word-regexp"},
	"find": {opts: "daystart nowarn warn depth maxdepth= mindepth= mount noleaf xdev ignore_readdir_race" +
		" noignore_readdir_race amin= anewer=@ atime= cmin= cnewer=@ ctime= empty false fstype= gid= group=" +
		" ilname= iname= inum= iwholename= iregex= links= lname= mmin= mtime= name= newer=@ nouser nogroup path=" +
		" perm= regex= readable writable executable wholename= size= true type= uid= used= user= xtype= print0" +
		" printf= print ls prune quit not a and o or help version", singleDash: true},
	"git status": {opts: "v,verbose s,short b,branch show-stash ahead-behind no-ahead-behind porcelain=? long z,null" +
		" u,untracked-files=? ignored=? ignore-submodules=? column=? no-column no-renames M,find-renames=? h", git: true},
	"git diff": {opts: gitDiffOpts + " cached staged merge-base", git: true},
	"git log":  {opts: gitLogOpts, git: true, numeric: true},
	"git show": {opts: gitLogOpts, git: true, numeric: true},
	"git ls-files": {opts: "z t v f c,cached d,deleted m,modified o,others i,ignored s,stage k,killed directory eol" +
		" empty-directory no-empty-directory u,unmerged resolve-undo x,exclude= X,exclude-from=@" +
		" exclude-per-directory= exclude-standard full-name recurse-submodules error-unmatch with-tree= abbrev=?" +
		" debug deduplicate sparse format= h", git: true},
	"git blame": {opts: "incremental b root show-stats score-debug f,show-name n,show-number p,porcelain line-porcelain" +
		" c t l s e,show-email w ignore-rev= ignore-revs-file=@ color-lines color-by-age minimal S=@ contents=@" +
		" C=? M=? L= abbrev=? h", git: true},
	"git shortlog": {opts: "c,committer n,numbered s,summary e,email w=? group= h all since= until= after= before=" +
		" author= merges no-merges", git: true},
	"git branch": {opts: "v,verbose q,quiet color=? no-color r,remotes contains= no-contains= abbrev=? no-abbrev a,all" +
		" l,list show-current merged= no-merged= column=? no-column sort= points-at= i,ignore-case format= h",
		git: true, operands: operandText, listOnly: "list"},
	// Shell builtins, written by hand: their help is not a program's --help.
	"echo":   {anyWords: true, operands: operandText},
	"printf": {operands: operandText},
	"pwd":    {opts: "L P", operands: operandText},
	"test":   {operands: operandTest},
	"[":      {operands: operandTest},
	"egrep":  {},
	"fgrep":  {},
}

// gitGlobalOpts are the options allowed between git and its subcommand.
const gitGlobalOpts = "P,no-pager no-optional-locks"

// testOperators are the words test and [ accept as operators; every other word is an operand.
var testOperators = strings.Fields("! ( ) = == != < > -a -o -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x" +
	" -G -L -N -O -S -z -n -v -nt -ot -ef -eq -ne -lt -le -gt -ge")

// roProgram is a compiled roTable entry.
type roProgram struct {
	roEntry
	name      string
	short     map[byte]argKind
	long      map[string]argKind
	listShort byte // the short alias of listOnly, if any
}

// roPrograms is roTable compiled once; it is never modified.
var roPrograms, roGitGlobal = compileROTable()

func compileROTable() (map[string]*roProgram, *roProgram) {
	out := make(map[string]*roProgram, len(roTable))
	for name, e := range roTable {
		if name == "egrep" || name == "fgrep" {
			e = roTable["grep"]
		}
		out[name] = compileOpts(name, e)
	}
	return out, compileOpts("git", roEntry{opts: gitGlobalOpts})
}

func compileOpts(name string, e roEntry) *roProgram {
	p := &roProgram{roEntry: e, name: name, short: map[byte]argKind{}, long: map[string]argKind{}}
	for _, entry := range strings.Fields(e.opts) {
		kind := argNone
		switch {
		case strings.HasSuffix(entry, "=@"):
			entry, kind = entry[:len(entry)-2], argPath
		case strings.HasSuffix(entry, "=?"):
			entry, kind = entry[:len(entry)-2], argOptional
		case strings.HasSuffix(entry, "="):
			entry, kind = entry[:len(entry)-1], argValue
		}
		aliases := strings.Split(entry, ",")
		for _, alias := range aliases {
			if len(alias) == 1 && !e.singleDash {
				p.short[alias[0]] = kind
				if e.listOnly != "" && contains(aliases, e.listOnly) {
					p.listShort = alias[0]
				}
			} else {
				p.long[alias] = kind
			}
		}
	}
	return p
}

// lookupReadOnly finds the read-only entry for a command's words and returns the words after
// the program name (and git's subcommand). why says why the command is not on the list.
func lookupReadOnly(args []wordInfo) (p *roProgram, rest []wordInfo, why string) {
	if len(args) == 0 || !args[0].plain || args[0].glob {
		return nil, nil, "is not covered by an allow rule or the read-only command list"
	}
	name := args[0].lit
	if name != "git" {
		if p := roPrograms[name]; p != nil {
			return p, args[1:], ""
		}
		return nil, nil, "is not covered by an allow rule or the read-only command list"
	}
	i := 1
	for ; i < len(args) && strings.HasPrefix(args[i].lit, "-"); i++ {
		w := args[i]
		if !w.plain || w.glob || !knownFlag(roGitGlobal, w.lit) {
			return nil, nil, "gives git the option " + w.lit + ", which is not on the read-only list (-c, -C, --git-dir and the like choose what git runs)"
		}
	}
	if i < len(args) && args[i].plain && !args[i].glob {
		if p := roPrograms["git "+args[i].lit]; p != nil {
			return p, args[i+1:], ""
		}
	}
	return nil, nil, "is not a git subcommand on the read-only list (status, diff, log, show, ls-files, blame, shortlog, branch)"
}

// knownFlag reports a flag word that is on p's list and takes no value.
func knownFlag(p *roProgram, w string) bool {
	if name, ok := strings.CutPrefix(w, "--"); ok {
		k, found := p.long[name]
		return found && k == argNone
	}
	for i := 1; i < len(w); i++ {
		if k, found := p.short[w[i]]; !found || k != argNone {
			return false
		}
	}
	return len(w) > 1
}

// roArgs is what parsing a read-only command's words found.
type roArgs struct {
	paths    []string // option values and operands naming files that are read
	operands int
	listed   bool // the listOnly option was given
	endOpts  int  // index of the "--" that ended the options, -1 if none
}

// parse reads words the way the program's option parser will. It refuses anything not on the
// list; why says what.
func (p *roProgram) parse(words []string) (a roArgs, why string) {
	a.endOpts = -1
	if p.anyWords {
		return a, ""
	}
	if p.operands == operandTest {
		a, why = p.parseTest(words)
		a.endOpts = -1
		return a, why
	}
	if p.singleDash {
		a, why = p.parseFind(words)
		a.endOpts = -1
		return a, why
	}
	operand := func(w string) string {
		a.operands++
		if p.maxOperands > 0 && a.operands > p.maxOperands {
			return "has more operands than it only reads (" + w + " would be written)"
		}
		switch p.operands {
		case operandPaths:
			a.paths = append(a.paths, w)
		case operandDate:
			if !strings.HasPrefix(w, "+") {
				return "gives date the operand " + w + ", which sets the clock"
			}
		}
		return ""
	}
	value := func(k argKind, v string) {
		if k == argPath {
			a.paths = append(a.paths, v)
			if s, ok := strings.CutPrefix(v, "="); ok {
				a.paths = append(a.paths, s) // some parsers read -f=x as x
			}
		}
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			a.endOpts = i
			for _, o := range words[i+1:] {
				if why := operand(o); why != "" {
					return a, why
				}
			}
			return a.done(p)
		case w == "-" || !strings.HasPrefix(w, "-"):
			if why := operand(w); why != "" {
				return a, why
			}
		case strings.HasPrefix(w, "--"):
			name, v, hasValue := strings.Cut(w[2:], "=")
			k, ok := p.long[name]
			switch {
			case !ok:
				return a, "has the option --" + name + ", which is not on its read-only list (abbreviations count as other options)"
			case k == argNone && hasValue:
				return a, "gives a value to --" + name + ", which takes none"
			case (k == argValue || k == argPath) && !hasValue:
				if i+1 >= len(words) {
					return a, "lacks the value of --" + name
				}
				i++
				v = words[i]
			}
			value(k, v)
			if name == p.listOnly {
				a.listed = true
			}
		case p.numeric && isDigits(w[1:]):
		default:
			for j := 1; j < len(w); j++ {
				k, ok := p.short[w[j]]
				if !ok {
					return a, "has the option -" + w[j:j+1] + ", which is not on its read-only list"
				}
				if p.listShort != 0 && w[j] == p.listShort {
					a.listed = true
				}
				if k == argNone {
					continue
				}
				v := w[j+1:]
				if v == "" && k != argOptional {
					if i+1 >= len(words) {
						return a, "lacks the value of -" + w[j:j+1]
					}
					i++
					v = words[i]
				}
				value(k, v)
				break
			}
		}
	}
	return a.done(p)
}

func (a roArgs) done(p *roProgram) (roArgs, string) {
	if p.listOnly != "" && a.operands > 0 && !a.listed {
		return a, "has operands without --" + p.listOnly + ", so it may create something"
	}
	return a, ""
}

// parseFind reads find's words: options before the starting points, the starting points,
// then an expression of whole-word tests, actions and operators.
func (p *roProgram) parseFind(words []string) (a roArgs, why string) {
	i := 0
	for ; i < len(words); i++ {
		w := words[i]
		if w == "-H" || w == "-P" || strings.HasPrefix(w, "-O") && isDigits(w[2:]) {
			continue
		}
		break
	}
	for ; i < len(words) && !strings.HasPrefix(words[i], "-") && words[i] != "(" && words[i] != "!"; i++ {
		a.paths = append(a.paths, words[i])
	}
	for ; i < len(words); i++ {
		w := words[i]
		if w == "(" || w == ")" || w == "!" || w == "," {
			continue
		}
		k, ok := p.long[strings.TrimPrefix(w, "-")]
		if !ok || !strings.HasPrefix(w, "-") {
			return a, "has " + w + ", which is not on find's read-only list (-exec, -delete, -fprint and -L are not)"
		}
		if k != argNone {
			if i+1 >= len(words) {
				return a, "lacks the value of " + w
			}
			i++
			value := words[i]
			if k == argPath {
				a.paths = append(a.paths, value)
			}
		}
	}
	return a, ""
}

// parseTest reads a test or [ expression: operators from a fixed list, every other word an
// operand checked as a path (test -f FILE reveals whether FILE exists).
func (p *roProgram) parseTest(words []string) (a roArgs, why string) {
	if p.name == "[" {
		if len(words) == 0 || words[len(words)-1] != "]" {
			return a, "is missing its closing ]"
		}
		words = words[:len(words)-1]
	}
	for _, w := range words {
		if contains(testOperators, w) {
			continue
		}
		if strings.HasPrefix(w, "-") && len(w) > 1 {
			return a, "has the operator " + w + ", which is not on the read-only list"
		}
		a.paths = append(a.paths, w)
	}
	return a, ""
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

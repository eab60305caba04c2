package channels

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports pins DESIGN §3: channels (and channelstest) use only the
// standard library, goldmark and channels itself — never gateway or
// agentcore.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("channelstest/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found only %d files", len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			switch {
			case !strings.Contains(first, "."): // standard library
			case strings.HasPrefix(path, "github.com/yuin/goldmark"):
			case path == "github.com/switchboard-gw/switchboard/channels" ||
				path == "github.com/switchboard-gw/switchboard/channels/channelstest":
			default:
				t.Errorf("%s imports %s; channels may use only the standard library and goldmark", name, path)
			}
		}
	}
}

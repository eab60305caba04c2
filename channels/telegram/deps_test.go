package telegram

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports pins DESIGN §3: the adapter (and its fake) use only the
// standard library, go-telegram/bot and channels; never gateway, agentcore
// or store.
func TestImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	more, _ := filepath.Glob("telegramtest/*.go")
	files = append(files, more...)
	if len(files) < 8 {
		t.Fatalf("found only %d files", len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		test := strings.HasSuffix(name, "_test.go")
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			switch {
			case !strings.Contains(first, "."):
			case path == "github.com/go-telegram/bot" || strings.HasPrefix(path, "github.com/go-telegram/bot/"):
			case path == "github.com/switchboard-gw/switchboard/channels":
			case test && (path == "github.com/google/go-cmp/cmp" ||
				path == "github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"):
			default:
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}

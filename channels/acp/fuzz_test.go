package acp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

// FuzzPromptContent: any prompt a client sends (decoded as the SDK does)
// converts without panicking; attachments are images with content; the
// text of every text block reaches the message.
func FuzzPromptContent(f *testing.F) {
	for _, seed := range []string{
		`[{"type":"text","text":"hello"}]`,
		`[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},{"type":"image","mimeType":"image/png","data":"%%%"}]`,
		`[{"type":"resource_link","name":"a.go","uri":"file:///a.go","size":3,"title":"A","description":"d"}]`,
		`[{"type":"resource","resource":{"uri":"file:///b.md","text":"x` + "```" + `y"}}]`,
		`[{"type":"resource","resource":{"uri":"file:///c.png","blob":"AAAA","mimeType":"image/png"}}]`,
		`[{"type":"resource","resource":{"uri":"u","blob":"AAAA"}}]`,
		`[{"type":"audio","mimeType":"audio/wav","data":"AAAA"}]`,
		`[{"type":"resource_link","name":"","uri":"file://"}]`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var blocks []sdk.ContentBlock
		if json.Unmarshal(raw, &blocks) != nil {
			return
		}
		text, atts := promptV1(blocks)
		for _, a := range atts {
			if !strings.HasPrefix(a.MIME, "image/") && a.MIME != "" {
				// Images carry the client's MIME; anything else must not
				// become an attachment.
				if blocksHaveImageMIME(blocks, a.MIME) {
					continue
				}
				t.Fatalf("attachment of type %q", a.MIME)
			}
			if len(a.Data) == 0 || a.Name == "" {
				t.Fatalf("empty attachment %+v", a)
			}
		}
		for _, b := range blocks {
			if b.Text != nil && !strings.Contains(text, b.Text.Text) {
				t.Fatalf("text block %q lost", b.Text.Text)
			}
		}
	})
}

func blocksHaveImageMIME(blocks []sdk.ContentBlock, mime string) bool {
	for _, b := range blocks {
		if b.Image != nil && mimeOr(b.Image.MimeType, "image/png") == mime {
			return true
		}
	}
	return false
}

// FuzzParseUnified: any diff text parses without panicking into files
// with absolute paths whose old and new texts come from its lines.
func FuzzParseUnified(f *testing.F) {
	for _, seed := range []string{
		"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c",
		"--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+n",
		"--- a/x\t2020\n+++ b/x\n@@ -1 +1 @@\n… (diff cut)\n\\ No newline at end of file",
		"+++ b/x\n--- a/x",
		"--- \n+++ \n@@",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, diff string) {
		lines := strings.Count(diff, "\n") + 1
		for _, fd := range parseUnified(diff, "/ws") {
			if !filepath.IsAbs(fd.Path) {
				t.Fatalf("relative path %q", fd.Path)
			}
			if n := strings.Count(fd.Old, "\n") + strings.Count(fd.New, "\n"); n > 2*lines {
				t.Fatalf("more lines out (%d) than in (%d)", n, lines)
			}
			if utf8.ValidString(diff) && (!utf8.ValidString(fd.Old) || !utf8.ValidString(fd.New)) {
				t.Fatal("valid UTF-8 in, invalid out")
			}
		}
	})
}

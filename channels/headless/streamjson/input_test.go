package streamjson

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseInputLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		want    Input
		wantErr string // substring; "" means no error
	}{
		{line: `{"type":"user","content":"hello"}`, want: Input{Type: "user", Parts: []Part{{Text: "hello"}}}},
		{line: `{"type":"user","content":[{"type":"text","text":"a"},{"type":"image","mime":"image/png","data":"aGk="}]}`,
			want: Input{Type: "user", Parts: []Part{{Text: "a"}, {MIME: "image/png", Data: []byte("hi")}}}},
		{line: `{"type":"approval","approvalId":"ap-1","decision":"allow"}`, want: Input{Type: "approval", ApprovalID: "ap-1", Decision: "allow"}},
		{line: `{"type":"approval","approvalId":"ap-1","decision":"always"}`, want: Input{Type: "approval", ApprovalID: "ap-1", Decision: "always"}},
		{line: `{"type":"approval","approvalId":"ap-1","decision":"deny","reason":"no"}`, want: Input{Type: "approval", ApprovalID: "ap-1", Decision: "deny", Reason: "no"}},
		{line: `{"type":"interrupt"}`, want: Input{Type: "interrupt"}},
		{line: `{"type":"control","subtype":"init","provider":{"model":"m"}}`, wantErr: `unknown type "control"`},

		{line: ``, wantErr: "not a JSON object"},
		{line: `not json`, wantErr: "not a JSON object"},
		{line: `[1,2]`, wantErr: "not a JSON object"},
		{line: `"user"`, wantErr: "not a JSON object"},
		{line: `null`, wantErr: `missing "type"`},
		{line: `{}`, wantErr: `missing "type"`},
		{line: `{"type":7}`, wantErr: "not a JSON object"},
		{line: `{"type":"shout"}`, wantErr: `unknown type "shout"`},
		{line: `{"type":"user"}`, wantErr: `without "content"`},
		{line: `{"type":"user","content":null}`, wantErr: `without "content"`},
		{line: `{"type":"user","content":"  "}`, wantErr: "empty content"},
		{line: `{"type":"user","content":[]}`, wantErr: "empty content"},
		{line: `{"type":"user","content":42}`, wantErr: "a string or a list of parts"},
		{line: `{"type":"user","content":[{"type":"video"}]}`, wantErr: `unknown type "video"`},
		{line: `{"type":"user","content":[{"type":"image","mime":"text/plain","data":"aGk="}]}`, wantErr: "an image needs"},
		{line: `{"type":"user","content":[{"type":"image","mime":"image/png"}]}`, wantErr: "an image needs"},
		{line: `{"type":"approval","decision":"allow"}`, wantErr: `without "approvalId"`},
		{line: `{"type":"approval","approvalId":"ap-1","decision":"maybe"}`, wantErr: `must be allow, always or deny`},
		{line: `{"type":"approval","approvalId":"ap-1"}`, wantErr: `must be allow, always or deny`},
	} {
		got, err := ParseInput([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v; want one containing %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.line, d)
		}
	}
}

func FuzzParseInput(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","content":"hello"}`,
		`{"type":"user","content":[{"type":"text","text":"a"},{"type":"image","mime":"image/png","data":"aGk="}]}`,
		`{"type":"approval","approvalId":"ap-1","decision":"deny","reason":"no"}`,
		`{"type":"interrupt"}`,
		`{"type":"control","subtype":"init","provider":{}}`,
		`{"type":"user","content":null}`,
		`{"type":"user","content":[{"type":"image","mime":"image/","data":""}]}`,
		`{"type":"user","content":"\u0000"}`,
		`null`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ParseInput(line)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		switch m.Type {
		case "user":
			if len(m.Parts) == 0 {
				t.Fatalf("user message without parts from %q", line)
			}
			for _, p := range m.Parts {
				if p.IsImage() && (len(p.Data) == 0 || !strings.HasPrefix(p.MIME, "image/")) {
					t.Fatalf("image part without data or image MIME from %q", line)
				}
			}
		case "approval":
			if m.ApprovalID == "" {
				t.Fatalf("approval without id from %q", line)
			}
			switch m.Decision {
			case DecisionAllow, DecisionAlways, DecisionDeny:
			default:
				t.Fatalf("decision %q from %q", m.Decision, line)
			}
		case "interrupt":
		default:
			t.Fatalf("type %q from %q", m.Type, line)
		}
	})
}

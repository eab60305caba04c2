package web

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/channels"
)

func TestRenderParts(t *testing.T) {
	tests := []struct {
		name  string
		parts []channels.Part
		files []string
		want  []viewPart
	}{
		{"text", []channels.Part{channels.Text{Markdown: "a *b* `c`"}}, nil,
			[]viewPart{{Type: "text", HTML: "<p>a <em>b</em> <code>c</code></p>"}}},
		{"empty text and notice dropped", []channels.Part{channels.Text{Markdown: "  "}, channels.Notice{Text: "\n"}, channels.Reasoning{}}, nil,
			[]viewPart{}},
		{"reasoning and notice are plain", []channels.Part{channels.Reasoning{Text: "<think>"}, channels.Notice{Text: "stopped <b>"}}, nil,
			[]viewPart{{Type: "reasoning", Text: "<think>"}, {Type: "notice", Text: "stopped <b>"}}},
		{"tool", []channels.Part{channels.ToolActivity{ID: "c1", Kind: "edit", Title: "Edit `a.go`", Status: "done", Diff: "-a\n+b"}}, nil,
			[]viewPart{{Type: "tool", ToolID: "c1", Kind: "edit", TitleHTML: "Edit <code>a.go</code>", Status: "done", Diff: "-a\n+b"}}},
		{"tool without title uses kind", []channels.Part{channels.ToolActivity{Kind: "read<x>"}}, nil,
			[]viewPart{{Type: "tool", Kind: "read<x>", TitleHTML: "read&lt;x&gt;"}}},
		{"tool title on several lines", []channels.Part{channels.ToolActivity{Title: "# big\n\n- list"}}, nil,
			[]viewPart{{Type: "tool", TitleHTML: "# big - list"}}},
		{"plan", []channels.Part{channels.Plan{Items: []channels.PlanItem{{Content: "x", Status: "completed", Priority: "high"}}}}, nil,
			[]viewPart{{Type: "plan", Items: []viewPlanItem{{Content: "x", Status: "completed", Priority: "high"}}}}},
		{"buttons skip empty rows", []channels.Part{channels.Buttons{Rows: [][]channels.Button{{}, {{Label: "A", Token: "t", Style: "danger"}}}}}, nil,
			[]viewPart{{Type: "buttons", Rows: [][]viewButton{{{Label: "A", Token: "t", Style: "danger"}}}}}},
		{"attachments take the ids in order", []channels.Part{
			channels.Attachment{Name: "a.png", MIME: "image/png", Data: []byte("12")},
			channels.Attachment{Name: "b.txt", Path: "/x/b.txt", Caption: "cap"},
		}, []string{"ID1", "ID2"}, []viewPart{
			{Type: "attachment", File: &viewAttachment{Name: "a.png", MIME: "image/png", URL: "/api/files/ID1", Size: 2, Image: true}},
			{Type: "attachment", File: &viewAttachment{Name: "b.txt", URL: "/api/files/ID2", Caption: "cap"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := renderParts(channels.Message{Parts: tc.parts}, tc.files)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		"abc": true, "0193a4c2-7b1e-7f00-8000-000000000000": true, "A_b.c-9": true,
		"": false, "a b": false, "a/b": false, "a:b": false, "ä": false, "a\n": false,
		string(make([]byte, maxChatIDLen+1)): false,
	} {
		if got := validID(s); got != want {
			t.Errorf("validID(%q) = %v, want %v", s, got, want)
		}
	}
}

package gateway

import (
	"html"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// TestApprovalTextShowsWhatRunsVerbatim checks that what a model put in an
// approval (its command, the reason quoting it, the rule it suggests) is
// shown as it is and never becomes a link or closes its code block.
func TestApprovalTextShowsWhatRunsVerbatim(t *testing.T) {
	const evil = "[click](https://evil.example)"
	ap := agentcore.Approval{
		ID: "ap-1", AgentID: "main", Expires: time.Unix(1e9, 0),
		Summary: "Bash: echo `id` ```\n" + evil + "\n```",
		Reason:  "`rm x` " + evil + " `echo `id``: is not covered by an allow rule",
		Workdir: "/w`" + evil + "`",
	}
	out := channels.Render(approvalText(ap), channels.HTML)
	if strings.Contains(out, "<a ") {
		t.Fatalf("approval text renders a link: %s", out)
	}
	if !strings.Contains(out, "<pre><code>"+html.EscapeString(ap.Summary)+"</code></pre>") {
		t.Errorf("the command is not shown verbatim in one code block: %s", out)
	}
	if !strings.Contains(out, "Why it asks: <code>rm x</code> ") {
		t.Errorf("the reason's quoted command is not code: %s", out)
	}
	if !strings.Contains(out, "In: <code>"+html.EscapeString(ap.Workdir)+"</code>") {
		t.Errorf("the workdir is not shown verbatim: %s", out)
	}

	ap.State, ap.Rule, ap.DecidedBy = agentcore.ApprovalAlways, "Bash(echo "+evil+")", "web:owner"
	out = channels.Render(decisionText(ap), channels.HTML)
	if strings.Contains(out, "<a ") {
		t.Fatalf("decision text renders a link: %s", out)
	}
	for _, want := range []string{"(<code>" + html.EscapeString(ap.Rule) + "</code>)", "<code>Bash: echo `id` ``` " + html.EscapeString(evil) + " ```</code>"} {
		if !strings.Contains(out, want) {
			t.Errorf("decision text %s lacks %s", out, want)
		}
	}
}

func TestSeveralPendingEscapesSummaries(t *testing.T) {
	out := channels.Render(severalPending([]agentcore.Approval{
		{ID: "ap-1", Summary: "Bash: curl [click](https://evil.example)"},
		{ID: "ap-2", Summary: "Bash: touch **x**"},
	}), channels.HTML)
	if strings.Contains(out, "<a ") || strings.Contains(out, "<strong>") {
		t.Fatalf("the pending list renders markup from a summary: %s", out)
	}
	for _, want := range []string{"<code>ap-1</code> Bash: curl [click](https://evil.example)", "<code>ap-2</code> Bash: touch **x**"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %s", out, want)
		}
	}
}

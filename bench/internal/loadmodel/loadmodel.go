// Package loadmodel is the scripted model of the load tools: one responder,
// used in process and by bench/fakemodel-server, that answers by what the
// last user message says, so one fake serves a mixed load.
//
//   - "tool …": a Bash `ls` call (auto-allowed in standard mode), then "done".
//   - "ask N …": a Bash `touch asked-N` call (not read-only: the turn parks
//     on an approval), then "done" once the result is in.
//   - anything else: "echo: <text>".
//
// Every text answer ends with " req=<unix nanos>", the instant the fake
// received the request, so a load tool in another process can measure the
// gateway's overhead before the model (same machine, same clock).
package loadmodel

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// Responder answers requests; safe for concurrent use.
type Responder struct{ calls atomic.Int64 }

// Respond implements a fakemodel responder.
func (r *Responder) Respond(req fakemodel.Request) fakemodel.Step {
	stamp := " req=" + strconv.FormatInt(req.Time.UnixNano(), 10)
	last := req.LastMessage()
	if last.Role == "tool" {
		return fakemodel.Step{Text: "done" + stamp}
	}
	text := UserText(req)
	switch {
	case strings.HasPrefix(text, "tool "):
		return r.bash(`ls`)
	case strings.HasPrefix(text, "ask "):
		n, _, _ := strings.Cut(strings.TrimPrefix(text, "ask "), " ")
		return r.bash("touch asked-" + strings.Map(keepSafe, n))
	}
	return fakemodel.Step{Text: "echo: " + text + stamp}
}

func (r *Responder) bash(cmd string) fakemodel.Step {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	id := "call_" + strconv.FormatInt(r.calls.Add(1), 10)
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Bash", Arguments: string(args)}}}
}

func keepSafe(r rune) rune {
	if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r == '-' {
		return r
	}
	return -1
}

// UserText is the text of the last message without system reminders.
func UserText(req fakemodel.Request) string {
	var text string
	for _, p := range req.LastMessage().Parts() {
		if !strings.HasPrefix(p.Text, "<system-reminder>") {
			text = p.Text
		}
	}
	return text
}

// Stamp returns the request instant an answer carries (0 if none).
func Stamp(text string) int64 {
	i := strings.LastIndex(text, " req=")
	if i < 0 {
		return 0
	}
	rest := text[i+5:]
	if j := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
		rest = rest[:j]
	}
	n, _ := strconv.ParseInt(rest, 10, 64)
	return n
}

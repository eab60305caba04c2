package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

func TestParseInputLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		want    inputMsg
		wantErr string // substring; "" means no error
	}{
		{line: `{"type":"user","content":"hello"}`, want: inputMsg{Type: "user", Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "hello"}}}},
		{line: `{"type":"user","content":[{"type":"text","text":"a"},{"type":"image","mime":"image/png","data":"aGk="}]}`,
			want: inputMsg{Type: "user", Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "a"}, {Type: agentcore.PartImage, MIME: "image/png", Data: []byte("hi")}}}},
		{line: `{"type":"approval","approvalId":"ap-1","decision":"allow"}`, want: inputMsg{Type: "approval", ApprovalID: "ap-1", Decision: agentcore.ApprovalAllowed}},
		{line: `{"type":"approval","approvalId":"ap-1","decision":"always"}`, want: inputMsg{Type: "approval", ApprovalID: "ap-1", Decision: agentcore.ApprovalAlways}},
		{line: `{"type":"approval","approvalId":"ap-1","decision":"deny","reason":"no"}`, want: inputMsg{Type: "approval", ApprovalID: "ap-1", Decision: agentcore.ApprovalDenied, Reason: "no"}},
		{line: `{"type":"interrupt"}`, want: inputMsg{Type: "interrupt"}},
		{line: `{"type":"control","subtype":"init","provider":{"model":"m"}}`, want: inputMsg{Type: "control", Subtype: "init"}},

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
		{line: `{"type":"control"}`, wantErr: `without "subtype"`},
	} {
		got, err := parseInputLine([]byte(tc.line))
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

func FuzzParseInputLine(f *testing.F) {
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
		m, err := parseInputLine(line)
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
				switch p.Type {
				case agentcore.PartText:
				case agentcore.PartImage:
					if len(p.Data) == 0 || !strings.HasPrefix(p.MIME, "image/") {
						t.Fatalf("image part without data or image MIME from %q", line)
					}
				default:
					t.Fatalf("part type %q from %q", p.Type, line)
				}
			}
		case "approval":
			if m.ApprovalID == "" {
				t.Fatalf("approval without id from %q", line)
			}
			switch m.Decision {
			case agentcore.ApprovalAllowed, agentcore.ApprovalAlways, agentcore.ApprovalDenied:
			default:
				t.Fatalf("decision %q from %q", m.Decision, line)
			}
		case "interrupt":
		case "control":
			if m.Subtype == "" {
				t.Fatalf("control without subtype from %q", line)
			}
		default:
			t.Fatalf("type %q from %q", m.Type, line)
		}
	})
}

// TestChatInterruptStopsTurn: in chat, Ctrl-C (SIGINT) during a turn stops
// that turn and brings back the prompt; the next message works; /exit
// quits cleanly.
func TestChatInterruptStopsTurn(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	e := newEnv(t, fakemodel.Step{Text: "never", Block: block}, fakemodel.Step{Text: "hello again"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, "chat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "first\n")
	if err := e.model.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the turn to stop", func() bool { return strings.Contains(out.String(), "⚠ cancelled") })
	io.WriteString(stdin, "second\n")
	eventually(t, 30*time.Second, "the second answer", func() bool { return strings.Contains(out.String(), "hello again") })
	io.WriteString(stdin, "/exit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat exit: %v\nstdout: %s\nstderr: %s", err, out.String(), stderr.String())
	}
	validTranscript(t, e.transcript())
}

// TestChatCommands: the terminal chat answers /status, /memory and unknown
// commands itself; none reaches the model; a path still goes to it.
func TestChatCommands(t *testing.T) {
	e := newEnv(t, fakemodel.Step{Text: "about that path"})
	r := e.run("/status\n/memory\n/bogus\n/etc/hosts is a file\n/exit\n", "chat")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"agent main · model test-model", "Memory history", "Create memory", "Unknown command /bogus", "about that path"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Fatalf("model got %d requests, want 1 (only the path)", n)
	}
}

// TestChatApprovalPrompts: in chat an ask is a prompt; "y" runs the call
// once, "a" stores the rule (the exact command: touch has no subcommands)
// so the same command runs without asking, "n" denies with the reason typed.
func TestChatApprovalPrompts(t *testing.T) {
	e := newEnv(t,
		bashStep("c1", "touch once-file"), fakemodel.Step{Text: "made once"},
		bashStep("c2", "touch always-file"), fakemodel.Step{Text: "made always"},
		bashStep("c3", "touch always-file"), fakemodel.Step{Text: "made again without asking"},
		bashStep("c4", "touch never-file"), fakemodel.Step{Text: "not made"},
	)
	input := strings.Join([]string{
		"make once", "y",
		"make always", "a",
		"make again",
		"make never", "n", "not today",
		"/exit",
	}, "\n") + "\n"
	r := e.run(input, "chat")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"made once", "made always", "made again without asking", "not made", "Bash(touch always-file)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "wants to run"); n != 3 {
		t.Errorf("asked %d times, want 3 (the stored rule covers the third call)", n)
	}
	for _, f := range []string{"once-file", "always-file"} {
		if _, err := os.Stat(filepath.Join(e.workspace, f)); err != nil {
			t.Errorf("%s was not made", f)
		}
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "never-file")); err == nil {
		t.Error("the denied call ran")
	}
	reqs := e.model.Requests()
	last := toolMessages(reqs[len(reqs)-1])
	if len(last) == 0 || !strings.Contains(contentText(last[len(last)-1]), "not today") {
		t.Errorf("the model was not told the reason: %+v", last)
	}
}

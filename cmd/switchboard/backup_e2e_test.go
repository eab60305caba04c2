package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/memfs"
	"github.com/switchboard-gw/switchboard/store"
)

// TestBackupDuringATurnRestoresAndContinues takes a backup while a turn's
// Bash call runs, restores it the way the README says into a fresh home,
// and continues the conversation there.
func TestBackupDuringATurnRestoresAndContinues(t *testing.T) {
	e := newEnv(t,
		bashStep("call_1", "touch started; while [ ! -e release ]; do sleep 0.05; done; echo released"),
		fakemodel.Step{Text: "first turn done"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	turn := e.command(ctx, "run", "-p", "long job", "--permission-mode", "unrestricted", "--output-format", "json")
	var turnOut bytes.Buffer
	var turnErr syncBuffer
	turn.Stdout, turn.Stderr = &turnOut, &turnErr
	if err := turn.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Bash call to start", func() bool {
		_, err := os.Stat(filepath.Join(e.workspace, "started"))
		return err == nil
	})
	memDir := filepath.Join(e.home, "memory", "main")
	rev := memoryRevision(t, memDir)

	dir := filepath.Join(t.TempDir(), "backup")
	r := e.run("", "backup", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "Backed up") || !strings.Contains(r.stdout, "mv ") {
		t.Fatalf("backup during the turn: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if again := e.run("", "backup", dir); again.code == 0 || !strings.Contains(again.stderr, "not empty") || !strings.Contains(again.stderr, "--force") {
		t.Errorf("backup into a non-empty directory: exit %d, %q; want a refusal naming --force", again.code, again.stderr)
	}

	// The live turn is not disturbed by the backup.
	if err := os.WriteFile(filepath.Join(e.workspace, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := turn.Wait(); err != nil {
		t.Fatalf("the turn that was backed up: %v\n%s", err, turnErr.String())
	}
	if res := resultLine(t, turnOut.String()); res["result"] != "first turn done" {
		t.Fatalf("live turn result = %v", res)
	}

	var m backupManifest
	if data, err := os.ReadFile(filepath.Join(dir, manifestName)); err != nil || json.Unmarshal(data, &m) != nil {
		t.Fatalf("manifest: %v %s", err, data)
	}
	if m.Conversations != 1 || strings.Join(m.Memory, ",") != "main" || m.Schema == 0 {
		t.Errorf("manifest = %+v", m)
	}
	for _, stray := range []string{dbFileName + "-wal", dbFileName + "-shm"} {
		if _, err := os.Stat(filepath.Join(dir, stray)); err == nil {
			t.Errorf("the backup holds %s", stray)
		}
	}

	// Restore as the README says: copy the backup in place of a home.
	home2 := filepath.Join(t.TempDir(), "restored")
	if out, err := exec.Command("cp", "-a", dir, home2).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	e2 := &env{t: t, home: home2, workspace: e.workspace, model: e.model}
	if got := memoryRevision(t, filepath.Join(home2, "memory", "main")); got != rev {
		t.Errorf("restored memory HEAD %s, want %s", got, rev)
	}
	list := e2.run("", "conversations", "list", "--json")
	var listed struct {
		Conversations []store.ConversationSummary `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &listed); err != nil || len(listed.Conversations) != 1 {
		t.Fatalf("conversations in the restored home: %v %s", err, list.stdout)
	}
	convID := listed.Conversations[0].ID

	// The restored home holds the turn that was running at backup time: the
	// run adopts it (settling its call) before its own prompt.
	e.model.Push(fakemodel.Step{Text: "the interrupted turn, settled"}, fakemodel.Step{Text: "continuing after the restore"})
	r = e2.run("", "run", "--conversation", convID, "-p", "what happened?", "--permission-mode", "unrestricted", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("continue in the restored home: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "busy") {
		t.Errorf("the restored home waited for a lease of the backed-up process: %s", r.stderr)
	}
	if res := resultLine(t, r.stdout); res["result"] != "continuing after the restore" || res["conversationId"] != convID {
		t.Fatalf("result = %v", res)
	}
	msgs := e2.transcript()
	validTranscript(t, msgs)
	roles := make([]string, len(msgs))
	for i, msg := range msgs {
		roles[i] = string(msg.Role)
	}
	// The backup holds the call without its result: the restored home
	// finishes that queued turn (settling the call as outcome unknown),
	// then takes the new message.
	if strings.Join(roles, ",") != "user,assistant,tool,assistant,user,assistant" {
		t.Fatalf("restored transcript roles = %v", roles)
	}
	if tool := msgs[2]; tool.ToolCallID != "call_1" || !strings.Contains(tool.ModelText(), "Outcome unknown") {
		t.Errorf("the in-flight call was settled as %+v", tool)
	}
	if msgs[len(msgs)-1].Role != agentcore.RoleAssistant || msgs[len(msgs)-1].Text() != "continuing after the restore" {
		t.Errorf("last message = %+v", msgs[len(msgs)-1])
	}

	// --force replaces the old backup with a complete new one.
	if r := e.run("", "backup", "--force", dir); r.code != 0 {
		t.Fatalf("backup --force: exit %d %s", r.code, r.stderr)
	}
	var m2 backupManifest
	if data, err := os.ReadFile(filepath.Join(dir, manifestName)); err != nil || json.Unmarshal(data, &m2) != nil || !m2.Created.After(m.Created) {
		t.Errorf("backup --force did not replace the backup: %+v (was %+v)", m2, m)
	}
	if leftovers, _ := filepath.Glob(dir + ".*"); len(leftovers) > 0 {
		t.Errorf("backup left %v beside the backup", leftovers)
	}
}

func memoryRevision(t *testing.T, dir string) string {
	t.Helper()
	r, err := memfs.Open(context.Background(), dir, memfs.Options{AgentName: "main"})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := r.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestBackupRefusals(t *testing.T) {
	e := newEnv(t)
	if r := e.run("", "backup", filepath.Join(t.TempDir(), "b")); r.code == 0 || !strings.Contains(r.stderr, "nothing to back up") {
		t.Errorf("backup of an empty home: exit %d %q", r.code, r.stderr)
	}
	db, err := store.Open(context.Background(), filepath.Join(e.home, dbFileName))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if r := e.run("", "backup", filepath.Join(e.home, "inside")); r.code == 0 || !strings.Contains(r.stderr, "inside the data directory") {
		t.Errorf("backup into the home: exit %d %q", r.code, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	if r := e.run("", "backup", "--force", file); r.code == 0 || !strings.Contains(r.stderr, "not a directory") {
		t.Errorf("backup onto a file: exit %d %q", r.code, r.stderr)
	}
}

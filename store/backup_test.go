package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

func TestBackupWhileWriting(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	src := openTemp(t, filepath.Join(dir, "live.db"))
	conv := newConv(t, src)
	if _, err := src.Append(ctx, conv.ID, text(agentcore.RoleUser, "before the backup")); err != nil {
		t.Fatal(err)
	}
	if ok, err := src.AcquireLease(ctx, conv.ID, "serve-1", time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}

	// A second handle (another process's view) keeps appending while the
	// backup runs.
	writer := openTemp(t, filepath.Join(dir, "live.db"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	appended := 0
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := writer.Append(context.Background(), conv.ID, text(agentcore.RoleUser, fmt.Sprintf("during %d", i))); err != nil {
				t.Errorf("append during backup: %v", err)
				return
			}
			appended++
		}
	}()
	dst := filepath.Join(dir, "backup", "switchboard.db")
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	err := src.Backup(ctx, dst)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}

	ents, _ := os.ReadDir(filepath.Dir(dst))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "switchboard.db" {
		t.Errorf("backup directory holds %v, want only switchboard.db", names)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	copyDB := openTemp(t, dst)
	msgs, err := copyDB.Messages(ctx, conv.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || msgs[0].Text() != "before the backup" {
		t.Fatalf("copy lacks the message written before the backup: %+v", msgs)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("copy's transcript has a gap at %d: seq %d", i, m.Seq)
		}
	}
	view, err := copyDB.View(ctx, conv.ID)
	if err != nil || len(view) != len(msgs) {
		t.Fatalf("copy's view has %d messages (%v), transcript %d: not one snapshot", len(view), err, len(msgs))
	}
	// The lease of the live process is not carried into the copy.
	if ok, err := copyDB.AcquireLease(ctx, conv.ID, "restored", time.Minute); err != nil || !ok {
		t.Errorf("lease in the restored copy: AcquireLease = %v, %v; want it free", ok, err)
	}
	t.Logf("%d appends ran during the backup; the copy holds %d messages", appended, len(msgs))

	if err := src.Backup(ctx, dst); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("Backup over an existing file: %v, want a refusal", err)
	}
}

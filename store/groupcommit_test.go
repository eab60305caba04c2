package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// TestGroupCommitIsolatesFailures queues many writes behind a held one,
// so that they share commits, and makes every other one fail after it
// wrote: the failed ones leave nothing, the others are all stored.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	db := openTemp(t, filepath.Join(t.TempDir(), "g.db"))
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{})
	holdErr := make(chan error, 1)
	go func() {
		holdErr <- db.write(ctx, "test", func(tx *sql.Tx) error {
			close(held)
			<-hold
			return db.ensureAgent(ctx, tx, "holder")
		})
	}()
	<-held
	const n = 200
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = db.write(ctx, "test", func(tx *sql.Tx) error {
				if err := db.ensureAgent(ctx, tx, fmt.Sprintf("a%03d", i)); err != nil {
					return err
				}
				if i%2 == 1 {
					return errBoom
				}
				return nil
			})
		})
	}
	close(hold)
	wg.Wait()
	if err := <-holdErr; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if want := i%2 == 1; errors.Is(err, errBoom) != want || (!want && err != nil) {
			t.Fatalf("write %d: err = %v", i, err)
		}
	}
	rows, err := db.r.Query(`SELECT id FROM agents ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < n; i += 2 {
		want = append(want, fmt.Sprintf("a%03d", i))
	}
	want = append(want, "holder")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored agents:\n got %v\nwant %v", got, want)
	}
}

// TestWriteAfterClose fails instead of hanging.
func TestWriteAfterClose(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.EnsureAgent(context.Background(), "x"); err == nil {
		t.Fatal("write after Close succeeded")
	}
}

// TestGroupCommitIndexesWhatCommits: the full-text rows of grouped writes
// are written when the transaction ends; a failed write's rows go with
// its messages, the others' are all searchable.
func TestGroupCommitIndexesWhatCommits(t *testing.T) {
	db := openTemp(t, filepath.Join(t.TempDir(), "g.db"))
	ctx := context.Background()
	c := newConv(t, db)
	hold, held := make(chan struct{}), make(chan struct{})
	holdErr := make(chan error, 1)
	go func() {
		holdErr <- db.write(ctx, "test", func(tx *sql.Tx) error {
			close(held)
			<-hold
			return nil
		})
	}()
	<-held
	const n = 60
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			b, err := encodeMessages(c.ID, []agentcore.Message{text(agentcore.RoleUser, fmt.Sprintf("needle w%03d", i))}, now())
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = db.write(ctx, "test", func(tx *sql.Tx) error {
				if err := db.appendTx(ctx, tx, c.ID, b); err != nil {
					return err
				}
				if i%2 == 1 {
					return errBoom
				}
				return nil
			})
		})
	}
	close(hold)
	wg.Wait()
	if err := <-holdErr; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if want := i%2 == 1; errors.Is(err, errBoom) != want || (!want && err != nil) {
			t.Fatalf("write %d: err = %v", i, err)
		}
	}
	hits, err := db.Search(ctx, c.ID, "needle", 2*n)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != n/2 {
		t.Fatalf("%d hits, want %d", len(hits), n/2)
	}
	view, err := db.View(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, h := range hits {
		found[h.MessageID] = true
	}
	for _, m := range view {
		if !found[m.ID] {
			t.Errorf("message %q is stored but not found", m.Text())
		}
	}
	if len(view) != n/2 {
		t.Fatalf("%d messages stored, want %d", len(view), n/2)
	}
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
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

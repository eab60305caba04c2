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
	const n = 200
	groupedWrites(t, db, n, func(tx *sql.Tx) error { return db.ensureAgent(ctx, tx, "holder") },
		func(i int, tx *sql.Tx) error { return db.ensureAgent(ctx, tx, fmt.Sprintf("a%03d", i)) })
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
	const n = 60
	groupedWrites(t, db, n, func(*sql.Tx) error { return nil }, func(i int, tx *sql.Tx) error {
		b, err := encodeMessages(c.ID, []agentcore.Message{text(agentcore.RoleUser, fmt.Sprintf("needle w%03d", i))}, now())
		if err != nil {
			return err
		}
		return db.appendTx(ctx, tx, c.ID, b)
	})
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

// groupedWrites queues n writes behind a held one (holder), so that they
// share commits: write i runs do and then, when i is odd, fails with an
// error of its own. It checks that exactly the odd ones failed.
func groupedWrites(t *testing.T, db *DB, n int, holder func(*sql.Tx) error, do func(i int, tx *sql.Tx) error) {
	t.Helper()
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{})
	holdErr := make(chan error, 1)
	go func() {
		holdErr <- db.write(ctx, "test", func(tx *sql.Tx) error {
			close(held)
			<-hold
			return holder(tx)
		})
	}()
	<-held
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = db.write(ctx, "test", func(tx *sql.Tx) error {
				if err := do(i, tx); err != nil {
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
}

// TestGroupedWritesShareTheirStatements: the writes of one transaction
// use one form of each prepared statement (Tx.StmtContext made one per
// call); the next transaction gets its own, which works, and grouped
// requests that fail (rolled back to their savepoint) do not break it.
func TestGroupedWritesShareTheirStatements(t *testing.T) {
	db := openTemp(t, filepath.Join(t.TempDir(), "g.db"))
	ctx := context.Background()
	var first *sql.Stmt
	var firstTx *sql.Tx
	if err := db.write(ctx, "test", func(tx *sql.Tx) error {
		first, firstTx = db.txStmt(ctx, tx, db.stmts.ensureAgent), tx
		if again := db.txStmt(ctx, tx, db.stmts.ensureAgent); again != first {
			t.Errorf("a second use in one transaction made another form of the statement")
		}
		return db.ensureAgent(ctx, tx, "one")
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.write(ctx, "test", func(tx *sql.Tx) error {
		if tx == firstTx {
			t.Fatalf("the writer reused a finished transaction")
		}
		if db.txStmt(ctx, tx, db.stmts.ensureAgent) == first {
			t.Errorf("a new transaction got the last one's (closed) form of the statement")
		}
		return db.ensureAgent(ctx, tx, "two")
	}); err != nil {
		t.Fatal(err)
	}
	// Grouped, with every other request failing: the rest are stored.
	const n = 100
	groupedWrites(t, db, n, func(tx *sql.Tx) error { return db.ensureAgent(ctx, tx, "holder") },
		func(i int, tx *sql.Tx) error { return db.ensureAgent(ctx, tx, fmt.Sprintf("a%03d", i)) })
	var count int
	if err := db.r.QueryRow(`SELECT count(*) FROM agents`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if want := n/2 + 3; count != want {
		t.Fatalf("%d agents stored, want %d", count, want)
	}
}

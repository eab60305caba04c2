package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Stats are a DB's counters since Open, cheap enough to keep always on
// (load tools read them to report write transactions per turn).
type Stats struct {
	// Writes counts write transactions that committed: every method that
	// changes the database runs one (a group commit holds several).
	Writes int64
	// FailedWrites counts write transactions that failed and left nothing
	// (including a method's own refusals, such as completing an item twice).
	FailedWrites int64
	// Commits counts sqlite commits; with group commit several writes share
	// one, so Commits <= Writes.
	Commits int64
	// ByMethod counts the write transactions each method of DB started
	// ("Append", "Enqueue", …), retries not counted again.
	ByMethod map[string]int64
	// Checkpoints counts the WAL checkpoints the DB ran (see
	// checkpointer), CheckpointErrors those that failed.
	Checkpoints, CheckpointErrors int64
}

// counters are the atomics behind Stats.
type counters struct {
	writes, failed, commits     atomic.Int64
	checkpoints, checkpointErrs atomic.Int64
	by                          methodCounts
}

// methodCounts counts write transactions by the method that started them
// (a map lookup per write: cheap enough to keep always on).
type methodCounts struct{ m sync.Map } // method name → *atomic.Int64

func (c *methodCounts) add(method string) {
	n, ok := c.m.Load(method)
	if !ok {
		n, _ = c.m.LoadOrStore(method, new(atomic.Int64))
	}
	n.(*atomic.Int64).Add(1)
}

func (c *methodCounts) snapshot() map[string]int64 {
	out := map[string]int64{}
	c.m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// Stats returns the DB's counters.
func (db *DB) Stats() Stats {
	return Stats{Writes: db.count.writes.Load(), FailedWrites: db.count.failed.Load(),
		Commits: db.count.commits.Load(), ByMethod: db.count.by.snapshot(),
		Checkpoints: db.count.checkpoints.Load(), CheckpointErrors: db.count.checkpointErrs.Load()}
}

// counted records the outcome of a commit that held n writes.
func (db *DB) counted(n int64, err error) {
	if err != nil {
		db.count.failed.Add(n)
		return
	}
	db.count.writes.Add(n)
	db.count.commits.Add(1)
	db.committed()
}

// Size is the database's size in bytes: the pages in use, without the free
// list and the write-ahead log (the figure that grows with the data).
func (db *DB) Size(ctx context.Context) (int64, error) {
	var pages, free, size int64
	err := db.r.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count()),
		(SELECT freelist_count FROM pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())`).Scan(&pages, &free, &size)
	if err != nil {
		return 0, fmt.Errorf("database size: %w", err)
	}
	return (pages - free) * size, nil
}

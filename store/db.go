package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// ErrNotFound is returned (wrapped) when a record does not exist. It is
// agentcore.ErrNotFound, so callers may test either with errors.Is.
var ErrNotFound = agentcore.ErrNotFound

var _ agentcore.Store = (*DB)(nil)

const (
	// busyTimeoutMS is how long sqlite itself waits for another
	// connection's lock before returning SQLITE_BUSY.
	busyTimeoutMS = 5000
	// readConns bounds the read pool: on two cores, four readers read no
	// faster than two (bench/gatewayload), and each holds its own page cache,
	// schema and prepared statements.
	readConns = 2
	// cacheKiB is the writer's page cache. Its working set is the leaves
	// of the tables keyed by conversation (view, leases, runs, queue,
	// conversations) that a busy gateway's conversations touch: at 512 KiB
	// a twentieth of the gateway's CPU at saturation was the writer
	// reading pages back (pread) that it had just evicted; 1 MiB took
	// most of that (phase a, about +7% turns/s, alternated), 2 MiB little
	// more for twice the memory: each 4 KiB page is an 8 KiB slot of
	// modernc's allocator, which keeps what it held resident.
	cacheKiB = 1024
	// readCacheKiB is the page cache of each read connection. sqlite
	// empties a connection's cache whenever another connection wrote
	// since its last read (WAL), so under any write load a reader's cache
	// holds only what its current query reads; a larger one only raised
	// the high-water mark of sqlite's heap, which modernc's allocator
	// keeps resident (see doc.go).
	readCacheKiB = 128
	// checkpointEvery is how long after a commit the checkpointer copies
	// the WAL into the database (a passive checkpoint on a read
	// connection). sqlite's own automatic checkpoint ran inside the
	// committing write every 1,000 pages and held every write queued
	// behind it for its milliseconds: most of the p99 of a turn's writes
	// (bench/gatewayload phase b). At 200 turns/s a quarter of a second is
	// about those 1,000 pages.
	checkpointEvery = 250 * time.Millisecond
	// writeAttempts bounds the retries of a write transaction that still
	// got SQLITE_BUSY after busy_timeout (possible across processes, e.g.
	// while another process checkpoints or recovers the WAL).
	writeAttempts = 5
)

// DB is a switchboard database in one sqlite file. It implements
// agentcore.Store. Create it with Open; it is safe for concurrent use.
type DB struct {
	path string
	w    *sql.DB // one connection: the only writer of this handle
	r    *sql.DB // query_only read pool

	stmts stmts // hot statements, prepared at Open

	// writes feeds the writer loop (see write); closing stops it.
	writes     chan *writeReq
	closing    chan struct{}
	writerDone chan struct{}
	// wrote wakes the checkpointer after a commit (see checkpointer).
	wrote          chan struct{}
	checkpointDone chan struct{}
	sweepDone      chan struct{} // the sweeper's (viewcache.go)

	closeOnce sync.Once
	closeErr  error

	// decisionEdit renders the edit of an approval's posted copies for
	// decisions made through Decide (SetDecisionEdit).
	decisionEdit  atomic.Pointer[func(agentcore.Approval) []byte]
	count         counters // see Stats
	settingsCache settingsCache
	views         viewCache

	// index holds the full-text rows of the writer's current transaction
	// (indexLater); only the writer goroutine touches it.
	index []indexRow
	// txStmts are the writer's current transaction's forms of the
	// prepared statements (txStmt); only the writer goroutine touches it.
	txStmts txStmts

	// failAt, set only by this package's tests, makes a multi-step write
	// fail at the named step (to prove it is one transaction).
	failAt func(step string) error
}

// step runs the test hook of a multi-step write.
func (db *DB) step(name string) error {
	if db.failAt == nil {
		return nil
	}
	return db.failAt(name)
}

// Open opens (creating it and its parent directory when missing) the
// database at path and applies every pending migration. Several processes
// may open the same file, also a fresh one at the same moment.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("open store: a file path is required, got %q", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: create directory: %w", abs, err)
	}
	// Create the file ourselves so that it (and the -wal and -shm files,
	// which sqlite gives the same mode) is private to the user.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}

	w, err := sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	r, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	r.SetMaxOpenConns(readConns)
	r.SetMaxIdleConns(readConns)

	db := &DB{path: abs, w: w, r: r, writes: make(chan *writeReq), closing: make(chan struct{}), writerDone: make(chan struct{}),
		wrote: make(chan struct{}, 1), checkpointDone: make(chan struct{}), sweepDone: make(chan struct{})}
	go db.writer()
	go db.checkpointer()
	go db.sweeper()
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := db.stmts.prepare(ctx, w, r); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	return db, nil
}

// dsn builds the connection string. The path goes into a file: URI so that
// characters such as '?' and '#' in it are escaped, not parsed.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if readOnly {
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", readCacheKiB))
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", cacheKiB))
		q.Add("_pragma", "journal_mode(WAL)")
		// Checkpoints are the checkpointer's, off the writer's path.
		q.Add("_pragma", "wal_autocheckpoint(0)")
		q.Add("_pragma", "cache_spill(0)")
		// The statement journal of the writer's savepoints (one per grouped
		// request, see runOnce) in memory: past 64 KiB sqlite spilled it to
		// a temporary file and wrote each page there (an eighth of the
		// writer's time). It holds the pages one request changed.
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Close closes both connection pools. It may be called more than once.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		close(db.closing)
		<-db.writerDone
		<-db.checkpointDone
		<-db.sweepDone
		db.closeErr = errors.Join(db.stmts.close(), db.r.Close(), db.w.Close())
	})
	return db.closeErr
}

// maxBatch bounds how many write transactions share one commit.
const maxBatch = 256

// writeReq is one write transaction waiting for the writer.
type writeReq struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	done chan error
}

// write runs fn in an IMMEDIATE transaction on the writer connection and
// counts it under method (Stats); it
// returns once it is committed (or failed). Concurrent calls are grouped:
// the writer loop runs every fn that is waiting, each in its own
// SAVEPOINT (a failing fn rolls back only its own changes and gets its own
// error), and commits them together, so N concurrent writes cost one
// commit instead of N. No call returns before the commit that holds its
// changes: grouping changes the cost of durability, not what durable
// means. When the transaction fails quickly with SQLITE_BUSY or
// SQLITE_LOCKED (sqlite returns these without waiting in a few cases across
// processes), the whole transaction is retried a few times with a growing
// pause; fn must therefore have no effects outside the transaction, and
// may run more than once.
func (db *DB) write(ctx context.Context, method string, fn func(tx *sql.Tx) error) error {
	db.count.by.add(method)
	pause := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := db.submit(ctx, fn)
		// A busy error that took the whole busy_timeout to arrive means
		// another writer holds the file for long: report it rather than
		// wait several times as long. Quick busy errors (WAL recovery,
		// a checkpoint in another process) are worth a retry.
		if err == nil || !isBusy(err) || attempt == writeAttempts ||
			time.Since(start) > busyTimeoutMS*time.Millisecond/2 {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up waiting: %w)", err, ctx.Err())
		case <-t.C:
		}
		pause *= 2
	}
}

var errClosed = errors.New("store is closed")

// submit hands fn to the writer loop and waits for its outcome. A call
// whose ctx ends before its fn started returns ctx's error; once started,
// it waits for the commit.
func (db *DB) submit(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case db.writes <- r:
	case <-db.closing:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

// writer runs the write requests until Close: each round takes every
// request that is waiting (up to maxBatch) and commits them together.
func (db *DB) writer() {
	defer close(db.writerDone)
	batch := make([]*writeReq, 0, maxBatch)
	for {
		select {
		case r := <-db.writes:
			batch = append(batch[:0], r)
		case <-db.closing:
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case r := <-db.writes:
				batch = append(batch, r)
			default:
				break more
			}
		}
		db.runBatch(batch)
		clear(batch)
	}
}

// checkpointer copies the WAL into the database file checkpointEvery
// after writes, until Close: a passive checkpoint, on a read connection,
// so that no write waits for it (WAL lets the writer append meanwhile).
// It waits on a channel, with no timer, while nothing is written. The
// last connection to close checkpoints what is left (sqlite).
func (db *DB) checkpointer() {
	defer close(db.checkpointDone)
	for {
		select {
		case <-db.wrote:
		case <-db.closing:
			return
		}
		t := time.NewTimer(checkpointEvery)
		select {
		case <-t.C:
		case <-db.closing:
			t.Stop()
			return
		}
		// A busy checkpoint (a reader on an old snapshot, another
		// process's checkpoint) copies what it can; the rest waits for the
		// next one.
		db.count.checkpoints.Add(1)
		if _, err := db.r.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			db.count.checkpointErrs.Add(1)
		}
	}
}

// committed tells the checkpointer that the WAL grew.
func (db *DB) committed() {
	select {
	case db.wrote <- struct{}{}:
	default:
	}
}

// runBatch commits batch in one transaction. A request whose fn failed
// gets its error and leaves no changes; the others share the commit's
// outcome. When a failure undid the whole transaction (sqlite rolls back
// the transaction itself on some errors, e.g. an interrupted statement),
// the requests that had succeeded in it run again in a new one.
func (db *DB) runBatch(batch []*writeReq) {
	for len(batch) > 0 {
		batch = db.runOnce(batch)
	}
}

// runOnce runs one transaction over batch and answers its requests; it
// returns the requests that must run again.
func (db *DB) runOnce(batch []*writeReq) (again []*writeReq) {
	if len(batch) == 1 {
		r := batch[0]
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			return nil
		}
		err := db.writeOnce(r.fn)
		db.counted(1, err)
		r.done <- err
		return nil
	}
	tx, err := db.w.BeginTx(context.Background(), nil)
	if err != nil {
		for _, r := range batch {
			r.done <- fmt.Errorf("begin: %w", err)
		}
		return nil
	}
	defer db.resetIndex() // whatever the transaction's fate, its rows are done
	defer db.txStmts.reset()
	ok := make([]*writeReq, 0, len(batch))
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		if err := db.savepointOp(tx, db.stmts.savepoint, `SAVEPOINT w`); err != nil {
			// The transaction is gone: run this and the rest again.
			_ = tx.Rollback()
			return append(ok, batch[i:]...)
		}
		queued := len(db.index)
		fnErr := r.fn(tx)
		if fnErr == nil {
			if err := db.savepointOp(tx, db.stmts.releaseSavepoint, `RELEASE w`); err != nil {
				_ = tx.Rollback()
				return append(ok, batch[i:]...)
			}
			ok = append(ok, r)
			continue
		}
		db.index = db.index[:queued] // its rows go with its changes
		rbErr := db.savepointOp(tx, db.stmts.rollbackSavepoint, `ROLLBACK TO w`)
		if rbErr == nil {
			rbErr = db.savepointOp(tx, db.stmts.releaseSavepoint, `RELEASE w`)
		}
		if rbErr != nil {
			// fn's failure took the transaction with it: fn has its
			// answer, the earlier requests run again.
			_ = tx.Rollback()
			db.count.failed.Add(1)
			r.done <- fnErr
			return append(ok, batch[i+1:]...)
		}
		db.count.failed.Add(1)
		r.done <- fnErr
	}
	if err = db.flushIndex(tx); err != nil {
		_ = tx.Rollback()
	} else if err = tx.Commit(); err != nil {
		err = fmt.Errorf("commit: %w", err)
	}
	db.counted(int64(len(ok)), err)
	for _, r := range ok {
		r.done <- err
	}
	return nil
}

// savepointOp runs one of the batch's savepoint statements: prepared
// (parsing them for every grouped request was measurable), or as text
// while Open has not prepared the statements yet (migrations).
func (db *DB) savepointOp(tx *sql.Tx, st *sql.Stmt, query string) error {
	var err error
	if st != nil {
		_, err = db.txStmt(context.Background(), tx, st).Exec()
	} else {
		_, err = tx.Exec(query)
	}
	return err
}

func (db *DB) writeOnce(fn func(tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer db.resetIndex()
	defer db.txStmts.reset()
	err = fn(tx)
	if err == nil {
		err = db.flushIndex(tx)
	}
	if err != nil {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// indexRow is one message's searchable text, under its pk.
type indexRow struct {
	pk   int64
	body string
}

// indexLater queues a message's full-text row for the end of the writer's
// transaction (flushIndex). Indexed right away, each grouped request's
// rows made FTS5 write its pending index to disk at the request's next
// statement that opened a statement journal (FTS5 flushes at every
// savepoint), so a batch of N turns wrote N small segments and merged
// them; at the end of the transaction, after the last savepoint, it
// writes one. The rows commit with the transaction or not at all, like
// the messages they index. Called only from write functions (the writer
// goroutine).
func (db *DB) indexLater(pk int64, body string) {
	db.index = append(db.index, indexRow{pk, body})
}

// flushIndex inserts the transaction's queued full-text rows.
func (db *DB) flushIndex(tx *sql.Tx) error {
	if len(db.index) == 0 {
		return nil
	}
	st := db.txStmt(context.Background(), tx, db.stmts.indexMessage)
	for _, r := range db.index {
		if _, err := st.Exec(r.pk, r.body); err != nil {
			return fmt.Errorf("index message %d: %w", r.pk, err)
		}
	}
	db.resetIndex()
	return nil
}

// resetIndex forgets the queued rows (their transaction is gone, or they
// are stored), keeping a small buffer.
func (db *DB) resetIndex() {
	if cap(db.index) > 1024 {
		db.index = nil
		return
	}
	clear(db.index)
	db.index = db.index[:0]
}

// sqliteCode returns the primary sqlite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// isForeignKey reports whether err is a foreign key violation: in this
// schema that always means the referenced conversation does not exist.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

func isUnique(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// nanos stores a time as unix nanoseconds; the zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the inverse of nanos; times come back in UTC.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// inWriter is the context of a write function's statements: once the
// writer started it, it runs to its end (submit waits for the commit
// anyway), so its statements need not watch the caller's cancellation,
// which cost each of them a goroutine and two calls into sqlite on the
// writer's one connection. Used by the writes of every turn.
func inWriter(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// pointRead is the context for a hot read bounded by index lookups (a
// conversation's row, its queue head, view or settings, an outbox item):
// ctx's values without its cancellation. Watching a cancellable context
// cost every such query two goroutines (database/sql's and the driver's)
// and two calls into sqlite, a twentieth of a plain turn's CPU; a caller
// cancelled meanwhile gets its answer microseconds later instead. A
// context that already ended is kept, so that the read fails at once.
func pointRead(ctx context.Context) context.Context {
	if ctx.Err() != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// now is the store's clock: UTC wall time.
func now() time.Time { return time.Now().UTC() }

// limitArg turns a caller's limit (<= 0: no limit) into sqlite's LIMIT
// argument (-1: no limit).
func limitArg(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

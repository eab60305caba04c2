// Package store is the sqlite adapter for the storage ports that agentcore
// declares (agentcore.Store: transcript, runs, tool ledger, approvals,
// leases). It owns the schema and its embedded, versioned migrations.
//
// A *DB holds two connection pools on one database file: a writer limited
// to a single connection, whose transactions begin IMMEDIATE so that a
// read-then-write transaction never fails half way with SQLITE_BUSY, and a
// read pool whose connections are query_only. The file is in WAL mode, so
// readers never block the writer and see only committed transactions.
//
// Concurrency: every method of *DB may be called from any number of
// goroutines. Writes from one *DB are serialized by its single writer
// connection; writes from several *DB handles or processes on the same file
// are serialized by sqlite's file lock (busy_timeout, then a short bounded
// retry of the whole transaction). Each method is one transaction: Append,
// for instance, assigns sequence numbers, extends the in-context view, indexes
// the text for search and bumps the conversation's update time atomically,
// so concurrent appends to one conversation get unique, contiguous Seq
// values. No method starts a goroutine that outlives it; a DB runs three
// of its own until Close: the writer, the sweeper of its caches
// (viewcache.go) and the checkpointer, which copies the WAL into the
// database a quarter of a second after writes (a passive checkpoint on a
// read connection, so that no write waits for it; sqlite's automatic one
// ran inside a commit). Close waits for all three and the pools, and may
// be called more than once.
//
// Invariants enforced here: messages are append-only (triggers in
// migrations/0001_init.sql refuse UPDATE and DELETE), a view only references
// messages of its own conversation (ReplaceView), an approval is decided at
// most once (Decide), and a lease has one owner until it expires
// (AcquireLease).
//
// Writes per turn: a turn's records are batched (CommitTurn; the gateway's
// TakeItem and FinishTurn fold its queue item, outbox and lease into the
// turn's first and last writes), so a plain text turn is four write
// transactions end to end; Stats counts them by method. System prompts are
// stored once per distinct text (prompts.go).
//
// Memory: besides sqlite's page cache per connection (1 MiB on the one
// writer, 128 KiB on each of at most two readers, whose caches sqlite
// empties after every write anyway) and the writer's statement journal
// (in memory: the pages one grouped request changed), a DB keeps the
// prepared hot statements and two caches of reads, both bounded, whose
// idle entries the sweeper (a third goroutine, stopped by Close) drops
// every second:
//   - views (viewcache.go): the in-context view of conversations used in
//     the last 2 s (turns that come back to back), at most 2,048 of them
//     and about 8 MiB, the least recently used going first; a turn then
//     reads only the messages appended since. A view stays valid while its
//     conversation's view_epoch does, which triggers bump on any deletion
//     or change of view rows, from any process.
//   - settings (settings.go): at most 2,048 scopes read in the last 15 s,
//     kept until settings_version (kept by triggers) moves; it is read at
//     most once a second, so another process's write is seen within a
//     second and this DB's own at once.
//
// Nothing grows with the data. sqlite's heap is modernc.org/libc's
// allocator, which keeps freed regions for reuse (up to 4 MiB plus its
// high-water mark): what sqlite needs at its peak stays resident, so its
// caches are kept small rather than trimmed when idle.
package store

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/agentcoretest"
)

func openTemp(t testing.TB, path string) *DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "switchboard.db")
	}
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestContract(t *testing.T) {
	agentcoretest.TestStore(t, func(t *testing.T) agentcore.Store {
		return openTemp(t, "")
	})
}

func newConv(t *testing.T, db *DB) agentcore.Conversation {
	t.Helper()
	c := agentcore.Conversation{ID: newID(), AgentID: "main"}
	if err := db.CreateConversation(t.Context(), c); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return c
}

func text(role agentcore.Role, s string) agentcore.Message {
	return agentcore.Message{Role: role, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: s}}}
}

func TestOpenCreatesPrivateFileAndDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", "data with space?#")
	db := openTemp(t, filepath.Join(dir, "s.db"))
	if db.Path() != filepath.Join(dir, "s.db") {
		t.Errorf("Path() = %q", db.Path())
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, db.Path(): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %v, want %v", path, got, want)
		}
	}
	var mode string
	if err := db.r.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := db.w.QueryRowContext(t.Context(), `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
	if _, err := db.r.ExecContext(t.Context(), `INSERT INTO agents (id, created) VALUES ('x', 0)`); err == nil {
		t.Error("the read pool accepted a write; want query_only")
	}
	if _, err := Open(t.Context(), ""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

func TestMessagesAreAppendOnly(t *testing.T) {
	db := openTemp(t, "")
	c := newConv(t, db)
	m, err := db.Append(t.Context(), c.ID, text(agentcore.RoleUser, "immutable"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`UPDATE messages SET parts = '[]' WHERE id = ?`,
		`UPDATE messages SET seq = seq + 100 WHERE id = ?`,
		`DELETE FROM messages WHERE id = ?`,
	} {
		_, err := db.w.ExecContext(t.Context(), stmt, m[0].ID)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only trigger to refuse", stmt, err)
		}
	}
	got, err := db.Messages(t.Context(), c.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("message changed (-want +got):\n%s", diff)
	}
}

func TestMigrationsIdempotentOnReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var convID string
	for i := range 3 {
		db, err := Open(t.Context(), path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		v, err := db.SchemaVersion(t.Context())
		if err != nil || v != len(ms) {
			t.Errorf("open #%d: schema version %d, %v; want %d", i+1, v, err, len(ms))
		}
		var rows int
		if err := db.r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(ms) {
			t.Errorf("open #%d: %d schema_migrations rows, %v; want %d", i+1, rows, err, len(ms))
		}
		if i == 0 {
			c := newConv(t, db)
			convID = c.ID
			if _, err := db.Append(t.Context(), c.ID, text(agentcore.RoleUser, "survives reopen")); err != nil {
				t.Fatal(err)
			}
		}
		hits, err := db.Search(t.Context(), convID, "survives", 5)
		if err != nil || len(hits) != 1 {
			t.Errorf("open #%d: search = %v, %v; want the message", i+1, hits, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db := openTemp(t, path)
	if _, err := db.w.ExecContext(t.Context(),
		`INSERT INTO schema_migrations (version, name, applied) VALUES (999, '0999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema: err = %v, want a 'newer' error", err)
	}
}

// Two *DB handles on one file stand in for two processes: each has its own
// writer connection, so only sqlite's file locking serializes them.
func TestConcurrentOpenOfFreshFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	const n = 4
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = Open(t.Context(), path) })
	}
	wg.Wait()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open #%d: %v", i, errs[i])
			continue
		}
		v, err := dbs[i].SchemaVersion(t.Context())
		if err != nil || v != len(ms) {
			t.Errorf("handle %d schema version = %d, %v", i, v, err)
		}
		dbs[i].Close()
	}
}

func TestTwoHandlesAppendConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := openTemp(t, path), openTemp(t, path)
	c := newConv(t, a)

	const perWriter, writersPerHandle = 50, 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	var seqs []int64
	for _, db := range []*DB{a, b} {
		for w := range writersPerHandle {
			wg.Go(func() {
				for i := range perWriter {
					m, err := db.Append(t.Context(), c.ID, text(agentcore.RoleUser, fmt.Sprintf("w%d-%d", w, i)))
					if err != nil {
						t.Errorf("Append: %v", err)
						return
					}
					mu.Lock()
					seqs = append(seqs, m[0].Seq)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	slices.Sort(seqs)
	want := 2 * writersPerHandle * perWriter
	if len(seqs) != want || seqs[0] != 1 || seqs[len(seqs)-1] != int64(want) || len(slices.Compact(seqs)) != want {
		t.Fatalf("seqs across two handles not unique and contiguous 1..%d: %d values, first %d last %d",
			want, len(seqs), seqs[0], seqs[len(seqs)-1])
	}
	for _, db := range []*DB{a, b} {
		view, err := db.View(t.Context(), c.ID)
		if err != nil || len(view) != want {
			t.Errorf("view from one handle: %d messages, %v; want %d", len(view), err, want)
		}
	}
}

func TestLeaseExclusiveAcrossHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	handles := []*DB{openTemp(t, path), openTemp(t, path)}
	const rounds = 20
	for r := range rounds {
		conv := fmt.Sprintf("conv-%d", r)
		var wg sync.WaitGroup
		won := make([]bool, 8)
		for i := range won {
			wg.Go(func() {
				ok, err := handles[i%2].AcquireLease(t.Context(), conv, fmt.Sprintf("owner-%d", i), time.Hour)
				if err != nil {
					t.Errorf("AcquireLease: %v", err)
				}
				won[i] = ok
			})
		}
		wg.Wait()
		winners := 0
		for _, w := range won {
			if w {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d owners acquired the same lease, want exactly 1", r, winners)
		}
	}
	// What one handle holds, the other sees.
	if ok, err := handles[0].AcquireLease(t.Context(), "x", "p1", time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLease p1 = %v, %v", ok, err)
	}
	if ok, err := handles[1].RenewLease(t.Context(), "x", "p2", time.Hour); err != nil || ok {
		t.Errorf("RenewLease by p2 through the other handle = %v, %v; want false", ok, err)
	}
	if err := handles[1].ReleaseLease(t.Context(), "x", "p1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := handles[0].RenewLease(t.Context(), "x", "p1", time.Hour); err != nil || ok {
		t.Errorf("RenewLease after release through the other handle = %v, %v; want false", ok, err)
	}
}

func TestSearchRanksByRelevanceThenRecency(t *testing.T) {
	db := openTemp(t, "")
	c := newConv(t, db)
	ms, err := db.Append(t.Context(), c.ID,
		text(agentcore.RoleUser, "the deploy failed"),
		text(agentcore.RoleUser, "deploy deploy deploy: deploy again"),
		text(agentcore.RoleUser, "the deploy failed"),
	)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := db.Search(t.Context(), c.ID, "deploy", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, h := range hits {
		got = append(got, h.Seq)
	}
	// The densest match first, then the two equal ones newest first.
	if diff := cmp.Diff([]int64{ms[1].Seq, ms[2].Seq, ms[0].Seq}, got); diff != "" {
		t.Errorf("ranking (-want +got):\n%s", diff)
	}
	if !strings.Contains(hits[0].Snippet, "**deploy**") {
		t.Errorf("snippet %q does not mark the match", hits[0].Snippet)
	}
}

func TestSearchSnippetIsShort(t *testing.T) {
	db := openTemp(t, "")
	c := newConv(t, db)
	long := strings.Repeat("lorem ipsum dolor sit amet ", 200) + "needle " + strings.Repeat("consectetur adipiscing ", 200)
	if _, err := db.Append(t.Context(), c.ID, text(agentcore.RoleTool, long)); err != nil {
		t.Fatal(err)
	}
	hits, err := db.Search(t.Context(), c.ID, "needle", 1)
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search = %v, %v", hits, err)
	}
	if n := len(strings.Fields(hits[0].Snippet)); n > 14 || !strings.Contains(hits[0].Snippet, "**needle**") {
		t.Errorf("snippet %q (%d words), want about 12 tokens around the match", hits[0].Snippet, n)
	}
}

func TestFTSTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"... !!", nil},
		{`go-test "quoted`, []string{`"go-test"`, `"""quoted"`}},
		{"pref* NOT", []string{`"pref"*`, `"NOT"`}},
		{"日本語 テスト", []string{`"日本語"`, `"テスト"`}},
	} {
		if diff := cmp.Diff(tc.want, ftsTerms(tc.in)); diff != "" {
			t.Errorf("ftsTerms(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestForeignKeysMapToNotFound(t *testing.T) {
	db := openTemp(t, "")
	err := db.StartRun(t.Context(), agentcore.Run{ID: "r1", ConversationID: "missing"})
	if !errors.Is(err, agentcore.ErrNotFound) {
		t.Errorf("StartRun in a missing conversation: %v, want ErrNotFound", err)
	}
	err = db.MarkToolStarted(t.Context(), "missing", "call")
	if !errors.Is(err, agentcore.ErrNotFound) {
		t.Errorf("MarkToolStarted in a missing conversation: %v, want ErrNotFound", err)
	}
	err = db.CreateApprovals(t.Context(), []agentcore.Approval{{ID: "a", ConversationID: "missing"}})
	if !errors.Is(err, agentcore.ErrNotFound) {
		t.Errorf("CreateApprovals in a missing conversation: %v, want ErrNotFound", err)
	}
}

// realBusyError provokes a genuine SQLITE_BUSY: a connection without
// busy_timeout tries to begin a write while another holds the write lock.
func realBusyError(t *testing.T, path string) error {
	t.Helper()
	blocker, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	conn, err := blocker.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(t.Context(), `ROLLBACK`)

	impatient, err := sql.Open("sqlite", "file://"+path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	tx, err := impatient.BeginTx(t.Context(), nil)
	if err == nil {
		tx.Rollback()
		t.Fatal("BEGIN IMMEDIATE succeeded while another connection held the write lock")
	}
	return err
}

func TestWriteRetriesBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	db := openTemp(t, path)
	busy := realBusyError(t, path)
	if !isBusy(busy) {
		t.Fatalf("isBusy(%v) = false", busy)
	}
	if isBusy(errors.New("other")) || isBusy(nil) {
		t.Error("isBusy true for a non-sqlite error")
	}

	calls := 0
	err := db.write(t.Context(), "test", func(tx *sql.Tx) error {
		calls++
		if calls < 3 {
			return busy
		}
		_, err := tx.ExecContext(t.Context(), `INSERT INTO agents (id, created) VALUES ('retried', 0)`)
		return err
	})
	if err != nil || calls != 3 {
		t.Fatalf("write = %v after %d calls; want success on the 3rd", err, calls)
	}

	calls = 0
	err = db.write(t.Context(), "test", func(*sql.Tx) error { calls++; return busy })
	if !isBusy(err) || calls != writeAttempts {
		t.Errorf("write = %v after %d calls; want the busy error after %d attempts", err, calls, writeAttempts)
	}

	calls = 0
	err = db.write(t.Context(), "test", func(*sql.Tx) error { calls++; return errors.New("not busy") })
	if err == nil || calls != 1 {
		t.Errorf("write of a non-busy failure: %v after %d calls; want 1 call", err, calls)
	}
}

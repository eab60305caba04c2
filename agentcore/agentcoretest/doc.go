// Package agentcoretest holds the contract test suite of the storage ports
// agentcore declares. Every implementation of agentcore.Store (the sqlite
// store today, a PostgreSQL store later) runs TestStore from its own tests:
//
//	func TestContract(t *testing.T) {
//		agentcoretest.TestStore(t, func(t *testing.T) agentcore.Store {
//			db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "db"))
//			...
//			return db
//		})
//	}
//
// The suite checks behaviour through the port only. What it cannot check
// generically (for example that the database refuses UPDATE and DELETE on
// messages) is the implementation's own test's job.
//
// Times are compared to the microsecond, the finest precision the contract
// requires of a store.
//
// Concurrency: TestStore runs its subtests sequentially; some subtests call
// the store from several goroutines at once, which every Store must allow.
// The suite itself has no shared mutable state and may be run by several
// tests in parallel.
package agentcoretest

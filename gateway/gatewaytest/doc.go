// Package gatewaytest holds the contract test suite of the storage ports
// the gateway declares (gateway.Store). Every implementation (the sqlite
// store today, a PostgreSQL store later) runs TestStore from its own tests:
//
//	func TestGatewayContract(t *testing.T) {
//		gatewaytest.TestStore(t, func(t *testing.T) gateway.Store {
//			db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "db"))
//			...
//			return db
//		})
//	}
//
// The suite checks behaviour through the ports only and imports nothing
// but gateway, agentcore (for the types in the ports) and the standard
// library. Beyond the ports' doc comments it
// pins down what the gateway relies on:
//
//   - dedupe keys are global (not per conversation) and are forgotten after
//     their TTL, judged by the store's clock;
//   - Complete and CompleteWithOutbound refuse (with ErrNotFound) an item
//     that is unknown or already done, and CompleteWithOutbound then stores
//     nothing, so a turn run twice cannot send its reply twice;
//   - a batch of buttons or outbound items is stored all or none;
//   - expiry of pairing codes and due-ness of outbound items are judged by
//     the now the caller passes.
//
// Times are compared to the microsecond, the finest precision the contract
// requires of a store.
//
// Concurrency: TestStore runs its subtests sequentially, each on a fresh
// store. The suite has no shared mutable state and may be run by several
// tests in parallel.
package gatewaytest

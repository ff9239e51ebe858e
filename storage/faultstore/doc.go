// Package faultstore wraps a storage.Store and makes chosen operations fail,
// so that tests can check that a service leaves the store as it was when a
// write or a commit fails.
//
//	store := faultstore.New(memstore.New(nil))
//	store.Fail(faultstore.OpCommit, "", 1, errors.New("disk full"))
//	// the next commit fails; the Update that made it changes nothing
//
// Rerun makes every Update run its closure a first time and roll it back,
// then run it again, as a store that retries after a conflict does: a test
// under Rerun shows whether a service's closures are safe to repeat.
//
// A Store is safe for concurrent use.
package faultstore

// Package memstore is an in-memory storage.Store, ordered, with snapshot
// isolation, for tests and for programs whose state may be lost on exit.
//
// # Basics
//
// New returns an empty store. Views read a snapshot of the committed state
// without taking a lock; Updates run one at a time in a transaction of an
// immutable radix tree (github.com/hashicorp/go-immutable-radix, as
// go-memdb uses) whose new root replaces the committed state when the
// closure returns nil, so a failed Update costs nothing to roll back.
//
// # Concurrency
//
// A Store is safe for concurrent use. Views never wait for Updates, nor
// Updates for Views. The closure given to Update runs exactly once.
//
// # Caveats
//
// Everything is lost when the process exits. Limits are
// storage.DefaultLimits() unless Options say otherwise. Given a MaxTxReads (as
// etcdstore.DefaultLimits() have), an Update that writes counts its reads as
// etcd compares them (each key read once, each Scan one more; a read of a
// key the Update wrote itself counts too), so that a test over a memstore
// with etcd's limits finds the Updates that etcd would refuse.
package memstore

// Package memstore is an in-memory storage.Store, ordered, with snapshot
// isolation, for tests and for programs whose state may be lost on exit.
//
// # Basics
//
// New returns an empty store. Views read a snapshot of the committed state
// without taking a lock; Updates run one at a time over a copy-on-write
// B-tree whose new root replaces the committed state, with one atomic
// store, when the closure returns nil, so a failed Update costs nothing to
// roll back.
//
// # The tree
//
// The tree is the package's own persistent B-tree (nodes of up to 15 keys
// and values, in arrays of the node). An Update copies the path from the
// root to the nodes it changes; each copy carries the Update's generation
// number, and a node of the Update's own generation is changed in place
// instead of copied again. A Scan in an Update moves the Update to a new
// generation, so that the writes of its callback leave the nodes it
// iterates over untouched. This replaced go-immutable-radix (issue 32),
// which for each node copied also allocated a mutate channel and an entry
// of a per-transaction LRU of writable nodes: a B-tree's path is shorter
// than a radix tree's for keys of long shared prefixes, and a generation
// number costs nothing to allocate. Keys are the strings given to Put,
// never modified, so a Scan hands them to its callback without a copy;
// values are kept as strings too (an item is 32 bytes, not 40), and an
// inner node is allocated with its array of children, so that a copied
// node is one allocation: a Put of one key in a tree of 100,000 (four
// levels) copies 4.0 KB in 7 allocations, where it copied 4.8 KB in 12
// (BenchmarkTree).
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

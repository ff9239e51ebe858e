// Package etcdstore is a storage.Store over etcd (go.etcd.io/etcd/client/v3),
// for deployments of several processes that share one state.
//
// # Basics
//
// Open connects to etcd endpoints and returns a Store that owns its client;
// New wraps a client the caller keeps. Every key is stored under
// Options.Prefix (DefaultPrefix, "keel/", by default), so that several
// deployments share one etcd: give each its own prefix, and no prefix that
// starts another (the store of "a" would see the keys of "a/").
//
// Transactions are optimistic. The first read of a transaction fixes an etcd
// revision, and every later read asks for it, so that a View and the reads
// of an Update see one snapshot. An Update buffers its writes (its own reads
// and scans see them, merged in key order with what etcd holds) and records
// what it read: each key with its modification revision (0 for a missing
// key), and each range a Scan went through, up to the last key it visited or
// to the end of the prefix. When the closure returns nil, one etcd Txn
// compares every key read with its revision and every range with the
// revision of the transaction (no key in it created or changed since), and
// applies every write; the deletion of a key in a range is caught by the
// comparison of that key, which the scan visited. When a comparison fails,
// nothing is applied and the closure runs again on a newer revision, up to
// Options.MaxRetries times. An Update that wrote nothing sends nothing.
//
// A Scan reads etcd in pages of 256 keys (one range request each, with
// Limit), so a Scan stopped after 20 keys costs one round trip. A Get costs
// one round trip; a commit one more.
//
// # Errors
//
// Errors are those of package storage. A write beyond Limits fails with
// storage.ErrTxTooLarge, storage.ErrKeyTooLarge or storage.ErrValueTooLarge
// (kind keel.KindTooLarge) in the closure, and so before anything is sent;
// an Update that wrote and read more keys and ranges than Limits().MaxTxReads
// (128 by default) fails with storage.ErrTxTooLarge at commit,
// before sending, and leaves etcd as it was. An Update whose
// closure conflicted more than Options.MaxRetries times fails with
// keel.KindConflict. When etcd cannot be reached, operations fail with
// keel.KindUnavailable; the errors of the caller's ctx are returned as they
// are.
//
// Options.RequestTimeout (5s, 5 s, by default) bounds
// each etcd call of a transaction, so that a cluster that has lost its
// quorum, where etcd holds requests while it waits for a leader, fails them
// with keel.KindUnavailable, naming that bound, instead of holding the caller
// for as long as its ctx allows. A caller's ctx whose deadline comes first
// still ends the call with its own error. With one member of three down,
// etcd serves on: a Store opened with every member's endpoint goes on with
// the others. The Updates in flight when a member dies (a commit sent to it,
// or proposed through it to a leader that dies) fail with
// keel.KindUnavailable, at once or after RequestTimeout; such a commit may or
// may not have been applied, and running the Update again is safe when its
// closure reads what it decides on (see storage.Store). An Update that
// returned nil is committed by a quorum and
// survives the loss of any minority of members. When the quorum comes back
// the same Store serves again.
//
// # Concurrency
//
// A Store is safe for concurrent use, and any number of Stores (in any
// number of processes) may use one etcd and prefix: Updates are
// serializable, because a commit applies only when nothing its closure read
// has changed. Updates of one Store run concurrently until one conflicts;
// then, while some conflict, they run one at a time in that Store, so that
// they conflict only with other processes.
//
// # Changes
//
// A Store is a storage.Watcher: Watch opens an etcd watch of the prefix's
// keys, and reports the commits of every process on the same etcd and
// Prefix. It returns once etcd has created the watch. A watch that breaks
// (no leader, a compaction, a lost connection) is created again, and then
// reports its prefix: what lies under it must be read again.
//
// # Caveats
//
// The closure of an Update may run more than once (see storage.Store), and
// after a conflict runs again after a short random delay.
//
// etcd bounds a transaction: by default 128 operations and comparisons each,
// and 1.5 MiB per request. DefaultLimits() states each bound: MaxTxOps and
// MaxTxBytes for writes, and MaxTxReads (128, 128) for the reads of
// an Update that writes, each of which its commit compares: a key read by
// Get, found or not, counts one however often it is read; a Scan counts one
// for its range and one per key it visited (the key that a callback stopped
// the scan on included). Reads of keys the transaction wrote itself cost
// nothing. An Update that writes nothing sends nothing and is not bounded.
// Read large ranges in a View, and write in Updates that read little, or
// with storage.Batch, which sizes its transactions from these limits.
//
// A View or Update that runs longer than etcd keeps old revisions (its
// compaction) fails with an etcd "compacted" error: an Update then runs its
// closure again; a View returns an error of kind keel.KindConflict, and may
// be run again.
//
// # Compaction
//
// Run etcd with automatic compaction (for example
// --auto-compaction-mode=periodic --auto-compaction-retention=1h, or the
// compaction of the platform that runs it). etcd keeps every deleted key
// until a compaction, and a range read walks them: keel deletes keys all
// the time (each rotation, lease and check-out moves a key of a due
// index), so without compaction its scans slow down as it runs. Measured on
// an uncompacted embedded etcd with 12 static roles: an idle Step of the
// directory engine's worker took 1.1 ms after 1,200 rotations and 9.9 ms
// after 6,000. etcd does not compact by default; keel does not compact
// either, as a compaction is the cluster's, shared by every prefix.
package etcdstore

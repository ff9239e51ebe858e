// Package storagetest is the conformance suite of storage.Store: every
// store, leaf or wrapper, runs it from its own tests to show that it keeps
// the contract written in package storage (errors and their keel kinds,
// limits, atomicity, snapshot isolation, scan order and paging, copies in
// and out, misuse of a finished Tx, nested transactions, contexts, Close,
// concurrent writers, closures that run more than once, a failing writer
// among concurrent ones, storage.Batch, watches and value sizes).
//
// # Basics
//
// A store author writes a Harness that opens a fresh, empty store, and hands
// it to Run from a test of the store's package, as boltstore's does:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t testing.TB) storage.Store {
//			s, err := boltstore.Open(filepath.Join(t.TempDir(), "keel.db"), nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s // the suite closes it
//		})
//	}
//
// Run runs each case as a subtest named after it (GetPutDelete, EmptyKey,
// Limits, Atomicity, ReadYourWrites, Isolation, OrderingAndScan,
// ScanWhileWriting, CopySemantics, TxDone, ReadOnly, Nested, Context,
// Closed, ConcurrentWriters, RetrySafe, FailingWriter, Batch, Watch, Size),
// so one failing case is rerun with go test -run 'TestConformance/Isolation'.
// Watch is skipped for a store that is not a storage.Watcher, and Size
// passes for one whose transactions cannot tell sizes (storage.Sizer).
//
// Dump is for the tests of services: it returns every key and value of a
// store, so that a test can show that a failed operation left the store as
// it was.
//
// # Harness
//
// The harness is called once per case, from that case's subtest, and must
// return a store of its own: the cases run in parallel. It may register its
// own cleanups (t.TempDir does); the suite registers Close after them, so
// the store is closed first. Close is called again after the Closed case
// has closed the store, and must return nil.
//
// A wrapper store (encryption, fault injection, a prefix view) runs the
// suite over a wrapper of a fresh leaf store. Its Close must close what the
// suite would see closed: a view whose Close does nothing is given a Close
// that closes the store below it.
//
// # Limits
//
// The Limits case tests each non-zero field of the store's Limits at its
// boundary. Limits too costly to reach are logged and left out: values
// above 64 MiB, transactions above 64 MiB, 100,000 operations or 10,000
// reads. For MaxTxReads it checks how reads count: an Update that writes
// may read MaxTxReads keys with Get (found or not; a key read again counts
// once), or visit MaxTxReads-1 keys with one Scan (the Scan counts one),
// and fails with keel.KindTooLarge one read beyond. A store whose defaults
// leave a limit out (as MaxTxOps in storage.DefaultLimits()) should run the
// suite a second time over small limits.
//
// # Scale
//
// The Paging part of OrderingAndScan scans 1,100 keys: in one Scan, in
// pages of 20, 300 and 1,000 keys (After the last key of the previous
// page), and in an Update that first writes next to the 256th, 512th,
// 768th and 1,024th keys, where etcdstore ends its range requests, and
// must see its own writes merged in order.
//
// The FailingWriter case runs rounds of 8 concurrent Updates, one of which
// fails, after writing or before: its Update returns its error (errors.Is),
// none of its writes is committed, and every other Update commits, even in
// a store that groups commits (boltstore) or retries closures (etcdstore).
//
// The Batch case runs storage.Batch and storage.DeletePrefix over 1,100
// keys, more than one transaction of Batch on a store without limits
// (1,000 keys), with values of about 100 bytes: every key is visited, rewritten or
// deleted, a DeletePrefix interrupted by an error or a canceled context
// leaves exactly the keys it did not report deleted, and no transaction of
// theirs is refused as too large, since they size them from the store's
// Limits: a store that refuses one has a bound its Limits do not state.
//
// # Caveats
//
// The suite waits at most 10 seconds for anything that could deadlock (a
// writer while a View is open, a nested transaction, Close), then fails
// with a message saying what hung. It holds up to about MaxTxBytes plus
// twice MaxValueSize in memory while testing those limits.
package storagetest

// Package storage defines the transactional key-value store every keel
// service keeps its state in, and Sub, a view confined to a key prefix.
//
// # Basics
//
// A Store runs closures in transactions. View gives a read-only Tx over one
// consistent snapshot; Update gives a read-write Tx whose writes are all
// committed when the closure returns nil, and none of them otherwise:
//
//	err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
//		for _, k := range []string{"users/ada", "users/alan", "users/grace", "groups/admins"} {
//			if err := tx.Put(k, []byte("{}")); err != nil {
//				return err // nothing of this Update is committed
//			}
//		}
//		return nil
//	})
//
// Keys are non-empty strings, ordered byte-wise. Scan visits the keys of a
// prefix in order, can start after a given key and stop early, so a page of
// 20 costs 20 reads however many keys the prefix holds.
//
// Implementations: storage/memstore (in memory), storage/boltstore (one
// bbolt file), storage/etcdstore (etcd, for processes that share state),
// and the wrappers storage/sealstore (encryption at rest) and
// storage/faultstore (fault injection for tests). storage/storagetest is the
// conformance suite they all pass.
//
// # Limits
//
// Each store states every bound it has in its Limits: key and value sizes,
// and per Update the writes, the bytes written and the reads (etcd compares
// each key an Update read at commit, 128 at most by default). Work on more
// keys than one transaction holds goes through Batch, which sizes its
// transactions from the Limits and is resumable, or DeletePrefix; an
// all-or-nothing operation checks up front that it fits.
//
// # Errors
//
// The errors of this package wrap keel kinds: a missing key is ErrNotFound
// (keel.KindNotFound) from every store alike; an empty key is ErrEmptyKey
// (keel.KindInvalid); a key, value or transaction beyond the store's Limits
// is keel.KindTooLarge; misuse of a Tx (after its closure, a write in a
// View, a nested transaction) is keel.KindInternal; a closed store is
// ErrClosed (keel.KindUnavailable). A canceled context gives the context's
// error. A failed Update leaves the store as it was.
//
// # Concurrency
//
// Stores are safe for concurrent use; a Tx is not, and is valid only until
// its closure returns. The closure given to Update may run more than once
// (a store may retry it, or group writers into one commit): it must have no
// effect outside its Tx. Do side effects (network calls, waking workers)
// after Update returns.
//
// # Changes
//
// A store that is a Watcher reports the keys its commits write, whichever
// process committed them: memstore and boltstore from their own commits,
// etcdstore from an etcd watch, the wrappers from the store they wrap.
// Watch (the function) works on any store and reports nothing for one
// that is not a Watcher. The domains' workers and blocking reads use it,
// so that work committed through one process on a shared store wakes the
// leading process's worker when due, and a blocking read in another:
//
//	stop, err := storage.Watch(ctx, store, "due/", func(key string) { woken <- key })
//
// (a domain's fn wakes its worker: leader.Worker's Wake).
//
// # Views for composition roots
//
// Sub confines a component to its prefix, and Join lets two views commit
// in one transaction (a secrets engine's record and its lease). Guard makes
// a view live only as long as one key of its store does: every transaction
// of the view, and of the views and Joints made from it, reads the key
// first and fails (keel.KindNotFound) once it is deleted, so that a handle
// to an object kept after the object's removal (by another process, or
// the program) writes nothing. Claim records in a store, for this
// process, which kind of component a root laid out each part for, and
// CheckClaim, called by each component's constructor, refuses a view that
// would share keys with a component of another kind.
//
// # Large values
//
// A transaction of memstore or boltstore, and of the views over them,
// tells a value's size without loading it (Sizer). Reserving and its
// Loader use that to reserve a large value through the context's
// keel.Reserver before the value is loaded, in a transaction of its own;
// a store that cannot tell (etcd) has the value loaded, then reserved.
//
// # Caveats
//
// Values are copied in and out: a slice given to Put may be reused, and a
// slice returned by Get belongs to the caller.
//
// Never start a transaction of a store inside a closure of the same store:
// it would deadlock on most engines. The ctx the closure receives carries
// its transaction, so a nested View or Update started with it fails with
// ErrNestedTx; name it ctx so that it shadows the outer context.
package storage

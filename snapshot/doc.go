// Package snapshot copies a whole store, or a part of it: Save writes a
// point-in-time stream of a store, Restore writes a stream into a store of
// any kind, and Migrate copies one store into another, resumably.
//
// # Basics
//
// Save reads every key under SaveOptions.Prefix in one View and writes
// them, with their values as stored, to an io.Writer; Restore verifies a
// whole stream before it writes any of it into an empty store:
//
//	_, err := snapshot.Save(ctx, store, &buf, nil)
//	_, err = snapshot.Restore(ctx, &buf, copied, nil)
//
// Migrate copies from one store to another without a stream, in batches
// sized from the destination's Limits, reporting its progress; killed
// halfway, it is run again and continues after the greatest key the
// destination holds. That is right because of one rule, which the caller
// keeps: the destination holds nothing under the prefix when the first run
// begins, or only what earlier runs copied. Migrate checks what it can of
// it (the source must hold that greatest key with the same value).
//
// # The stream
//
// A stream is a header, the records in ascending key order, and a
// trailer, in this format (integers big-endian; uvarint as
// encoding/binary's):
//
//	header:  "KEELSNAP" | version (uint16, 1) | uvarint prefix length | prefix
//	record:  0x01 | uvarint key length | key | uvarint value length | value
//	trailer: 0x00 | record count (uint64) | SHA-256 of every byte before it
//
// Keys are whole keys of the store saved, all under the header's prefix;
// nothing may follow the trailer. Restore refuses with keel.KindInvalid a
// stream that breaks any of this, including one of another version,
// before writing anything, and writes the keys back under the same
// prefix. To restore into another part of a store, restore into a
// storage.Sub view of it.
//
// Values are copied as the store given holds them: a snapshot of the
// store inside a sealstore (the store given to sealstore.New) keeps the
// values sealed, and restoring it under the same keys and opening it with
// the same keys gives them back. A snapshot of the sealstore itself holds
// the values in clear.
//
// # One instant
//
// A stream is the state of the store at one instant because Save reads
// in one View, and each store's View is one consistent snapshot: memstore
// reads one immutable tree; boltstore one bbolt read transaction; and
// etcdstore reads every page of its scan at the revision its first read
// fixed, however many writers commit meanwhile. The costs differ: on
// bbolt, a commit that grows the file past its memory map waits for the
// read transaction to end, so a long Save may hold such a commit; on etcd,
// a Save that runs longer than the cluster's compaction retention fails
// (its revision was compacted away) and must be run again. A Save's error
// leaves a stream without a trailer, which Restore refuses.
//
// # Cost
//
// Save reads the store in its goroutine and hands the stream, in chunks of
// 128 KiB (at most four held), to a second goroutine that hashes and
// writes it: the SHA-256 is most of a Save's CPU beyond the store's walk,
// and on two cores it then overlaps the walk. Smaller chunks did no better
// and larger ones worse (a chunk is hashed while still in cache). A store
// whose Views lend their bytes during a scan (boltstore's) is read without
// the copy of each key and value Scan makes; others through Scan.
//
// # Batches
//
// Restore and Migrate write in Updates of Puts only, sized from the
// destination's storage.Limits as storage.Batch sizes its transactions
// (at most 1,000 keys and 8 MiB each besides): an etcd destination gets
// Updates of at most 128 operations. Restore with Replace deletes the
// keys under the stream's prefix with storage.DeletePrefix, only once the
// whole stream has been verified.
//
// # Errors
//
// Errors start with "snapshot: " and wrap a keel kind: keel.KindInvalid
// for a missing argument (the fields "Store", "Out", "In", "From", "To")
// and for a stream that is not a whole, intact stream of this version;
// keel.KindTooLarge for a stream intact but holding a key or value beyond
// the destination's limits (refused before any write too);
// keel.KindConflict for a destination that is not empty where Restore or
// Migrate would write; keel.KindUnavailable for a failure of the
// caller's reader or writer, or of the temporary file, which stays
// wrapped. The errors of the stores and of ctx are passed on as they are,
// behind the prefix.
//
// # Caveats
//
// Restore and Migrate are not one transaction: an error or a crash in
// the middle leaves part of the keys written. Run Migrate again to finish;
// run Restore again with Replace. Neither expects others to write the
// keys it writes meanwhile. Migrate reads each batch in a View of its
// own, so its copy is of one instant only when nobody writes the source
// while it runs: to copy a store that is being written, Save it and
// Restore the stream.
package snapshot

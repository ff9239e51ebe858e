// Package boltstore is a storage.Store in one bbolt (go.etcd.io/bbolt) file:
// the default store of programs that run as one process.
//
// # Basics
//
// Open opens or creates the file and takes bbolt's file lock, waiting at
// most Options.LockTimeout for another process to release it. Every Update
// is synced to disk (fsync) before it returns, unless Options.NoSync: an
// acknowledged write survives a crash of the process or of the machine.
//
// # Grouped commits
//
// An fsync costs milliseconds, so Updates that arrive while a commit is in
// progress wait, and the next commit runs all of them, in arrival order, in
// one bbolt transaction with one fsync. A commit first waits for as many
// Updates as the commit before it saw (its own and those that queued while
// it ran), at most half that commit's time and at most 2 ms: under many
// writers, those just served come back soon, and one commit then serves
// them all, where two half groups would alternate, each paying an fsync
// and the pages it writes. A lone writer commits at once (unlike bbolt's
// DB.Batch, which always waits). Each closure sees the writes of
// the closures before it in the group, exactly as if they had committed one
// after another. When a closure fails after writing, the group is rolled
// back, committed again without it, and the failed closure is run once more
// alone: that is why a closure may run more than once.
//
// Before each commit the committing writer yields the processor once, so
// that writers ready to run join it. With GOMAXPROCS 1 this matters most:
// a commit's fsync keeps the only processor, and requests read in one poll
// of the network would otherwise commit one at a time, each with its
// fsync (over HTTP, kv writes of 32 clients went from about 1 to about 19
// per commit, their CPU from 184-272 to 109-119 µs each).
//
// # Pages
//
// bbolt splits a page that outgrows its size at commit and, by default,
// fills the first part to half. Keys written in order all land in the
// last page of their range: the records and expiry entries of the leases
// a commit issues or renews (lease ids sort by issue time), kv writes of
// new names. Split at half, each commit left half-empty pages behind it
// and wrote more pages than its keys needed, and the kernel's cost of a
// commit grows with its pages. A Store splits at three quarters. Pages
// written per commit of 64 Updates, half / three quarters
// (BenchmarkDurable of package lease and BenchmarkGroupCommit, counted by
// bbolt's statistics): lease issue 16.8 / 13.3, renewal 39.7 / 27.9,
// renewal in random order 182 / 152, revocation 35.3 / 27.2, synchronous
// revocation 22.9 / 18.6, one-key Updates with keys in order 10.2 / 8.6
// and at random 68.0 / 69.4. Fuller costs keys at random more than it
// saves: at 0.9 they write 80.7 pages a commit (+19 %), leases 12.4 to
// 25.1.
//
// The page size is bbolt's default, the operating system's (4 KiB):
// 16 and 32 KiB pages write fewer pages a commit (issue 9.0 and 6.9) but
// more bytes, and measured no less CPU per lease operation (the kernel
// charges per request more than per byte), nor for renewals in random
// order, each of which writes pages of its own.
//
// # Large values
//
// A value of keel.LargeValue bytes (64 KiB) or more is kept in a bucket of
// its own, nested at its key, not among its neighbours in a leaf: bbolt
// writes a leaf whole at commit, so that a write next to large values
// would copy them all (a leaf of four keys or fewer never splits). A
// write of a large value then costs its own pages, whatever lies next to
// it. A file written before keeps its large values among their
// neighbours, where they read as any other, until they are written again.
//
// # Errors
//
// A file locked by another process past the timeout is keel.KindUnavailable.
// The errors of the storage package otherwise.
//
// # Concurrency
//
// A Store is safe for concurrent use. Views run alongside each other and
// alongside a commit, each on its snapshot.
//
// # Snapshots
//
// Package snapshot saves a View without the copy of each key and value
// that Scan makes: the View's transaction lends them from the file's
// memory map, valid during a callback (a method of the transaction that
// snapshot finds by its method set, not part of the API).
//
// # Caveats
//
// Keys are limited to bbolt's 32768 bytes at most (4096 by default). The
// file does not shrink when data is deleted; freed pages are reused. bbolt
// bounds no reads; given a MaxTxReads in Options.Limits, an Update that
// writes counts its reads as memstore does (each key read once, each Scan
// one more) and fails beyond it, as etcd would.
//
// bbolt must map the file anew when it outgrows its memory map, and that
// waits for every open read transaction. The first map is 1 GiB of address
// space (Options.InitialMmapSize), so until the file outgrows it a commit
// never waits for Views; past it, a commit that grows the map waits for the
// Views open at that moment. Keep Views short.
package boltstore

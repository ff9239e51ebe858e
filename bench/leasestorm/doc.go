// Package leasestorm is the storm test of the lease manager (issue 26): N
// leases due within the same second on a bbolt file, a tenth of whose
// revocations fail, while kv reads are served from the same file.
//
// The package has no code of its own: everything is in TestStorm.
//
//   - The leases are written without fsync, 10,000 per transaction
//     through lease.Issuer.Update (as lease's BenchmarkStartup does), to
//     two mounts, one issued every second/N of a keel.FakeClock: N leases
//     issued over one second with one TTL, due within the same second
//     (session 11 issued each 10,000 at one instant: their ids, which
//     sort by issue time to the millisecond then at random, did not follow
//     their expiry, and each batch of revocations dirtied leaves all over
//     the file). The file is then opened again as a program opens it
//     (fsync on every commit) for the storm.
//   - The revoker fails for every lease whose preload index is a multiple
//     of ten, every time, with an ordinary error (not lease.Permanent), so
//     that the manager retries it with backoff until Options.MaxAttempts
//     (6) and then marks it irrevocable; it succeeds for the others. The
//     index travels in the lease's Data, so the test keeps a bit per lease
//     (not a map of ids) and its own memory stays out of the figure.
//   - The worker is driven by Step on the fake clock: each Step at the
//     time the previous one returned, but at least one second
//     (-leasestorm.tick) later, as a worker that wakes once a second. Each
//     retry is jittered by ±20%, so stepping to every returned time would
//     make a Step, and an fsync, per lease.
//   - At the end every lease must be revoked (its revoker call succeeded,
//     and it is no longer stored) or irrevocable: the irrevocable ones are
//     exactly the failing tenth, each listed by ListIrrevocable with its
//     mount and last error ("out of retries: " and the revoker's), and
//     shown by Get with that error and its attempts, which must equal the
//     revoker's count of calls; CountIrrevocable and List agree.
//   - Memory: a goroutine reads runtime.MemStats every 50 ms during the
//     storm; the figure is the peak HeapInuse above the live heap before
//     it (after two GCs).
//   - kv reads: -leasestorm.readers goroutines read one secret through a
//     kv.Engine on the same file, each pausing -leasestorm.pace between
//     reads (a steady load, not one that competes for every core): a fixed
//     count (-leasestorm.idlereads) before the storm, then every read
//     during it (and, apart, those during the first Step, which revokes
//     every revocable lease: the Steps after it are the retries, minutes
//     of the fake clock stepped back to back); p50 and p99 of each, and
//     the runtime's scheduling
//     latency over each phase, which tells a read that waited for a core
//     from one that waited for the store.
//   - With go test -trace, each kv read is a region "kvread" and the storm
//     is marked by two logs of category "storm" ("start", "end"), so that
//     a program reading the trace (golang.org/x/exp/trace) can split the
//     storm's slow reads by the states their goroutine went through.
//
// Speed is reported (t.Log), never asserted; the heap's growth is bounded
// (64 MiB + 64 bytes a lease), which a worker that loaded every due lease
// would break at a million. The default size, 10,000 leases, is small
// enough for `go test ./...` (a few seconds).
// The figures of BENCHMARKS.md come from
//
//	nice -n 10 go test -run TestStorm -v -timeout 60m ./leasestorm -args -leasestorm.leases=1000000
package leasestorm

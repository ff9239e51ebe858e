package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/memstore"
)

// The benchmarks of the lease manager; see BENCHMARKS.md at the root of the module
// for figures and how to reproduce them.
//
//   - Issue: one Issue per op (its own durable Update on boltstore),
//     against the yardstick engine=…-rawjson: one Update putting the
//     JSON encoding of an equivalent lease under a fresh key.
//   - StepRevoke: one Step revoking 100,000 due leases with a no-op
//     revoker on memstore (preloading is outside the timer); reports
//     leases/s.
//   - Startup: a restart over a bolt file holding N leases: open the
//     file (open-ns), then New + Register + Start + a first Step that
//     finds nothing due (startup-ns, the figure that matters), then Stop
//     and close. ns/op is the whole cycle, with four forced GCs. Reports
//     heap-B (live heap after GCs, minus before: what the started manager
//     keeps), alloc-B (bytes allocated by the start-up), B/lease (key and
//     value bytes stored per lease), file-B/lease and preload-s (time to
//     write the file, once). N is 10,000 and 100,000; with
//     KEEL_BENCH_FULL=1 also 1,000,000.
//
// All run with -benchtime 1x too, as in CI.

// benchLease is the JSON yardstick of a lease: its fields as Vault stores
// them.
type benchLease struct {
	LeaseID         string    `json:"lease_id"`
	Path            string    `json:"path"`
	Mount           string    `json:"mount"`
	IssueTime       time.Time `json:"issue_time"`
	ExpireTime      time.Time `json:"expire_time"`
	LastRenewalTime time.Time `json:"last_renewal_time"`
	MaxTTL          int64     `json:"max_ttl"`
	TTL             int64     `json:"ttl"`
	Renewable       bool      `json:"renewable"`
	Token           bool      `json:"token"`
	Data            []byte    `json:"data"`
	Irrevocable     bool      `json:"irrevocable"`
	Attempts        int       `json:"attempts"`
	LastError       string    `json:"last_error"`
	NextAttempt     time.Time `json:"next_attempt"`
}

var benchData = []byte("cn=v-app-0123456789,ou=users,dc=example,dc=org")

// openBenchStore opens an empty store of engine in dir, closed at the end
// of b.
func openBenchStore(b *testing.B, engine, dir string) storage.Store {
	b.Helper()
	var s storage.Store
	switch engine {
	case "memstore":
		s = memstore.New(nil)
	case "boltstore":
		bs, err := boltstore.Open(filepath.Join(dir, "bench.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		s = bs
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkIssue(b *testing.B) {
	ctx := context.Background()
	for _, engine := range []string{"memstore", "boltstore"} {
		b.Run("engine="+engine, func(b *testing.B) {
			m := mustNew(b, openBenchStore(b, engine, b.TempDir()), nil)
			if err := m.register("ldap/", RevokerFunc(func(context.Context, Lease) error { return nil }), nil); err != nil {
				b.Fatal(err)
			}
			req := IssueRequest{Path: "ldap/creds/app", TTL: time.Hour, Renewable: true, Data: benchData}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.issue(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("engine="+engine+"-rawjson", func(b *testing.B) {
			s := openBenchStore(b, engine, b.TempDir())
			now := time.Now().UTC()
			v := benchLease{Path: "ldap/creds/app", Mount: "ldap/", IssueTime: now, ExpireTime: now.Add(time.Hour),
				MaxTTL: int64(DefaultTTL), TTL: int64(time.Hour), Renewable: true, Data: benchData, NextAttempt: now.Add(time.Hour)}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				i++
				v.LeaseID = "ldap/creds/app/" + strconv.Itoa(i)
				err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
					buf, err := json.Marshal(&v)
					if err != nil {
						return err
					}
					return tx.Put("lease/id/"+v.LeaseID, buf)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// preload issues n leases of TTL ttl at clock's time in Issuer.Update transactions of
// batch leases.
func preload(tb testing.TB, s storage.Store, clock keel.Clock, n, batch int, ttl time.Duration) {
	tb.Helper()
	m := mustNew(tb, s, &Options{Clock: clock})
	iss, err := m.Register(Mount{Path: "ldap/", Store: storage.Sub(s, "engine/")})
	if err != nil {
		tb.Fatal(err)
	}
	req := IssueRequest{Path: "ldap/creds/app", TTL: ttl, Renewable: true, Data: benchData}
	for done := 0; done < n; {
		k := min(batch, n-done)
		err := iss.Update(context.Background(), func(ctx context.Context, tx storage.Tx, leases *Tx) error {
			for range k {
				if _, err := leases.Issue(req); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		done += k
	}
}

func BenchmarkStepRevoke(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	var total time.Duration
	revoked := 0
	for b.Loop() {
		b.StopTimer()
		s := memstore.New(nil)
		clock := keel.NewFakeClock(t0)
		preload(b, s, clock, n, 10_000, time.Minute)
		m := mustNew(b, s, &Options{Clock: clock})
		var count atomic.Int64 // the worker calls revokers side by side
		if err := m.register("ldap/", RevokerFunc(func(context.Context, Lease) error { count.Add(1); return nil }), nil); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		start := time.Now()
		next, err := m.Step(ctx, t0.Add(time.Hour))
		total += time.Since(start)
		if err != nil || !next.IsZero() || count.Load() != int64(n) {
			b.Fatalf("Step: next %s, %d revoked, %v", next, count.Load(), err)
		}
		revoked += int(count.Load())
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(revoked)/total.Seconds(), "leases/s")
}

// startupSizes are the lease counts of BenchmarkStartup.
func startupSizes() []int {
	sizes := []int{10_000, 100_000}
	if os.Getenv("KEEL_BENCH_FULL") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	return sizes
}

// startupFile is a bolt file preloaded with n leases, made once per run.
type startupFile struct {
	once         sync.Once
	path         string
	perLease     float64 // key + value bytes per lease
	filePerLease float64
	preloadTime  time.Duration
	err          error
}

func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	for _, n := range startupSizes() {
		f := &startupFile{path: filepath.Join(dir, fmt.Sprintf("leases-%d.db", n))}
		b.Run(fmt.Sprintf("leases=%d", n), func(b *testing.B) {
			f.once.Do(func() { f.err = f.make(b, n) })
			if f.err != nil {
				b.Fatal(f.err)
			}
			ctx := context.Background()
			var startup, heap, alloc, open float64
			// The whole restart cycle is timed (ns/op), so that b.N
			// stays small; startup-ns is the part that matters.
			for b.Loop() {
				start := time.Now()
				s, err := boltstore.Open(f.path, nil)
				if err != nil {
					b.Fatal(err)
				}
				open += float64(time.Since(start))
				clock := keel.NewFakeClock(t0)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.GC() // the second empties sync.Pool's victim caches
				runtime.ReadMemStats(&before)

				start = time.Now()
				m := mustNew(b, s, &Options{Clock: clock})
				if err := m.register("ldap/", RevokerFunc(func(context.Context, Lease) error { return nil }), nil); err != nil {
					b.Fatal(err)
				}
				m.Start()
				next, err := m.Step(ctx, t0)
				startup += float64(time.Since(start))
				if err != nil || !next.Equal(t0.Add(time.Hour)) {
					b.Fatalf("first Step: next %s, %v", next, err)
				}

				runtime.ReadMemStats(&after)
				alloc += float64(after.TotalAlloc - before.TotalAlloc)
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap += float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
				m.Stop()
				s.Close()
			}
			b.ReportMetric(startup/float64(b.N), "startup-ns")
			b.ReportMetric(heap/float64(b.N), "heap-B")
			b.ReportMetric(alloc/float64(b.N), "alloc-B")
			b.ReportMetric(open/float64(b.N), "open-ns")
			b.ReportMetric(f.perLease, "B/lease")
			b.ReportMetric(f.filePerLease, "file-B/lease")
			b.ReportMetric(f.preloadTime.Seconds(), "preload-s")
		})
	}
}

// make writes n leases, issued at t0 for an hour, to a NoSync bolt file,
// and measures what they take.
func (f *startupFile) make(b *testing.B, n int) error {
	start := time.Now()
	s, err := boltstore.Open(f.path, &boltstore.Options{NoSync: true})
	if err != nil {
		return err
	}
	preload(b, s, keel.NewFakeClock(t0), n, 10_000, time.Hour)
	var bytes, leases int
	err = s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan(keyPrefix, storage.ScanOptions{}, func(k string, v []byte) error {
			bytes += len(k) + len(v)
			if len(k) > len(keyPrefix+idPrefix) && k[:len(keyPrefix+idPrefix)] == keyPrefix+idPrefix {
				leases++
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	if leases != n {
		return fmt.Errorf("preloaded %d leases, want %d", leases, n)
	}
	st, err := os.Stat(f.path)
	if err != nil {
		return err
	}
	f.preloadTime = time.Since(start)
	f.perLease = float64(bytes) / float64(n)
	f.filePerLease = float64(st.Size()) / float64(n)
	return nil
}

// durableWriters is how many goroutines BenchmarkDurable runs at once.
const durableWriters = 64

// BenchmarkDurable runs issue, renew and revoke from durableWriters
// goroutines at once, on memstore and on boltstore (fsync on), side by side
// in one run: the measure of issue 26 item 6 (on bbolt, at most 1.3× the
// CPU per op of memory). cpu-ns/op is the process's CPU time (user and
// system, getrusage) per op, the worker's included, and sys-ns/op its
// system part (the kernel's, mostly writing and syncing the file); ns/op
// is wall time.
//
//   - issue: Issuer.Issue (one Update per lease).
//   - renew: Renew of a lease of its own by an hour (one Update), the
//     leases taken in the order they were issued.
//   - renew-random: renew, the leases taken in random order, so that the
//     records one commit writes lie apart in the file.
//   - revoke: Revoke without sync, as vault/api's sys/leases/revoke: one
//     Update queues the lease; the worker (started) revokes it with a
//     no-op revoker and removes it, many leases to a commit. The op ends
//     when the worker has removed every lease.
//   - revoke-sync: Revoke with sync: a View, the no-op revoker, an Update.
//
// The leases renewed and revoked are issued before the timer starts.
func BenchmarkDurable(b *testing.B) {
	for _, op := range []string{"issue", "renew", "renew-random", "revoke", "revoke-sync"} {
		for _, engine := range []string{"memstore", "boltstore"} {
			b.Run("op="+op+"/engine="+engine, func(b *testing.B) { benchDurable(b, op, engine) })
		}
	}
}

func benchDurable(b *testing.B, op, engine string) {
	ctx := context.Background()
	s := openBenchStore(b, engine, b.TempDir())
	m := mustNew(b, s, nil)
	var revoked atomic.Int64
	iss, err := m.Register(Mount{
		Path:    "ldap/",
		Revoker: RevokerFunc(func(context.Context, Lease) error { revoked.Add(1); return nil }),
		Store:   storage.Sub(s, "engine/"),
	})
	if err != nil {
		b.Fatal(err)
	}
	req := IssueRequest{Path: "ldap/creds/app", TTL: time.Hour, Renewable: true, Data: benchData}
	var ids []string
	if op != "issue" {
		ids = make([]string, 0, b.N)
		for len(ids) < b.N {
			k := min(1000, b.N-len(ids))
			err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				for range k {
					l, err := leases.Issue(req)
					if err != nil {
						return err
					}
					ids = append(ids, l.ID)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if op == "renew-random" {
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	}
	if op == "revoke" {
		m.Start()
		defer m.Stop()
	}
	var fn func(i int) error
	switch op {
	case "issue":
		fn = func(int) error { _, err := iss.Issue(ctx, req); return err }
	case "renew", "renew-random":
		fn = func(i int) error { _, err := m.Renew(ctx, ids[i], time.Hour); return err }
	case "revoke":
		fn = func(i int) error { return m.Revoke(ctx, ids[i], false) }
	case "revoke-sync":
		fn = func(i int) error { return m.Revoke(ctx, ids[i], true) }
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu, sys := keeltest.CPUTime(), keeltest.SysTime()
	if err := runWriters(b.N, fn); err != nil {
		b.Fatal(err)
	}
	if op == "revoke" {
		waitRemoved(b, s)
	}
	cpu, sys = keeltest.CPUTime()-cpu, keeltest.SysTime()-sys
	b.StopTimer()
	if (op == "revoke" || op == "revoke-sync") && revoked.Load() != int64(b.N) {
		b.Fatalf("%d leases revoked, want %d", revoked.Load(), b.N)
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(sys)/float64(b.N), "sys-ns/op")
}

// runWriters calls fn(i) for each i below n from durableWriters goroutines
// at once, and returns the first error.
func runWriters(n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, durableWriters)
	for range durableWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// waitRemoved waits until s holds no lease record: the worker has removed
// every revoked lease.
func waitRemoved(b *testing.B, s storage.Store) {
	for {
		left := false
		err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			return tx.Scan(keyPrefix+idPrefix, storage.ScanOptions{KeysOnly: true}, func(string, []byte) error {
				left = true
				return storage.StopScan
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		if !left {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

package leasestorm

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/kv"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

var (
	flagLeases    = flag.Int("leasestorm.leases", 10_000, "leases due at once in TestStorm")
	flagReaders   = flag.Int("leasestorm.readers", 2, "goroutines reading a kv secret during TestStorm")
	flagIdleReads = flag.Int("leasestorm.idlereads", 4_000, "kv reads timed before the storm")
	flagPace      = flag.Duration("leasestorm.pace", time.Millisecond, "pause of each kv reader between two reads")
	flagTick      = flag.Duration("leasestorm.tick", time.Second, "least fake time between two Steps")
	flagNoSync    = flag.Bool("leasestorm.nosync", false, "open the file for the storm without fsync (to tell the commits' fsync from the rest)")
	flagAllocs    = flag.String("leasestorm.allocs", "", "write the allocation profile to this path plus .before and .after the storm (see go tool pprof -base)")
)

// failEvery makes every failEvery-th lease (by preload index) one whose
// revocation always fails.
const failEvery = 10

// mounts are the mounts of the storm, the leases dealt to them a
// preload transaction each in turn.
var mounts = []string{"ldap/", "db/"}

// maxAttempts is lease.Options.MaxAttempts as the storm leaves it: the
// default.
const maxAttempts = 6

// t0 is the fake time of the preload.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// leaseTTL is the TTL of every lease: they are all due between
// t0+leaseTTL and one second later.
const leaseTTL = time.Hour

const dataPrefix = "cn=v-storm-"

// leaseData is the Data of the lease of preload index i: an account name
// that carries i, which the revoker reads back.
func leaseData(i int) []byte {
	return fmt.Appendf(nil, "%s%010d,ou=users,dc=example,dc=org", dataPrefix, i)
}

// leaseIndex is the preload index of a lease's Data, or false.
func leaseIndex(data []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(data, []byte(dataPrefix))
	if !ok {
		return 0, false
	}
	num, _, ok := bytes.Cut(rest, []byte(","))
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(string(num))
	return i, err == nil
}

// failing reports whether the lease of index i is one whose revocation
// always fails.
func failing(i int) bool { return i%failEvery == 0 }

// revoker revokes the storm's leases: it fails for the failing indexes,
// every time, with an ordinary error, and records the others as revoked.
type revoker struct {
	n        int
	revoked  []atomic.Uint64 // bit i: lease i was revoked (a call succeeded)
	attempts []atomic.Int32  // calls for failing lease i, at i/failEvery
	calls    atomic.Int64
	strange  atomic.Int64 // calls for a lease whose Data is not the storm's
	done     atomic.Int64 // leases revoked (the first success of each)
	spent    atomic.Int64 // failing leases called maxAttempts times
}

// settled reports whether every lease has been revoked or has failed
// maxAttempts times: once the Step that made the calls has committed,
// each is gone or irrevocable.
func (r *revoker) settled() bool {
	failing := int64((r.n + failEvery - 1) / failEvery)
	return r.done.Load() == int64(r.n)-failing && r.spent.Load() == failing
}

func newRevoker(n int) *revoker {
	return &revoker{
		n:        n,
		revoked:  make([]atomic.Uint64, (n+63)/64),
		attempts: make([]atomic.Int32, (n+failEvery-1)/failEvery),
	}
}

func (r *revoker) Revoke(_ context.Context, l lease.Lease) error {
	r.calls.Add(1)
	i, ok := leaseIndex(l.Data)
	if !ok || i >= r.n {
		r.strange.Add(1)
		return fmt.Errorf("storm: lease %s is not one of the storm's", l.ID)
	}
	if failing(i) {
		if r.attempts[i/failEvery].Add(1) == maxAttempts {
			r.spent.Add(1)
		}
		return fmt.Errorf("storm: the backend refuses account #%d", i)
	}
	if bit := uint64(1) << (i % 64); r.revoked[i/64].Or(bit)&bit == 0 {
		r.done.Add(1)
	}
	return nil
}

func (r *revoker) isRevoked(i int) bool { return r.revoked[i/64].Load()&(1<<(i%64)) != 0 }

// refusal is the error the revoker returns for failing lease i.
func refusal(i int) string { return fmt.Sprintf("storm: the backend refuses account #%d", i) }

// preload writes n leases to a bbolt file at path without fsync (as
// lease's BenchmarkStartup does: 10,000 per transaction through
// Issuer.Update), dealt to the mounts a transaction each in turn, one
// issued every second/n of clock from t0 (their ids, which sort by issue
// time to the millisecond, in the order of their expiry). It
// returns the time by which all are due.
func preload(t *testing.T, path string, clock *keel.FakeClock, n int) time.Time {
	t.Helper()
	const batch = 10_000
	ctx := context.Background()
	bs, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	m, err := lease.New(storage.Sub(bs, "lease/"), &lease.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var issuers []*lease.Issuer
	for _, mt := range mounts {
		iss, err := m.Register(lease.Mount{Path: mt, Store: storage.Sub(bs, "engine/"+mt)})
		if err != nil {
			t.Fatal(err)
		}
		issuers = append(issuers, iss)
	}
	batches := (n + batch - 1) / batch
	// One lease issued every second/n: n leases issued over one second,
	// with one TTL, as a million due within the same second would be.
	step := max(time.Second/time.Duration(n), time.Nanosecond)
	for b := range batches {
		first, k := b*batch, min(batch, n-b*batch)
		iss := issuers[b%len(issuers)]
		req := lease.IssueRequest{Path: iss.Mount() + "creds/app", TTL: leaseTTL, Renewable: true}
		start := clock.Now()
		err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *lease.Tx) error {
			clock.Set(start) // the closure may run again
			for i := first; i < first+k; i++ {
				req.Data = leaseData(i)
				if _, err := leases.Issue(req); err != nil {
					return err
				}
				clock.Advance(step)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := bs.Close(); err != nil {
		t.Fatal(err)
	}
	return t0.Add(leaseTTL + time.Second)
}

// hist is a latency histogram of 1 µs buckets, safe for concurrent use;
// limit > 0 caps how many observations it keeps.
type hist struct {
	limit int64
	n     atomic.Int64
	us    []atomic.Int64 // us[i]: observations of i µs; the last bucket takes the rest
	max   atomic.Int64   // ns
}

func newHist(limit int64) *hist { return &hist{limit: limit, us: make([]atomic.Int64, 100_000)} }

// add records d, and reports false once the histogram is full.
func (h *hist) add(d time.Duration) bool {
	if n := h.n.Add(1); h.limit > 0 && n > h.limit {
		h.n.Add(-1)
		return false
	}
	h.us[min(int(d/time.Microsecond), len(h.us)-1)].Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return true
		}
	}
}

// quantile returns the q-quantile (0 < q <= 1) to the µs, rounded up.
func (h *hist) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := int64(float64(n)*q + 0.5)
	rank = max(rank, 1)
	var seen int64
	for i := range h.us {
		seen += h.us[i].Load()
		if seen >= rank {
			return time.Duration(i+1) * time.Microsecond
		}
	}
	return time.Duration(h.max.Load())
}

// readers read one kv secret in goroutines until stop, each pausing
// between reads, recording each read's latency in the histogram cur
// holds, if any.
type readers struct {
	cur  atomic.Pointer[hist]
	also atomic.Pointer[hist] // a second histogram, if any, for a part of cur's span
	errs atomic.Int64
	err  atomic.Value // the first error
	full chan struct{}
	once sync.Once
}

func (r *readers) run(ctx context.Context, wg *sync.WaitGroup, e *kv.Engine, n int, pace time.Duration) {
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				reg := trace.StartRegion(ctx, "kvread") // for go test -trace
				start := time.Now()
				_, err := e.Read(ctx, "app/db")
				d := time.Since(start)
				reg.End()
				if err != nil && ctx.Err() == nil {
					if r.errs.Add(1) == 1 {
						r.err.Store(err)
					}
				}
				if h := r.cur.Load(); h != nil && !h.add(d) {
					r.once.Do(func() { close(r.full) })
				}
				if h := r.also.Load(); h != nil {
					h.add(d)
				}
				if pace > 0 {
					time.Sleep(pace)
				}
			}
		})
	}
}

// sampler reads the heap in use every period until stopped, and keeps
// the peak.
type sampler struct {
	peak    atomic.Uint64
	samples atomic.Int64
}

func (s *sampler) run(ctx context.Context, wg *sync.WaitGroup, period time.Duration) {
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			s.samples.Add(1)
			for p := s.peak.Load(); ms.HeapInuse > p && !s.peak.CompareAndSwap(p, ms.HeapInuse); p = s.peak.Load() {
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
}

// schedHist reads the runtime's histogram of the time goroutines spent
// runnable before they ran, cumulative since the start of the process.
func schedHist() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// schedQuantile returns the q-quantile of the scheduling latencies
// between two reads of schedHist: an upper bound of its bucket.
func schedQuantile(before, after *metrics.Float64Histogram, q float64) time.Duration {
	if before == nil || after == nil {
		return 0
	}
	var total uint64
	for i := range after.Counts {
		total += after.Counts[i] - before.Counts[i]
	}
	rank := uint64(float64(total)*q + 0.5)
	var seen uint64
	for i := range after.Counts {
		seen += after.Counts[i] - before.Counts[i]
		if seen >= rank && seen > 0 {
			return time.Duration(min(after.Buckets[i+1], 3600) * float64(time.Second))
		}
	}
	return 0
}

// memStats returns the memory statistics after two GCs (the second
// empties sync.Pool's victim caches).
func memStats() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}

// gcCycles is how many GC cycles have ended, without stopping the world.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// TestStorm lets -leasestorm.leases leases come due within one second on
// a bbolt file with fsync, revokes them with a revoker that fails for
// every tenth, drives the worker (Step, fake clock) until every lease is
// revoked or irrevocable, and checks that none is lost; meanwhile it
// measures the heap and the latency of kv reads served from the same
// store (see the package doc).
func TestStorm(t *testing.T) {
	n := *flagLeases
	if n <= 0 {
		t.Fatalf("-leasestorm.leases %d: want a positive number", n)
	}
	ctx := context.Background()
	clock := keel.NewFakeClock(t0)
	path := filepath.Join(t.TempDir(), "storm.db")

	start := time.Now()
	due := preload(t, path, clock, n)
	preloadTime := time.Since(start)

	bs, err := boltstore.Open(path, &boltstore.Options{NoSync: *flagNoSync}) // fsync on every commit by default
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	rv := newRevoker(n)
	m, err := lease.New(storage.Sub(bs, "lease/"), &lease.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range mounts {
		if _, err := m.Register(lease.Mount{Path: mt, Revoker: rv}); err != nil {
			t.Fatal(err)
		}
	}
	engine, err := kv.New(storage.Sub(bs, "kv/secret/"), "secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := map[string]any{"username": "app", "password": "s3cr3t-0123456789", "url": "postgres://db.example.org:5432/app", "ttl": "1h"}
	if err := engine.Write(ctx, "app/db", secret); err != nil {
		t.Fatal(err)
	}

	// The idle run: the readers alone, a fixed count of reads.
	rctx, stopReaders := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	defer func() { stopReaders(); rwg.Wait() }()
	rd := &readers{full: make(chan struct{})}
	idle := newHist(int64(*flagIdleReads))
	rd.cur.Store(idle)
	idleStart := time.Now()
	schedIdle0, gcIdle0 := schedHist(), gcCycles()
	rd.run(rctx, &rwg, engine, *flagReaders, *flagPace)
	<-rd.full
	idleTime := time.Since(idleStart)
	rd.cur.Store(nil)
	schedIdle1, gcIdle1 := schedHist(), gcCycles()

	// The storm: the heap sampled, the readers recording every read.
	base := memStats()
	sctx, stopSampler := context.WithCancel(ctx)
	var swg sync.WaitGroup
	smp := &sampler{}
	smp.run(sctx, &swg, 50*time.Millisecond)
	storm := newHist(0)
	rd.cur.Store(storm)
	schedStorm0, gcStorm0 := schedHist(), gcCycles()
	writeAllocs(t, ".before")

	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(24 * time.Hour)
	}
	deadline = deadline.Add(-time.Until(deadline) / 10) // leave time to report
	now := due
	clock.Set(now)
	trace.Log(ctx, "storm", "start") // for go test -trace
	stormStart := time.Now()
	var firstStep time.Duration
	var firstRevoked, firstCalls int64 // after the first Step
	steps := 0
	lastLog := stormStart
	first := newHist(0) // the reads during the first Step, as well
	rd.also.Store(first)
	for {
		stepStart := time.Now()
		next, err := m.Step(ctx, now)
		if steps == 0 {
			rd.also.Store(nil)
			firstStep = time.Since(stepStart)
			firstRevoked, firstCalls = rv.done.Load(), rv.calls.Load()
		}
		steps++
		if err != nil {
			t.Fatalf("Step %d at %s: %v", steps, now, err)
		}
		// Every lease revoked, or irrevocable (the Step that made the
		// last calls has committed their outcomes).
		if next.IsZero() || rv.settled() {
			break
		}
		now = later(next, now.Add(*flagTick))
		clock.Set(now)
		if time.Since(lastLog) > 30*time.Second {
			lastLog = time.Now()
			t.Logf("storm: %s in, %d Steps, fake clock %s after the due time, %d revoker calls, %d revoked, %d failing leases called %d times", time.Since(stormStart).Round(time.Second), steps, now.Sub(due), rv.calls.Load(), rv.done.Load(), rv.spent.Load(), maxAttempts)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the storm has not ended by the test's deadline: %d Steps, fake clock %s after the due time, %d revoker calls, %d attempts on failing leases",
				steps, now.Sub(due), rv.calls.Load(), sumAttempts(rv))
		}
	}
	stormTime := time.Since(stormStart)
	trace.Log(ctx, "storm", "end")
	rd.cur.Store(nil)
	schedStorm1, gcStorm1 := schedHist(), gcCycles()
	writeAllocs(t, ".after")
	stopSampler()
	swg.Wait()
	stopReaders()
	rwg.Wait()
	after := memStats()

	checkOutcome(t, ctx, m, rv, n)
	if e := rd.errs.Load(); e > 0 {
		t.Errorf("%d kv reads failed; the first: %v", e, rd.err.Load())
	}

	peak := int64(smp.peak.Load()) - int64(base.HeapInuse)
	t.Logf("leases %d (%d failing) on %d mounts, preload %s (NoSync), load average %s", n, (n+failEvery-1)/failEvery, len(mounts), preloadTime.Round(time.Millisecond), loadavg())
	t.Logf("storm: %s, %d Steps, %d revoker calls, %.0f leases/s; first Step %s (%.0f leases/s), %d calls, %d of the %d revocable leases revoked; fake time %s",
		stormTime.Round(time.Millisecond), steps, rv.calls.Load(), float64(n)/stormTime.Seconds(),
		firstStep.Round(time.Millisecond), float64(n)/firstStep.Seconds(), firstCalls, firstRevoked, n-(n+failEvery-1)/failEvery, now.Sub(due))
	t.Logf("heap: baseline %s in use; peak during the storm %s above it (%d samples); after the storm, live %+.1f MiB; allocated %.0f B per revoker call; GC cycles: %d idle (%s), %d in the storm",
		mib(int64(base.HeapInuse)), mib(peak), smp.samples.Load(), float64(int64(after.HeapAlloc)-int64(base.HeapAlloc))/(1<<20),
		float64(after.TotalAlloc-base.TotalAlloc)/float64(rv.calls.Load()), gcIdle1-gcIdle0, idleTime.Round(time.Millisecond), gcStorm1-gcStorm0)
	// The worker holds one batch (1,024 leases) at a time; a worker that
	// loaded every due lease would hold some 500 bytes per lease (record,
	// index key, decoded entry). The bound leaves room for the GC's
	// slack and bbolt's freelist, which grow with the file.
	if limit := int64(64<<20) + int64(n)*64; peak > limit {
		t.Errorf("the heap grew by %s during the storm, more than %s (64 MiB + 64 B a lease)", mib(peak), mib(limit))
	}
	p50i, p99i := idle.quantile(0.50), idle.quantile(0.99)
	p50s, p99s := storm.quantile(0.50), storm.quantile(0.99)
	t.Logf("kv reads (%d readers, %s pause): idle %d reads in %s, p50 %s p99 %s; storm %d reads, p50 %s p99 %s; p99 ratio %.2f",
		*flagReaders, *flagPace, idle.n.Load(), idleTime.Round(time.Millisecond), p50i, p99i,
		storm.n.Load(), p50s, p99s, float64(p99s)/float64(p99i))
	// The first Step revokes every revocable lease; the Steps after it
	// are the failing tenth's retries, minutes of the fake clock stepped
	// back to back.
	t.Logf("kv reads during the first Step: %d reads, p50 %s p99 %s; p99 ratio to idle %.2f",
		first.n.Load(), first.quantile(0.50), first.quantile(0.99), float64(first.quantile(0.99))/float64(p99i))
	// Why a read is slow: the time goroutines waited, runnable, for a
	// core (the runtime's histogram; bucket bounds).
	t.Logf("scheduling latency (every goroutine): idle p50 %s p99 %s; storm p50 %s p99 %s",
		schedQuantile(schedIdle0, schedIdle1, 0.5), schedQuantile(schedIdle0, schedIdle1, 0.99),
		schedQuantile(schedStorm0, schedStorm1, 0.5), schedQuantile(schedStorm0, schedStorm1, 0.99))
}

func sumAttempts(rv *revoker) int64 {
	var s int64
	for i := range rv.attempts {
		s += int64(rv.attempts[i].Load())
	}
	return s
}

// checkOutcome checks the end of the storm: each lease revoked (gone) or
// irrevocable, the irrevocable ones exactly the failing ones, each with
// its last error visible through ListIrrevocable and Get; none lost, none
// extra.
func checkOutcome(t *testing.T, ctx context.Context, m *lease.Manager, rv *revoker, n int) {
	t.Helper()
	if s := rv.strange.Load(); s > 0 {
		t.Errorf("the revoker was called %d times for leases that are not the storm's", s)
	}
	wantFailing := (n + failEvery - 1) / failEvery
	seen := make([]bool, wantFailing)
	listed, problems := 0, 0
	report := func(format string, args ...any) {
		problems++
		if problems <= 10 {
			t.Errorf(format, args...)
		}
	}
	for il, err := range keel.All(ctx, 0, m.ListIrrevocable) {
		if err != nil {
			t.Fatalf("ListIrrevocable: %v", err)
		}
		listed++
		l, err := m.Get(ctx, il.LeaseID)
		if err != nil {
			report("Get(%q) of an irrevocable lease: %v", il.LeaseID, err)
			continue
		}
		i, ok := leaseIndex(l.Data)
		switch {
		case !ok || i >= n:
			report("irrevocable lease %s has data %q, not the storm's", l.ID, l.Data)
			continue
		case !failing(i):
			report("lease %s (#%d) is irrevocable, but its revocations succeed (revoked: %v)", l.ID, i, rv.isRevoked(i))
			continue
		case seen[i/failEvery]:
			report("lease #%d is listed twice as irrevocable", i)
			continue
		}
		seen[i/failEvery] = true
		// The attempt that made it irrevocable kept "out of retries: "
		// and the revoker's error; a retry of the irrevocable lease (one
		// a day) keeps the revoker's error alone.
		want := "out of retries: " + refusal(i)
		if l.Attempts > maxAttempts {
			want = refusal(i)
		}
		if il.Mount != l.Mount || !strings.HasPrefix(l.ID, il.Mount) {
			report("irrevocable lease %s listed with mount %q, Get says %q", l.ID, il.Mount, l.Mount)
		}
		if il.Error != want || l.LastError != want {
			report("irrevocable lease %s: listed error %q, Get's LastError %q, want %q", l.ID, il.Error, l.LastError, want)
		}
		if !l.Irrevocable || l.Attempts < maxAttempts {
			report("irrevocable lease %s: Get says Irrevocable %v after %d attempts, want true after %d or more", l.ID, l.Irrevocable, l.Attempts, maxAttempts)
		}
		if a := rv.attempts[i/failEvery].Load(); int(a) != l.Attempts {
			report("irrevocable lease %s (#%d): its revoker was called %d times, Get counts %d attempts", l.ID, i, a, l.Attempts)
		}
	}
	for j, ok := range seen {
		if !ok {
			report("failing lease #%d is not listed as irrevocable", j*failEvery)
		}
	}
	for i := range n {
		if !failing(i) && !rv.isRevoked(i) {
			report("lease #%d, whose revocation succeeds, was never revoked", i)
		}
	}
	counts, err := m.CountIrrevocable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, mt := range mounts {
		for _, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
			return m.List(ctx, mt+"creds/app/", r)
		}) {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			stored++
		}
	}
	if listed != wantFailing || counts.Total != wantFailing || stored != wantFailing {
		t.Errorf("%d leases listed irrevocable, %d counted, %d stored; want %d each (the failing tenth of %d)", listed, counts.Total, stored, wantFailing, n)
	}
	if problems > 10 {
		t.Errorf("… and %d more problems", problems-10)
	}
}

// writeAllocs writes the allocation profile to -leasestorm.allocs plus
// suffix, when the flag is set.
func writeAllocs(t *testing.T, suffix string) {
	if *flagAllocs == "" {
		return
	}
	f, err := os.Create(*flagAllocs + suffix)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

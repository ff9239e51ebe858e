package lease

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

func TestStepRevokesWhatIsDue(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		// One call at a time per mount: in expiry order.
		e := newEnv(t, open, &Options{RevokeConcurrency: 1}, nil)
		a := e.issue(t, IssueRequest{TTL: time.Minute})
		b := e.issue(t, IssueRequest{TTL: time.Hour})
		c := e.issue(t, IssueRequest{TTL: 2 * time.Hour})

		if next := e.step(t, t0); !next.Equal(a.ExpireTime) {
			t.Fatalf("next %s, want %s", next, a.ExpireTime)
		}
		if next := e.step(t, t0.Add(time.Hour)); !next.Equal(c.ExpireTime) {
			t.Fatalf("next %s, want %s", next, c.ExpireTime)
		}
		if got := e.rev.ids(); !equalStrings(got, []string{a.ID, b.ID}) {
			t.Fatalf("revoked %q, want the two due leases in expiry order", got)
		}
		for _, id := range []string{a.ID, b.ID} {
			if _, ok := e.get(t, id); ok {
				t.Fatalf("%s still stored", id)
			}
		}
		if next := e.step(t, t0.Add(3*time.Hour)); !next.IsZero() {
			t.Fatalf("next %s with nothing left", next)
		}
		if keys := keysUnder(t, e.raw, ""); len(keys) != 0 {
			t.Fatalf("left %q", keys)
		}
	})
}

func TestStepBatches(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		n := 3*e.m.batch + 7 // maxBatch, or fewer on etcd
		for range n {
			e.issue(t, IssueRequest{TTL: time.Minute})
		}
		e.issue(t, IssueRequest{TTL: time.Hour})
		if next := e.step(t, t0.Add(time.Minute)); !next.Equal(t0.Add(time.Hour)) {
			t.Fatalf("next %s", next)
		}
		if got := len(e.rev.ids()); got != n {
			t.Fatalf("revoked %d of %d", got, n)
		}
	})
}

func TestStepRespectsStoreOpsLimit(t *testing.T) {
	mem := newEnv(t, everystore.Mem, nil, nil).raw
	e := newEnv(t, everystore.Mem, nil, func(storage.Store) storage.Store { return limited{mem, 30} })
	if e.m.batch != 5 {
		t.Fatalf("batch %d for 30 operations per transaction, want 5", e.m.batch)
	}
	for range 12 {
		e.issue(t, IssueRequest{TTL: time.Minute})
	}
	e.step(t, t0.Add(time.Minute))
	if got := len(e.rev.ids()); got != 12 {
		t.Fatalf("revoked %d", got)
	}
}

// limited is a store that states a limit of operations per transaction.
type limited struct {
	storage.Store
	ops int
}

func (l limited) Limits() storage.Limits {
	lim := l.Store.Limits()
	lim.MaxTxOps = l.ops
	return lim
}

func TestStepAfterRestart(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{TTL: time.Hour})
		e.m.Stop()

		// A new manager over the same store (on etcd, through a client of
		// its own), as after a restart: it loads nothing, and its first
		// Step revokes what fell due meanwhile.
		m2 := mustNew(t, everystore.Another(t, e.raw), &Options{Clock: e.clock})
		rev := &fakeRevoker{}
		if err := m2.register("ldap/", rev, nil); err != nil {
			t.Fatal(err)
		}
		next, err := m2.Step(context.Background(), t0.Add(2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if !next.IsZero() || !equalStrings(rev.ids(), []string{l.ID}) {
			t.Fatalf("after restart: next %s, revoked %q", next, rev.ids())
		}
	})
}

func TestBackoff(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{RetryBase: 20 * time.Second, RetryMax: 5 * time.Minute}, nil)
	for name, tc := range map[string]struct {
		attempt int
		base    time.Duration
	}{
		"first":  {1, 20 * time.Second},
		"second": {2, 40 * time.Second},
		"third":  {3, 80 * time.Second},
		"fourth": {4, 160 * time.Second},
		"capped": {5, 5 * time.Minute},
		"far":    {60, 5 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			lo, hi := tc.base*8/10, tc.base*12/10
			spread := false
			for range 200 {
				d := e.m.backoff(tc.attempt)
				if d < lo || d > hi {
					t.Fatalf("backoff(%d) = %s, want within [%s, %s]", tc.attempt, d, lo, hi)
				}
				if d != tc.base {
					spread = true
				}
			}
			if !spread {
				t.Fatal("no jitter")
			}
		})
	}
}

func TestFailedRevocationRetries(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, &Options{MaxAttempts: 3, RetryBase: time.Minute, RetryMax: time.Hour, IrrevocableRetry: 24 * time.Hour}, nil)
		l := e.issue(t, IssueRequest{TTL: time.Minute})
		long := strings.Repeat("é", 200) // 400 bytes
		e.rev.setFail(func(Lease) error { return errors.New("ldap down " + long) })
		now := l.ExpireTime
		for attempt := 1; attempt <= 3; attempt++ {
			next := e.step(t, now)
			got, ok := e.get(t, l.ID)
			if !ok {
				t.Fatalf("attempt %d removed the lease", attempt)
			}
			if got.Attempts != attempt || !got.NextAttempt.Equal(next) || !strings.HasPrefix(got.LastError, map[bool]string{true: "out of retries: ldap down", false: "ldap down"}[attempt == 3]) || len(got.LastError) > 240 {
				t.Fatalf("after attempt %d: %+v", attempt, got)
			}
			if irrevocable := attempt == 3; got.Irrevocable != irrevocable {
				t.Fatalf("after attempt %d: irrevocable %v", attempt, got.Irrevocable)
			}
			base := time.Minute << (attempt - 1)
			if attempt == 3 {
				base = 24 * time.Hour
				if !next.Equal(now.Add(base)) {
					t.Fatalf("irrevocable retry at %s, want %s", next, now.Add(base))
				}
			} else if d := next.Sub(now); d < base*8/10 || d > base*12/10 {
				t.Fatalf("retry %d after %s, want about %s", attempt, d, base)
			}
			if e.step(t, next.Add(-time.Nanosecond)); len(e.rev.ids()) != attempt {
				t.Fatalf("retried before its time")
			}
			now = next
		}
		c, err := e.m.CountIrrevocable(context.Background())
		if err != nil || c.Total != 1 || c.ByMount["ldap/"] != 1 {
			t.Fatalf("counts %+v, %v", c, err)
		}

		// Irrevocable: retried every IrrevocableRetry; a failure keeps it.
		next := e.step(t, now)
		if got, _ := e.get(t, l.ID); !got.Irrevocable || got.Attempts != 4 || !next.Equal(now.Add(24*time.Hour)) {
			t.Fatalf("irrevocable retry: %+v next %s", got, next)
		}
		// A retry that succeeds removes it normally.
		e.rev.setFail(nil)
		if next := e.step(t, next); !next.IsZero() {
			t.Fatalf("next %s", next)
		}
		if keys := keysUnder(t, e.raw, ""); len(keys) != 0 {
			t.Fatalf("left %q", keys)
		}
	})
}

func TestPermanentErrorIrrevocableAtOnce(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{TTL: time.Minute})
		inner := errors.New("account is protected")
		e.rev.setFail(func(Lease) error { return fmt.Errorf("engine: %w", Permanent(inner)) })
		e.step(t, l.ExpireTime)
		got, _ := e.get(t, l.ID)
		if !got.Irrevocable || got.Attempts != 1 || got.LastError != "engine: account is protected" {
			t.Fatalf("after a permanent error: %+v", got)
		}
		if !errors.Is(Permanent(inner), inner) || Permanent(nil) != nil || Permanent(inner).Error() != inner.Error() {
			t.Fatal("Permanent does not wrap transparently")
		}
	})
}

// A due lease of a mount that is not registered (another process may have
// just mounted it) is put off, never counted as a failed attempt; once the
// mount is registered, the next Step revokes it.
func TestStepPutsOffLeasesOfUnknownMounts(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, &Options{MaxAttempts: 2, RetryMax: time.Minute}, nil)
		l := e.issue(t, IssueRequest{TTL: time.Minute})
		e.m.Unregister("ldap/")
		now := l.ExpireTime
		for i := range 5 {
			next := e.step(t, now)
			got, ok := e.get(t, l.ID)
			if !ok || got.Attempts != 0 || got.Irrevocable || got.LastError != "" {
				t.Fatalf("step %d: lease of an unregistered mount: %+v (stored %v)", i, got, ok)
			}
			// The waits double: 1s, 1s, 2s, 4s, 8s after the expiry.
			if want := now.Add(max(now.Sub(l.ExpireTime), time.Second)); !next.Equal(want) || !got.NextAttempt.Equal(want) {
				t.Fatalf("step %d: next %v, lease due %v; want %v", i, next, got.NextAttempt, want)
			}
			now = next
		}
		// Long past its expiry it is looked at every RetryMax.
		now = l.ExpireTime.Add(time.Minute)
		if next := e.step(t, now); !next.Equal(now.Add(time.Minute)) {
			t.Fatalf("next %v, want RetryMax later (%v)", next, now.Add(time.Minute))
		}
		if len(e.rev.ids()) != 0 {
			t.Fatalf("the revoker was called %d times", len(e.rev.ids()))
		}
		if err := e.m.register("ldap/", e.rev, nil); err != nil {
			t.Fatal(err)
		}
		e.step(t, now.Add(time.Minute))
		if _, ok := e.get(t, l.ID); ok || len(e.rev.ids()) != 1 {
			t.Fatalf("after the mount is registered: stored %v, revoker called %d times", ok, len(e.rev.ids()))
		}
	})
}

func TestStepDropsDanglingIndexEntries(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{TTL: time.Hour})
		raw(t, e.raw, map[string][]byte{
			keyPrefix + dueKey(t0, "ldap/creds/app/gone"):    {},             // no lease
			keyPrefix + dueKey(t0.Add(time.Second), l.ID):    {},             // stale: not the lease's entry
			keyPrefix + "due/0/x":                            {},             // malformed (sorts first)
			keyPrefix + dueKey(t0, "ldap/creds/app/corrupt"): {},             // lease undecodable
			keyPrefix + idKey("ldap/creds/app/corrupt"):      []byte("junk"), // kept for Tidy to report
		})
		if next := e.step(t, t0.Add(time.Minute)); !next.Equal(l.ExpireTime) {
			t.Fatalf("next %s", next)
		}
		if got := e.rev.ids(); len(got) != 0 {
			t.Fatalf("revoked %q", got)
		}
		want := []string{keyPrefix + dueKey(l.ExpireTime, l.ID), keyPrefix + idKey("ldap/creds/app/corrupt"), keyPrefix + idKey(l.ID)}
		slices.Sort(want)
		if got := keysUnder(t, e.raw, ""); !equalStrings(got, want) {
			t.Fatalf("keys %q, want %q", got, want)
		}
	})
}

func TestStepCanceledIsNotAFailure(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		// One call at a time, so that "after the context ended" is
		// well defined.
		e := newEnv(t, open, &Options{RevokeConcurrency: 1}, nil)
		l := e.issue(t, IssueRequest{TTL: time.Minute})
		l2 := e.issue(t, IssueRequest{TTL: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		e.rev.setFail(func(Lease) error { cancel(); return ctx.Err() })
		if _, err := e.m.Step(ctx, l.ExpireTime); !errors.Is(err, context.Canceled) {
			t.Fatalf("Step: %v", err)
		}
		for _, id := range []string{l.ID, l2.ID} {
			if got, _ := e.get(t, id); got.Attempts != 0 {
				t.Fatalf("interrupted revocation counted as a failure: %+v", got)
			}
		}
		if calls := e.rev.ids(); len(calls) != 1 {
			t.Fatalf("revokers called after the context ended: %q", calls)
		}
	})
}

func TestStepRecoversRevokerPanic(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{TTL: time.Minute})
		e.rev.setFail(func(Lease) error { panic("engine bug") })
		e.step(t, l.ExpireTime)
		if got, _ := e.get(t, l.ID); got.Attempts != 1 || !strings.Contains(got.LastError, "engine bug") {
			t.Fatalf("after a panicking revoker: %+v", got)
		}
	})
}

func TestStartStop(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	calls := make(chan Lease, 10)
	e.rev.calls = calls
	e.m.Start()
	e.m.Start() // idempotent
	l := e.issue(t, IssueRequest{TTL: time.Hour})
	ctx := context.Background()
	if err := e.clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if got := <-calls; got.ID != l.ID {
		t.Fatalf("worker revoked %q", got.ID)
	}

	// A queued revocation wakes the worker, whatever its timer says.
	l2 := e.issue(t, IssueRequest{TTL: 5 * time.Hour})
	if err := e.m.Revoke(ctx, l2.ID, false); err != nil {
		t.Fatal(err)
	}
	if got := <-calls; got.ID != l2.ID {
		t.Fatalf("worker revoked %q", got.ID)
	}

	e.m.Stop()
	e.m.Stop() // idempotent
	e.issue(t, IssueRequest{TTL: time.Second})
	e.clock.Advance(time.Hour)
	select {
	case l := <-calls:
		t.Fatalf("stopped worker revoked %s", l.ID)
	default:
	}

	// Started again, it catches up.
	e.m.Start()
	<-calls
	e.m.Stop()
}

func TestWorkerRetriesAfterStoreError(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{RetryBase: time.Minute}, func(s storage.Store) storage.Store { return &failingView{Store: s} })
	fv := e.store.(*failingView)
	calls := make(chan Lease, 1)
	e.rev.calls = calls
	l := e.issue(t, IssueRequest{TTL: time.Second})
	<-e.m.wake // so that the worker's only wake-up is its retry timer
	e.clock.Advance(time.Second)
	fv.fail.Store(true)
	e.m.Start()
	if err := e.clock.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	fv.fail.Store(false)
	e.clock.Advance(time.Minute)
	if got := <-calls; got.ID != l.ID {
		t.Fatalf("revoked %s", got.ID)
	}
}

// failingView fails every View while fail is set.
type failingView struct {
	storage.Store
	fail atomic.Bool
}

func (f *failingView) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if f.fail.Load() {
		return fmt.Errorf("test: store down: %w", keel.KindUnavailable)
	}
	return f.Store.View(ctx, fn)
}

func TestStopCancelsRevoker(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	entered := make(chan struct{})
	blocking := RevokerFunc(func(ctx context.Context, l Lease) error {
		close(entered)
		<-ctx.Done() // blocks until Stop cancels the Step
		return ctx.Err()
	})
	if err := e.m.register("ldap/", blocking, nil); err != nil {
		t.Fatal(err)
	}
	l := e.issue(t, IssueRequest{TTL: time.Second})
	e.clock.Advance(time.Second)
	e.m.Start()
	<-entered
	e.m.Stop() // returns only once the Step has ended
	if got, _ := e.get(t, l.ID); got.Attempts != 0 {
		t.Fatalf("Stop counted as a failure: %+v", got)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	for range 20 {
		e.m.Start()
		e.issue(t, IssueRequest{TTL: time.Hour})
		e.m.Stop()
	}
	// Stop waits for the worker's goroutine to signal its end; give it
	// the few scheduler turns it needs to exit, without sleeping.
	for i := 0; ; i++ {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "lease.(*Manager).run") {
			return
		}
		if i == 10000 {
			t.Fatalf("worker goroutine still running after Stop:\n%s", stacks)
		}
		runtime.Gosched()
	}
}

// TestConcurrentIssueRevoke: workers issue, revoke (queued and at once),
// renew and look up leases while the worker runs and steps and tidies run
// beside them: no operation fails but for renewals that lose a race
// (conflict), and once everything is due nothing is left.
func TestConcurrentIssueRevoke(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		testConcurrentIssueRevoke(t, newEnv(t, open, nil, nil))
	})
}

// openBolt opens a bolt file without fsync, closed at the end of t.
func openBolt(t testing.TB, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRestartOverBoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases.db")
	s := openBolt(t, path)
	clock := keel.NewFakeClock(t0)
	m := mustNew(t, s, &Options{Clock: clock})
	if err := m.register("ldap/", &fakeRevoker{}, nil); err != nil {
		t.Fatal(err)
	}
	l, err := m.issue(context.Background(), IssueRequest{Path: "ldap/creds/app", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openBolt(t, path)
	m = mustNew(t, s, &Options{Clock: clock})
	rev := &fakeRevoker{}
	if err := m.register("ldap/", rev, nil); err != nil {
		t.Fatal(err)
	}
	if next, err := m.Step(context.Background(), t0.Add(time.Minute)); err != nil || !next.Equal(l.ExpireTime) {
		t.Fatalf("first Step after restart: %s, %v", next, err)
	}
	if next, err := m.Step(context.Background(), t0.Add(2*time.Hour)); err != nil || !next.IsZero() || !equalStrings(rev.ids(), []string{l.ID}) {
		t.Fatalf("Step after expiry: %s, %v, revoked %q", next, err, rev.ids())
	}
}

func testConcurrentIssueRevoke(t *testing.T, e *env) {
	e.m.Start()
	ctx := context.Background()
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				l, err := e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app", TTL: time.Hour, Renewable: true})
				if err != nil {
					errs <- err
					return
				}
				switch (w + i) % 4 {
				case 0:
					err = e.m.Revoke(ctx, l.ID, false)
				case 1:
					err = e.m.Revoke(ctx, l.ID, true)
				case 2:
					_, err = e.m.Renew(ctx, l.ID, time.Minute)
					if keel.KindOf(err) == keel.KindConflict {
						err = nil
					}
				case 3:
					_, err = e.m.Get(ctx, l.ID)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			if _, err := e.m.Step(ctx, e.clock.Now()); err != nil {
				errs <- err
			}
			if _, err := e.m.Tidy(ctx); err != nil {
				errs <- err
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e.m.Stop()
	e.step(t, t0.Add(2*time.Hour))
	if keys := keysUnder(t, e.store, ""); len(keys) != 0 {
		t.Fatalf("left %d keys, e.g. %q", len(keys), keys[0])
	}
}

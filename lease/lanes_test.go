package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
)

// hungRevoker never returns until released, whatever its context says: a
// directory black-holed behind a client that ignores deadlines.
type hungRevoker struct {
	calls   atomic.Int32
	release chan struct{}
}

func (r *hungRevoker) Revoke(ctx context.Context, l Lease) error {
	r.calls.Add(1)
	<-r.release
	return nil
}

// registerHung registers mount with a revoker that hangs until release is
// called (the test's cleanup calls it too).
func registerHung(t *testing.T, e *env, mount string) (*hungRevoker, func()) {
	t.Helper()
	hung := &hungRevoker{release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(hung.release) }) }
	t.Cleanup(release)
	if err := e.m.register(mount, hung, nil); err != nil {
		t.Fatal(err)
	}
	return hung, release
}

// issueN issues n leases of path for ttl.
func (e *env) issueN(t *testing.T, n int, path string, ttl time.Duration) []Lease {
	t.Helper()
	ls := make([]Lease, n)
	for i := range ls {
		ls[i] = e.issue(t, IssueRequest{Path: path, TTL: ttl})
	}
	return ls
}

// TestHungMountDelaysNoOther: 1,000 leases of a mount whose revoker hangs
// are due with one lease of another mount. The other mount's revoker is
// called while the hung calls still hang (its lane runs beside), the Step
// ends after one RevokeTimeout, and only RevokeConcurrency calls of the
// hung mount are made: its other leases are put off to its lane's
// backoff, none lost, none counted as an attempt. While the hung calls
// have not returned, a later Step makes no new call of that mount and does
// not wait; once they return and the backoff has passed, the rest are
// revoked.
func TestHungMountDelaysNoOther(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{RevokeTimeout: 50 * time.Millisecond, RevokeConcurrency: 3}, nil)
	hung, release := registerHung(t, e, "slow/")
	const n = 1000
	slow := e.issueN(t, n, "slow/creds/x", time.Minute)
	fast := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: time.Minute})
	due := t0.Add(time.Minute)

	stepped := make(chan error, 1)
	go func() {
		_, err := e.m.Step(context.Background(), due)
		stepped <- err
	}()
	// The fast mount's lease is revoked while the slow one's calls hang.
	keeltest.Until(t, "the other mount's revoker called", func() bool { return len(e.rev.ids()) == 1 })
	if got := hung.calls.Load(); got > 3 {
		t.Fatalf("%d calls of the hung mount at once, want at most RevokeConcurrency (3)", got)
	}
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}
	if _, ok := e.get(t, fast.ID); ok {
		t.Fatal("the other mount's lease is still stored after the Step")
	}
	attempted, held := 0, 0
	var heldUntil time.Time
	for _, l := range slow {
		got, ok := e.get(t, l.ID)
		switch {
		case !ok:
			t.Fatalf("lease %s of the hung mount lost", l.ID)
		case got.Attempts == 1:
			attempted++
			if !strings.Contains(got.LastError, "timeout") {
				t.Fatalf("a timed-out attempt recorded %q", got.LastError)
			}
		case got.Attempts == 0:
			held++
			if !got.NextAttempt.After(due) {
				t.Fatalf("a held-back lease is due at %s, not after the Step's %s", got.NextAttempt, due)
			}
			heldUntil = got.NextAttempt
		}
	}
	if attempted != int(hung.calls.Load()) || attempted == 0 || attempted > 3 || attempted+held != n {
		t.Fatalf("%d attempted, %d held back, %d calls; want the calls attempted (1 to 3) and the rest held", attempted, held, hung.calls.Load())
	}

	// Past the backoff, the hung calls still running fill the lane: a Step
	// makes no call and waits for none.
	calls := hung.calls.Load()
	e.step(t, heldUntil.Add(defaultRetryMax))
	if got := hung.calls.Load(); got != calls {
		t.Fatalf("%d new calls of a lane whose calls hang", got-calls)
	}

	// The directory answers again: the rest are revoked.
	release()
	keeltest.Until(t, "the hung calls returned", func() bool { return e.m.lanes.runningOf("slow/") == 0 })
	at := heldUntil.Add(2 * defaultRetryMax)
	for range n {
		if e.step(t, at).IsZero() {
			break
		}
		at = at.Add(defaultRetryMax)
	}
	for _, l := range slow {
		if _, ok := e.get(t, l.ID); ok {
			t.Fatalf("lease %s of the recovered mount not revoked", l.ID)
		}
	}
}

// TestFailingMountBacksOffAlone: a mount whose revoker fails every call
// closes its lane at its laneTrip-th failure (plus the calls already
// running), and the failures of one mount do not hold another's leases.
func TestFailingMountBacksOffAlone(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	var calls atomic.Int32
	failing := RevokerFunc(func(context.Context, Lease) error {
		calls.Add(1)
		return errors.New("connection refused")
	})
	if err := e.m.register("down/", failing, nil); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		e.issue(t, IssueRequest{Path: "down/creds/x", TTL: time.Minute})
	}
	up := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: time.Minute})
	e.step(t, t0.Add(time.Minute))
	if got := calls.Load(); got < laneTrip || got > laneTrip+defaultRevokeConcurrency-1 {
		t.Fatalf("%d calls of the failing mount in one Step, want %d to %d", got, laneTrip, laneTrip+defaultRevokeConcurrency-1)
	}
	if _, ok := e.get(t, up.ID); ok {
		t.Fatal("the healthy mount's lease was held by the failing one")
	}
}

// runningOf returns how many calls of mount's revoker have not returned.
func (l *lanes) runningOf(mount string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.get(mount).running
}

// TestSporadicFailuresKeepTheLaneOpen: a revoker that refuses one lease in
// ten (one failure in each ten calls) is called for every due lease in one
// Step: 90 revoked, 10 with a failed attempt, none put off.
func TestSporadicFailuresKeepTheLaneOpen(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{RevokeConcurrency: 1}, nil)
	var calls atomic.Int32
	sometimes := RevokerFunc(func(context.Context, Lease) error {
		if calls.Add(1)%10 == 0 {
			return errors.New("entry busy")
		}
		return nil
	})
	if err := e.m.register("some/", sometimes, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 100 {
		ids = append(ids, e.issue(t, IssueRequest{Path: "some/creds/x", TTL: time.Minute}).ID)
	}
	e.step(t, t0.Add(time.Minute))
	failed := 0
	for _, id := range ids {
		if got, ok := e.get(t, id); ok {
			if got.Attempts != 1 {
				t.Fatalf("a lease left with %d attempts: put off, not tried", got.Attempts)
			}
			failed++
		}
	}
	if calls.Load() != 100 || failed != 10 {
		t.Fatalf("%d calls, %d failed leases; want 100 and 10", calls.Load(), failed)
	}
}

// TestHungMountDelaysNoOtherByDefault: as TestHungMountDelaysNoOther, with
// RevokeTimeout left at its default (30s). The hung mount's 1,000 leases
// come first in the expiry index, the other mount's lease last, due at the
// same time. The worker's step returns, the other lease revoked and removed, while
// the hung calls still hang and before any of them timed out (no attempt
// recorded): it did not wait for them. A later Step revokes another lease
// of the other mount, with no new call of the hung one. Once the hung
// calls return, the run the first Step left going revokes what it owned,
// and later Steps the leases put off: every lease of the hung mount is
// revoked, once.
func TestHungMountDelaysNoOtherByDefault(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	hung, release := registerHung(t, e, "hung/") // "hung/" sorts before "ldap/"
	const n = 1000
	slow := e.issueN(t, n, "hung/creds/x", time.Minute)
	fast := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: time.Minute})
	due := t0.Add(time.Minute)

	e.workerStep(t, due)
	// The calls started are all in the revoker (and stay there).
	keeltest.Until(t, "the calls started entered the revoker", func() bool {
		return int(hung.calls.Load()) == e.m.lanes.runningOf("hung/")
	})
	calls := hung.calls.Load()
	if calls == 0 || calls > defaultRevokeConcurrency {
		t.Fatalf("%d calls of the hung mount, want 1 to RevokeConcurrency (%d)", calls, defaultRevokeConcurrency)
	}
	if _, ok := e.get(t, fast.ID); ok || !slices.Contains(e.rev.ids(), fast.ID) {
		t.Fatalf("the other mount's lease: stored %v, revoker called %v", ok, slices.Contains(e.rev.ids(), fast.ID))
	}
	checkNoneLost := func() {
		t.Helper()
		for _, l := range slow {
			got, ok := e.get(t, l.ID)
			switch {
			case !ok:
				t.Fatalf("lease %s of the hung mount lost", l.ID)
			case got.Attempts != 0:
				// The Step waited for a call to time out.
				t.Fatalf("lease %s of the hung mount has an attempt (%q): a Step waited for its call", l.ID, got.LastError)
			}
		}
	}
	checkNoneLost()

	// Another lease of the other mount, due later, is revoked while the
	// hung calls still hang; the hung mount gets no new call.
	fast2 := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: 2 * time.Minute})
	e.step(t, t0.Add(2*time.Minute))
	if _, ok := e.get(t, fast2.ID); ok {
		t.Fatal("the other mount's later lease is still stored")
	}
	if got := hung.calls.Load(); got != calls {
		t.Fatalf("%d new calls of the hung mount", got-calls)
	}
	if running := e.m.lanes.runningOf("hung/"); running != int(calls) {
		t.Fatalf("%d hung calls running, want %d", running, calls)
	}
	checkNoneLost()

	// The directory answers again.
	release()
	keeltest.Until(t, "the run left going ended", func() bool { return e.m.lanes.idle("hung/") && e.m.flights.n.Load() == 0 })
	at := t0.Add(3 * time.Minute)
	for range n {
		next := e.step(t, at)
		if next.IsZero() {
			break
		}
		at = next
	}
	for _, l := range slow {
		if _, ok := e.get(t, l.ID); ok {
			t.Fatalf("lease %s of the hung mount not revoked", l.ID)
		}
	}
	if got := hung.calls.Load(); got != n {
		t.Fatalf("%d calls of the hung mount's revoker for %d leases", got, n)
	}
}

// idle reports whether mount's lane has no run and no call going.
func (l *lanes) idle(mount string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.get(mount)
	return !ln.active && ln.running == 0
}

// TestStopEndsRunsLeftGoing: a worker's step leaves a call that waits for its
// context going (the default RevokeTimeout is far); Stop cancels its run
// and returns once the run has ended. The lease is left as it was: an
// interrupted call is not a failure.
func TestStopEndsRunsLeftGoing(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	var started, returned atomic.Int32
	waiting := RevokerFunc(func(ctx context.Context, l Lease) error {
		started.Add(1)
		defer returned.Add(1)
		<-ctx.Done()
		return ctx.Err()
	})
	if err := e.m.register("wait/", waiting, nil); err != nil {
		t.Fatal(err)
	}
	l := e.issue(t, IssueRequest{Path: "wait/creds/x", TTL: time.Minute})
	e.workerStep(t, l.ExpireTime)
	if started.Load() != 1 || returned.Load() != 0 {
		t.Fatalf("after the Step: %d calls started, %d returned; want 1 and 0", started.Load(), returned.Load())
	}
	e.m.Stop()
	// Stop waited for the run; the call itself, cancelled, returns on its
	// own (caller.call does not wait for it, as for one that ignores ctx).
	if e.m.flights.n.Load() != 0 || e.m.lanes.activeOf("wait/") {
		t.Fatal("Stop returned with the run the Step left going still going")
	}
	if got, ok := e.get(t, l.ID); !ok || got.Attempts != 0 || !got.NextAttempt.Equal(l.ExpireTime) {
		t.Fatalf("after Stop: stored %v, %+v; want the lease as it was", ok, got)
	}
	keeltest.Until(t, "the cancelled call returned", func() bool { return returned.Load() == 1 && e.m.lanes.idle("wait/") })
}

// TestWorkerHungMountDelaysNoOther: the worker (Start) on the real clock,
// RevokeTimeout at its default. 1,000 leases of a hung mount fall due, and
// one of another mount with the last of them: the other is revoked and
// removed while the hung calls hang, before any of them timed out. Once
// they return, every lease of the hung mount is revoked, once. The delay
// from the other lease's expiry to its removal is logged.
func TestWorkerHungMountDelaysNoOther(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{Clock: keel.SystemClock{}, RetryBase: 50 * time.Millisecond}, nil)
	hung, release := registerHung(t, e, "hung/")
	e.m.Start()
	const n, ttl = 1000, 2 * time.Second
	slow := e.issueN(t, n, "hung/creds/x", ttl)
	fast := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: ttl})
	keeltest.Until(t, "the other mount's lease removed", func() bool {
		_, ok := e.get(t, fast.ID)
		return !ok
	})
	late := time.Since(fast.ExpireTime)
	calls := hung.calls.Load()
	if calls == 0 || calls > defaultRevokeConcurrency {
		t.Fatalf("%d calls of the hung mount, want 1 to RevokeConcurrency (%d)", calls, defaultRevokeConcurrency)
	}
	for _, l := range slow {
		got, ok := e.get(t, l.ID)
		switch {
		case !ok:
			t.Fatalf("lease %s of the hung mount lost", l.ID)
		case got.Attempts != 0:
			t.Fatalf("lease %s of the hung mount has an attempt (%q): the worker waited for its call", l.ID, got.LastError)
		}
	}
	t.Logf("the other mount's lease removed %s after its expiry (polled at 50ms at most), %d hung calls going", late, calls)

	release()
	keeltest.Until(t, "every lease of the hung mount revoked", func() bool {
		for _, l := range slow {
			if _, ok := e.get(t, l.ID); ok {
				return false
			}
		}
		return true
	})
	e.m.Stop()
	if got := hung.calls.Load(); got != n {
		t.Fatalf("%d calls of the hung mount's revoker for %d leases", got, n)
	}
}

// TestRunLeftGoingCommitsTimeouts: with RevokeTimeout above laneWait, the
// Step leaves the hung mount's run going; when its calls time out, the run
// commits them itself as failed attempts, closes the lane and puts the
// leases it had not tried off to the lane's backoff, with no attempt
// counted, and wakes the worker for them. None is lost.
func TestRunLeftGoingCommitsTimeouts(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{RevokeTimeout: 2 * laneWait}, nil)
	hung, _ := registerHung(t, e, "hung/")
	const n = 100
	slow := e.issueN(t, n, "hung/creds/x", time.Minute)
	due := t0.Add(time.Minute)
	select {
	case <-e.m.wake: // Issue's wake-up: the worker does not run
	default:
	}
	e.workerStep(t, due)
	keeltest.Until(t, "the run left going ended", func() bool { return !e.m.lanes.activeOf("hung/") && e.m.flights.n.Load() == 0 })
	select {
	case <-e.m.wake:
	default:
		t.Fatal("the run put leases off without waking the worker")
	}
	attempted, held := 0, 0
	for _, l := range slow {
		got, ok := e.get(t, l.ID)
		switch {
		case !ok:
			t.Fatalf("lease %s of the hung mount lost", l.ID)
		case !got.NextAttempt.After(due):
			t.Fatalf("lease %s is due at %s, not after the Step's %s", l.ID, got.NextAttempt, due)
		case got.Attempts == 1 && strings.Contains(got.LastError, "timeout"):
			attempted++
		case got.Attempts == 0:
			held++
		default:
			t.Fatalf("lease %s: %d attempts, %q", l.ID, got.Attempts, got.LastError)
		}
	}
	if calls := int(hung.calls.Load()); attempted != calls || calls == 0 || calls > defaultRevokeConcurrency || attempted+held != n {
		t.Fatalf("%d attempted, %d put off, %d calls; want the calls attempted (1 to %d) and the rest put off", attempted, held, calls, defaultRevokeConcurrency)
	}
}

// activeOf reports whether mount's lane has a run going.
func (l *lanes) activeOf(mount string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.get(mount).active
}

// workerStep is step as the worker of Start steps: waiting laneWait at
// most for a lane.
func (e *env) workerStep(t testing.TB, at time.Time) time.Time {
	t.Helper()
	next, err := e.m.workerStep(context.Background(), at)
	if err != nil {
		t.Fatalf("workerStep(%s): %v", at, err)
	}
	return next
}

// TestStepCalledDirectlyWaitsForEveryCall: Step, called by a program that
// drives time, waits for a revoker slower than the worker's wait for a
// lane: the lease is revoked and removed when it returns, whatever the
// load of the machine.
func TestStepCalledDirectlyWaitsForEveryCall(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	var returned atomic.Bool
	slow := RevokerFunc(func(ctx context.Context, l Lease) error {
		time.Sleep(laneWait + laneWait/2)
		returned.Store(true)
		return nil
	})
	if err := e.m.register("slow/", slow, nil); err != nil {
		t.Fatal(err)
	}
	l := e.issue(t, IssueRequest{Path: "slow/creds/x", TTL: time.Minute})
	e.step(t, l.ExpireTime)
	if !returned.Load() {
		t.Fatal("Step returned before the revoker did")
	}
	if _, ok := e.get(t, l.ID); ok {
		t.Fatal("the lease is still stored after the Step")
	}
}

// TestFailingRetriesCloseNoLane: a mount refuses some of its leases for
// good. Their retries, due together, all fail again; they judge those
// leases, not the backend, so the lane stays open and the mount's other
// leases due in the same Step are revoked (a lane closed by them would
// put those off: at a million leases, the retries would crawl).
func TestFailingRetriesCloseNoLane(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	refuse := RevokerFunc(func(_ context.Context, l Lease) error {
		if l.Path == "m/creds/bad" {
			return errors.New("the backend refuses this one")
		}
		return nil
	})
	if err := e.m.register("m/", refuse, nil); err != nil {
		t.Fatal(err)
	}
	// First attempts, one Step each, two successes after each failure:
	// never more failures than successes, which would close the lane.
	var bad []Lease
	for i := range 2 * laneTrip {
		b := e.issue(t, IssueRequest{Path: "m/creds/bad", TTL: time.Minute + time.Duration(i)*time.Second})
		g := e.issue(t, IssueRequest{Path: "m/creds/good", TTL: time.Minute + time.Duration(i)*time.Second + time.Second/3})
		g2 := e.issue(t, IssueRequest{Path: "m/creds/good", TTL: time.Minute + time.Duration(i)*time.Second + 2*time.Second/3})
		e.step(t, b.ExpireTime)
		e.step(t, g.ExpireTime)
		e.step(t, g2.ExpireTime)
		bad = append(bad, b)
	}
	var last time.Time
	for _, b := range bad {
		got, ok := e.get(t, b.ID)
		if !ok || got.Attempts != 1 {
			t.Fatalf("lease %s after its first attempt: %+v, %v", b.ID, got, ok)
		}
		last = maxTime(last, got.NextAttempt)
	}
	// Fresh leases of the mount, due after every retry.
	var fresh []Lease
	for range 3 {
		fresh = append(fresh, e.issue(t, IssueRequest{Path: "m/creds/good", TTL: last.Sub(t0) + time.Second}))
	}
	e.step(t, fresh[0].ExpireTime)
	for _, b := range bad {
		if got, _ := e.get(t, b.ID); got.Attempts != 2 {
			t.Fatalf("lease %s has %d attempts after its retry, want 2", b.ID, got.Attempts)
		}
	}
	for _, l := range fresh {
		if _, ok := e.get(t, l.ID); ok {
			t.Fatalf("lease %s, due with the failing retries, was not revoked: their failures closed the lane", l.ID)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// stepAllDue issues n leases of mount (revoked by r), all due at one
// time, and runs one Step then: each is tried once, unless the lane
// closes. It returns the leases.
func stepAllDue(t *testing.T, e *env, mount string, r Revoker, n int) []Lease {
	t.Helper()
	if err := e.m.register(mount, r, nil); err != nil {
		t.Fatal(err)
	}
	ls := e.issueN(t, n, mount+"creds/x", time.Minute)
	e.step(t, t0.Add(time.Minute))
	return ls
}

// TestSteadyMinorityOfFailuresKeepsTheLaneOpen: a tenth of a mount's
// calls fail, in runs of five (45 successes, then 5 failures), and, on a
// second mount, at random (a fixed seed). Five failures in a row closed
// the lane at the first run, and at random about ten times in a million
// calls, putting the rest of the due leases off; a steady minority of
// failures must not: every one of thousands of due leases is tried in one
// Step, none put off, and the lanes stay open.
func TestSteadyMinorityOfFailuresKeepsTheLaneOpen(t *testing.T) {
	const n = 5000
	e := newEnv(t, everystore.Mem, &Options{RevokeConcurrency: 1}, nil)
	var runCalls atomic.Int64
	inRuns := RevokerFunc(func(context.Context, Lease) error {
		if runCalls.Add(1)%50 >= 45 {
			return errors.New("entry busy")
		}
		return nil
	})
	var randCalls atomic.Int64
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(26, 10))
	atRandom := RevokerFunc(func(context.Context, Lease) error {
		randCalls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(10) == 0 {
			return errors.New("entry busy")
		}
		return nil
	})
	for _, c := range []struct {
		mount string
		r     Revoker
		calls *atomic.Int64
	}{{"runs/", inRuns, &runCalls}, {"random/", atRandom, &randCalls}} {
		ls := stepAllDue(t, e, c.mount, c.r, n)
		failed := 0
		for _, l := range ls {
			if got, ok := e.get(t, l.ID); ok {
				if got.Attempts != 1 {
					t.Fatalf("%s: a lease left with %d attempts: put off, not tried (%+v, lane %+v)", c.mount, got.Attempts, got, *e.m.lanes.get(c.mount))
				}
				failed++
			}
		}
		if got := c.calls.Load(); got != n || failed < n/20 || failed > n/5 {
			t.Fatalf("%s: %d calls for %d due leases, %d failed; want a call each, about a tenth failed", c.mount, got, n, failed)
		}
		if e.m.lanes.closedUntil(c.mount) != (time.Time{}) {
			t.Fatalf("%s: the lane closed", c.mount)
		}
	}
}

// closedUntil returns the end of mount's lane's backoff (zero: open).
func (l *lanes) closedUntil(mount string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.get(mount).until
}

// TestBackendDownMidStormClosesTheLane: a mount's backend answers the
// first 100 calls, then refuses every one: the lane, whose window holds
// successes, closes within laneWindow/2+1 failures, and the rest of the
// due leases are put off with no attempt counted.
func TestBackendDownMidStormClosesTheLane(t *testing.T) {
	const n, up = 300, 100
	e := newEnv(t, everystore.Mem, &Options{RevokeConcurrency: 1}, nil)
	var calls atomic.Int64
	goesDown := RevokerFunc(func(context.Context, Lease) error {
		if calls.Add(1) > up {
			return errors.New("connection refused")
		}
		return nil
	})
	ls := stepAllDue(t, e, "down/", goesDown, n)
	if got, most := calls.Load(), int64(up+laneWindow/2+1); got > most || got <= up {
		t.Fatalf("%d calls, want %d to %d: the lane did not close soon after the backend went down", got, up+1, most)
	}
	attempted, putOff := 0, 0
	for _, l := range ls {
		got, ok := e.get(t, l.ID)
		switch {
		case !ok:
		case got.Attempts == 1:
			attempted++
		case got.Attempts == 0 && got.NextAttempt.After(t0.Add(time.Minute)):
			putOff++
		default:
			t.Fatalf("lease %s: %d attempts, due %s", l.ID, got.Attempts, got.NextAttempt)
		}
	}
	if int64(attempted) != calls.Load()-up || attempted+putOff != n-up {
		t.Fatalf("%d attempted, %d put off, %d calls; want the failed calls attempted and the rest put off", attempted, putOff, calls.Load())
	}
}

// TestRevokerContextEndsAtTheTimeout: the context of a revoker call of
// the worker has the call's deadline, RevokeTimeout from its start; it
// ends then with context.DeadlineExceeded, which a context derived from
// it sees too, and the attempt is recorded as timed out. A call that
// returns in time finds its context ended after it returned.
func TestRevokerContextEndsAtTheTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	e := newEnv(t, everystore.Mem, &Options{RevokeTimeout: timeout}, nil)
	type seen struct {
		deadline      time.Time
		hasDeadline   bool
		err, derived  error
		start, ctxEnd time.Time
	}
	got := make(chan seen, 1)
	var kept context.Context
	waits := RevokerFunc(func(ctx context.Context, l Lease) error {
		if l.Path == "m/creds/fast" {
			kept = ctx
			return nil
		}
		var s seen
		s.start = time.Now()
		s.deadline, s.hasDeadline = ctx.Deadline()
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		<-dctx.Done()
		s.ctxEnd, s.err, s.derived = time.Now(), ctx.Err(), dctx.Err()
		got <- s
		return s.err
	})
	if err := e.m.register("m/", waits, nil); err != nil {
		t.Fatal(err)
	}
	slow := e.issue(t, IssueRequest{Path: "m/creds/slow", TTL: time.Minute})
	before := time.Now()
	e.step(t, slow.ExpireTime)
	after := time.Now()
	s := <-got
	if !s.hasDeadline || s.deadline.Before(before.Add(timeout)) || s.deadline.After(after.Add(timeout)) {
		t.Fatalf("the call's deadline %s (set: %v), want RevokeTimeout after its start, between %s and %s", s.deadline, s.hasDeadline, before.Add(timeout), after.Add(timeout))
	}
	if s.err != context.DeadlineExceeded || s.derived != context.DeadlineExceeded {
		t.Fatalf("the call's context ended with %v, a derived one with %v; want context.DeadlineExceeded", s.err, s.derived)
	}
	if s.ctxEnd.Before(s.deadline) {
		t.Fatalf("the call's context ended at %s, before its deadline %s", s.ctxEnd, s.deadline)
	}
	if l, ok := e.get(t, slow.ID); !ok || l.Attempts != 1 || !strings.Contains(l.LastError, "timeout") {
		t.Fatalf("after the timeout: stored %v, %+v; want one attempt, timed out", ok, l)
	}
	fast := e.issue(t, IssueRequest{Path: "m/creds/fast", TTL: 2 * time.Minute})
	e.step(t, fast.ExpireTime)
	select {
	case <-kept.Done():
		if kept.Err() != context.Canceled {
			t.Fatalf("the context of a call that returned ended with %v, want context.Canceled", kept.Err())
		}
	default:
		t.Fatal("the context of a call that returned has not ended")
	}
}

package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keelhq/keel"
)

// lanes are the worker's revocation lanes, one per mount: the state that
// keeps a mount whose revocations fail or hang from delaying another's.
// A lane closes when a call times out, or when laneTrip calls in a row
// fail (errors marked Permanent, and retries that fail again, are
// verdicts on one lease, not on the backend, and do not count); it stays closed for a backoff, and while
// its revoker holds Options.RevokeConcurrency calls that timed out and
// have not returned. The due leases of a closed lane are put off to its
// end without a call; so are those of a lane whose run (see laneRun) a
// Step left going.
type lanes struct {
	mu sync.Mutex
	m  map[string]*lane
}

type lane struct {
	running  int       // revoker calls that have not returned, timed out or not
	active   bool      // a run of the lane goes on (see laneRun)
	failures int       // failed calls in a row, Permanent ones aside
	trips    int       // closings since the last success
	until    time.Time // no call before this instant (its backoff)
}

// laneTrip is how many calls in a row must fail to close a lane: a
// backend that is down fails every call, while one that refuses some
// leases now and then should not slow the others.
const laneTrip = 5

// get returns mount's lane, made on first use. Callers hold l.mu.
func (l *lanes) get(mount string) *lane {
	if l.m == nil {
		l.m = make(map[string]*lane)
	}
	ln := l.m[mount]
	if ln == nil {
		ln = &lane{}
		l.m[mount] = ln
	}
	return ln
}

// acquire starts a run of mount's lane at now (see laneRun) and returns
// how many calls it may make at once; or, when the lane takes no call,
// returns 0 and until when to put its leases off. A lane takes no call
// during its backoff, while another run of it goes on (one a Step left
// running), or while limit of its calls have not returned; the last two
// are looked at again after retry. A run ends with release.
func (l *lanes) acquire(mount string, now time.Time, limit int, retry time.Duration) (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.get(mount)
	switch {
	case ln.until.After(now):
		return 0, ln.until
	case ln.active || ln.running >= limit:
		return 0, now.Add(retry)
	}
	ln.active = true
	return limit - ln.running, time.Time{}
}

// release ends the run of mount's lane that acquire started.
func (l *lanes) release(mount string) {
	l.mu.Lock()
	l.get(mount).active = false
	l.mu.Unlock()
}

// started and ended count a call of mount's revoker.
func (l *lanes) started(mount string) {
	l.mu.Lock()
	l.get(mount).running++
	l.mu.Unlock()
}

func (l *lanes) ended(mount string) {
	l.mu.Lock()
	l.get(mount).running--
	l.mu.Unlock()
}

// succeeded opens mount's lane after a call of its revoker that
// succeeded, the worker's or any other (Revoke, RevokePrefix): the backend
// is back.
func (l *lanes) succeeded(mount string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.get(mount)
	ln.failures, ln.trips, ln.until = 0, 0, time.Time{}
}

// failed records a call of mount's revoker that failed at now, and
// reports whether it closed the lane, and until when: when the call timed
// out or was the laneTrip-th failure in a row, for backoff(closings since
// the last success), or until retry, the failed lease's own retry, when
// that is sooner.
func (l *lanes) failed(mount string, now, retry time.Time, timedOut bool, backoff func(int) time.Duration) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.get(mount)
	ln.failures++
	if !timedOut && ln.failures < laneTrip {
		return time.Time{}, false
	}
	ln.failures = 0
	ln.trips++
	ln.until = now.Add(backoff(ln.trips))
	if retry.Before(ln.until) {
		ln.until = retry
	}
	return ln.until, true
}

// errTimedOut is the error of a revoker call that outlived
// Options.RevokeTimeout.
var errTimedOut = fmt.Errorf("the revoker did not return within the revocation timeout: %w", keel.KindUnavailable)

// callTimed calls the revoker of l's mount with a context that ends after
// Options.RevokeTimeout, and returns when it returns or when that context
// ends: a revoker that ignores its context is left to return on its own,
// and its lane takes no more calls than Options.RevokeConcurrency until
// it does.
func (m *Manager) callTimed(ctx context.Context, l Lease) error {
	cctx, cancel := context.WithTimeout(ctx, m.opts.RevokeTimeout)
	defer cancel()
	done := make(chan error, 1)
	m.lanes.started(l.Mount)
	go func() {
		defer m.lanes.ended(l.Mount)
		done <- m.callRevoker(cctx, l)
	}()
	select {
	case err := <-done:
		if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w (after %s): %v", errTimedOut, m.opts.RevokeTimeout, err)
		}
		return err
	case <-cctx.Done():
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w (after %s)", errTimedOut, m.opts.RevokeTimeout)
	}
}

// expire revokes the due lease l through its mount's revoker (callTimed),
// telling the Observer of it as the operation "lease.Expire". An Observer
// that refuses it puts the lease off, as a mount without a revoker does.
func (m *Manager) expire(ctx context.Context, l Lease) (err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Expire", l.ID, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", errNoRevoker, err)
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return m.callTimed(ctx, l)
}

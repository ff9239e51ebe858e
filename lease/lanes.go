package lease

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/keelhq/keel"
)

// lanes are the worker's revocation lanes, one per mount: the state that
// keeps a mount whose revocations fail or hang from delaying another's.
// A lane closes when a call times out, or when at least laneTrip of the
// last laneWindow first attempts failed and they are more than half of
// them (see failed); errors marked Permanent, and retries that fail
// again, are verdicts on one lease, not on the backend, and do not count.
// It stays closed for a backoff, and while its revoker holds
// Options.RevokeConcurrency calls that timed out and have not returned.
// The due leases of a closed lane are put off to its end without a call;
// so are those of a lane whose run (see laneRun) a Step left going.
type lanes struct {
	mu sync.Mutex
	m  map[string]*lane
}

type lane struct {
	running int       // revoker calls that have not returned, timed out or not
	active  bool      // a run of the lane goes on (see laneRun)
	window  uint32    // the last outcomes counted, newest in bit 0: 1 failed
	counted int       // how many of window's bits are outcomes (laneWindow at most)
	trips   int       // closings since the last success
	until   time.Time // no call before this instant (its backoff)
}

// laneTrip and laneWindow make the rule that closes a lane: at least
// laneTrip failures among the last laneWindow outcomes counted, and more
// failures than successes among them. A backend that is down fails every
// call and closes the lane at its laneTrip-th first attempt; one that
// refuses a lease now and then does not: with a tenth of the calls
// failing at random, "laneTrip in a row" closed a lane about ten times in
// a million calls, this rule not once in ten million (a simulation; it
// closes about 60 times in a million calls when a fifth fail).
const (
	laneTrip   = 5
	laneWindow = 24
)

// count records an outcome in ln's window.
func (ln *lane) count(failed bool) {
	ln.window <<= 1
	if failed {
		ln.window |= 1
	}
	ln.counted = min(ln.counted+1, laneWindow)
}

// tripped reports whether ln's window closes the lane.
func (ln *lane) tripped() bool {
	n := bits.OnesCount32(ln.window & (1<<ln.counted - 1))
	return n >= laneTrip && 2*n > ln.counted
}

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

// succeeded records a call of mount's revoker that succeeded, the
// worker's or any other (Revoke, RevokePrefix), and opens its lane: the
// backend is back.
func (l *lanes) succeeded(mount string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.get(mount)
	ln.count(false)
	ln.trips, ln.until = 0, time.Time{}
}

// failed records a call of mount's revoker that failed at now (a first
// attempt, or one that timed out), and reports whether it closed the
// lane, and until when: when the call timed out or the lane's window
// trips (see laneTrip), for backoff(closings since the last success), or
// until retry, the failed lease's own retry, when that is sooner. A
// closing empties the window: the lane closes again only on laneTrip new
// failures, or a timeout.
func (l *lanes) failed(mount string, now, retry time.Time, timedOut bool, backoff func(int) time.Duration) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.get(mount)
	ln.count(true)
	if !timedOut && !ln.tripped() {
		return time.Time{}, false
	}
	ln.window, ln.counted = 0, 0
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
		err := m.callRevoker(cctx, l) // recovers a panic
		// Counted as ended before its caller learns the outcome, so
		// that the lane's next run finds the call's place free.
		m.lanes.ended(l.Mount)
		done <- err
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

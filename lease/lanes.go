package lease

import (
	"context"
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

// caller makes one lane worker's revoker calls, one at a time (see
// call). The timer that bounds them, the channel of their outcome and the
// goroutine that makes them are the worker's, made once, not once per
// call: a goroutine started per call would grow its stack anew each time.
// After a call that did not return in time, that goroutine is the call's,
// and the next call starts another.
type caller struct {
	m     *Manager
	timer *time.Timer
	jobs  chan callJob // to the goroutine; nil when there is none
	res   chan error   // its outcomes
}

// callJob is one call for a caller's goroutine to make.
type callJob struct {
	ctx *callCtx
	l   Lease
}

func (m *Manager) newCaller() *caller {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &caller{m: m, timer: t}
}

// stop releases c's timer and ends its goroutine, at once if it waits
// for a call, else once its call returns.
func (c *caller) stop() {
	c.timer.Stop()
	c.drop()
}

// drop leaves c's goroutine, if any, to end after its call: the next call
// starts another.
func (c *caller) drop() {
	if c.jobs != nil {
		close(c.jobs)
		c.jobs, c.res = nil, nil
	}
}

// serve makes the calls of jobs, sending each outcome to res, until jobs
// is closed.
func (m *Manager) serve(jobs <-chan callJob, res chan<- error) {
	for j := range jobs {
		err := m.callRevoker(j.ctx, j.l) // recovers a panic
		// Counted as ended before its caller learns the outcome, so
		// that the lane's next run finds the call's place free.
		m.lanes.ended(j.l.Mount)
		res <- err // buffered: the caller may have left
	}
}

// call calls the revoker of l's mount with a context that ends after
// Options.RevokeTimeout (real time), or when ctx does, and returns when
// the revoker returns or when that context ends: a revoker that ignores
// its context is left to return on its own, and its lane takes no more
// calls than Options.RevokeConcurrency until it does.
func (c *caller) call(ctx context.Context, l Lease) error {
	m := c.m
	timeout := m.opts.RevokeTimeout
	cctx := &callCtx{Context: ctx, deadline: time.Now().Add(timeout), done: make(chan struct{})}
	if c.jobs == nil {
		c.jobs, c.res = make(chan callJob, 1), make(chan error, 1)
		go m.serve(c.jobs, c.res)
	}
	res := c.res
	m.lanes.started(l.Mount)
	c.jobs <- callJob{cctx, l} // the goroutine waits for it: it made the last call's outcome
	c.timer.Reset(timeout)
	select {
	case err := <-res:
		c.timer.Stop()
		cctx.end(context.Canceled)
		if err != nil && ctx.Err() == nil && !time.Now().Before(cctx.deadline) {
			// Failed past its deadline: the revoker saw it (Deadline).
			return fmt.Errorf("%w (after %s): %v", errTimedOut, timeout, err)
		}
		return err
	case <-c.timer.C:
		c.drop()
		cctx.end(context.DeadlineExceeded)
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w (after %s)", errTimedOut, timeout)
	case <-ctx.Done():
		c.timer.Stop()
		c.drop()
		cctx.end(ctx.Err())
		return ctx.Err()
	}
}

// callCtx is the context of one revoker call: its parent's values, a
// deadline, and a Done that the caller closes (end) when the call times
// out, when the parent ends, or when the call has returned. A context of
// package context would need a timer and a cancel function of its own per
// call.
type callCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	mu       sync.Mutex
	err      error
}

func (c *callCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *callCtx) Done() <-chan struct{} { return c.done }

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// end ends c with err, or with its parent's error when the parent has
// ended. Only the call's caller ends c, once.
func (c *callCtx) end(err error) {
	if perr := c.Context.Err(); perr != nil {
		err = perr
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

// expire revokes the due lease l through its mount's revoker (c.call),
// telling the Observer of it as the operation "lease.Expire". An Observer
// that refuses it puts the lease off, as a mount without a revoker does.
func (m *Manager) expire(ctx context.Context, c *caller, l Lease) (err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Expire", l.ID, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", errNoRevoker, err)
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return c.call(ctx, l)
}

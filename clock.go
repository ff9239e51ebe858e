package keel

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers. keel packages take one per
// instance (in their Options) and never read the system clock otherwise, so
// that a test can drive them with a FakeClock.
//
// Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock, with the semantics of
// time.Timer (Go 1.23 and later: Stop and Reset leave no stale value in C).
type Timer interface {
	// C returns the channel on which the time is delivered.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was
	// still pending.
	Stop() bool
	// Reset changes the timer to fire after d; it reports whether it was
	// still pending.
	Reset(d time.Duration) bool
}

// SystemClock is the Clock of the operating system. Its zero value is ready
// to use.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// ClockOrSystem returns c, or SystemClock when c is nil. Packages use it to
// fill in an Options.Clock left unset.
func ClockOrSystem(c Clock) Clock {
	if c == nil {
		return SystemClock{}
	}
	return c
}

// FakeClock is a Clock whose time moves only when told to. Timers fire, in
// order of their deadlines, when Advance or Set moves the time to or past
// them. A FakeClock is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers change
}

// NewFakeClock returns a FakeClock that reads start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the fake time reaches Now()+d;
// a d of zero or less fires at once.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.schedule(t, d)
	return t
}

// Advance moves the time forward by d and fires the timers that are due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// Set moves the time to t (forward or back) and fires the timers that are
// due.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

// Timers reports how many timers are waiting to fire.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// BlockUntil waits until at least n timers are waiting to fire, or ctx ends.
// A test calls it to know that the code under test has gone to sleep before
// it calls Advance.
func (c *FakeClock) BlockUntil(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		count, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *FakeClock) setLocked(t time.Time) {
	c.now = t
	kept := c.timers[:0]
	for _, ft := range c.timers {
		if !ft.deadline.After(t) {
			ft.fire(t)
			continue
		}
		kept = append(kept, ft)
	}
	clear(c.timers[len(kept):])
	if len(kept) != len(c.timers) {
		c.timers = kept
		c.notify()
	}
}

// schedule arms t; the caller holds c.mu.
func (c *FakeClock) schedule(t *fakeTimer, d time.Duration) {
	t.deadline = c.now.Add(d)
	if d <= 0 {
		t.fire(c.now)
		return
	}
	i := sort.Search(len(c.timers), func(i int) bool { return c.timers[i].deadline.After(t.deadline) })
	c.timers = append(c.timers, nil)
	copy(c.timers[i+1:], c.timers[i:])
	c.timers[i] = t
	c.notify()
}

// unschedule disarms t and reports whether it was armed; the caller holds
// c.mu.
func (c *FakeClock) unschedule(t *fakeTimer) bool {
	for i, ft := range c.timers {
		if ft == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			c.notify()
			return true
		}
	}
	return false
}

func (c *FakeClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	clock    *FakeClock
	c        chan time.Time
	deadline time.Time
}

// fire delivers now without blocking and drains any stale value first.
func (t *fakeTimer) fire(now time.Time) {
	select {
	case <-t.c:
	default:
	}
	t.c <- now
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	drained := t.drain()
	// Like time.Timer since Go 1.23, a timer that fired but whose value
	// was not yet received counts as still pending.
	return t.clock.unschedule(t) || drained
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	drained := t.drain()
	was := t.clock.unschedule(t)
	t.clock.schedule(t, d)
	return was || drained
}

// drain discards an undelivered value and reports whether there was one.
func (t *fakeTimer) drain() bool {
	select {
	case <-t.c:
		return true
	default:
		return false
	}
}

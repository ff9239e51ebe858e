package keel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
)

var (
	_ keel.Clock = keel.SystemClock{}
	_ keel.Clock = (*keel.FakeClock)(nil)
)

// waitLimit bounds every wait for something that must happen: the tests'
// shared bound, which load can slow a test towards but not past.
const waitLimit = keeltest.WaitBound

var start = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func TestSystemClockNow(t *testing.T) {
	before := time.Now()
	got := keel.SystemClock{}.Now()
	after := time.Now()
	if got.Before(before) || got.After(after) {
		t.Errorf("SystemClock.Now() = %v, want between %v and %v", got, before, after)
	}
}

func TestSystemClockTimer(t *testing.T) {
	var c keel.SystemClock
	begin := time.Now()
	tm := c.NewTimer(time.Millisecond)
	select {
	case v := <-tm.C():
		if v.Sub(begin) < time.Millisecond {
			t.Errorf("timer delivered %v, less than 1ms after %v", v, begin)
		}
	case <-time.After(waitLimit):
		t.Fatal("1ms system timer did not fire within 5s")
	}
	if tm.Stop() {
		t.Error("Stop after the value was received = true, want false")
	}

	long := c.NewTimer(time.Hour)
	if !long.Stop() {
		t.Error("Stop of a pending system timer = false, want true")
	}
	if long.Reset(time.Hour) {
		t.Error("Reset of a stopped system timer = true, want false")
	}
	if !long.Stop() {
		t.Error("Stop after Reset = false, want true")
	}
}

func TestClockOrSystem(t *testing.T) {
	if got, ok := keel.ClockOrSystem(nil).(keel.SystemClock); !ok {
		t.Errorf("ClockOrSystem(nil) = %T(%v), want SystemClock", got, got)
	}
	fc := keel.NewFakeClock(start)
	if got := keel.ClockOrSystem(fc); got != keel.Clock(fc) {
		t.Errorf("ClockOrSystem(fake) = %v, want the fake clock", got)
	}
}

func TestFakeClockTime(t *testing.T) {
	c := keel.NewFakeClock(start)
	steps := []struct {
		name string
		move func()
		want time.Time
	}{
		{"start", func() {}, start},
		{"still start", func() {}, start},
		{"advance", func() { c.Advance(5 * time.Second) }, start.Add(5 * time.Second)},
		{"advance zero", func() { c.Advance(0) }, start.Add(5 * time.Second)},
		{"advance negative", func() { c.Advance(-2 * time.Second) }, start.Add(3 * time.Second)},
		{"set forward", func() { c.Set(start.Add(time.Hour)) }, start.Add(time.Hour)},
		{"set back", func() { c.Set(start.Add(-time.Hour)) }, start.Add(-time.Hour)},
	}
	for _, s := range steps {
		s.move()
		if got := c.Now(); !got.Equal(s.want) {
			t.Errorf("%s: Now() = %v, want %v", s.name, got, s.want)
		}
	}
}

func TestFakeClockTimersFireInDeadlineOrder(t *testing.T) {
	c := keel.NewFakeClock(start)
	// Created out of order on purpose.
	t3 := c.NewTimer(3 * time.Second)
	t1 := c.NewTimer(1 * time.Second)
	t2 := c.NewTimer(2 * time.Second)
	t2b := c.NewTimer(2 * time.Second)
	timers := map[string]keel.Timer{"t1": t1, "t2": t2, "t2b": t2b, "t3": t3}
	if n := c.Timers(); n != 4 {
		t.Fatalf("Timers() = %d, want 4", n)
	}

	steps := []struct {
		name    string
		advance time.Duration
		fired   []string
		pending int
	}{
		{"just before the first deadline", time.Second - time.Nanosecond, nil, 4},
		{"at the first deadline", time.Nanosecond, []string{"t1"}, 3},
		{"just before the second deadline", time.Second - time.Nanosecond, nil, 3},
		{"at the second deadline", time.Nanosecond, []string{"t2", "t2b"}, 1},
		{"past the last deadline", 10 * time.Second, []string{"t3"}, 0},
		{"later still", time.Hour, nil, 0},
	}
	for _, s := range steps {
		c.Advance(s.advance)
		now := c.Now()
		fired := make(map[string]bool)
		for _, name := range s.fired {
			fired[name] = true
		}
		for name, tm := range timers {
			select {
			case v := <-tm.C():
				if !fired[name] {
					t.Errorf("%s: %s fired at %v", s.name, name, now)
				} else if !v.Equal(now) {
					t.Errorf("%s: %s delivered %v, want the time it fired, %v", s.name, name, v, now)
				}
			default:
				if fired[name] {
					t.Errorf("%s: %s did not fire at %v", s.name, name, now)
				}
			}
		}
		if n := c.Timers(); n != s.pending {
			t.Errorf("%s: Timers() = %d, want %d", s.name, n, s.pending)
		}
	}
}

func TestFakeClockStop(t *testing.T) {
	tests := []struct {
		name string
		// prepare brings a 1s timer of a clock at start into some state.
		prepare func(t *testing.T, c *keel.FakeClock, tm keel.Timer)
		want    bool
	}{
		{"pending", func(*testing.T, *keel.FakeClock, keel.Timer) {}, true},
		{"pending, time moved but not to the deadline", func(_ *testing.T, c *keel.FakeClock, _ keel.Timer) { c.Advance(time.Second - 1) }, true},
		{"already stopped", func(_ *testing.T, _ *keel.FakeClock, tm keel.Timer) { tm.Stop() }, false},
		{"fired and received", func(t *testing.T, c *keel.FakeClock, tm keel.Timer) { c.Advance(time.Second); mustFire(t, tm) }, false},
		// As with time.Timer since Go 1.23: a value not yet received
		// counts as pending, and Stop discards it.
		{"fired, not received", func(_ *testing.T, c *keel.FakeClock, _ keel.Timer) { c.Advance(time.Second) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := keel.NewFakeClock(start)
			tm := c.NewTimer(time.Second)
			tc.prepare(t, c, tm)
			if got := tm.Stop(); got != tc.want {
				t.Errorf("Stop() = %v, want %v", got, tc.want)
			}
			if n := c.Timers(); n != 0 {
				t.Errorf("after Stop, Timers() = %d, want 0", n)
			}
			c.Advance(time.Hour)
			select {
			case v := <-tm.C():
				t.Errorf("stopped timer delivered %v", v)
			default:
			}
			if tm.Stop() {
				t.Error("second Stop() = true, want false")
			}
		})
	}
}

func TestFakeClockReset(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, c *keel.FakeClock, tm keel.Timer)
		want    bool
	}{
		{"pending", func(*testing.T, *keel.FakeClock, keel.Timer) {}, true},
		{"stopped", func(_ *testing.T, _ *keel.FakeClock, tm keel.Timer) { tm.Stop() }, false},
		{"fired and received", func(t *testing.T, c *keel.FakeClock, tm keel.Timer) { c.Advance(time.Second); mustFire(t, tm) }, false},
		{"fired, not received", func(_ *testing.T, c *keel.FakeClock, _ keel.Timer) { c.Advance(time.Second) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := keel.NewFakeClock(start)
			tm := c.NewTimer(time.Second)
			tc.prepare(t, c, tm)
			base := c.Now()
			if got := tm.Reset(5 * time.Second); got != tc.want {
				t.Errorf("Reset() = %v, want %v", got, tc.want)
			}
			if n := c.Timers(); n != 1 {
				t.Errorf("after Reset, Timers() = %d, want 1", n)
			}
			// No stale value, and the old deadline no longer counts.
			c.Set(base.Add(5*time.Second - time.Nanosecond))
			select {
			case v := <-tm.C():
				t.Fatalf("reset timer delivered %v before its new deadline", v)
			default:
			}
			c.Advance(time.Nanosecond)
			select {
			case v := <-tm.C():
				if want := base.Add(5 * time.Second); !v.Equal(want) {
					t.Errorf("reset timer delivered %v, want %v", v, want)
				}
			default:
				t.Fatal("reset timer did not fire at its new deadline")
			}
			if n := c.Timers(); n != 0 {
				t.Errorf("after firing, Timers() = %d, want 0", n)
			}
		})
	}
}

func TestFakeClockResetToZeroFiresAtOnce(t *testing.T) {
	c := keel.NewFakeClock(start)
	tm := c.NewTimer(time.Hour)
	if !tm.Reset(0) {
		t.Error("Reset(0) of a pending timer = false, want true")
	}
	select {
	case v := <-tm.C():
		if !v.Equal(start) {
			t.Errorf("delivered %v, want %v", v, start)
		}
	default:
		t.Error("Reset(0) did not fire at once")
	}
	if n := c.Timers(); n != 0 {
		t.Errorf("Timers() = %d, want 0", n)
	}
}

func TestFakeClockNonPositiveTimerFiresAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		t.Run(d.String(), func(t *testing.T) {
			c := keel.NewFakeClock(start)
			tm := c.NewTimer(d)
			select {
			case v := <-tm.C():
				if !v.Equal(start) {
					t.Errorf("NewTimer(%v) delivered %v, want %v", d, v, start)
				}
			default:
				t.Fatalf("NewTimer(%v) did not fire at once", d)
			}
			if n := c.Timers(); n != 0 {
				t.Errorf("Timers() = %d, want 0", n)
			}
			if tm.Stop() {
				t.Error("Stop() after the value was received = true, want false")
			}
		})
	}
}

func TestFakeClockSetBackwardsDoesNotFire(t *testing.T) {
	c := keel.NewFakeClock(start)
	tm := c.NewTimer(time.Second)
	c.Set(start.Add(-time.Hour))
	select {
	case v := <-tm.C():
		t.Fatalf("timer fired at %v when the time went back", v)
	default:
	}
	if n := c.Timers(); n != 1 {
		t.Errorf("Timers() = %d, want 1", n)
	}
	// The deadline is absolute: going back does not postpone it relative
	// to the new time, nor bring it closer.
	c.Set(start.Add(time.Second - time.Nanosecond))
	select {
	case v := <-tm.C():
		t.Fatalf("timer fired at %v, before its deadline", v)
	default:
	}
	c.Set(start.Add(time.Second))
	select {
	case <-tm.C():
	default:
		t.Fatal("timer did not fire at its deadline after the time went back and forth")
	}
}

func TestFakeClockTimers(t *testing.T) {
	c := keel.NewFakeClock(start)
	if n := c.Timers(); n != 0 {
		t.Fatalf("new clock: Timers() = %d, want 0", n)
	}
	a := c.NewTimer(time.Second)
	b := c.NewTimer(2 * time.Second)
	c.NewTimer(0) // fires at once: never waiting
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"two waiting", func() {}, 2},
		{"reset of a pending timer is not counted twice", func() { a.Reset(3 * time.Second) }, 2},
		{"stop", func() { b.Stop() }, 1},
		{"fire", func() { c.Advance(3 * time.Second) }, 0},
		{"re-arm a fired timer", func() { a.Reset(time.Second) }, 1},
	}
	for _, s := range steps {
		s.do()
		if n := c.Timers(); n != s.want {
			t.Errorf("%s: Timers() = %d, want %d", s.name, n, s.want)
		}
	}
}

func TestFakeClockBlockUntil(t *testing.T) {
	c := keel.NewFakeClock(start)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	if err := c.BlockUntil(ctx, 0); err != nil {
		t.Fatalf("BlockUntil(0) = %v, want nil at once", err)
	}

	blocked := make(chan error, 1)
	go func() { blocked <- c.BlockUntil(ctx, 2) }()

	woke := make(chan time.Time, 1)
	go func() {
		tm := c.NewTimer(time.Minute)
		woke <- <-tm.C()
	}()
	// The first timer alone must not release BlockUntil(2). A correct
	// BlockUntil can never have returned yet, so this check is not racy.
	if err := c.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("BlockUntil(1) = %v, want nil once a goroutine made a timer", err)
	}
	select {
	case err := <-blocked:
		t.Fatalf("BlockUntil(2) returned %v with one timer", err)
	default:
	}

	other := c.NewTimer(time.Hour)
	select {
	case err := <-blocked:
		if err != nil {
			t.Fatalf("BlockUntil(2) = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("BlockUntil(2) did not return after the second timer")
	}

	c.Advance(time.Minute)
	select {
	case v := <-woke:
		if want := start.Add(time.Minute); !v.Equal(want) {
			t.Errorf("sleeping goroutine woke with %v, want %v", v, want)
		}
	case <-time.After(waitLimit):
		t.Fatal("sleeping goroutine did not wake after Advance")
	}
	other.Stop()
}

func TestFakeClockBlockUntilContextEnds(t *testing.T) {
	c := keel.NewFakeClock(start)
	c.NewTimer(time.Second) // one waiting: not enough

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), start)
	defer cancel2()

	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"canceled", canceled, context.Canceled},
		{"deadline passed", expired, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.BlockUntil(tc.ctx, 2); !errors.Is(err, tc.want) {
				t.Errorf("BlockUntil = %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("canceled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.BlockUntil(ctx, 2) }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("BlockUntil = %v, want %v", err, context.Canceled)
			}
		case <-time.After(waitLimit):
			t.Fatal("BlockUntil did not return after its context was canceled")
		}
	})
}

func TestFakeClockConcurrentUse(t *testing.T) {
	c := keel.NewFakeClock(start)
	const workers = 8
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			tm := c.NewTimer(time.Second)
			<-tm.C()
			tm.Reset(time.Second)
			tm.Stop()
			_ = c.Now()
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.BlockUntil(ctx, workers); err != nil {
		t.Fatalf("BlockUntil(%d) = %v", workers, err)
	}
	c.Advance(time.Second)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("goroutines still asleep after Advance past their timers")
	}
	if n := c.Timers(); n != 0 {
		t.Errorf("Timers() = %d, want 0", n)
	}
}

// mustFire receives the value of a fake timer that must already have fired:
// a FakeClock delivers before Advance, Set, NewTimer or Reset returns.
func mustFire(t *testing.T, tm keel.Timer) time.Time {
	t.Helper()
	select {
	case v := <-tm.C():
		return v
	default:
		t.Fatal("timer has not fired")
		return time.Time{}
	}
}

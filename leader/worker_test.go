package leader_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/leader"
)

var w0 = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

// stepper is a StepFunc that reports each call's time on calls and returns
// what next says for it (the call's number, from 1).
type stepper struct {
	mu    sync.Mutex
	n     int
	next  func(n int, now time.Time) (time.Time, error)
	calls chan time.Time
}

func newStepper(next func(n int, now time.Time) (time.Time, error)) *stepper {
	return &stepper{next: next, calls: make(chan time.Time, 100)}
}

func (s *stepper) step(ctx context.Context, now time.Time) (time.Time, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	s.calls <- now
	return s.next(n, now)
}

// call waits for the next call of the step and returns its time.
func (s *stepper) call(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-s.calls:
		return at
	case <-time.After(keeltest.WaitBound):
		t.Fatal("the step was not called")
		return time.Time{}
	}
}

// none fails t if a step was called that the test does not await. No
// wait proves it: the worker's fake clock does not move, so nothing is
// due; a step that a bug runs all the same is caught here if it already
// came, else by the next call (its time) or, at the latest, by
// startWorker's check that no step is left unread when the worker stops.
func (s *stepper) none(t *testing.T) {
	t.Helper()
	select {
	case at := <-s.calls:
		t.Fatalf("unexpected step at %v", at)
	default:
	}
}

func startWorker(t *testing.T, s *stepper, opts *leader.WorkerOptions) (*leader.Worker, *keel.FakeClock) {
	t.Helper()
	clock := keel.NewFakeClock(w0)
	o := leader.WorkerOptions{}
	if opts != nil {
		o = *opts
	}
	o.Clock = clock
	w := leader.NewWorker(s.step, &o)
	w.Start()
	t.Cleanup(func() {
		w.Stop()
		select {
		case at := <-s.calls:
			t.Errorf("unexpected step at %v, not awaited by the test", at)
		default:
		}
	})
	return w, clock
}

// sleeping waits until the worker sleeps on its timer.
func sleeping(t *testing.T, clock *keel.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), keeltest.WaitBound)
	defer cancel()
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal("the worker does not sleep on a timer")
	}
}

func TestWorkerSleepsUntilNext(t *testing.T) {
	s := newStepper(func(_ int, now time.Time) (time.Time, error) { return now.Add(time.Hour), nil })
	_, clock := startWorker(t, s, nil)
	if at := s.call(t); !at.Equal(w0) {
		t.Fatalf("first step at %v", at)
	}
	sleeping(t, clock)
	clock.Advance(59 * time.Minute)
	s.none(t)
	clock.Advance(time.Minute)
	if at := s.call(t); !at.Equal(w0.Add(time.Hour)) {
		t.Fatalf("second step at %v, want %v", at, w0.Add(time.Hour))
	}
}

func TestWorkerWakeBeforeNext(t *testing.T) {
	s := newStepper(func(_ int, now time.Time) (time.Time, error) { return now.Add(time.Hour), nil })
	w, clock := startWorker(t, s, nil)
	s.call(t)
	sleeping(t, clock)
	w.Wake()
	if at := s.call(t); !at.Equal(w0) {
		t.Fatalf("woken step at %v, want at once (%v)", at, w0)
	}
}

// TestWorkerEarlierNextAfterWake: a step run by a wake-up that returns an
// earlier time than planned is followed at that earlier time.
func TestWorkerEarlierNextAfterWake(t *testing.T) {
	s := newStepper(func(n int, now time.Time) (time.Time, error) {
		if n == 1 {
			return now.Add(time.Hour), nil
		}
		return now.Add(time.Minute), nil
	})
	w, clock := startWorker(t, s, nil)
	s.call(t)
	sleeping(t, clock)
	w.Wake()
	s.call(t)
	sleeping(t, clock)
	if got := w.Planned(); !got.Equal(w0.Add(time.Minute)) {
		t.Fatalf("planned %v, want %v", got, w0.Add(time.Minute))
	}
	clock.Advance(time.Minute)
	if at := s.call(t); !at.Equal(w0.Add(time.Minute)) {
		t.Fatalf("third step at %v", at)
	}
}

func TestWorkerNothingPlannedWaitsForWake(t *testing.T) {
	s := newStepper(func(int, time.Time) (time.Time, error) { return time.Time{}, nil })
	w, clock := startWorker(t, s, nil)
	s.call(t)
	clock.Advance(24 * time.Hour)
	s.none(t)
	if !w.Planned().IsZero() {
		t.Fatalf("planned %v with nothing due", w.Planned())
	}
	w.Wake()
	s.call(t)
}

func TestWorkerRetriesAfterError(t *testing.T) {
	boom := errors.New("store down")
	var mu sync.Mutex
	var reported []error
	s := newStepper(func(n int, now time.Time) (time.Time, error) {
		if n == 1 {
			return time.Time{}, boom
		}
		return time.Time{}, nil
	})
	_, clock := startWorker(t, s, &leader.WorkerOptions{Retry: 5 * time.Second, OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}})
	s.call(t)
	sleeping(t, clock)
	clock.Advance(4 * time.Second)
	s.none(t)
	clock.Advance(time.Second)
	if at := s.call(t); !at.Equal(w0.Add(5 * time.Second)) {
		t.Fatalf("retry at %v", at)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !errors.Is(reported[0], boom) {
		t.Fatalf("reported %v", reported)
	}
}

// TestWorkerStopDuringStep: Stop cancels the step's ctx and returns after
// the step has returned; nothing is planned afterwards.
func TestWorkerStopDuringStep(t *testing.T) {
	inStep, ended := make(chan struct{}), make(chan struct{})
	w := leader.NewWorker(func(ctx context.Context, now time.Time) (time.Time, error) {
		close(inStep)
		<-ctx.Done()
		close(ended)
		return time.Time{}, ctx.Err()
	}, &leader.WorkerOptions{Clock: keel.NewFakeClock(w0)})
	w.Start()
	<-inStep
	w.Stop()
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the step ended")
	}
	if w.Running() || !w.Planned().IsZero() {
		t.Fatal("a stopped worker runs or plans")
	}
	w.Stop() // again: nothing
}

// TestWorkerLeadership: the worker steps only while it leads; a lost term
// cancels the step in progress, and a new term runs steps again.
func TestWorkerLeadership(t *testing.T) {
	l := &fakeLeader{terms: make(chan *fakeTerm)}
	steps := make(chan context.Context, 10)
	w := leader.NewWorker(func(ctx context.Context, now time.Time) (time.Time, error) {
		steps <- ctx
		<-ctx.Done()
		return time.Time{}, ctx.Err()
	}, &leader.WorkerOptions{Clock: keel.NewFakeClock(w0), Leader: l})
	w.Start()
	t.Cleanup(w.Stop)
	// A step blocks until its ctx ends: one run before the worker leads
	// would come here instead of the worker's Acquire (no wait needed).
	var term *fakeTerm
	select {
	case <-steps:
		t.Fatal("a step ran before the worker leads")
	case term = <-l.terms:
	}
	ctx := <-steps
	close(term.lost)
	<-ctx.Done()
	second := <-l.terms
	<-steps
	close(second.lost)
	w.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	if got := len(l.events); got != 4 || l.events[0] != "acquire" || l.events[1] != "release" {
		t.Fatalf("events %v, want acquire, release, acquire, release", l.events)
	}
}

// TestWorkerWakeFor: work due no earlier than the planned step does not
// wake the worker; work due before it does; with nothing planned, any
// does.
func TestWorkerWakeFor(t *testing.T) {
	s := newStepper(func(_ int, now time.Time) (time.Time, error) { return now.Add(time.Hour), nil })
	w, clock := startWorker(t, s, nil)
	s.call(t)
	sleeping(t, clock)
	w.WakeFor(w0.Add(time.Hour))
	w.WakeFor(w0.Add(2 * time.Hour))
	s.none(t)
	w.WakeFor(w0.Add(time.Minute))
	s.call(t)

	wake := make(chan struct{}, 1)
	idle := leader.NewWorker(s.step, &leader.WorkerOptions{Clock: clock, Wake: wake})
	idle.WakeFor(w0.Add(time.Hour))
	select {
	case <-wake:
	default:
		t.Fatal("a worker that plans nothing was not woken")
	}
}

// TestWorkerWatch: the Watch option is called at the start of the term,
// before the first step; what it reports through wakeFor wakes the
// sleeping worker when it is due earlier than planned; its stop runs when
// the worker stops. A failed Watch goes to OnError and is tried again
// after Retry.
func TestWorkerWatch(t *testing.T) {
	var (
		mu      sync.Mutex
		wakeFor func(time.Time)
		calls   int
		stopped bool
	)
	failFirst := errors.New("no watch yet")
	var reported []error
	s := newStepper(func(n int, now time.Time) (time.Time, error) {
		mu.Lock()
		defer mu.Unlock()
		if n == 1 && calls != 1 {
			t.Errorf("first step after %d Watch calls, want 1", calls)
		}
		return now.Add(time.Hour), nil
	})
	w, clock := startWorker(t, s, &leader.WorkerOptions{
		Retry: time.Minute,
		OnError: func(err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		},
		Watch: func(ctx context.Context, wf func(time.Time)) (func(), error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				return nil, failFirst
			}
			wakeFor = wf
			return func() {
				mu.Lock()
				stopped = true
				mu.Unlock()
			}, nil
		},
	})
	s.call(t)
	sleeping(t, clock)
	// Without a watch the worker sleeps only Retry, not its hour.
	if got := w.Planned(); !got.Equal(w0.Add(time.Minute)) {
		t.Fatalf("planned %v after a failed Watch, want %v", got, w0.Add(time.Minute))
	}
	mu.Lock()
	if len(reported) != 1 || !errors.Is(reported[0], failFirst) {
		t.Fatalf("OnError got %v, want the Watch error", reported)
	}
	mu.Unlock()
	clock.Advance(time.Minute)
	s.call(t)
	sleeping(t, clock)
	mu.Lock()
	wf := wakeFor
	mu.Unlock()
	if wf == nil {
		t.Fatal("Watch was not called again after Retry")
	}
	wf(clock.Now().Add(2 * time.Hour)) // later than planned: no step
	s.none(t)
	wf(clock.Now().Add(time.Minute)) // earlier: a step
	s.call(t)
	wf(time.Time{}) // zero: at once
	s.call(t)
	w.Stop()
	mu.Lock()
	defer mu.Unlock()
	if !stopped || calls != 2 {
		t.Fatalf("after Stop: watch stopped %v, Watch called %d times; want true, 2", stopped, calls)
	}
}

// TestWorkerWakeYieldsToReadyGoroutines: a worker woken by Wake lets the
// goroutines ready to run go first, so that on one processor a burst of
// committers that each wake it is seen by one step, not one step each. A
// collection or a preemption can reorder the goroutines of one burst, so
// the burst is tried again, a few times at most. Not parallel: it runs the
// program on one processor.
func TestWorkerWakeYieldsToReadyGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const committers, tries = 8, 5
	var first int64
	for range tries {
		if first = wakeBurst(committers); first == committers {
			return
		}
	}
	t.Fatalf("the first step after each of %d bursts saw the work of %d committer(s) or fewer (the last %d), want all %d", tries, committers-1, first, committers)
}

// wakeBurst starts a worker, lets committers goroutines each commit one
// piece of work and wake it, all ready at once, and returns how many
// pieces the worker's first step after them saw.
func wakeBurst(committers int) int64 {
	var queued atomic.Int64
	idle := make(chan struct{}, 1)
	seen := make(chan int64, committers+1)
	w := leader.NewWorker(func(context.Context, time.Time) (time.Time, error) {
		if n := queued.Swap(0); n > 0 {
			seen <- n
		} else {
			idle <- struct{}{}
		}
		return time.Time{}, nil
	}, nil)
	w.Start()
	defer w.Stop()
	<-idle // on one processor the worker runs on to its wait before this returns
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range committers {
		wg.Go(func() {
			<-start
			queued.Add(1)
			w.Wake()
		})
	}
	runtime.Gosched() // let them all wait at start
	close(start)
	wg.Wait()
	return <-seen
}

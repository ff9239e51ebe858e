package leader

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelhq/keel"
)

// StepFunc does the background work due at now and returns when more is
// due: the zero time when nothing is planned (the worker then sleeps until
// Wake). An error makes the worker try again after WorkerOptions.Retry.
// The ctx is canceled when the worker stops or loses its leadership.
type StepFunc func(ctx context.Context, now time.Time) (next time.Time, err error)

// WorkerOptions configure a Worker. A nil *WorkerOptions, and each zero
// field, means the default.
type WorkerOptions struct {
	// Clock gives the time of each step and the timers of the sleeps.
	// Nil: keel.SystemClock{}.
	Clock keel.Clock
	// Leader decides when the worker runs: only while it leads. Nil:
	// Always.
	Leader Leader
	// Retry is the delay before a step that failed, or a leadership that
	// could not be acquired, is tried again. Zero: 10s.
	Retry time.Duration
	// OnError receives the errors of steps and of leadership. Nil: they
	// are dropped.
	OnError func(err error)
	// Wake is the channel of the worker's wake-ups, buffered (capacity
	// 1): Wake sends on it without blocking, the worker receives. An
	// owner that wants to see whether a wake-up is pending (a test) gives
	// its own. Nil: the worker makes one.
	Wake chan struct{}
	// Watch, when set, is called at the start of each term, before its
	// first step, with the term's ctx and the worker's WakeFor. It
	// arranges for wakeFor to be called with the due time of work that
	// other processes commit (typically a storage.Watch of the step's
	// index; the zero time wakes the worker at once), and returns the
	// function that ends the arrangement, called when the term ends. An
	// error goes to OnError; the worker steps without it and calls Watch
	// again after Retry.
	Watch func(ctx context.Context, wakeFor func(t time.Time)) (stop func(), err error)
}

// defaultRetry is the default of WorkerOptions.Retry.
const defaultRetry = 10 * time.Second

// Worker runs a StepFunc in a goroutine, over and over: it calls the step
// with the clock's time, sleeps on a timer of the clock until the next
// time the step returned, and is woken early by Wake. It runs only while
// its Leader grants it a term, and stops the step in progress when the term
// is lost or Stop is called. Create one with NewWorker. A Worker is safe
// for concurrent use; its zero value is not usable.
type Worker struct {
	step    StepFunc
	clock   keel.Clock
	leader  Leader
	retry   time.Duration
	onError func(error)
	watch   func(context.Context, func(time.Time)) (func(), error)

	wake    chan struct{} // buffered 1: a pending wake-up
	planned atomic.Int64  // see Planned

	mu     sync.Mutex // guards cancel and done; held by Stop while it waits
	cancel context.CancelFunc
	done   chan struct{}
}

// NewWorker returns a Worker of step, not yet started.
func NewWorker(step StepFunc, opts *WorkerOptions) *Worker {
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	if o.Leader == nil {
		o.Leader = Always
	}
	if o.Retry <= 0 {
		o.Retry = defaultRetry
	}
	if o.Wake == nil {
		o.Wake = make(chan struct{}, 1)
	}
	return &Worker{
		step: step, clock: keel.ClockOrSystem(o.Clock), leader: o.Leader,
		retry: o.Retry, onError: o.OnError, wake: o.Wake, watch: o.Watch,
	}
}

// Start starts the worker's goroutine. It does nothing when the worker
// runs already; a stopped worker can be started again.
func (w *Worker) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.cancel, w.done = cancel, done
	go func() {
		defer close(done)
		Run(ctx, w.leader, w.retry, w.onError, w.loop)
	}()
}

// Stop cancels the step in progress and waits for the goroutine to end. It
// does nothing when the worker does not run; concurrent calls all return
// after the worker has ended.
func (w *Worker) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel == nil {
		return
	}
	w.cancel()
	<-w.done
	w.cancel, w.done = nil, nil
}

// Running reports whether the worker was started and not stopped.
func (w *Worker) Running() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cancel != nil
}

// Wake makes the worker run a step soon, so that it sees work due earlier
// than it planned. It never blocks, and a wake-up of a worker that is not
// running waits for its next start. The woken worker yields the processor
// once before its step, so that the goroutines ready to run then (other
// writers about to wake it) commit first and share the step.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// WakeFor wakes the worker for work just committed that is due at t,
// unless the worker already sleeps until a time no later than t: it then
// sees the work when it wakes anyway, and is spared a step. This is safe
// because the worker clears its plan before each step and sets it only
// after: a plan read after the commit either belongs to a step that began
// after it (and sees the work), or wakes the worker no later than t. The
// zero t wakes the worker at once.
func (w *Worker) WakeFor(t time.Time) {
	if p := w.planned.Load(); p == 0 || t.IsZero() || t.UnixNano() < p {
		w.Wake()
	}
}

// Planned returns when the sleeping worker will run its next step: the
// zero time while a step runs, while nothing is planned, and while the
// worker does not run.
func (w *Worker) Planned() time.Time {
	if p := w.planned.Load(); p != 0 {
		return time.Unix(0, p)
	}
	return time.Time{}
}

// loop runs steps while ctx lasts.
func (w *Worker) loop(ctx context.Context) {
	var timer keel.Timer
	var stopWatch func()
	defer func() {
		w.planned.Store(0)
		if timer != nil {
			timer.Stop()
		}
		if stopWatch != nil {
			stopWatch()
		}
	}()
	for {
		w.planned.Store(0)
		if w.watch != nil && stopWatch == nil {
			var err error
			if stopWatch, err = w.watch(ctx, w.WakeFor); err != nil {
				stopWatch = nil
				if ctx.Err() != nil {
					return
				}
				w.report(fmt.Errorf("watch: %w", err))
			}
		}
		next, err := w.step(ctx, w.clock.Now())
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.report(err)
			next = w.clock.Now().Add(w.retry)
		}
		if w.watch != nil && stopWatch == nil {
			if again := w.clock.Now().Add(w.retry); next.IsZero() || again.Before(next) {
				next = again
			}
		}
		var fire <-chan time.Time
		if next.IsZero() {
			if timer != nil {
				timer.Stop()
			}
		} else {
			d := next.Sub(w.clock.Now())
			if d <= 0 {
				continue
			}
			w.planned.Store(next.UnixNano())
			if timer == nil {
				timer = w.clock.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			// The clock may have passed next while the timer was
			// armed (a fake clock moved by a test, a slow Reset): do
			// not wait for a deadline that is already behind.
			if !w.clock.Now().Before(next) {
				continue
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			// Woken by work just committed: let the goroutines ready to
			// run go first, so that the step sees the work they are
			// about to commit too (on one processor, the waker's
			// successors would otherwise each get a step of their own).
			runtime.Gosched()
		case <-fire:
		}
	}
}

// report gives err to OnError, when set.
func (w *Worker) report(err error) {
	if w.onError != nil {
		w.onError(err)
	}
}

// Package leader lets background work run in one process of a deployment at
// a time: lease expiry, role rotation, check-ins, clean-ups.
//
// # Basics
//
// A Leader grants terms of leadership. Acquire blocks until the caller
// leads and returns a Term; the term's Lost channel is closed when the
// leadership is lost, or may be lost soon, and the holder must then stop its
// work and call Release. Release gives the leadership up, so that another
// process leads at once. Run does all of this around a function.
//
// Worker is the one background loop of keel: it runs a StepFunc (lease
// expiry, role rotation, peering heartbeats) while its process leads,
// sleeps on the injected clock until the step's next due time, is woken
// early by Wake, retries a failed step after a delay, and stops cleanly.
//
// Always is the Leader of a deployment of one process. Package
// github.com/keelhq/keel/storage/etcdstore has one over etcd's election,
// for several processes.
//
// # Errors
//
// Acquire returns the error of its ctx when it ends first, or an error of
// the implementation (etcd unreachable: keel.KindUnavailable). Run retries
// them.
//
// # Concurrency
//
// A Leader is safe for concurrent use; a Term is used by one goroutine,
// except Lost, which any may watch.
//
// # Caveats
//
// Leadership relies on time: an implementation closes Lost ahead of the
// moment another process may lead, by a margin it documents. Work must
// stop within that margin once its ctx is canceled: a revoker stuck past it
// may overlap the next leader's.
package leader

import (
	"context"
	"time"
)

// Leader grants leadership to one holder at a time.
type Leader interface {
	// Acquire blocks until the caller leads, and returns its term, or
	// returns an error: ctx's when it ends first.
	Acquire(ctx context.Context) (Term, error)
}

// Term is a period of leadership, from Acquire to Release or loss.
type Term interface {
	// Lost is closed when leadership is lost, or may be lost soon. The
	// holder must then stop its work and call Release.
	Lost() <-chan struct{}
	// Release ends the term, after the holder stopped its work, so that
	// another process may lead. It may be called after Lost, and more
	// than once.
	Release(ctx context.Context) error
}

// Always is the Leader of a single process: Acquire returns at once a term
// that is never lost.
var Always Leader = always{}

type always struct{}

func (always) Acquire(ctx context.Context) (Term, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return alwaysTerm{}, nil
}

type alwaysTerm struct{}

func (alwaysTerm) Lost() <-chan struct{}         { return nil }
func (alwaysTerm) Release(context.Context) error { return nil }

// ReleaseTimeout bounds each Release that Run makes.
const ReleaseTimeout = 5 * time.Second

// Run runs work while the caller leads, until ctx ends: it acquires a term
// of l, calls work with a context that is canceled when the term is lost or
// ctx ends, waits for work to return, releases the term, and starts over.
// When Acquire fails for another reason than ctx, Run passes the error to
// onError (when not nil) and tries again after retry. Run returns when ctx
// has ended and work has returned.
func Run(ctx context.Context, l Leader, retry time.Duration, onError func(error), work func(ctx context.Context)) {
	for ctx.Err() == nil {
		term, err := l.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if onError != nil {
				onError(err)
			}
			t := time.NewTimer(retry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		runTerm(ctx, term, work)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
		if err := term.Release(rctx); err != nil && onError != nil {
			onError(err)
		}
		cancel()
	}
}

// runTerm runs work with a context canceled when term is lost.
func runTerm(ctx context.Context, term Term, work func(ctx context.Context)) {
	lost := term.Lost()
	if lost == nil {
		work(ctx)
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-lost:
			cancel()
		case <-stop:
		}
	}()
	work(wctx)
}

package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// laneWait bounds (in real time) how long the worker's step waits for a
// lane's run before it leaves the run going on its own (see Step).
const laneWait = 500 * time.Millisecond

// laneRun is one mount's share of a batch of Step: its due leases,
// revoked through the mount's revoker, a few calls at once (see
// lanes.acquire), in index order, until the lane closes (see lanes). The Step waits for the run
// and commits its outcomes with the batch's; a run still going after
// laneWait is detached: the leases it has not settled become its own, in
// flight (later Steps skip them), and it commits their outcomes itself,
// in small batches, as its calls return or time out.
type laneRun struct {
	m      *Manager
	ctx    context.Context // the Step's, cancelled by Stop once detached
	cancel context.CancelFunc
	now    time.Time
	mount  string
	items  []*dueItem
	done   chan struct{} // closed when the run has ended and committed

	mu         sync.Mutex
	next       int        // items[next:] not taken
	until      time.Time  // the lane closed: the rest is put off to then
	detached   bool       // the Step no longer waits: the run commits
	toCommit   []*dueItem // settled after the detachment, not committed yet
	committing bool       // a worker commits toCommit
}

// inflight holds what detached runs own: the ids of their leases not
// committed yet, which Steps of this process skip (another process sees
// them due, and its own lanes decide), and the runs, which Stop ends.
type inflight struct {
	n    atomic.Int64 // len(ids), read without the lock
	mu   sync.Mutex
	ids  map[string]struct{}
	runs map[*laneRun]struct{}
}

// has reports whether the revocation of the lease id is in flight.
func (f *inflight) has(id string) bool {
	if f.n.Load() == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.ids[id]
	return ok
}

// detach records r as detached, owning items.
func (f *inflight) detach(r *laneRun, items []*dueItem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = make(map[string]struct{})
		f.runs = make(map[*laneRun]struct{})
	}
	for _, it := range items {
		f.ids[it.id] = struct{}{}
	}
	f.n.Store(int64(len(f.ids)))
	f.runs[r] = struct{}{}
}

// settled forgets the leases of items, committed (or left) by their run.
func (f *inflight) settled(items []*dueItem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range items {
		delete(f.ids, it.id)
	}
	f.n.Store(int64(len(f.ids)))
}

// ended forgets the detached run r.
func (f *inflight) ended(r *laneRun) {
	f.mu.Lock()
	delete(f.runs, r)
	f.mu.Unlock()
}

// stop cancels the detached runs and waits for them to end.
func (f *inflight) stop() {
	f.mu.Lock()
	var runs []*laneRun
	for r := range f.runs {
		runs = append(runs, r)
	}
	f.mu.Unlock()
	for _, r := range runs {
		r.cancel()
	}
	for _, r := range runs {
		<-r.done
	}
}

// startRun starts the run of mount's lane over items, with workers calls
// at once (acquire said how many); its context is ctx's.
func (m *Manager) startRun(ctx context.Context, now time.Time, mount string, items []*dueItem, workers int) *laneRun {
	rctx, cancel := context.WithCancel(ctx)
	r := &laneRun{m: m, ctx: rctx, cancel: cancel, now: now, mount: mount, items: items, done: make(chan struct{})}
	for _, it := range items {
		it.outcome = pending
	}
	go r.run(min(workers, len(items)))
	return r
}

// run runs the workers, then settles the leases not taken: put off to the
// lane's end when it closed, left as they are when ctx ended.
func (r *laneRun) run(workers int) {
	defer close(r.done)
	defer r.cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(r.work)
	}
	wg.Wait()
	r.mu.Lock()
	rest := r.items[r.next:]
	r.next = len(r.items)
	for _, it := range rest {
		if r.until.IsZero() || r.ctx.Err() != nil {
			it.outcome = leave
			continue
		}
		it.outcome = heldBack
		it.next = it.e
		it.next.NextAttempt = r.until
	}
	own := r.detached
	if own {
		r.toCommit = append(r.toCommit, rest...)
	}
	r.mu.Unlock()
	if own {
		r.flush()
		r.m.flights.ended(r)
	}
	r.m.lanes.release(r.mount)
}

// take returns the next lease to revoke, or nil once the lane closed, the
// leases are all taken, or ctx ended.
func (r *laneRun) take() *dueItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.until.IsZero() || r.next == len(r.items) || r.ctx.Err() != nil {
		return nil
	}
	it := r.items[r.next]
	r.next++
	return it
}

// work revokes leases until take has none, and settles each.
func (r *laneRun) work() {
	m := r.m
	c := m.newCaller()
	defer c.stop()
	for it := r.take(); it != nil; it = r.take() {
		err := m.expire(r.ctx, c, it.e.Lease)
		var (
			out     outcome
			next    entry
			closed  bool
			closeAt time.Time
		)
		switch {
		case err != nil && r.ctx.Err() != nil:
			out = leave
		case err == nil:
			out = revoked
		case errors.Is(err, errNoRevoker):
			out, next = postponed, m.postponed(&it.e, r.now)
		case isPermanent(err):
			out, next = failedAttempt, m.failed(&it.e, r.now, err)
		case it.e.Attempts > 0 && !errors.Is(err, errTimedOut):
			// A retry that fails again judges its lease, not the
			// backend: a backend that is down fails first attempts too.
			out, next = failedAttempt, m.failed(&it.e, r.now, err)
		default:
			out, next = failedAttempt, m.failed(&it.e, r.now, err)
			closeAt, closed = m.lanes.failed(r.mount, r.now, next.NextAttempt, errors.Is(err, errTimedOut), m.backoff)
		}
		r.mu.Lock()
		it.err, it.outcome, it.next = err, out, next
		if closed && r.until.IsZero() {
			r.until = closeAt
		}
		own := r.detached
		if own {
			r.toCommit = append(r.toCommit, it)
		}
		r.mu.Unlock()
		if own {
			r.flush()
		}
	}
}

// detach makes the run commit its outcomes from now on, and returns the
// leases it owns: those not settled yet, now in flight. A run with none
// left is not detached: detach waits for its end (at hand) and returns
// false.
func (r *laneRun) detach() (map[*dueItem]bool, bool) {
	r.mu.Lock()
	owned := make(map[*dueItem]bool)
	var items []*dueItem
	for _, it := range r.items {
		if it.outcome == pending {
			owned[it] = true
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		r.mu.Unlock()
		<-r.done
		return nil, false
	}
	r.detached = true
	// Recorded under r.mu, so that none of them is settled (and
	// forgotten) before it is recorded.
	r.m.flights.detach(r, items)
	r.mu.Unlock()
	return owned, true
}

// flush commits the outcomes settled since the detachment, unless another
// worker does: the one that commits takes what has piled up meanwhile, so
// that a run whose calls return together commits them together.
func (r *laneRun) flush() {
	r.mu.Lock()
	if r.committing {
		r.mu.Unlock()
		return
	}
	r.committing = true
	for len(r.toCommit) > 0 {
		batch := r.toCommit
		r.toCommit = nil
		r.mu.Unlock()
		r.m.commitDetached(r.ctx, r.now, batch)
		r.mu.Lock()
	}
	r.committing = false
	r.mu.Unlock()
}

// commitDetached commits the outcomes of items, settled by a detached
// run, forgets them as in flight, and wakes the worker for the leases put
// off (its plan did not count them); when the commit fails, it logs the
// error and wakes the worker at once, which finds the leases due again.
func (m *Manager) commitDetached(ctx context.Context, now time.Time, items []*dueItem) {
	err := m.commit(ctx, now, items)
	m.flights.settled(items)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error("lease worker: committing revocations left running by a step", "error", err, "leases", len(items))
		}
		m.Wake()
		return
	}
	var first time.Time
	for _, it := range items {
		switch it.outcome {
		case failedAttempt, postponed, heldBack:
			if first.IsZero() || it.next.NextAttempt.Before(first) {
				first = it.next.NextAttempt
			}
		case leave:
			m.Wake()
		}
	}
	if !first.IsZero() {
		m.wakeFor(first)
	}
}

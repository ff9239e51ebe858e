package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/keelhq/keel/storage"
)

// Step revokes what is due at now: it reads the expiry index in order, in
// batches of Limits().Batch entries, up to the first entry due after now;
// calls the revokers of the due leases outside any transaction, each
// mount's in a lane of its own (Options.RevokeConcurrency calls at once,
// each bounded by Options.RevokeTimeout), the lanes side by side; then, in
// one transaction per batch, removes the revoked leases with their index
// entries and records the failures (see Revoke). It returns when the next
// entry is due (after now), or the zero time when the index is empty.
//
// Step waits for every call it makes (each bounded by RevokeTimeout), so
// that a program or a test that drives time has done all that was due
// when it returns. The worker of Start steps differently: it waits half a
// second (real time) at most for a mount's lane: a lane still calling its
// revoker then is left to finish on its own: the worker's step commits
// what is settled and goes on, and the lane commits its leases' outcomes
// itself, in small batches, as its calls return or time out. Until then
// those leases are in flight: later Steps of this process skip them, and
// put the mount's other due leases off by RetryBase, with no attempt
// counted, making no call.
//
// A lane closes at a call past the timeout, or when at least five of the
// last 24 first attempts of its mount failed and they are more than half
// of them (errors marked Permanent, and retries that fail again, aside:
// they judge one lease, not the backend, which would fail first attempts
// too; any success counts): a backend that is down closes it at its fifth
// call, while one that refuses a steady minority of leases does not close
// it by chance. It backs off, at most until the failed lease's retry, and its
// leases not tried are put off to then, with no attempt counted; a later
// Step puts them off likewise while the backoff lasts, or while the
// lane's calls that timed out have not returned (a revoker that ignores
// its context is left running, and its mount gets no more calls than
// RevokeConcurrency). So, under the worker, a mount whose backend fails
// or hangs delays another's revocations by half a second at most, once
// per backoff, and loses no lease, while one that refuses a lease now and then slows no
// other. A success of the mount's revoker, in Step or in Revoke, opens
// its lane again.
//
// Index entries that name no lease, or not the lease's current entry, or
// that cannot be parsed, are removed on the way; a lease record that cannot
// be decoded loses its index entry (Tidy reports it). A revocation
// interrupted by the cancellation of ctx is not counted as a failure: it
// is tried again later. Nor is a due lease of a mount that is not
// registered, or whose engine has not named its Revoker yet: another
// process may have just mounted it, so it is put off, due again after as
// long as it has waited (a second at first, RetryBase if shorter; RetryMax
// at most), with no attempt counted, until its mount is served or it is
// revoked with RevokeForce; a batch with a lease that waited RetryMax or
// more is logged as a warning.
//
// After each batch, Step rests (real time) as long as the batch's read and
// commit kept the store busy, fsync included, or until ctx ends: a storm
// of due leases takes longer, and leaves the store and the cores to other
// work half the time.
//
// While revocations are held (see Hold) Step revokes nothing and
// returns now plus Options.RetryBase, when it looks again.
//
// Step returns an error only for ctx or the store (wrapping their
// errors, so that errors.Is finds context.Canceled); a lease revoked whose
// removal did not commit, by the Step or by a lane left going (which logs
// the error and wakes the worker), is revoked again by a later Step
// (revokers are idempotent). Steps run one at a time: a Step waits for another to end.
// The worker of Start calls Step; tests and programs that drive time
// themselves call it directly.
func (m *Manager) Step(ctx context.Context, now time.Time) (time.Time, error) {
	return m.step(ctx, now, 0)
}

// workerStep is the worker's Step: it waits laneWait at most for a lane.
func (m *Manager) workerStep(ctx context.Context, now time.Time) (time.Time, error) {
	return m.step(ctx, now, laneWait)
}

// step is Step, waiting for a lane's run wait at most (0: until it ends).
func (m *Manager) step(ctx context.Context, now time.Time, wait time.Duration) (time.Time, error) {
	m.stepMu.Lock()
	defer m.stepMu.Unlock()
	now = norm(now)
	var b dueBuf
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, fmt.Errorf("lease: step: %w", err)
		}
		start := time.Now()
		items, next, held, err := m.dueBatch(ctx, now, &b)
		inStore := time.Since(start)
		if err != nil {
			return time.Time{}, fmt.Errorf("lease: step: %w", err)
		}
		if held {
			// Release wakes this process's worker; another's looks again.
			return now.Add(m.opts.RetryBase), nil
		}
		if len(items) == 0 {
			return next, nil
		}
		detached, committing, err := m.process(ctx, now, items, wait)
		if err != nil {
			return time.Time{}, fmt.Errorf("lease: step: %w", err)
		}
		if err := rest(ctx, inStore+committing); err != nil {
			return time.Time{}, fmt.Errorf("lease: step: %w", err)
		}
		if detached {
			b = dueBuf{} // the runs left going own some of the items
		}
	}
}

// dueBuf holds the items of a Step's batch, for the next batch of the
// same Step to reuse: a storm of due leases is read in batches, and
// items made anew for each would be most of what the worker allocates.
type dueBuf struct {
	items []*dueItem // made on first use, kept
	ptrs  []*dueItem // the last batch
}

// item returns the buffer's i-th item (i <= the items made), zeroed.
func (b *dueBuf) item(i int) *dueItem {
	if i == len(b.items) {
		b.items = append(b.items, new(dueItem))
	}
	it := b.items[i]
	*it = dueItem{}
	return it
}

// dueItem is an expiry-index entry due at Step's now, with what Step
// decided to do about it.
type dueItem struct {
	key     string // the index entry
	id      string
	raw     []byte // the record as read; nil when missing
	bad     bool   // the key cannot be parsed
	e       entry
	outcome outcome
	next    entry // the record after a failed attempt
	err     error // the revoker's error
}

type outcome uint8

const (
	leave         outcome = iota // not processed (ctx ended): leave everything
	pending                      // its lane's run has not settled it yet
	dropIndex                    // the entry dangles: remove it
	revoked                      // the lease is revoked: remove it
	failedAttempt                // record next in place of e
	postponed                    // no revoker yet: record next in place of e
	heldBack                     // its mount's lane is blocked: record next in place of e
)

// dueBatch reads up to m.batch index entries due at now, with their
// records, into items of b. next is the instant of the first entry after
// now, when the scan reached it. When revocations are held (see Hold) it
// reads nothing else and reports held.
func (m *Manager) dueBatch(ctx context.Context, now time.Time, b *dueBuf) ([]*dueItem, time.Time, bool, error) {
	var items []*dueItem
	var next time.Time
	var held bool
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		items, next = b.ptrs[:0], time.Time{}
		var err error
		if held, err = m.held(tx); held || err != nil {
			return err
		}
		err = tx.Scan(duePrefix, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			at, id, err := parseDueKey(key)
			if err != nil {
				it := b.item(len(items))
				it.key, it.bad = key, true
				items = append(items, it)
			} else if at.After(now) {
				next = at
				return storage.StopScan
			} else if m.flights.has(id) {
				return nil // its run, left going by a Step, decides
			} else {
				it := b.item(len(items))
				it.key, it.id = key, id
				items = append(items, it)
			}
			if len(items) == m.batch {
				return storage.StopScan
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, it := range items {
			if it.bad {
				continue
			}
			raw, err := tx.Get(idKey(it.id))
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			it.raw = raw
		}
		return nil
	})
	b.ptrs = items
	return items, next, held, err
}

// minRest is the shortest rest of a Step (see rest): a batch that kept
// the store busy for less than this is not followed by one.
const minRest = 100 * time.Microsecond

// rest pauses a Step for d (real time), the time its last batch spent in
// the store, unless d is below minRest, or until ctx ends (its error).
func rest(ctx context.Context, d time.Duration) error {
	if d < minRest {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// process revokes the leases of items, each mount's in a run of its lane
// (see laneRun), the runs at once, and commits the outcomes: all of them
// in one transaction when every run ends within laneWait; otherwise
// those settled by then, the runs still going committing the rest, and
// process reports that some items are theirs. It also returns the time
// the commit took.
func (m *Manager) process(ctx context.Context, now time.Time, items []*dueItem, wait time.Duration) (bool, time.Duration, error) {
	byMount := make(map[string][]*dueItem)
	for _, it := range items {
		it.outcome = dropIndex
		if it.bad || it.raw == nil {
			continue
		}
		e, err := decodeEntry(it.id, it.raw)
		if err != nil {
			m.log.Error("dropping the expiry-index entry of an undecodable lease record", "lease_id", it.id, "error", err)
			continue
		}
		if dueKey(e.NextAttempt, it.id) != it.key {
			continue // a stale entry: the lease has moved
		}
		it.e = e
		it.outcome = leave // until its lane decides
		byMount[e.Mount] = append(byMount[e.Mount], it)
	}
	var runs []*laneRun
	for mount, its := range byMount {
		workers, until := m.lanes.acquire(mount, now, m.opts.RevokeConcurrency, m.opts.RetryBase)
		if workers == 0 {
			for _, it := range its {
				it.outcome = heldBack
				it.next = it.e
				it.next.NextAttempt = until
			}
			continue
		}
		runs = append(runs, m.startRun(ctx, now, mount, its, workers))
	}
	owned := awaitRuns(runs, wait)
	if owned != nil {
		items = slices.DeleteFunc(slices.Clone(items), func(it *dueItem) bool { return owned[it] })
	}
	start := time.Now()
	err := m.commit(ctx, now, items)
	committing := time.Since(start)
	if err != nil {
		return owned != nil, committing, err
	}
	return owned != nil, committing, ctx.Err()
}

// awaitRuns waits for runs to end, wait at most (0: until they end): the
// runs still going then are detached, and awaitRuns returns the leases
// they own (nil when none is).
func awaitRuns(runs []*laneRun, wait time.Duration) map[*dueItem]bool {
	if len(runs) == 0 {
		return nil
	}
	var timeUp <-chan time.Time // nil: never
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		timeUp = timer.C
	}
	var owned map[*dueItem]bool
	late := false
	for _, r := range runs {
		if !late {
			select {
			case <-r.done:
				continue
			case <-timeUp:
				late = true
			}
		}
		its, detached := r.detach()
		if !detached {
			continue
		}
		if owned == nil {
			owned = its
			continue
		}
		maps.Copy(owned, its)
	}
	return owned
}

// commit records the outcomes of items in one transaction (the revoked
// leases removed, the failures and the leases put off stored, the
// dangling index entries dropped), then logs them.
func (m *Manager) commit(ctx context.Context, now time.Time, items []*dueItem) error {
	write := false
	for _, it := range items {
		if it.outcome != leave {
			write = true
			break
		}
	}
	if !write {
		return nil
	}
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		q := newQuotaTx(tx)
		for _, it := range items {
			var err error
			switch it.outcome {
			case dropIndex:
				err = dropIfDangling(tx, it.key, it.id, it.bad)
			case revoked:
				err = removeCurrent(tx, q, it.id, it.key)
			case failedAttempt, postponed, heldBack:
				err = putIfUnchanged(tx, &it.e, it.raw, &it.next)
			}
			if err != nil {
				return err
			}
		}
		return q.flush()
	})
	if err != nil {
		return err
	}
	waiting, longest := 0, time.Duration(0)
	var held map[string]int
	// Asked once: a record's attributes cost even when nothing logs it.
	logRevoked, logFailed := m.log.Enabled(ctx, slog.LevelInfo), m.log.Enabled(ctx, slog.LevelWarn)
	for _, it := range items {
		switch it.outcome {
		case heldBack:
			if held == nil {
				held = make(map[string]int)
			}
			held[it.e.Mount]++
		case revoked:
			if logRevoked {
				m.log.Info("lease revoked", "lease_id", it.id)
			}
		case failedAttempt:
			if logFailed || it.next.Irrevocable && m.log.Enabled(ctx, slog.LevelError) {
				m.logFailure(&it.next, it.err)
			}
		case postponed:
			waiting++
			longest = max(longest, now.Sub(it.e.ExpireTime))
		}
	}
	for mount, n := range held {
		m.log.Warn("due leases put off: their mount's revocations fail or hang", "mount", mount, "leases", n)
	}
	// Leases put off for long are a mount this process cannot serve
	// (unknown type, not registered): say so once per batch.
	if waiting > 0 {
		level := slog.LevelDebug
		if longest >= m.opts.RetryMax {
			level = slog.LevelWarn
		}
		m.log.Log(ctx, level, "due leases put off: no engine serves their mount in this process", "leases", waiting, "longest_wait", longest)
	}
	return nil
}

// dropIfDangling removes the index entry key unless it is, by now, the
// current entry of the lease id.
func dropIfDangling(tx storage.Tx, key, id string, bad bool) error {
	if !bad {
		raw, err := tx.Get(idKey(id))
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if err == nil {
			if e, err := decodeEntry(id, raw); err == nil && dueKey(e.NextAttempt, id) == key {
				return nil
			}
		}
	}
	return tx.Delete(key)
}

// backoff returns the delay before the retry that follows the n-th failed
// attempt (n >= 1): RetryBase doubled n-1 times, capped at RetryMax, then
// spread by a random ±20%, in steps of 5% (one of nine delays), so that
// leases that failed together are not retried together, while those of
// one batch land in nine runs of the expiry index at most (each run in
// id order), not one page each.
func (m *Manager) backoff(n int) time.Duration {
	d := m.opts.RetryBase
	for i := 1; i < n && d < m.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, m.opts.RetryMax)
	return d * time.Duration(16+rand.IntN(9)) / 20
}

// Start starts the worker (a leader.Worker of Step): a goroutine that
// calls Step with the clock's time, sleeps on a timer of the clock until
// the next entry is due, and is woken early by Wake (and so by Issue,
// Renew, Revoke, Tidy). When Step fails (a store error), the worker logs
// the error and tries again after Options.RetryBase. With Options.Leader,
// the worker runs only while the process leads: it stops its Step when the
// leadership is lost, and waits for it again. Start does nothing when the
// worker runs already; a stopped worker can be started again.
func (m *Manager) Start() { m.worker.Start() }

// Stop stops the worker: it cancels the context of the running Step (so
// that revokers see it) and waits for the goroutine to end; it also
// cancels the lanes that Steps left going (see Step) and waits for them,
// whose leases stay due, no attempt counted. Stop does nothing else when
// the worker does not run; concurrent calls all return after the worker
// has ended.
func (m *Manager) Stop() {
	m.worker.Stop()
	m.flights.stop()
}

// idOf returns the lease id of a key of the id/ prefix.
func idOf(key string) string { return strings.TrimPrefix(key, idPrefix) }

package ldapengine

import (
	"context"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// stepBatch is how many due roles Step reads per transaction.
const stepBatch = 256

// Step does what is due at now: it settles a pending root rotation record,
// then rotates every static role whose rotation (or retry) is due at or
// before now, in order of due time, reading the store's due index only up
// to the first role due after now (the cost follows the due roles, not all
// roles), then settles the library accounts whose password change is
// pending. After MarkRestored it also verifies, before the rotations, the
// bind account and the static roles and library accounts not verified
// yet, and removes the mark once all are. A rotation that fails is logged, recorded on the role and
// retried with a backoff capped at Options.RetryInterval; anything else
// that fails is tried again after Options.RetryInterval. Step returns when
// it is next due, or the zero time when nothing is planned; it returns an
// error only for ctx or the store. Steps run one at a time. Each rotation
// of a due role is reported to Options.Observer as the operation
// "ldapengine.Rotate" (its resource the role's name), so that a program
// counts the worker's rotations and their failures.
func (e *Engine) Step(ctx context.Context, now time.Time) (_ time.Time, err error) {
	defer prefixErr(&err)
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	failed := false
	if err := e.recoverRoot(ctx); err != nil {
		failed = true
		e.log.Error("root rotation record not settled", "error", err)
	}
	if e.feat.librarySets {
		// Settled accounts leave the index, so each batch reads new ones;
		// a batch that fails ends the settling until the retry.
		for {
			n, fail, err := e.settleAccounts(ctx, stepBatch)
			if err != nil {
				return time.Time{}, err
			}
			failed = failed || fail
			if fail || n < stepBatch {
				break
			}
		}
	}
	// After a restore: verify what the mark leaves to verify.
	fail, err := e.sweepRestored(ctx)
	if err != nil {
		return time.Time{}, err
	}
	failed = failed || fail
	seen := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		var due []string
		var next time.Time
		err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			due, next = due[:0], time.Time{}
			return tx.Scan(prefixDue, storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
				at, name, ok := parseDueKey(key)
				if !ok {
					return nil
				}
				// A role rotated by this Step is due again later:
				// it counts for next like any other.
				if at.After(now) {
					next = at
					return storage.StopScan
				}
				if seen[name] {
					return nil
				}
				due = append(due, name)
				if len(due) == stepBatch {
					return storage.StopScan
				}
				return nil
			})
		})
		if err != nil {
			return time.Time{}, err
		}
		if len(due) == 0 {
			if retry := now.Add(e.retry); failed && (next.IsZero() || retry.Before(next)) {
				next = retry
			}
			return next, nil
		}
		for _, name := range due {
			seen[name] = true
			err := keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.Rotate", name, nil, func(ctx context.Context) error {
				return e.rotate(ctx, name, now, true)
			})
			if err != nil {
				if ctx.Err() != nil {
					return time.Time{}, ctx.Err()
				}
				failed = true
				e.log.Error("static role rotation failed", "role", name, "error", err)
			}
		}
	}
}

// Start starts the worker (a leader.Worker of Step): a goroutine that
// calls Step with the clock's time and sleeps on a timer of the clock until
// the next rotation is due, or until Wake. A failed Step is tried again
// after Options.RetryInterval. With Options.Leader the worker runs only
// while the process leads. Start does nothing when the worker runs
// already; a stopped worker can be started again.
func (e *Engine) Start() { e.worker.Start() }

// Stop cancels the worker's running Step and waits for it to end. It does
// nothing when the worker does not run.
func (e *Engine) Stop() { e.worker.Stop() }

package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Revoke revokes the lease leaseID, and needs keel.CapUpdate on
// "sys/leases/revoke".
//
// With sync false the revocation is queued: in one transaction the lease
// becomes expired (ExpireTime is set to now unless earlier) and due for
// revocation now (NextAttempt and the expiry index), and the worker is
// woken; Revoke returns without calling the engine. Queuing an irrevocable
// lease schedules an immediate retry.
//
// With sync true Revoke calls the mount's Revoker now, outside any
// transaction, then removes the lease and its index entries in one
// transaction. When the Revoker fails, Revoke returns its error (kind
// keel.KindUnavailable unless it has a kind) and the lease stays, expired
// and scheduled for a retry by the worker as after any failed attempt.
// When no Revoker is registered for the lease's mount, Revoke fails with
// keel.KindUnavailable and the lease stays as it was: that is no failure
// of an engine.
//
// As in Vault, revoking an id that names no lease succeeds and does
// nothing. Revoke fails with an error of kind keel.KindInvalid for an
// empty id.
func (m *Manager) Revoke(ctx context.Context, leaseID string, sync bool) (err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Revoke", leaseID, nil)
	if err != nil {
		return err
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return m.revoke(ctx, leaseID, sync)
}

func (m *Manager) revoke(ctx context.Context, leaseID string, sync bool) error {
	if err := m.authorize(ctx, "revoke", keel.CapUpdate, "sys/leases/revoke"); err != nil {
		return err
	}
	if err := requireID(leaseID); err != nil {
		return fmt.Errorf("lease: revoke: %w", err)
	}
	if sync {
		return m.revokeNow(ctx, leaseID)
	}
	return m.queue(ctx, leaseID)
}

// queue makes the lease id due for revocation now, if it exists.
func (m *Manager) queue(ctx context.Context, id string) error {
	now := m.now()
	key := idKey(id)
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		raw, err := tx.Get(key)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		e, err := decodeEntry(id, raw)
		if err != nil {
			return err
		}
		return queueEntryAt(tx, key, &e, now)
	})
	if err != nil {
		return fmt.Errorf("lease: revoke %q: %w", id, err)
	}
	m.Wake()
	return nil
}

// queueEntry makes e expired and due at now, unless it already is.
func queueEntry(tx storage.Tx, e *entry, now time.Time) error {
	return queueEntryAt(tx, idKey(e.ID), e, now)
}

// queueEntryAt is queueEntry for a caller that has built the key of e's
// record.
func queueEntryAt(tx storage.Tx, key string, e *entry, now time.Time) error {
	if !e.ExpireTime.After(now) && !e.NextAttempt.After(now) {
		return nil
	}
	ne := *e
	if ne.ExpireTime.After(now) {
		ne.ExpireTime = now
	}
	if ne.NextAttempt.After(now) {
		ne.NextAttempt = now
	}
	return putEntryAt(tx, key, e, &ne)
}

// revokeNow revokes the lease id through its engine and removes it.
func (m *Manager) revokeNow(ctx context.Context, id string) error {
	e, raw, err := m.load(ctx, id)
	if errors.Is(err, keel.KindNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lease: revoke: %w", err)
	}
	if err := m.revokeLoaded(ctx, &e, raw); err != nil {
		return fmt.Errorf("lease: revoke: %w", err)
	}
	return nil
}

// revokeLoaded calls the Revoker of e, read as raw, and removes the lease;
// on failure it records the failed attempt (if the lease is unchanged) and
// returns the classified error.
func (m *Manager) revokeLoaded(ctx context.Context, e *entry, raw []byte) error {
	now := m.now()
	rerr := m.callRevoker(ctx, e.Lease)
	if errors.Is(rerr, errNoRevoker) {
		// Not a failure of an engine: this process does not serve the
		// mount (yet). The lease stays as it is.
		return fmt.Errorf("lease %q: %w: %w", e.ID, rerr, keel.KindUnavailable)
	}
	if rerr == nil {
		err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			q := newQuotaTx(tx)
			if err := removeCurrent(tx, q, e.ID, ""); err != nil {
				return err
			}
			return q.flush()
		})
		if err != nil {
			return fmt.Errorf("lease %q: revoked, but not removed: %w", e.ID, err)
		}
		m.log.Info("lease revoked", "lease_id", e.ID)
		return nil
	}
	cerr := fmt.Errorf("lease %q: %w", e.ID, classify(rerr))
	if ctx.Err() != nil {
		return cerr // interrupted: not a failure of the engine
	}
	ne := m.failed(e, now, rerr)
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return putIfUnchanged(tx, e, raw, &ne)
	})
	if err != nil {
		return errors.Join(cerr, fmt.Errorf("recording the failure: %w", err))
	}
	m.logFailure(&ne, rerr)
	m.Wake()
	return cerr
}

// removeCurrent deletes the lease id as it is now stored, with its index
// entries, and the expiry-index entry indexKey if not empty, and uncounts
// it from the quotas of q (the caller flushes q before its transaction
// ends). A missing lease is not an error; an undecodable one loses its
// record only.
func removeCurrent(tx storage.Tx, q *quotaTx, id, indexKey string) error {
	if indexKey != "" {
		if err := tx.Delete(indexKey); err != nil {
			return err
		}
	}
	key := idKey(id)
	raw, err := tx.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := q.removed(id); err != nil {
		return err
	}
	cur, err := decodeIndexed(id, raw)
	if err != nil {
		return tx.Delete(key)
	}
	return deleteEntry(tx, key, &cur, indexKey)
}

// putIfUnchanged stores ne in place of e if the record of e still reads
// raw; otherwise it leaves the newer state alone.
func putIfUnchanged(tx storage.Tx, e *entry, raw []byte, ne *entry) error {
	cur, err := tx.Get(idKey(e.ID))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, raw) {
		return nil
	}
	return putEntry(tx, e, ne)
}

// errNoRevoker is the error of callRevoker for a lease of a mount that
// is not registered.
var errNoRevoker = errors.New("no revoker is registered for its mount")

// callRevoker calls the Revoker registered for l's mount, turning a panic
// into an error; without one it fails with errNoRevoker. A success opens
// the mount's revocation lane (see lanes).
func (m *Manager) callRevoker(ctx context.Context, l Lease) (err error) {
	_, mt, ok := m.mountFor(l.ID)
	if !ok || mt.revoker == nil {
		return errNoRevoker
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("revoker panicked: %v", p)
		}
		if err == nil {
			m.lanes.succeeded(l.Mount)
		}
	}()
	return mt.revoker.Revoke(ctx, l)
}

// failed returns e after a failed revocation attempt at now: one more
// attempt, the error kept, expired, and due again after the backoff; or
// irrevocable after Options.MaxAttempts attempts or a Permanent error,
// then due again after Options.IrrevocableRetry.
func (m *Manager) failed(e *entry, now time.Time, err error) entry {
	ne := *e
	ne.Attempts++
	msg := err.Error()
	if msg == "" {
		msg = "unknown"
	}
	if ne.ExpireTime.After(now) {
		ne.ExpireTime = now
	}
	switch {
	case ne.Irrevocable:
		ne.NextAttempt = now.Add(m.opts.IrrevocableRetry)
	case isPermanent(err):
		ne.Irrevocable = true
		ne.NextAttempt = now.Add(m.opts.IrrevocableRetry)
	case ne.Attempts >= m.opts.MaxAttempts:
		ne.Irrevocable = true
		ne.NextAttempt = now.Add(m.opts.IrrevocableRetry)
		msg = "out of retries: " + msg
	default:
		ne.NextAttempt = now.Add(m.backoff(ne.Attempts))
	}
	ne.LastError = truncateError(msg)
	return ne
}

// unknownMountRetry is how soon the worker looks again, at first, at a due
// lease of a mount that is not registered: another process may just have
// mounted it, and this one registers it within a second (package mount
// watches the table).
const unknownMountRetry = time.Second

// postponed returns e, due at now, put off because no Revoker serves its
// mount here: due again after as long as it has waited since its expiry
// (so the waits double without a counter), at least unknownMountRetry (or
// RetryBase if shorter) and at most RetryMax. Nothing else changes: no
// attempt is counted and no error recorded.
func (m *Manager) postponed(e *entry, now time.Time) entry {
	ne := *e
	d := min(max(now.Sub(e.ExpireTime), unknownMountRetry), m.opts.RetryMax)
	d = max(d, min(unknownMountRetry, m.opts.RetryBase))
	ne.NextAttempt = now.Add(d)
	return ne
}

// logFailure logs a failed revocation whose outcome is ne.
func (m *Manager) logFailure(ne *entry, err error) {
	if ne.Irrevocable {
		m.log.Error("lease is irrevocable", "lease_id", ne.ID, "attempts", ne.Attempts, "next_attempt", ne.NextAttempt, "error", err)
		return
	}
	m.log.Warn("lease revocation failed", "lease_id", ne.ID, "attempts", ne.Attempts, "next_attempt", ne.NextAttempt, "error", err)
}

// RevokePrefix revokes every lease under prefix, and needs keel.CapSudo on
// "sys/leases/revoke-prefix/"+prefix (prefix as given). As in Vault, a
// prefix without a trailing "/" names the lease of that exact id if there
// is one, and otherwise the leases under prefix+"/": "ldap/creds/app"
// does not reach "ldap/creds/app2/…".
//
// With sync false each lease is queued as by Revoke; with sync true each
// is revoked as by Revoke with sync, in id order, and RevokePrefix stops
// at the first failure and returns it (that lease is scheduled for retry;
// the ones after it are untouched).
//
// The leases are handled in batches of Limits().Batch, one transaction
// per batch: when an error stops RevokePrefix, the batches before it are
// done. Repeating the call is safe. An empty prefix fails with an error of
// kind keel.KindInvalid; a prefix that matches nothing succeeds.
func (m *Manager) RevokePrefix(ctx context.Context, prefix string, sync bool) (err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.RevokePrefix", prefix, nil)
	if err != nil {
		return err
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return m.revokePrefix(ctx, prefix, sync)
}

func (m *Manager) revokePrefix(ctx context.Context, prefix string, sync bool) error {
	if err := m.authorize(ctx, "revoke-prefix", keel.CapSudo, "sys/leases/revoke-prefix/"+prefix); err != nil {
		return err
	}
	prefix, exact, err := m.resolvePrefix(ctx, prefix)
	if err != nil {
		return fmt.Errorf("lease: revoke-prefix: %w", err)
	}
	switch {
	case exact && sync:
		return m.revokeNow(ctx, prefix)
	case exact:
		return m.queue(ctx, prefix)
	case sync:
		err = m.revokeAll(ctx, prefix, false)
	default:
		err = m.queueAll(ctx, prefix)
	}
	if err != nil {
		return fmt.Errorf("lease: revoke-prefix %q: %w", prefix, err)
	}
	return nil
}

// RevokeForce removes every lease under prefix, as RevokePrefix with sync
// does, but ignores the errors of the revokers (it logs them) and the
// absence of one: it is the only way to remove a lease whose secret cannot
// be revoked, such as an irrevocable lease. It needs keel.CapSudo on
// "sys/leases/revoke-force/"+prefix (prefix as given). The prefix rules,
// batches and errors are those of RevokePrefix; the errors left are those
// of the store.
func (m *Manager) RevokeForce(ctx context.Context, prefix string) (err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.RevokeForce", prefix, nil)
	if err != nil {
		return err
	}
	if op != nil {
		defer func() { op.End(nil, err) }()
	}
	return m.revokeForce(ctx, prefix)
}

func (m *Manager) revokeForce(ctx context.Context, prefix string) error {
	if err := m.authorize(ctx, "revoke-force", keel.CapSudo, "sys/leases/revoke-force/"+prefix); err != nil {
		return err
	}
	prefix, exact, err := m.resolvePrefix(ctx, prefix)
	if err != nil {
		return fmt.Errorf("lease: revoke-force: %w", err)
	}
	if exact {
		err = m.forceOne(ctx, prefix)
	} else {
		err = m.revokeAll(ctx, prefix, true)
	}
	if err != nil {
		return fmt.Errorf("lease: revoke-force %q: %w", prefix, err)
	}
	return nil
}

// resolvePrefix applies Vault's prefix rule: prefix itself when it ends in
// "/" or is the id of a stored lease (exact), prefix+"/" otherwise.
func (m *Manager) resolvePrefix(ctx context.Context, prefix string) (string, bool, error) {
	if prefix == "" {
		return "", false, keel.Invalid("Prefix", "is required")
	}
	if strings.HasSuffix(prefix, "/") {
		return prefix, false, nil
	}
	exact := false
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get(idKey(prefix))
		if errors.Is(err, storage.ErrNotFound) {
			exact = false
			return nil
		}
		exact = err == nil
		return err
	})
	if err != nil {
		return "", false, err
	}
	if exact {
		return prefix, true, nil
	}
	return prefix + "/", false, nil
}

// queueAll queues every lease under prefix, a batch per transaction.
func (m *Manager) queueAll(ctx context.Context, prefix string) error {
	defer m.Wake()
	now := m.now()
	after := ""
	for {
		var last string
		var n int
		err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			page, err := scanPage(tx, idKey(prefix), after, m.batch)
			if err != nil {
				return err
			}
			last, n = "", len(page)
			for _, kv := range page {
				id := idOf(kv.key)
				e, err := decodeEntry(id, kv.value)
				if err != nil {
					return err
				}
				if err := queueEntry(tx, &e, now); err != nil {
					return err
				}
				last = kv.key
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n < m.batch {
			return nil
		}
		after = last
	}
}

// revokeAll revokes every lease under prefix, which ends in "/", a batch
// per transaction; see revokePage.
func (m *Manager) revokeAll(ctx context.Context, prefix string, force bool) error {
	after := ""
	for {
		var page []keyValue
		err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			page, err = scanPage(tx, idKey(prefix), after, m.batch)
			return err
		})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		if err := m.revokePage(ctx, page, force); err != nil {
			return err
		}
		if len(page) < m.batch {
			return nil
		}
		after = page[len(page)-1].key
	}
}

// forceOne removes the lease id as RevokeForce does.
func (m *Manager) forceOne(ctx context.Context, id string) error {
	var raw []byte
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		raw, err = tx.Get(idKey(id))
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return m.revokePage(ctx, []keyValue{{key: idKey(id), value: raw}}, true)
}

// revokePage calls the revokers of the leases of page (records read in a
// View), in order, then removes the revoked leases in one transaction.
// Without force it stops at the first failure (an undecodable record is
// one), records it with the removals, and returns it. With force it logs
// failures and removes every lease anyway.
func (m *Manager) revokePage(ctx context.Context, page []keyValue, force bool) error {
	now := m.now()
	var removed []string
	var failure error
	var failedEntry, failedNext entry
	var failedRaw []byte
	for _, kv := range page {
		id := idOf(kv.key)
		e, err := decodeEntry(id, kv.value)
		if err != nil {
			if !force {
				failure = err
				break
			}
			m.log.Error("removing an undecodable lease record", "lease_id", id, "error", err)
			removed = append(removed, id)
			continue
		}
		rerr := m.callRevoker(ctx, e.Lease)
		if rerr != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(rerr, errNoRevoker) && !force {
			// No engine failed: this process does not serve the mount
			// (yet). The lease stays as it is.
			failure = fmt.Errorf("lease %q: %w: %w", id, rerr, keel.KindUnavailable)
			break
		}
		if rerr != nil && !force {
			failure = fmt.Errorf("lease %q: %w", id, classify(rerr))
			failedEntry, failedRaw = e, kv.value
			failedNext = m.failed(&e, now, rerr)
			break
		}
		if rerr != nil {
			m.log.Warn("revoke-force: ignoring the revoker's error", "lease_id", id, "error", rerr)
		}
		removed = append(removed, id)
	}
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		q := newQuotaTx(tx)
		for _, id := range removed {
			if err := removeCurrent(tx, q, id, ""); err != nil {
				return err
			}
		}
		if failedRaw != nil {
			if err := putIfUnchanged(tx, &failedEntry, failedRaw, &failedNext); err != nil {
				return err
			}
		}
		return q.flush()
	})
	if err != nil {
		if failure != nil {
			return errors.Join(failure, err)
		}
		return err
	}
	for _, id := range removed {
		m.log.Info("lease revoked", "lease_id", id, "force", force)
	}
	if failedRaw != nil {
		m.logFailure(&failedNext, failure)
		m.Wake()
	}
	return failure
}

// keyValue is a key and its value, read by scanPage.
type keyValue struct {
	key   string
	value []byte
}

// scanPage returns up to n keys of prefix, with their values, that sort
// after after.
func scanPage(tx storage.Tx, prefix, after string, n int) ([]keyValue, error) {
	page := make([]keyValue, 0, min(n, 64))
	err := tx.Scan(prefix, storage.ScanOptions{After: after}, func(key string, value []byte) error {
		page = append(page, keyValue{key: key, value: value})
		if len(page) == n {
			return storage.StopScan
		}
		return nil
	})
	return page, err
}

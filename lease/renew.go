package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// renewInput is the Input of a lease.Renew an Observer is told of.
type renewInput struct {
	Increment time.Duration
}

// Renewal is the outcome of Renew.
type Renewal struct {
	// Lease is the renewed lease.
	Lease Lease
	// TTL is the TTL granted: ExpireTime - the time of the renewal. It is
	// Requested, or less when Capped.
	TTL time.Duration
	// Requested is the TTL asked for: the increment, or the TTL the lease
	// was issued with when the increment was 0.
	Requested time.Duration
	// Capped reports that Requested would have outlived the lease's max
	// TTL (counted from IssueTime), so that TTL is only what the max TTL
	// left: IssueTime+MaxTTL - the time of the renewal.
	Capped bool
	// Data is what the mount's Refresher answered (a kv secret read
	// anew); nil without one.
	Data any `keel:"secret"`
}

// Renew extends the lease leaseID to now+increment, and needs
// keel.CapUpdate on "sys/leases/renew". An increment of 0 grants again the
// TTL the lease was issued with (Vault asks the engine, which usually
// answers with its default TTL; keel's engines gave that TTL at issue).
// The new expiry is capped at IssueTime+MaxTTL; the Renewal then reports
// Capped, with the TTL Requested and the TTL granted (an adapter renders
// Vault's warning from them). LastRenewalTime becomes now; the expiry
// index moves in the same transaction.
//
// When the mount's Revoker implements Renewer, Refresher, or both, Renew
// calls them (Renewer first) before storing, outside any transaction; an
// error of either refuses the renewal. The
// renewal is then stored only if the lease is still exactly what Renew read
// before calling the Renewer; otherwise Renew fails with an error of kind
// keel.KindConflict (another operation changed the lease meanwhile; the
// Renewer's work was done for a state that no longer exists) and the
// caller may try again. Without a Renewer or a Refresher, Renew reads,
// checks and stores the lease in one transaction.
//
// Renew fails with an error of kind keel.KindInvalid, and changes nothing,
// for an empty leaseID, a negative increment (fields "LeaseID",
// "Increment"), and on the field "LeaseID" for a token lease ("use the
// token renew endpoint"), an irrevocable, expired or non-renewable lease,
// and a lease past its max TTL; of kind keel.KindNotFound for an unknown id; of
// kind keel.KindUnavailable when no Revoker is registered for the lease's
// mount; with the Renewer's error, classified as keel.KindUnavailable
// unless it has a kind.
func (m *Manager) Renew(ctx context.Context, leaseID string, increment time.Duration) (r Renewal, err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Renew", leaseID, renewInput{increment})
	if err != nil {
		return Renewal{}, err
	}
	if op != nil {
		defer func() { op.End(r, err) }()
	}
	return m.renew(ctx, leaseID, increment)
}

func (m *Manager) renew(ctx context.Context, leaseID string, increment time.Duration) (Renewal, error) {
	if err := m.authorize(ctx, "renew", keel.CapUpdate, "sys/leases/renew"); err != nil {
		return Renewal{}, err
	}
	var v keel.Validation
	if leaseID == "" {
		v.Add("LeaseID", "is required")
	}
	if increment < 0 {
		v.Add("Increment", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return Renewal{}, fmt.Errorf("lease: renew: %w", err)
	}
	key := idKey(leaseID)
	_, mt, ok := m.mountFor(leaseID)
	if ok && mt.revoker != nil && !asksEngine(mt.revoker) {
		return m.renewStored(ctx, key, leaseID, increment)
	}
	e, raw, err := m.loadAt(ctx, key, leaseID)
	if err != nil {
		return Renewal{}, fmt.Errorf("lease: renew: %w", err)
	}
	now := m.now()
	r, err := checkRenewal(&e, now, increment)
	if err != nil {
		return Renewal{}, err
	}
	if !ok || mt.revoker == nil {
		return Renewal{}, fmt.Errorf("lease: renew %q: no engine is registered for its mount: %w", leaseID, keel.KindUnavailable)
	}
	if rn, ok := mt.revoker.(Renewer); ok {
		if err := guard(func() error { return rn.Renew(ctx, e.Lease, r.TTL) }); err != nil {
			return Renewal{}, fmt.Errorf("lease: renew %q: refused by the engine: %w", leaseID, classify(err))
		}
	}
	if rf, ok := mt.revoker.(Refresher); ok {
		err := guard(func() (err error) {
			r.Data, err = rf.Refresh(ctx, e.Lease)
			return err
		})
		if err != nil {
			return Renewal{}, fmt.Errorf("lease: renew %q: refused by the engine: %w", leaseID, classify(err))
		}
	}
	ne := renewed(&e, now, r.TTL)
	err = m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		cur, err := tx.Get(key)
		if errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("lease %q was revoked during its renewal: %w", leaseID, keel.KindNotFound)
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(cur, raw) {
			return fmt.Errorf("lease %q changed during its renewal; try again: %w", leaseID, keel.KindConflict)
		}
		return putEntryAt(tx, key, &e, &ne)
	})
	if err != nil {
		return Renewal{}, fmt.Errorf("lease: renew: %w", err)
	}
	m.wakeFor(ne.NextAttempt)
	r.Lease = ne.Lease
	return r, nil
}

// asksEngine reports whether Renew must call r (a Renewer or a Refresher)
// between reading the lease and storing its renewal.
func asksEngine(r Revoker) bool {
	_, rn := r.(Renewer)
	_, rf := r.(Refresher)
	return rn || rf
}

// renewStored is renew for a lease whose engine is not asked (see
// asksEngine), whose record key is key: it reads, checks and stores the
// renewal in one transaction, where renew with an engine reads in one and
// stores in another (the engine is called between them, outside any
// transaction). The outcomes and errors are renew's; a renewal cannot
// conflict.
func (m *Manager) renewStored(ctx context.Context, key, leaseID string, increment time.Duration) (Renewal, error) {
	var r Renewal
	var refused error // final: not wrapped again
	err := m.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		raw, err := tx.Get(key)
		if errors.Is(err, storage.ErrNotFound) {
			return notFound(leaseID)
		}
		if err != nil {
			return err
		}
		e, err := decodeEntry(leaseID, raw)
		if err != nil {
			return err
		}
		now := m.now()
		if r, refused = checkRenewal(&e, now, increment); refused != nil {
			return refused
		}
		ne := renewed(&e, now, r.TTL)
		r.Lease = ne.Lease
		return putEntryAt(tx, key, &e, &ne)
	})
	if refused != nil && errors.Is(err, refused) {
		return Renewal{}, err
	}
	if err != nil {
		return Renewal{}, fmt.Errorf("lease: renew: %w", err)
	}
	m.wakeFor(r.Lease.NextAttempt)
	return r, nil
}

// checkRenewal returns the TTLs of a renewal of e by increment at now
// (Renewal without Lease and Data), or the error that refuses it.
func checkRenewal(e *entry, now time.Time, increment time.Duration) (Renewal, error) {
	refuse := func(format string, args ...any) (Renewal, error) {
		return Renewal{}, fmt.Errorf("lease: renew %q: %w", e.ID, keel.Invalid("LeaseID", format, args...))
	}
	switch {
	case e.Token:
		return refuse("tokens cannot be renewed through this endpoint; use the token renew endpoint")
	case e.Irrevocable:
		return refuse("lease is irrevocable: %s", e.LastError)
	case !e.ExpireTime.After(now):
		return refuse("lease expired")
	case !e.Renewable:
		return refuse("lease is not renewable")
	}
	ttl := increment
	if ttl == 0 {
		ttl = e.IssuedTTL
	}
	left := e.IssueTime.Add(e.MaxTTL).Sub(now)
	if left <= 0 {
		return refuse("past the max TTL, cannot renew")
	}
	requested, capped := ttl, ttl > left
	if capped {
		ttl = left
	}
	return Renewal{TTL: ttl, Requested: requested, Capped: capped}, nil
}

// renewed returns e renewed at now for ttl.
func renewed(e *entry, now time.Time, ttl time.Duration) entry {
	ne := *e
	ne.ExpireTime = now.Add(ttl)
	ne.NextAttempt = ne.ExpireTime
	ne.LastRenewalTime = now
	return ne
}

// guard calls fn, turning a panic of the engine's code into an error.
func guard(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine panicked: %v", p)
		}
	}()
	return fn()
}

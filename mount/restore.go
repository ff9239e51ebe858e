package mount

import (
	"context"
	"errors"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/storage"
)

// Restorer is an Engine that keeps credentials which a copy of the store
// may hold stale (a password rotated after the copy was taken, an account
// checked out since). MarkRestored tells it that its store was restored
// from a copy: it checks its credentials against their system again before
// it serves them, and keeps that mark in its store, so that every table of
// the store sees it. Calling it twice marks once.
type Restorer interface {
	MarkRestored(ctx context.Context) error
}

// The directory engines check their passwords again after a restore.
var _ Restorer = (*ldapengine.Engine)(nil)

// MarkRestored readies a table whose store was just restored from a copy:
// it holds the lease manager (lease.Manager.Hold: every Manager of the
// store keeps its due leases until Release), brings the table in line
// with the stored one (the restore changed it), then calls MarkRestored on
// every served engine that is a Restorer, the caller's context given. It
// needs keel.CapSudo on "sys/leases/hold"; without it nothing is done. A
// failing engine does not stop the others: every failure is returned,
// joined.
func (t *Table) MarkRestored(ctx context.Context) (err error) {
	defer errPrefix.Set(&err)
	return keel.ObserveErr(ctx, t.obs, t.clock, "mount.MarkRestored", "", nil, func(ctx context.Context) error {
		return t.markRestored(ctx)
	})
}

func (t *Table) markRestored(ctx context.Context) (err error) {
	defer errPrefix.Set(&err)
	if err := t.leases.Hold(ctx); err != nil {
		return errPrefix.Wrapf(err, "mark restored")
	}
	var errs []error
	if err := t.reconcile(ctx); err != nil {
		errs = append(errs, errPrefix.Wrapf(err, "mark restored: reading the table"))
	}
	for _, m := range t.list() {
		r, ok := m.Engine.(Restorer)
		if !ok || !m.Served() {
			continue
		}
		if err := r.MarkRestored(ctx); err != nil {
			errs = append(errs, errPrefix.Wrapf(err, "mark restored: %q", m.Path))
		}
	}
	return errors.Join(errs...)
}

// PrepareRestore holds the leases of the table kept in the store of tx (a
// transaction of the store a table is opened on), as lease.Manager.Hold
// does, without a Table. A program restoring a copy into a store calls it
// in a transaction that commits before the copy's first key is written
// (snapshot.RestoreOptions.Prepare), so that no table serving the store
// revokes a lease of the copy before MarkRestored.
func PrepareRestore(_ context.Context, tx storage.Tx) error {
	// The lease manager's hold key (see lease.Manager.Hold), in the
	// lease manager's part of the table's store.
	return tx.Put(leasePrefix+"hold", []byte{1})
}

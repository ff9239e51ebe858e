package mount

import (
	"context"
	"errors"
	"slices"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Disable removes the mount at path: it stops serving it, revokes its
// leases through its engine, deletes its data and drops it from the table.
// It needs keel.CapDelete on "sys/mounts/PATH". Disabling a path where
// nothing is mounted succeeds, as in Vault.
//
// The removal is resumable. The entry is first marked as being disabled
// (one transaction): from then on the mount is not served, and no new
// mount can be enabled at, above or below its path. Its leases are revoked
// (an engine that cannot revoke one makes Disable fail with the engine's
// error; Disable again finishes the work), then its data is deleted in
// batches sized from the store's limits, then the entry leaves the table.
// A crash at any point leaves the entry marked, and Open finishes the
// removal; a mount enabled later at the same path never sees the old data.
func (t *Table) Disable(ctx context.Context, path string) (err error) {
	defer errPrefix.Set(&err)
	return keel.ObserveErr(ctx, t.obs, t.clock, "mount.Disable", path, nil, func(ctx context.Context) error {
		return t.disable(ctx, path)
	})
}

func (t *Table) disable(ctx context.Context, path string) (err error) {
	defer errPrefix.Set(&err)
	path = normPath(path)
	if err := keel.Authorize(ctx, t.auth, keel.CapDelete, "sys/mounts/"+path); err != nil {
		return errPrefix.Wrapf(err, "disable")
	}
	t.opMu.Lock()
	defer t.opMu.Unlock()
	if err := t.checkOpen(); err != nil {
		return errPrefix.Wrapf(err, "disable %q", path)
	}
	t.mu.RLock()
	m, ok := t.mounts[path]
	t.mu.RUnlock()
	if !ok {
		return nil
	}
	if !m.Disabling {
		err := t.changeTable(ctx, func(_ storage.Tx, entries []Entry) ([]Entry, error) {
			for i := range entries {
				if entries[i].Path == path {
					entries[i].Disabling = true
				}
			}
			return entries, nil
		})
		if err != nil {
			return errPrefix.Wrapf(err, "disable %q", path)
		}
		t.mu.Lock()
		marked := *m
		marked.Disabling = true
		m = &marked
		t.mounts[path] = m
		t.mu.Unlock()
	}
	return t.finishDisable(ctx, m)
}

// finishDisable revokes the leases of m, which is marked, deletes its data
// and drops it from the table.
//
// While the guard stands, the leases are revoked through the engine; a
// request routed to the mount before it was marked may still issue one
// meanwhile. Once the guard is deleted, no engine of the mount, in any
// process, reads, writes or issues a lease (lease.Issuer stores its leases
// in the guarded view's transactions): what slipped in between is revoked
// with force, its Revoker called and its errors ignored, so that no lease
// outlives the mount to be taken by the next mount at the path. A mount
// whose guard is already gone (a removal resumed after that step, or a
// table stored before guards existed) goes straight to that step.
func (t *Table) finishDisable(ctx context.Context, m *Mount) error {
	stop(m)
	ctx = system(context.WithoutCancel(ctx))
	guarded, err := t.hasGuard(ctx, m.Entry)
	if err != nil {
		return errPrefix.Wrapf(err, "disable %q", m.Path)
	}
	if guarded && m.Engine != nil {
		if err := t.leases.RevokePrefix(ctx, m.Path, true); err != nil {
			return errPrefix.Wrapf(err, "disable %q: revoking its leases", m.Path)
		}
	}
	err = t.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Delete(guardKey(m.Entry)) })
	if err != nil {
		return errPrefix.Wrapf(err, "disable %q", m.Path)
	}
	if err := t.leases.RevokeForce(ctx, m.Path); err != nil {
		return errPrefix.Wrapf(err, "disable %q: revoking its last leases", m.Path)
	}
	t.leases.Unregister(m.Path)
	if _, err := storage.DeletePrefix(ctx, t.store, dataPrefix(m.Entry)); err != nil {
		return errPrefix.Wrapf(err, "disable %q: deleting its data", m.Path)
	}
	err = t.changeTable(ctx, func(_ storage.Tx, entries []Entry) ([]Entry, error) {
		return slices.DeleteFunc(entries, func(e Entry) bool { return e.Path == m.Path }), nil
	})
	if err != nil {
		return errPrefix.Wrapf(err, "disable %q", m.Path)
	}
	t.mu.Lock()
	delete(t.mounts, m.Path)
	t.mu.Unlock()
	return nil
}

// hasGuard reports whether the guard key of e is stored.
func (t *Table) hasGuard(ctx context.Context, e Entry) (bool, error) {
	found := false
	err := t.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get(guardKey(e))
		found = err == nil
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	})
	return found, err
}

package mount

import (
	"context"
	"fmt"
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
func (t *Table) Disable(ctx context.Context, path string) error {
	path = normPath(path)
	if err := keel.Authorize(ctx, t.auth, keel.CapDelete, "sys/mounts/"+path); err != nil {
		return fmt.Errorf("mount: disable: %w", err)
	}
	t.opMu.Lock()
	defer t.opMu.Unlock()
	if err := t.checkOpen(); err != nil {
		return fmt.Errorf("mount: disable %q: %w", path, err)
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
			return fmt.Errorf("mount: disable %q: %w", path, err)
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
func (t *Table) finishDisable(ctx context.Context, m *Mount) error {
	stop(m)
	ctx = system(context.WithoutCancel(ctx))
	var err error
	if m.Engine != nil {
		err = t.leases.RevokePrefix(ctx, m.Path, true)
	} else {
		// No engine to revoke through: the secrets behind them cannot
		// be reached; drop the records.
		err = t.leases.RevokeForce(ctx, m.Path)
	}
	if err != nil {
		return fmt.Errorf("mount: disable %q: revoking its leases: %w", m.Path, err)
	}
	t.leases.Unregister(m.Path)
	// From the guard's deletion on, no engine of the mount, in any
	// process, reads or writes its data: what it wrote before is deleted
	// next.
	err = t.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Delete(guardKey(m.Entry)) })
	if err != nil {
		return fmt.Errorf("mount: disable %q: %w", m.Path, err)
	}
	if _, err := storage.DeletePrefix(ctx, t.store, dataPrefix(m.Entry)); err != nil {
		return fmt.Errorf("mount: disable %q: deleting its data: %w", m.Path, err)
	}
	err = t.changeTable(ctx, func(_ storage.Tx, entries []Entry) ([]Entry, error) {
		return slices.DeleteFunc(entries, func(e Entry) bool { return e.Path == m.Path }), nil
	})
	if err != nil {
		return fmt.Errorf("mount: disable %q: %w", m.Path, err)
	}
	t.mu.Lock()
	delete(t.mounts, m.Path)
	t.mu.Unlock()
	return nil
}

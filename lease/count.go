package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Counts are the numbers of leases of a Manager's store at one instant.
type Counts struct {
	Live        int // every lease stored: not yet revoked (Vault's num_leases)
	Irrevocable int // those given up on (see ListIrrevocable)
	Due         int // those whose time has come and that are not revoked yet
}

// Count counts the leases of the store, in one read-only transaction, and
// needs keel.CapRead on "sys/leases/count". It reads keys only, never a
// lease's record: its cost grows with the leases stored (a metrics
// collector calls it once a scrape, not once a request).
func (m *Manager) Count(ctx context.Context) (Counts, error) {
	if err := m.authorize(ctx, "count", keel.CapRead, "sys/leases/count"); err != nil {
		return Counts{}, err
	}
	// Keys below dueEnd are due at now or before.
	dueEnd := dueKey(m.clock.Now().Add(time.Nanosecond), "")
	var c Counts
	keys := storage.ScanOptions{KeysOnly: true}
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		c = Counts{}
		count := func(n *int) func(string, []byte) error {
			return func(string, []byte) error { *n++; return nil }
		}
		if err := tx.Scan(idPrefix, keys, count(&c.Live)); err != nil {
			return err
		}
		if err := tx.Scan(irrPrefix, keys, count(&c.Irrevocable)); err != nil {
			return err
		}
		return tx.Scan(duePrefix, keys, func(key string, _ []byte) error {
			if key >= dueEnd {
				return storage.StopScan
			}
			c.Due++
			return nil
		})
	})
	if err != nil {
		return Counts{}, fmt.Errorf("lease: count: %w", err)
	}
	return c, nil
}

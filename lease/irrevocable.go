package lease

import (
	"context"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// IrrevocableCounts are the counts of irrevocable leases.
type IrrevocableCounts struct {
	// Total is the number of irrevocable leases (Vault's lease_count).
	Total int
	// ByMount maps a mount, such as "ldap/", to its number of
	// irrevocable leases (Vault's counts, keyed there by mount
	// accessor). It is never nil.
	ByMount map[string]int
}

// CountIrrevocable counts the irrevocable leases, and needs keel.CapRead on
// "sys/leases/count". It reads the irrevocable index only, never the other
// leases. keel has no namespaces: the counts are those of the whole
// manager.
func (m *Manager) CountIrrevocable(ctx context.Context) (IrrevocableCounts, error) {
	if err := m.authorize(ctx, "count", keel.CapRead, "sys/leases/count"); err != nil {
		return IrrevocableCounts{}, err
	}
	var out IrrevocableCounts
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = IrrevocableCounts{ByMount: map[string]int{}}
		return tx.Scan(irrPrefix, storage.ScanOptions{}, func(key string, value []byte) error {
			mount, _, err := decodeIrr(value)
			if err != nil {
				return fmt.Errorf("irrevocable-index entry %q is corrupt: %w", key, keel.ErrInternal)
			}
			out.Total++
			out.ByMount[mount]++
			return nil
		})
	})
	if err != nil {
		return IrrevocableCounts{}, fmt.Errorf("lease: count irrevocable: %w", err)
	}
	return out, nil
}

// IrrevocableLease is one entry of ListIrrevocable.
type IrrevocableLease struct {
	LeaseID string // the lease id
	Mount   string // its mount, such as "ldap/" (Vault's mount_id)
	Error   string // the error of its last revocation attempt (Vault's error)
}

// IrrevocableList is the outcome of ListIrrevocable.
type IrrevocableList struct {
	// Total is the number of leases in Leases, as Vault's lease_count.
	Total int
	// Leases are the irrevocable leases, in lease id order; never nil.
	Leases []IrrevocableLease
	// Truncated reports that more irrevocable leases exist than the
	// limit let through: Leases holds the first limit of them.
	Truncated bool
}

// DefaultIrrevocableLimit is the number of leases ListIrrevocable returns
// when its limit is 0.
const DefaultIrrevocableLimit = 10000

// ListIrrevocable lists irrevocable leases with their mount and error, and
// needs keel.CapSudo on "sys/leases". It returns at most limit leases:
// limit 0 means DefaultIrrevocableLimit (10,000), a negative limit means
// all. When more exist, the list reports Truncated. The leases come in
// lease id order (Vault sorts what it returns by expiry time, then id;
// keel's order is that of its index, so that the first page costs no more
// than the page). As in CountIrrevocable, there are no namespaces.
func (m *Manager) ListIrrevocable(ctx context.Context, limit int) (IrrevocableList, error) {
	if err := m.authorize(ctx, "list irrevocable", keel.CapSudo, "sys/leases"); err != nil {
		return IrrevocableList{}, err
	}
	if limit == 0 {
		limit = DefaultIrrevocableLimit
	}
	var out IrrevocableList
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = IrrevocableList{Leases: []IrrevocableLease{}}
		return tx.Scan(irrPrefix, storage.ScanOptions{}, func(key string, value []byte) error {
			if limit > 0 && len(out.Leases) == limit {
				out.Truncated = true
				return storage.StopScan
			}
			mount, msg, err := decodeIrr(value)
			if err != nil {
				return fmt.Errorf("irrevocable-index entry %q is corrupt: %w", key, keel.ErrInternal)
			}
			out.Leases = append(out.Leases, IrrevocableLease{LeaseID: key[len(irrPrefix):], Mount: mount, Error: msg})
			return nil
		})
	})
	if err != nil {
		return IrrevocableList{}, fmt.Errorf("lease: list irrevocable: %w", err)
	}
	out.Total = len(out.Leases)
	return out, nil
}

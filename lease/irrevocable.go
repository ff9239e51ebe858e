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
// leases, in one read-only transaction (which no store bounds): its cost
// grows with the irrevocable leases, its result with the mounts only.
// keel has no namespaces: the counts are those of the whole manager.
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
				return fmt.Errorf("irrevocable-index entry %q is corrupt: %w", key, keel.KindInternal)
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

// IrrevocableLease is one item of a page of ListIrrevocable.
type IrrevocableLease struct {
	LeaseID string // the lease id
	Mount   string // its mount, such as "ldap/" (Vault's mount_id)
	Error   string // the error of its last revocation attempt (Vault's error)
}

// defaultIrrevocableLimit is how many leases a page of ListIrrevocable
// holds when its request sets no limit (keel.ListRequest.Limit 0 or
// less): 10,000, the limit of Vault's list when none is given.
const defaultIrrevocableLimit = 10000

// ListIrrevocable returns one page of the irrevocable leases, with their
// mount and error, in lease id order, and needs keel.CapSudo on
// "sys/leases". A page holds at most r.Limit leases
// (10,000 when r.Limit is 0 or less): those whose id
// sorts after r.Cursor, the first ones when it is empty. Its Next is the
// Cursor of the following page, "" on the last page; it is the last lease
// id of the page, and stays valid while leases are revoked or become
// irrevocable: the following page starts after that id. keel.All walks
// every page (Vault's limit "none"); a page with a Next is Vault's list
// cut at its limit. A page costs in proportion to the leases it holds.
//
// Vault sorts what it returns by expiry time, then id; keel's order is
// that of its index, so that a page costs no more than the page. As in
// CountIrrevocable, there are no namespaces. With no irrevocable lease
// (after the cursor), the page has no Items (an empty, non-nil slice) and
// no Next.
func (m *Manager) ListIrrevocable(ctx context.Context, r keel.ListRequest) (keel.Page[IrrevocableLease], error) {
	if err := m.authorize(ctx, "list irrevocable", keel.CapSudo, "sys/leases"); err != nil {
		return keel.Page[IrrevocableLease]{}, err
	}
	limit := r.Limit
	if limit <= 0 {
		limit = defaultIrrevocableLimit
	}
	var opts storage.ScanOptions
	if r.Cursor != "" {
		opts.After = irrKey(r.Cursor)
	}
	var leases []IrrevocableLease
	var more bool
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		leases, more = make([]IrrevocableLease, 0, min(limit, 64)), false
		return tx.Scan(irrPrefix, opts, func(key string, value []byte) error {
			if len(leases) == limit {
				more = true // one entry past the page: another follows
				return storage.StopScan
			}
			mount, msg, err := decodeIrr(value)
			if err != nil {
				return fmt.Errorf("irrevocable-index entry %q is corrupt: %w", key, keel.KindInternal)
			}
			leases = append(leases, IrrevocableLease{LeaseID: key[len(irrPrefix):], Mount: mount, Error: msg})
			return nil
		})
	})
	if err != nil {
		return keel.Page[IrrevocableLease]{}, fmt.Errorf("lease: list irrevocable: %w", err)
	}
	p := keel.Page[IrrevocableLease]{Items: leases}
	if more {
		p.Next = leases[len(leases)-1].LeaseID
	}
	return p, nil
}

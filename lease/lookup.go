package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Lookup returns the lease leaseID. It needs keel.CapUpdate on
// "sys/leases/lookup" (Vault's lookup is a POST).
//
// It fails with an error of kind keel.KindInvalid for an empty id, and of
// kind keel.KindNotFound when no lease has that id, or when the lease has
// expired (its ExpireTime is not after now; the message says so) and no
// revocation of it has failed yet, even if the worker has not revoked it.
// A lease whose revocation failed stays visible until a revocation
// succeeds, as in Vault: expired, with its Attempts, LastError and
// NextAttempt, so that its owner can see why the secret still exists.
func (m *Manager) Lookup(ctx context.Context, leaseID string) (Lease, error) {
	if err := m.authorize(ctx, "lookup", keel.CapUpdate, "sys/leases/lookup"); err != nil {
		return Lease{}, err
	}
	if err := requireID(leaseID); err != nil {
		return Lease{}, fmt.Errorf("lease: lookup: %w", err)
	}
	e, _, err := m.load(ctx, leaseID)
	if err != nil {
		return Lease{}, fmt.Errorf("lease: lookup: %w", err)
	}
	now := m.now()
	if !e.ExpireTime.After(now) && e.Attempts == 0 {
		return Lease{}, fmt.Errorf("lease: lookup: lease %q expired at %s: %w", leaseID, e.ExpireTime.Format(timeFormat), keel.ErrNotFound)
	}
	return e.Lease, nil
}

// timeFormat renders instants in messages.
const timeFormat = "2006-01-02T15:04:05.999999999Z07:00"

// load reads and decodes the lease id in a View of its own; it returns the
// raw record too.
func (m *Manager) load(ctx context.Context, id string) (entry, []byte, error) {
	var raw []byte
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		raw, err = tx.Get(idKey(id))
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return entry{}, nil, notFound(id)
	}
	if err != nil {
		return entry{}, nil, err
	}
	e, err := decodeEntry(id, raw)
	return e, raw, err
}

// List returns the immediate children of prefix among the stored lease
// ids, in ascending order, as Vault's LIST sys/leases/lookup/:prefix does:
// the last segment of a lease id directly under prefix, and a folder name
// ending in "/" once for every deeper path. A prefix that does not end in
// "/" gets one (an empty prefix lists the top level). List needs
// keel.CapSudo on "sys/leases/lookup/"+prefix (prefix as given).
//
// As in Vault, List shows what is stored: an expired lease the worker has
// not revoked yet, and an irrevocable one, are listed. A prefix that
// matches nothing gives an empty, non-nil slice.
func (m *Manager) List(ctx context.Context, prefix string) ([]string, error) {
	if err := m.authorize(ctx, "list", keel.CapSudo, "sys/leases/lookup/"+prefix); err != nil {
		return nil, err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	keys := []string{}
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		keys = keys[:0]
		return storage.Children(tx, idKey(prefix), "", func(name string) error {
			keys = append(keys, name)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lease: list %q: %w", prefix, err)
	}
	return keys, nil
}

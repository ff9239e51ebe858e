package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Get returns the lease leaseID, the lease id Issue gave. It needs
// keel.CapUpdate on "sys/leases/lookup" (Vault's lookup is a POST).
//
// It fails with an error of kind keel.KindInvalid for an empty id, and of
// kind keel.KindNotFound when no lease has that id, or when the lease has
// expired (its ExpireTime is not after now; the message says so) and no
// revocation of it has failed yet, even if the worker has not revoked it.
// A lease whose revocation failed stays visible until a revocation
// succeeds, as in Vault: expired, with its Attempts, LastError and
// NextAttempt, so that its owner can see why the secret still exists. So
// does a due lease while revocations are held (see Hold), with Held set.
func (m *Manager) Get(ctx context.Context, leaseID string) (l Lease, err error) {
	ctx, op, err := keel.Begin(ctx, m.obs, m.clock, "lease.Get", leaseID, nil)
	if err != nil {
		return Lease{}, err
	}
	if op != nil {
		defer func() { op.End(l, err) }()
	}
	return m.get(ctx, leaseID)
}

func (m *Manager) get(ctx context.Context, leaseID string) (Lease, error) {
	if err := m.authorize(ctx, "get", keel.CapUpdate, "sys/leases/lookup"); err != nil {
		return Lease{}, err
	}
	if err := requireID(leaseID); err != nil {
		return Lease{}, fmt.Errorf("lease: get: %w", err)
	}
	var raw []byte
	var held bool
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		if raw, err = tx.Get(idKey(leaseID)); err != nil {
			return err
		}
		held, err = m.held(tx)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		err = notFound(leaseID)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("lease: get: %w", err)
	}
	e, err := decodeEntry(leaseID, raw)
	if err != nil {
		return Lease{}, fmt.Errorf("lease: get: %w", err)
	}
	now := m.now()
	due := !e.NextAttempt.After(now)
	if !e.ExpireTime.After(now) && e.Attempts == 0 && !(held && due) {
		return Lease{}, fmt.Errorf("lease: get: lease %q expired at %s: %w", leaseID, e.ExpireTime.Format(timeFormat), keel.KindNotFound)
	}
	e.Held = held && due
	return e.Lease, nil
}

// timeFormat renders instants in messages.
const timeFormat = "2006-01-02T15:04:05.999999999Z07:00"

// load reads and decodes the lease id in a View of its own; it returns the
// raw record too.
func (m *Manager) load(ctx context.Context, id string) (entry, []byte, error) {
	return m.loadAt(ctx, idKey(id), id)
}

// loadAt is load for a caller that has built the key of the record.
func (m *Manager) loadAt(ctx context.Context, key, id string) (entry, []byte, error) {
	var raw []byte
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		raw, err = tx.Get(key)
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

// defaultListLimit is how many names a page of List holds when its
// request sets no limit (keel.ListRequest.Limit 0 or less).
const defaultListLimit = 1000

// List returns one page of the immediate children of prefix among the
// stored lease ids, in ascending byte order, as Vault's LIST
// sys/leases/lookup/:prefix lists them: the last segment of a lease id
// directly under prefix, and a folder name ending in "/" once for every
// deeper path. prefix is a path of lease ids, such as "ldap/creds/app/";
// one that does not end in "/" gets one, and "" lists the top level. List
// needs keel.CapSudo on "sys/leases/lookup/"+prefix (prefix as given),
// for every page.
//
// A page holds at most r.Limit names (1,000 when r.Limit is 0
// or less): those after r.Cursor, the first ones when it is empty. Its
// Next is the Cursor of the following page, "" on the last page; it is the
// last name of the page, and stays valid while leases come and go: the
// following page starts after that name, whether or not it is still
// stored, so that a walk over every page (keel.All) gives each name that
// stays stored throughout exactly once, in order. A page costs in
// proportion to the names it holds, not to the leases below them.
//
// As in Vault, List shows what is stored: an expired lease the worker has
// not revoked yet, and an irrevocable one, are listed. A prefix that
// matches nothing, or a cursor past its last name, gives a page with no
// Items (an empty, non-nil slice) and no Next.
func (m *Manager) List(ctx context.Context, prefix string, r keel.ListRequest) (keel.Page[string], error) {
	if err := m.authorize(ctx, "list", keel.CapSudo, "sys/leases/lookup/"+prefix); err != nil {
		return keel.Page[string]{}, err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	limit := r.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	// A cursor is a name of this list: a segment, or a folder ending in
	// "/". Cut anything after a folder's "/", so that a page never
	// starts inside a folder it has listed.
	cursor := r.Cursor
	if i := strings.IndexByte(cursor, '/'); i >= 0 {
		cursor = cursor[:i+1]
	}
	var names []string
	err := m.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		names = make([]string, 0, min(limit, 64))
		// One name more than the page, to know whether another follows.
		return storage.Children(tx, idKey(prefix), cursor, func(name string) error {
			names = append(names, name)
			if len(names) > limit {
				return storage.StopScan
			}
			return nil
		})
	})
	if err != nil {
		return keel.Page[string]{}, fmt.Errorf("lease: list %q: %w", prefix, err)
	}
	if len(names) > limit {
		return keel.Page[string]{Items: names[:limit:limit], Next: names[limit-1]}, nil
	}
	return keel.Page[string]{Items: names}, nil
}

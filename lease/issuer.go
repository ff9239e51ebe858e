package lease

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Issuer issues the leases of one registered mount: Register hands it out,
// so an engine cannot issue a lease the Manager would not find, nor under
// a mount it did not register. An Issuer is safe for concurrent use.
type Issuer struct {
	m     *Manager
	mount string
	joint *storage.Joint // the engine's store with the Manager's; nil without Mount.Store
}

// Mount returns the path of the Issuer's mount, ending in "/".
func (i *Issuer) Mount() string { return i.mount }

// Manager returns the Manager that handed out the Issuer.
func (i *Issuer) Manager() *Manager { return i.m }

// Issue stores a new lease for req in a transaction of its own and wakes
// the worker, unless the worker already sleeps until a time no later than
// the lease's expiry. The lease id is req.Path + "/" + 24 random base62
// characters (crypto/rand); IssueTime is now, ExpireTime now + the
// effective TTL.
//
// The effective TTL is req.TTL, or else the mount's default TTL, or else
// the system default; the effective max TTL is the least of req.MaxTTL
// (when set), the mount's max TTL and the system max TTL; the TTL is
// capped at the max TTL.
//
// Issue fails with an error of kind keel.KindInvalid, and stores nothing,
// when req.Path is malformed or does not lie under the Issuer's mount, or a
// TTL is negative; with the store's error when the store fails.
func (i *Issuer) Issue(ctx context.Context, req IssueRequest) (Lease, error) {
	if err := i.check(req); err != nil {
		return Lease{}, err
	}
	return i.m.issue(ctx, req)
}

// IssueFunc issues a lease inside the transaction of Issuer.Update.
type IssueFunc func(req IssueRequest) (Lease, error)

// Update runs fn in one transaction of the engine's store (Mount.Store)
// joined with the Manager's: tx is the engine's view of it, and issue
// stores a lease, checked as Issue checks it, in the same transaction, so
// that the engine's records and its leases commit together or not at all.
// The closure may run more than once, as any Update's; each call of issue
// makes a new id, so keep the Leases of the run that returned nil. After
// the commit, Update wakes the worker for the leases issued.
//
// Update fails with an error of kind keel.KindInternal when the mount was
// registered without a Store.
func (i *Issuer) Update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx, issue IssueFunc) error) error {
	if i.joint == nil {
		return fmt.Errorf("lease: mount %q was registered without a Store: %w", i.mount, keel.ErrInternal)
	}
	var due []time.Time
	err := i.joint.Update(ctx, func(ctx context.Context, tx, leases storage.Tx) error {
		due = due[:0]
		return fn(ctx, tx, func(req IssueRequest) (Lease, error) {
			if err := i.check(req); err != nil {
				return Lease{}, err
			}
			e, err := i.m.newEntry(req)
			if err != nil {
				return Lease{}, err
			}
			if err := putEntry(leases, nil, &e); err != nil {
				return Lease{}, fmt.Errorf("lease: issue for %q: %w", req.Path, err)
			}
			due = append(due, e.NextAttempt)
			return e.Lease, nil
		})
	})
	if err != nil {
		return err
	}
	for _, d := range due {
		i.m.wakeFor(d)
	}
	return nil
}

// Unregister forgets the Issuer's mount (see Manager.Unregister).
func (i *Issuer) Unregister() { i.m.Unregister(i.mount) }

// check refuses a request whose path lies outside the Issuer's mount.
func (i *Issuer) check(req IssueRequest) error {
	if len(req.Path) <= len(i.mount) || !strings.HasPrefix(req.Path, i.mount) {
		return fmt.Errorf("lease: issue: %w", keel.Invalid("Path", "%q does not lie under the mount %q", req.Path, i.mount))
	}
	return nil
}

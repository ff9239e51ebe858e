package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Issuer issues the leases of one registered mount: Register hands it out,
// so an engine cannot issue a lease the Manager would not find, nor under
// a mount it did not register. Inside a transaction of Update it also
// ends the mount's leases (Tx.End), so that an engine that takes back a
// secret (a library check-in) removes its lease in the transaction that
// records it, without calling a Revoker and without a right on
// sys/leases. It cannot touch another mount's leases. An Issuer is safe
// for concurrent use.
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
// the lease's expiry. The lease id is req.Path + "/" + 24 base62
// characters, 7 of the issue time and 17 from crypto/rand; IssueTime is now, ExpireTime now + the
// effective TTL.
//
// The effective TTL is req.TTL, or else the mount's default TTL, or else
// the system default; the effective max TTL is the least of req.MaxTTL
// (when set), the mount's max TTL and the system max TTL; the TTL is
// capped at the max TTL.
//
// For a mount registered with a Store, the lease is stored in a
// transaction of the joined views (as Update stores it), so that a guard
// of the engine's view (storage.Guard) holds for its leases too.
//
// Issue fails with an error of kind keel.KindInvalid, and stores nothing,
// when req.Path is malformed or does not lie under the Issuer's mount, or a
// TTL is negative; with keel.KindUnavailable once the Issuer's mount was
// unregistered or registered again; with the store's error when the store
// fails.
func (i *Issuer) Issue(ctx context.Context, req IssueRequest) (l Lease, err error) {
	ctx, op, err := keel.Begin(ctx, i.m.obs, i.m.clock, "lease.Issue", req.Path, req)
	if err != nil {
		return Lease{}, err
	}
	if op != nil {
		defer func() { op.End(l, err) }()
	}
	return i.issue(ctx, req)
}

func (i *Issuer) issue(ctx context.Context, req IssueRequest) (Lease, error) {
	if i.joint != nil {
		// In a transaction of the joined views, so that a guard of the
		// engine's view (storage.Guard) holds for the lease too.
		var l Lease
		err := i.update(ctx, "issue for", req.Path, func(ctx context.Context, _ storage.Tx, leases *Tx) error {
			var err error
			l, err = leases.Issue(req)
			return err
		})
		return l, err
	}
	mount, err := i.check(req)
	if err != nil {
		return Lease{}, err
	}
	return i.m.issueUnder(ctx, req, &mount)
}

// Update runs fn in one transaction of the engine's store (Mount.Store)
// joined with the Manager's: tx is the engine's view of it, and leases
// issues and ends the leases of the Issuer's mount in the same
// transaction, so that the engine's records and its leases commit
// together or not at all. The closure may run more than once, as any
// Update's, with a new Tx each time; each Issue makes a new id, so keep
// the Leases of the run that returned nil. After the commit, Update
// wakes the worker for the leases issued.
//
// Update fails with an error of kind keel.KindInternal when the mount
// was registered without a Store; with fn's error, as fn returned it (the
// errors of Tx's methods are this package's); otherwise with the store's,
// wrapped.
func (i *Issuer) Update(ctx context.Context, fn func(ctx context.Context, tx storage.Tx, leases *Tx) error) error {
	return i.update(ctx, "update", "", fn)
}

// update is Update; op names the operation in the errors of the store,
// followed by the quoted path when path is not empty (quoted only then).
func (i *Issuer) update(ctx context.Context, op, path string, fn func(ctx context.Context, tx storage.Tx, leases *Tx) error) error {
	if i.joint == nil {
		return fmt.Errorf("lease: %s: mount %q was registered without a Store: %w", opName(op, path), i.mount, keel.KindInternal)
	}
	var last *Tx
	var fnErr error
	err := i.joint.Update(ctx, func(ctx context.Context, tx, leases storage.Tx) error {
		last = &Tx{i: i, tx: leases}
		last.due = last.dueBuf[:0]
		defer last.close()
		fnErr = fn(ctx, tx, last)
		return fnErr
	})
	if err != nil && fnErr != nil && errors.Is(err, fnErr) {
		return err
	}
	if err != nil {
		return fmt.Errorf("lease: %s: %w", opName(op, path), err)
	}
	if last == nil {
		return nil
	}
	for _, d := range last.due {
		i.m.wakeFor(d)
	}
	return nil
}

// Tx is the lease side of one run of the closure of Issuer.Update: it
// issues and ends the leases of the Issuer's mount in the transaction of
// that run. It is valid only until the closure returns: a call after that
// fails with an error of kind keel.KindInternal. A Tx is not safe for
// concurrent use.
type Tx struct {
	i      *Issuer
	tx     storage.Tx // the Manager's view of the transaction
	due    []time.Time
	dueBuf [1]time.Time // due's first, without an allocation
	closed bool
}

// opName is op, followed by the quoted path when path is not empty.
func opName(op, path string) string {
	if path == "" {
		return op
	}
	return op + " " + strconv.Quote(path)
}

func (t *Tx) close() { t.closed = true }

// open fails once the closure that got t has returned.
func (t *Tx) open(op string) error {
	if t.closed {
		return fmt.Errorf("lease: %s: the lease transaction of mount %q is over: %w", op, t.i.mount, keel.KindInternal)
	}
	return nil
}

// Issue stores a new lease for req in the transaction, checked and made
// as Issuer.Issue makes it, and fails as it does.
func (t *Tx) Issue(req IssueRequest) (Lease, error) {
	if err := t.open("issue"); err != nil {
		return Lease{}, err
	}
	mount, err := t.i.check(req)
	if err != nil {
		return Lease{}, err
	}
	e, key, err := t.i.m.newEntry(req, &mount)
	if err != nil {
		return Lease{}, err
	}
	if err := putNew(t.tx, key, &e); err != nil {
		return Lease{}, fmt.Errorf("lease: issue for %q: %w", req.Path, err)
	}
	t.due = append(t.due, e.NextAttempt)
	return e.Lease, nil
}

// End removes the lease leaseID of the Issuer's mount in the transaction,
// with its expiry-index entry (and its irrevocable-index entry): the
// engine has taken the secret back itself, so no Revoker is called, and
// no right is asked. Ending a lease that does not exist (already ended,
// revoked or expired and removed) is not an error and does nothing; an
// undecodable record is removed alone.
//
// End fails with an error of kind keel.KindInvalid on the field "LeaseID",
// and changes nothing, when leaseID is empty or does not lie under the
// Issuer's mount: an engine ends its own leases only. It fails with the
// store's error when the store fails.
func (t *Tx) End(leaseID string) error {
	if err := t.open("end"); err != nil {
		return err
	}
	switch {
	case leaseID == "":
		return fmt.Errorf("lease: end: %w", keel.Invalid("LeaseID", "is required"))
	case !t.i.under(leaseID):
		return fmt.Errorf("lease: end: %w", keel.Invalid("LeaseID", "%q does not lie under the mount %q", leaseID, t.i.mount))
	}
	q := newQuotaTx(t.tx)
	if err := removeCurrent(t.tx, q, leaseID, ""); err != nil {
		return fmt.Errorf("lease: end %q: %w", leaseID, err)
	}
	if err := q.flush(); err != nil {
		return fmt.Errorf("lease: end %q: %w", leaseID, err)
	}
	return nil
}

// SetRevoker names r the Revoker (and Renewer, Refresher, when it
// implements them) of the Issuer's mount, in place of the one given to
// Register. An engine built with the Issuer as its lease handle calls it
// when it is ready to revoke; until then, a mount registered without a
// Revoker has its due leases put off. It does nothing once the mount was
// unregistered or registered again: an old Issuer cannot take over a newer
// registration's leases.
func (i *Issuer) SetRevoker(r Revoker) {
	i.m.mu.Lock()
	defer i.m.mu.Unlock()
	if me, ok := i.m.mounts[i.mount]; ok && me.owner == i {
		me.revoker = r
		i.m.mounts[i.mount] = me
	}
}

// CheckStore fails with an error of kind keel.KindInvalid, naming field
// (the caller's Go path of store, such as "Store"), unless store is the
// store the Issuer's mount was registered with (the same view of the same
// store), so that an engine given both cannot write its records to one
// view and their leases' joins to another.
func (i *Issuer) CheckStore(field string, store storage.Store) error {
	if i.joint == nil || !i.joint.Holds(store) {
		return fmt.Errorf("lease: check store: %w", keel.Invalid(field, "is not the store the lease mount %q was registered with", i.mount))
	}
	return nil
}

// Unregister forgets the Issuer's mount (see Manager.Unregister).
func (i *Issuer) Unregister() { i.m.Unregister(i.mount) }

// check refuses a request whose path lies outside the Issuer's mount, and
// returns the mount's registration (see current).
func (i *Issuer) check(req IssueRequest) (mountHit, error) {
	if !i.under(req.Path) {
		return mountHit{}, fmt.Errorf("lease: issue: %w", keel.Invalid("Path", "%q does not lie under the mount %q", req.Path, i.mount))
	}
	return i.current()
}

// current returns the registration of the Issuer's mount; it fails, with
// keel.KindUnavailable, once the mount was unregistered or registered
// again: an engine kept past its mount's removal, or past its rebuild,
// issues no lease under the mount's new registration. Mounts do not
// overlap, so it is the mount of every path under the Issuer's.
func (i *Issuer) current() (mountHit, error) {
	i.m.mu.RLock()
	me, ok := i.m.mounts[i.mount]
	i.m.mu.RUnlock()
	if !ok || me.owner != i {
		return mountHit{}, fmt.Errorf("lease: issue: the mount %q is no longer registered with this Issuer (removed, or its engine rebuilt): %w", i.mount, keel.KindUnavailable)
	}
	return mountHit{name: i.mount, mt: me}, nil
}

// under reports whether the path or lease id p lies under the Issuer's
// mount: starts with it and is longer.
func (i *Issuer) under(p string) bool {
	return len(p) > len(i.mount) && strings.HasPrefix(p, i.mount)
}

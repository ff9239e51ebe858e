package ldapengine

// Lending: check-out, check-in, the automatic check-in at the end of a
// lease, and the password changes of lent accounts. The library sets
// themselves (create, read, list, delete, status) are in library.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

// ErrNoAccountAvailable is the error of a check-out when every account of
// the set is checked out (or waits for a password change). It is of kind
// keel.KindConflict; the Vault adapter answers 400, as Vault does.
var ErrNoAccountAvailable = fmt.Errorf("ldapengine: no service accounts available for check-out: %w", keel.KindConflict)

// CheckOut is the outcome of a check-out: an account, its password, and
// the lease whose end checks it in.
type CheckOut struct {
	ServiceAccountName string
	Password           string `keel:"secret"`
	Lease              lease.Lease
}

// CheckOutRequest is what a check-out asks for (CheckOut).
type CheckOutRequest struct {
	// TTL is the TTL of the check-out's lease, not negative, lowered to
	// the set's LibrarySet.TTL when that is not zero. Zero: the set's TTL.
	TTL time.Duration
}

// CheckInRequest names the accounts a check-in gives back (CheckIn).
type CheckInRequest struct {
	// ServiceAccountNames are the accounts to check in, each an account of
	// the set. Empty: the one account of the set that is checked out and
	// that the caller may check in (none: nothing is checked in; several:
	// keel.KindInvalid on ServiceAccountNames).
	ServiceAccountNames []string
	// Manage checks the accounts in whoever borrowed them, as an operator
	// does: it needs update on "MOUNT/library/manage/NAME/check-in"
	// instead of "MOUNT/library/NAME/check-in", and ignores the set's
	// check-in enforcement.
	Manage bool
}

// checkOutData is the Data of a check-out lease.
type checkOutData struct {
	Set     string `json:"set"`
	Account string `json:"account"`
}

// CheckOut checks out the first available account of the library set
// name for the caller (keel.PrincipalFrom: its ClientTokenID and EntityID
// are recorded as the borrower) and issues a renewable lease for it, in
// one transaction. The lease's TTL is r.TTL capped at the set's TTL (zero:
// the set's TTL), its max TTL the set's MaxTTL; a zero TTL or MaxTTL of
// the set leaves it to the lease manager. A negative r.TTL is
// keel.KindInvalid on TTL. It needs update on
// "MOUNT/library/NAME/check-out". The lease is renewed (sys/leases/renew)
// only while the account is checked out under it; its end checks the
// account in.
//
// A caller with neither a ClientTokenID nor an EntityID could never check
// the account in as its borrower: CheckOut refuses it with an error of
// kind keel.KindInvalid on the field "Principal.ClientTokenID", before
// any write. No available account is ErrNoAccountAvailable
// (keel.KindConflict); a nil Options.Leases is keel.KindUnavailable.
// CheckOut is safe for concurrent use: concurrent check-outs never get the
// same account. After MarkRestored it lends only an account whose stored
// password was verified against the directory (or replaced); when none
// could be, the verification's error is returned (keel.KindUnavailable
// when the directory cannot be reached).
func (e *Engine) CheckOut(ctx context.Context, name string, r CheckOutRequest) (_ CheckOut, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.CheckOut", name, r, func(ctx context.Context) (CheckOut, error) {
		return e.checkOut(ctx, name, r)
	})
}

func (e *Engine) checkOut(ctx context.Context, name string, r CheckOutRequest) (_ CheckOut, err error) {
	defer prefixErr(&err)
	if err := e.libraryOnly(); err != nil {
		return CheckOut{}, err
	}
	if err := checkSetName(name); err != nil {
		return CheckOut{}, err
	}
	ttl := r.TTL
	if ttl < 0 {
		return CheckOut{}, invalid("TTL", "must not be negative")
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapUpdate, e.resource("library", name, "check-out")); err != nil {
		return CheckOut{}, err
	}
	p, _ := keel.PrincipalFrom(ctx)
	if p.ClientTokenID == "" && p.EntityID == "" {
		return CheckOut{}, invalid("Principal.ClientTokenID", "a check-out needs a caller with a client token id or an entity id, so that its borrower can check it in")
	}
	if e.leases == nil {
		return CheckOut{}, errNoLeases
	}
	// A restored copy: an account is lent once its stored password has
	// been verified (or replaced). The transaction finds the mark; the
	// accounts are verified outside it, and it runs again. Without a
	// mark, the check-out reads it once, in its transaction.
	var (
		gen      string          // the mark's generation the accounts were verified for
		verified map[string]bool // the accounts verified (or replaced) for it
	)
	for try := 0; ; try++ {
		out, err := e.lend(ctx, name, ttl, p, gen, verified)
		if !errors.Is(err, errVerifyFirst) {
			return out, err
		}
		if try == 2 {
			return CheckOut{}, fmt.Errorf("ldapengine: library set %q: the store was marked restored again during the check-out, try again: %w", name, keel.KindUnavailable)
		}
		if gen, verified, err = e.verifyForCheckOut(ctx, name); err != nil {
			return CheckOut{}, wrapf(err, "library set %q: check-out", name)
		}
	}
}

// errVerifyFirst is lend's answer when the store is marked restored and
// the set's accounts were not verified for that mark.
var errVerifyFirst = errors.New("ldapengine: the accounts must be verified first")

// lend checks an available account of the set name out to p, in one
// transaction with its lease. When the store is marked restored, only the
// accounts verified for the mark's generation gen are lent, and a mark of
// another generation is errVerifyFirst.
func (e *Engine) lend(ctx context.Context, name string, ttl time.Duration, p keel.Principal, gen string, verified map[string]bool) (CheckOut, error) {
	now := e.clock.Now().UTC()
	var out CheckOut
	err := e.leases.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *lease.Tx) error {
		out = CheckOut{}
		rec, err := loadSet(tx, name)
		if err != nil {
			return err
		}
		mark, marked, err := loadMark(tx)
		if err != nil {
			return err
		}
		if marked && mark.Gen != gen {
			return errVerifyFirst
		}
		eff := rec.TTL
		if ttl > 0 && (eff == 0 || ttl < eff) {
			eff = ttl
		}
		for _, n := range rec.Accounts {
			a, ok, err := loadAccount(tx, name, n)
			if err != nil {
				return err
			}
			if !ok || !a.available() {
				continue
			}
			if marked && !verified[n] {
				continue // not verified since the restore
			}
			data, err := json.Marshal(checkOutData{Set: name, Account: n})
			if err != nil {
				return fmt.Errorf("ldapengine: encode check-out data: %v: %w", err, keel.KindInternal)
			}
			l, err := leases.Issue(lease.IssueRequest{
				Path: e.resource("library", name, "check-out"), TTL: eff, MaxTTL: rec.MaxTTL, Renewable: true, Data: data,
			})
			if err != nil {
				return err
			}
			a.CheckedOut, a.ClientToken, a.EntityID, a.LeaseID, a.CheckedOutAt = true, p.ClientTokenID, p.EntityID, l.ID, now
			if err := putJSON(tx, acctKey(name, n), &a); err != nil {
				return err
			}
			out = CheckOut{ServiceAccountName: n, Password: a.Password, Lease: l}
			return nil
		}
		return wrapf(ErrNoAccountAvailable, "library set %q", name)
	})
	if err != nil {
		return CheckOut{}, err
	}
	return out, nil
}

// CheckIn checks the accounts r.ServiceAccountNames of the library set
// name back in, gives each a new password (the one the borrower had stops
// working), and returns the names it checked in (empty, not nil, when
// none). The lease of
// each check-out ends in the transaction that checks its account in
// (lease.Tx.End): it is gone when CheckIn returns, no Revoker is called,
// and no right on sys/leases is needed. With r.ServiceAccountNames empty
// it checks in the one account of the set that the caller may check in;
// several are keel.KindInvalid. An account already checked in is not an
// error and is not returned; a name that is not an account of the set is
// keel.KindInvalid on ServiceAccountNames[i].
//
// Without r.Manage, it needs update on "MOUNT/library/NAME/check-in", and,
// unless the set disables check-in enforcement, only the borrower (same
// EntityID or ClientTokenID of keel.PrincipalFrom) may check an account
// in: another caller's account is keel.KindForbidden. With r.Manage it
// needs update on "MOUNT/library/manage/NAME/check-in" and checks in any
// account.
//
// Each account is checked in on its own; when the password change of one
// fails, it stays checked out (its lease end tries again), the error is
// returned with the names checked in before it.
func (e *Engine) CheckIn(ctx context.Context, name string, r CheckInRequest) (_ []string, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.CheckIn", name, r, func(ctx context.Context) ([]string, error) {
		return e.checkIn(ctx, name, r)
	})
}

func (e *Engine) checkIn(ctx context.Context, name string, r CheckInRequest) (_ []string, err error) {
	defer prefixErr(&err)
	serviceAccountNames, manage := r.ServiceAccountNames, r.Manage
	if err := e.libraryOnly(); err != nil {
		return nil, err
	}
	if err := checkSetName(name); err != nil {
		return nil, err
	}
	var v keel.Validation
	checkAccountNames(&v, serviceAccountNames)
	if err := validation(&v); err != nil {
		return nil, err
	}
	res := e.resource("library", name, "check-in")
	if manage {
		res = e.resource("library", "manage", name, "check-in")
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapUpdate, res); err != nil {
		return nil, err
	}
	p, _ := keel.PrincipalFrom(ctx)
	var enforce bool
	var todo []string
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := loadSet(tx, name)
		if err != nil {
			return err
		}
		enforce = !manage && !rec.DisableEnforcement
		todo = todo[:0]
		if len(serviceAccountNames) == 0 {
			for _, n := range rec.Accounts {
				a, _, err := loadAccount(tx, name, n)
				if err != nil {
					return err
				}
				if a.CheckedOut && (!enforce || isBorrower(p, &a)) {
					todo = append(todo, n)
				}
			}
			if len(todo) > 1 {
				return invalid("ServiceAccountNames", "must be given when several accounts are checked out (%s)", strings.Join(todo, ", "))
			}
			return nil
		}
		for _, n := range serviceAccountNames {
			if !slices.Contains(rec.Accounts, n) {
				return invalid(fmt.Sprintf("ServiceAccountNames[%d]", slices.Index(serviceAccountNames, n)), "%q is not an account of library set %q", n, name)
			}
			a, _, err := loadAccount(tx, name, n)
			if err != nil {
				return err
			}
			if a.CheckedOut && enforce && !isBorrower(p, &a) {
				return fmt.Errorf("ldapengine: %q cannot be checked in: it was not checked out by the caller: %w", n, keel.KindForbidden)
			}
			if a.CheckedOut || !a.Ready || a.New != "" {
				todo = append(todo, n)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "check-in")
	}
	checkIns := []string{}
	var failure error
	for _, n := range todo {
		in, err := e.changePassword(ctx, name, n, func(a *libAccount) (bool, error) {
			if a.CheckedOut && enforce && !isBorrower(p, a) {
				return false, fmt.Errorf("ldapengine: %q cannot be checked in: it was not checked out by the caller: %w", n, keel.KindForbidden)
			}
			return a.CheckedOut || !a.Ready || a.New != "", nil
		})
		if err != nil {
			failure = err
			break
		}
		if in {
			checkIns = append(checkIns, n)
		}
	}
	if failure != nil {
		return checkIns, wrapf(failure, "library set %q: check-in", name)
	}
	return checkIns, nil
}

// isBorrower reports whether p borrowed the account a: same entity id, or
// else same client token id, both not empty (Vault's rule).
func isBorrower(p keel.Principal, a *libAccount) bool {
	return (a.EntityID != "" && p.EntityID == a.EntityID) ||
		(a.ClientToken != "" && p.ClientTokenID == a.ClientToken)
}

// settleOnly selects an account that is not checked out and lacks a
// completed password change.
func settleOnly(a *libAccount) (bool, error) {
	return !a.CheckedOut && (!a.Ready || a.New != ""), nil
}

// changePassword gives the account name of set a new password and makes
// it available, when match, called in the first transaction with the
// account's record, says so. The new password is written to the record
// (or a pending one reused) before the directory changes; the record
// takes it, the account is checked in, and the lease it was checked out
// under ends (lease.Tx.End), in a second transaction. It returns whether
// the account was checked out. A missing set or account is not an error
// (false).
func (e *Engine) changePassword(ctx context.Context, set, name string, match func(*libAccount) (bool, error)) (bool, error) {
	e.rootMu.RLock()
	defer e.rootMu.RUnlock()
	defer e.entries.lock("library/" + set + "/" + name)()
	cfg, err := e.bindConfig(ctx)
	if err != nil {
		return false, wrapf(err, "account %q", name)
	}
	candidate, err := e.generate(ctx, &cfg)
	if err != nil {
		return false, wrapf(err, "account %q", name)
	}
	var before libAccount
	var skip, fresh bool
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var ok bool
		var err error
		if before, ok, err = loadAccount(tx, set, name); err != nil {
			return err
		}
		if pending, _ := pendingOnly(&before); !ok || !pending {
			// Keep the pending index exact: no entry for an account
			// that is gone or settled.
			if err := tx.Delete(pendingKey(set, name)); err != nil {
				return err
			}
		}
		if !ok {
			skip = true
			return nil
		}
		if skip, err = match(&before); err != nil {
			return err
		}
		if skip = !skip; skip {
			return nil
		}
		if fresh = before.New == ""; fresh {
			// An account that joined its set and has no password yet
			// is in the pending index since it joined: writing its
			// key again would wake the worker (the watch of the
			// index) for a change this very step makes.
			joined, _ := pendingOnly(&before)
			before.New = candidate
			if !joined {
				if err := putJSON(tx, pendingKey(set, name), &pendingAccount{Set: set, Account: name}); err != nil {
					return err
				}
			}
			return putJSON(tx, acctKey(set, name), &before)
		}
		return nil
	})
	if err != nil {
		return false, wrapf(err, "account %q: write-ahead record", name)
	}
	if skip {
		return false, nil
	}
	if !fresh && e.dir.Bind(ctx, cfg.conn(), before.DN, before.New) == nil {
		err = nil // an earlier attempt made the change
	} else {
		err = e.dir.SetPassword(ctx, cfg.conn(), before.DN, before.New)
	}
	if err != nil {
		if fresh && errors.Is(err, ErrNotApplied) {
			e.dropNew(ctx, set, name, before.New)
			return false, wrapf(err, "account %q: password change failed, nothing changed", name)
		}
		e.worker.WakeFor(e.clock.Now().Add(e.retry))
		return false, wrapf(err, "account %q: password change failed, the account stays out of circulation until the worker settles it", name)
	}
	commit := func(ctx context.Context, tx storage.Tx, leases *lease.Tx) error {
		a, ok, err := loadAccount(tx, set, name)
		if err != nil {
			return err
		}
		if !ok || a.New != before.New || a.LeaseID != before.LeaseID {
			return fmt.Errorf("ldapengine: changed during the password change: %w", keel.KindConflict)
		}
		// The engine has taken the account back: its lease ends here,
		// with no revocation to run and no right to ask for.
		if a.LeaseID != "" && leases != nil {
			if err := leases.End(a.LeaseID); err != nil {
				return err
			}
		}
		a = libAccount{DN: a.DN, Password: a.New, Ready: true}
		if err := tx.Delete(pendingKey(set, name)); err != nil {
			return err
		}
		return putJSON(tx, acctKey(set, name), &a)
	}
	if e.leases != nil {
		err = e.leases.Update(ctx, commit)
	} else {
		err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return commit(ctx, tx, nil) })
	}
	if err != nil {
		return false, wrapf(err, "account %q: the directory holds the new password, storing it failed (the write-ahead record keeps it)", name)
	}
	e.log.Info("library account password changed", "set", set, "account", name, "checked_in", before.CheckedOut)
	return before.CheckedOut, nil
}

// dropNew drops the write-ahead record pw of account name of set, when
// it is still the account's, after a change the directory certainly did
// not make: the account is as before the attempt. It stays in the pending
// index only when it has no password yet.
func (e *Engine) dropNew(ctx context.Context, set, name, pw string) {
	err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		a, ok, err := loadAccount(tx, set, name)
		if err != nil || !ok || a.New != pw {
			return err
		}
		a.New = ""
		if a.Ready || a.CheckedOut {
			if err := tx.Delete(pendingKey(set, name)); err != nil {
				return err
			}
		}
		return putJSON(tx, acctKey(set, name), &a)
	})
	if err != nil {
		e.log.Error("library account: dropping an unsent password change failed; the worker settles it", "set", set, "account", name, "error", err)
	}
}

// pendingOnly selects an account whose password change is pending: a
// write-ahead record (of a check-in, a lease end or a join), or no
// password yet since it joined its set.
func pendingOnly(a *libAccount) (bool, error) {
	return a.New != "" || (!a.Ready && !a.CheckedOut), nil
}

// settleAccounts finishes the pending password changes of library
// accounts (the pending index), at most batch of them: each gets its
// password, and one that was checked out is checked in and its lease
// ended in the same transaction, as its check-in or lease end asked
// (with no right asked: the worker's context carries no principal). It
// returns how many it tried and whether one failed (logged; the next Step
// tries again).
func (e *Engine) settleAccounts(ctx context.Context, batch int) (int, bool, error) {
	var todo []pendingAccount
	err := e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		todo = todo[:0]
		return tx.Scan(prefixLibPending, storage.ScanOptions{}, func(key string, raw []byte) error {
			var p pendingAccount
			if err := json.Unmarshal(raw, &p); err != nil {
				return fmt.Errorf("ldapengine: stored record %q: %v: %w", key, err, keel.KindInternal)
			}
			todo = append(todo, p)
			if len(todo) == batch {
				return storage.StopScan
			}
			return nil
		})
	})
	if err != nil {
		return 0, false, err
	}
	failed := false
	for _, p := range todo {
		if _, err := e.changePassword(ctx, p.Set, p.Account, pendingOnly); err != nil {
			if ctx.Err() != nil {
				return 0, false, ctx.Err()
			}
			failed = true
			e.log.Error("library account: settling a password change failed", "set", p.Set, "account", p.Account, "error", err)
		}
	}
	return len(todo), failed, nil
}

// revokeCheckOut ends the check-out of lease l: when the account is still
// checked out under l, it gets a new password and becomes available;
// otherwise (checked in already, set or account gone) nothing happens.
func (e *Engine) revokeCheckOut(ctx context.Context, l lease.Lease) error {
	d, err := checkOutOf(l)
	if err != nil {
		return lease.Permanent(err)
	}
	current := func(a *libAccount) (bool, error) { return a.CheckedOut && a.LeaseID == l.ID, nil }
	// Fast path without the rotation lock: most revocations after a
	// check-in find nothing to do.
	var held bool
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		a, ok, err := loadAccount(tx, d.Set, d.Account)
		held = ok && a.CheckedOut && a.LeaseID == l.ID
		return err
	})
	if err != nil || !held {
		return err
	}
	if _, err := e.changePassword(ctx, d.Set, d.Account, current); err != nil {
		return wrapf(err, "library set %q: automatic check-in", d.Set)
	}
	return nil
}

// renewCheckOut allows the renewal of the check-out lease l only while its
// account is checked out under l and no check-in of it is under way (no
// password change written ahead): the renewal of a lease whose account is
// checked in, or lent again under another lease, is refused with an error
// of kind keel.KindInvalid on the field "LeaseID", as Vault's engine
// refuses it.
func (e *Engine) renewCheckOut(ctx context.Context, l lease.Lease) error {
	d, err := checkOutOf(l)
	if err != nil {
		return err
	}
	var why string
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		why = ""
		a, ok, err := loadAccount(tx, d.Set, d.Account)
		switch {
		case err != nil:
			return err
		case !ok:
			why = "is no longer an account of the set"
		case !a.CheckedOut:
			why = "is already checked in; check it out again to regain it"
		case a.LeaseID != l.ID:
			why = "is checked out under another lease"
		case a.New != "":
			why = "is being checked in"
		}
		return nil
	})
	if err != nil {
		return wrapf(err, "library set %q: renewal of lease %q", d.Set, l.ID)
	}
	if why != "" {
		return wrapf(invalid("LeaseID", "the account %q of the check-out %s", d.Account, why), "library set %q", d.Set)
	}
	return nil
}

// checkOutOf decodes the Data of the check-out lease l; it fails with an
// error of kind keel.KindInvalid when l holds no check-out.
func checkOutOf(l lease.Lease) (checkOutData, error) {
	var d checkOutData
	if err := json.Unmarshal(l.Data, &d); err != nil || d.Set == "" || d.Account == "" {
		return checkOutData{}, fmt.Errorf("ldapengine: lease %q: no check-out data: %w", l.ID, keel.KindInvalid)
	}
	return d, nil
}

package ldapengine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// The defaults and limits of library sets.
const (
	// defaultLibraryTTL is the default ttl and max_ttl of a library set.
	defaultLibraryTTL = 24 * time.Hour
	// maxServiceAccountNameLen is the longest service account name, in
	// bytes.
	maxServiceAccountNameLen = 256
)

// Store keys of library sets, relative to the engine's view.
const (
	prefixLibSet  = "library/set/"
	prefixLibAcct = "library/acct/"
	libOwnerTag   = "library:"
	// prefixLibPending indexes the accounts whose password change is
	// pending (a write-ahead record, or none yet since they joined their
	// set): the worker settles them.
	prefixLibPending = "library/pending/"
	// prefixLibLeaving lists the accounts that left their set, written
	// with the set that no longer lists them, until they are freed.
	prefixLibLeaving = "library/leaving/"
)

// leavingPrefix is the prefix of the leaving accounts of set, escaped as
// in pendingKey.
func leavingPrefix(set string) string { return prefixLibLeaving + url.PathEscape(set) + "/" }

// pendingKey is the key of account name of set in the pending index; its
// value is a pendingAccount. Set names are escaped in account keys (as in
// acctKey): a hierarchical set name holds "/", and set "a" with account
// "b/c" must not meet set "a/b" with account "c". Names without "/" are
// their own escape, so keys written before hierarchical names stay.
func pendingKey(set, name string) string {
	return prefixLibPending + url.PathEscape(set) + "/" + name
}

// pendingAccount names an account of the pending index, so that the worker
// need not parse keys.
type pendingAccount struct {
	Set     string `json:"set"`
	Account string `json:"account"`
}

// LibrarySetRequest creates or updates a library set (PutLibrarySet): the
// directory accounts it lends, and for how long. A nil field keeps the
// stored value on update and takes the default on create.
type LibrarySetRequest struct {
	// ServiceAccountNames are the accounts of the set, in the order in
	// which check-outs take them: required (at least one) on create; on
	// update, when not nil, the new list. At most
	// Limits().MaxLibraryAccounts, each at most 256 bytes
	// bytes. Each is searched under Config.UserDN by Config.UserAttr when
	// it joins the set, must exist there, and must not belong to another
	// set or to a static role. An account that joins the set gets a new
	// password at once.
	ServiceAccountNames []string
	// TTL is how long a check-out lasts before its automatic check-in;
	// zero means unlimited (the lease manager's limit). Default 24h.
	TTL *time.Duration
	// MaxTTL is how long a check-out lasts with renewals; zero means
	// unlimited. When not zero it must not be below TTL. Default 24h.
	MaxTTL *time.Duration
	// DisableCheckInEnforcement lets any caller with the right check
	// accounts in, not only their borrower. Default false.
	DisableCheckInEnforcement *bool
}

// LibrarySet is a library set as GetLibrarySet returns it.
type LibrarySet struct {
	Name                      string
	ServiceAccountNames       []string // in check-out order
	TTL                       time.Duration
	MaxTTL                    time.Duration
	DisableCheckInEnforcement bool
}

// AccountStatus is the check-out state of one account of a library set
// (GetLibraryStatus). The borrower fields are empty when the account is
// not checked out.
type AccountStatus struct {
	// Available reports whether a check-out may take the account now: it
	// is not checked out and no password change of it is pending.
	Available bool
	// BorrowerClientToken is the client token id of the caller that
	// checked the account out.
	BorrowerClientToken string
	// BorrowerEntityID is the entity id of that caller.
	BorrowerEntityID string
}

// setRecord is a stored library set.
type setRecord struct {
	Accounts           []string      `json:"accounts"`
	TTL                time.Duration `json:"ttl"`
	MaxTTL             time.Duration `json:"max_ttl"`
	DisableEnforcement bool          `json:"disable_check_in_enforcement,omitempty"`
}

// libAccount is the stored state of one account of a set.
type libAccount struct {
	DN string `json:"dn"`
	// Password is the password the directory holds, as far as the engine
	// knows; empty before the first change.
	Password string `json:"password,omitempty"`
	// New is the write-ahead record of a password change: the password
	// being set in the directory; empty when none is pending.
	New string `json:"new,omitempty"`
	// Ready is false until the first password change after the account
	// joined the set has completed.
	Ready        bool      `json:"ready,omitempty"`
	CheckedOut   bool      `json:"checked_out,omitempty"`
	ClientToken  string    `json:"borrower_client_token,omitempty"`
	EntityID     string    `json:"borrower_entity_id,omitempty"`
	LeaseID      string    `json:"lease_id,omitempty"`
	CheckedOutAt time.Time `json:"checked_out_at,omitzero"`
}

func (a *libAccount) available() bool { return a.Ready && !a.CheckedOut && a.New == "" }

func setKey(set string) string        { return prefixLibSet + set }
func acctKey(set, name string) string { return prefixLibAcct + url.PathEscape(set) + "/" + name }
func libOwner(set string) string      { return libOwnerTag + set }

// libraryOnly refuses library operations in the openldap flavor.
func (e *Engine) libraryOnly() error {
	if !e.feat.librarySets {
		return fmt.Errorf("ldapengine: %s: library sets are not supported by the %q flavor (only by %q): %w", e.mount, e.flavor, FlavorLDAP, keel.KindInvalid)
	}
	return nil
}

// checkAccountNames checks names given as ServiceAccountNames.
func checkAccountNames(v *keel.Validation, names []string) {
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		field := fmt.Sprintf("ServiceAccountNames[%d]", i)
		switch {
		case n == "":
			v.Add(field, "must not be empty")
		case len(n) > maxServiceAccountNameLen:
			v.Add(field, "%.40q…: names are at most %d bytes", n, maxServiceAccountNameLen)
		case !utf8.ValidString(n) || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			v.Add(field, "%q: names must be UTF-8 without control characters", n)
		case seen[n]:
			v.Add(field, "%q is given twice", n)
		}
		seen[n] = true
	}
}

func loadSet(tx storage.Tx, set string) (setRecord, error) {
	var rec setRecord
	found, err := getJSON(tx, setKey(set), &rec)
	if err == nil && !found {
		err = fmt.Errorf("ldapengine: library set %q: %w", set, keel.KindNotFound)
	}
	return rec, err
}

func loadAccount(tx storage.Tx, set, name string) (libAccount, bool, error) {
	var a libAccount
	found, err := getJSON(tx, acctKey(set, name), &a)
	return a, found, err
}

// PutLibrarySet creates or updates the library set name. It needs create
// or update (decided in the transaction) on "MOUNT/library/NAME". A name
// whose path would also mean another route ("manage/lib1", "a/status": see
// Names in the package documentation) is a keel.KindInvalid on Name, and
// nothing is read or written. The engine must be configured
// (keel.KindNotFound otherwise). An account that
// does not exist in the directory is a keel.KindInvalid on
// ServiceAccountNames; one that belongs to another set or to a static
// role is a keel.KindConflict, as is removing a checked-out account; in
// these cases nothing changes. Accounts that join the set get a new
// password before PutLibrarySet returns; when that fails, the set is
// stored, the account stays unavailable, and the error is returned:
// calling PutLibrarySet again retries. Accounts that leave the set are
// freed after it is stored, in as many transactions as the store needs
// (so that a set of Limits().MaxLibraryAccounts may shrink to one on
// etcd); when
// that is interrupted, the next PutLibrarySet or DeleteLibrarySet of the
// set frees the rest. PutLibrarySet is safe for concurrent use.
func (e *Engine) PutLibrarySet(ctx context.Context, name string, r LibrarySetRequest) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.PutLibrarySet", name, r, func(ctx context.Context) error {
		return e.putLibrarySet(ctx, name, r)
	})
}

func (e *Engine) putLibrarySet(ctx context.Context, name string, r LibrarySetRequest) (err error) {
	defer prefixErr(&err)
	if err := e.libraryOnly(); err != nil {
		return err
	}
	if err := checkNewName(setName, name); err != nil {
		return err
	}
	var v keel.Validation
	checkAccountNames(&v, r.ServiceAccountNames)
	if lim := e.Limits().MaxLibraryAccounts; lim > 0 && len(r.ServiceAccountNames) > lim {
		v.Add("ServiceAccountNames", "names %d accounts, at most %d on this store (see Limits.MaxLibraryAccounts)", len(r.ServiceAccountNames), lim)
	}
	if r.TTL != nil && *r.TTL < 0 {
		v.Add("TTL", "must not be negative")
	}
	if r.MaxTTL != nil && *r.MaxTTL < 0 {
		v.Add("MaxTTL", "must not be negative")
	}
	if err := validation(&v); err != nil {
		return err
	}
	cfg, err := e.bindConfig(ctx)
	if err != nil {
		return wrapf(err, "library set %q", name)
	}

	// Decide create or update, check the rights and the merged set.
	var prev, next setRecord
	var found bool
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		prev = setRecord{}
		found, err = getJSON(tx, setKey(name), &prev)
		if err != nil {
			return err
		}
		c := keel.CapUpdate
		if !found {
			c = keel.CapCreate
		}
		return keel.Authorize(ctx, e.auth, c, e.resource("library", name))
	})
	if err != nil {
		return err
	}
	next = prev
	if !found {
		next = setRecord{TTL: defaultLibraryTTL, MaxTTL: defaultLibraryTTL}
		if r.ServiceAccountNames == nil {
			v.Add("ServiceAccountNames", "is required")
		}
	}
	if r.ServiceAccountNames != nil {
		if len(r.ServiceAccountNames) == 0 {
			v.Add("ServiceAccountNames", "must name at least one account")
		}
		next.Accounts = slices.Clone(r.ServiceAccountNames)
	}
	if r.TTL != nil {
		next.TTL = *r.TTL
	}
	if r.MaxTTL != nil {
		next.MaxTTL = *r.MaxTTL
	}
	if r.DisableCheckInEnforcement != nil {
		next.DisableEnforcement = *r.DisableCheckInEnforcement
	}
	if next.MaxTTL > 0 && next.TTL > next.MaxTTL {
		v.Add("MaxTTL", "(%s) must not be below the TTL (%s)", next.MaxTTL, next.TTL)
	}
	if err := validation(&v); err != nil {
		return err
	}
	var added, removed []string
	for _, n := range next.Accounts {
		if !slices.Contains(prev.Accounts, n) {
			added = append(added, n)
		}
	}
	for _, n := range prev.Accounts {
		if !slices.Contains(next.Accounts, n) {
			removed = append(removed, n)
		}
	}

	// Find the new accounts in the directory, outside any transaction.
	dns := make(map[string]string, len(added))
	for _, n := range added {
		dn, err := e.dir.FindDN(ctx, cfg.conn(), cfg.UserDN, cfg.UserAttr, n)
		if errors.Is(err, keel.KindNotFound) {
			return wrapf(invalid(fmt.Sprintf("ServiceAccountNames[%d]", slices.Index(r.ServiceAccountNames, n)),
				"%q does not exist in the directory (%s=%s under %q)", n, cfg.UserAttr, n, cfg.UserDN), "library set %q", name)
		}
		if err != nil {
			return wrapf(err, "library set %q: account %q", name, n)
		}
		dns[n] = dn
	}

	// Two names of the request for one entry are refused before anything
	// is written.
	byDN := make(map[string]string, len(added))
	for _, n := range added {
		dn := strings.ToLower(dns[n])
		if other, ok := byDN[dn]; ok {
			return fmt.Errorf("ldapengine: library set %q: %q and %q are the same entry %q: %w", name, other, n, dns[n], keel.KindConflict)
		}
		byDN[dn] = n
	}
	// The accounts that join are claimed first, in batches that fit the
	// store's transactions, while the set does not list them yet (no
	// check-out can take them); then one transaction checks that the set
	// did not change and that no account that leaves is checked out, and
	// writes the set: it reads one key per account that leaves, and writes
	// one. A failure releases the claims of this call. The accounts that
	// left are freed after, in batches.
	claimed, err := e.claimAccounts(ctx, name, added, dns)
	if err == nil {
		err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			var cur setRecord
			ok, err := getJSON(tx, setKey(name), &cur)
			if err != nil {
				return err
			}
			if ok != found || !sameSet(&cur, &prev) {
				return fmt.Errorf("ldapengine: library set %q: changed meanwhile, try again: %w", name, keel.KindConflict)
			}
			for _, n := range removed {
				a, ok, err := loadAccount(tx, name, n)
				if err != nil {
					return err
				}
				if ok && a.CheckedOut {
					return fmt.Errorf("ldapengine: library set %q: %q cannot be removed while it is checked out: %w", name, n, keel.KindConflict)
				}
				if err := tx.Put(leavingPrefix(name)+n, nil); err != nil {
					return err
				}
			}
			return putJSON(tx, setKey(name), &next)
		})
	}
	if err != nil {
		e.releaseClaims(ctx, name, claimed, dns)
		return err
	}
	if err := e.freeLeaving(ctx, name); err != nil {
		return wrapf(err, "library set %q: stored, but the accounts that left it are not all freed (put it again)", name)
	}
	// Which accounts still need a password: read after the commit, in a
	// View, which no transaction limit bounds.
	var settle []string
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		settle = settle[:0]
		for _, n := range next.Accounts {
			a, _, err := loadAccount(tx, name, n)
			if err != nil {
				return err
			}
			if pending, _ := settleOnly(&a); pending {
				settle = append(settle, n)
			}
		}
		return nil
	})
	if err != nil {
		return wrapf(err, "library set %q: stored, but accounts stay unavailable until a retry", name)
	}
	// Give a password to the accounts that have none yet (the new ones,
	// and any whose earlier change failed).
	var errs []error
	for _, n := range settle {
		if _, err := e.changePassword(ctx, name, n, settleOnly); err != nil {
			errs = append(errs, err)
		}
	}
	if err := join(errs...); err != nil {
		return wrapf(err, "library set %q: stored, but accounts stay unavailable until a retry", name)
	}
	return nil
}

// Limits are the limits of an Engine that depend on its store (see
// Engine.Limits). A zero field means no limit. The fixed limits are
// stated where they apply: a name is at most 512 bytes, a service account
// name 256, a password 1,024.
type Limits struct {
	// MaxLibraryAccounts is the most accounts a library set may hold:
	// the store's storage.Limits.MaxTxReads less 8 (120 on etcdstore's
	// default limits), or no limit when the store does not bound what a
	// transaction reads (memstore and boltstore by default). Check-out
	// and DeleteLibrarySet each read every account of the set in the one
	// transaction that decides, all or nothing; PutLibrarySet refuses a
	// longer list up front with keel.KindInvalid on ServiceAccountNames
	// naming the limit. The accounts that join a set are written in
	// batches, so the number of writes per transaction does not bound a
	// set.
	MaxLibraryAccounts int
}

// Limits returns the limits of e on its store.
func (e *Engine) Limits() Limits {
	return Limits{MaxLibraryAccounts: maxLibraryAccounts(e.store.Limits())}
}

// maxLibraryAccounts is Limits.MaxLibraryAccounts on a store of limits l.
func maxLibraryAccounts(l storage.Limits) int {
	if l.MaxTxReads <= 0 {
		return 0
	}
	return max(1, l.MaxTxReads-8)
}

// claimBatch is how many accounts one transaction of claimAccounts or
// releaseClaims handles under l: each writes three keys and reads two.
func claimBatch(l storage.Limits) int {
	n := 256
	if l.MaxTxOps > 0 {
		n = min(n, l.MaxTxOps/3)
	}
	if l.MaxTxReads > 0 {
		n = min(n, (l.MaxTxReads-2)/2)
	}
	return max(n, 1)
}

// claimAccounts makes set the owner of the entries of names (found at
// dns), with an account record and a pending marker each, in as many
// transactions as the store's limits require. It returns the names it
// claimed before an error. An entry that another set or a static role
// holds is a keel.KindConflict. An entry that set holds already for the
// same name, left by a PutLibrarySet that stopped between its claims and
// its commit, is taken over as it is.
func (e *Engine) claimAccounts(ctx context.Context, set string, names []string, dns map[string]string) ([]string, error) {
	var claimed []string
	batch := claimBatch(e.store.Limits())
	for len(names) > 0 {
		chunk := names[:min(batch, len(names))]
		names = names[len(chunk):]
		err := e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			for _, n := range chunk {
				dn := dns[n]
				var owner string
				if _, err := getJSON(tx, accountKey(dn), &owner); err != nil {
					return err
				}
				switch {
				case owner == libOwner(set):
					a, ok, err := loadAccount(tx, set, n)
					if err != nil {
						return err
					}
					if ok && strings.EqualFold(a.DN, dn) {
						// Left by an earlier call: take it over, so
						// that no freeing of the accounts that left
						// the set frees it.
						if err := tx.Delete(leavingPrefix(set) + n); err != nil {
							return err
						}
						continue
					}
					return fmt.Errorf("ldapengine: library set %q: %q and another name of the set are the same entry %q: %w", set, n, dn, keel.KindConflict)
				case strings.HasPrefix(owner, libOwnerTag):
					return fmt.Errorf("ldapengine: library set %q: %q (entry %q) is already in library set %q: %w", set, n, dn, strings.TrimPrefix(owner, libOwnerTag), keel.KindConflict)
				case owner != "":
					return fmt.Errorf("ldapengine: library set %q: %q (entry %q) is already managed by static role %q: %w", set, n, dn, owner, keel.KindConflict)
				}
				if err := putJSON(tx, accountKey(dn), libOwner(set)); err != nil {
					return err
				}
				if err := putJSON(tx, acctKey(set, n), &libAccount{DN: dn}); err != nil {
					return err
				}
				if err := putJSON(tx, pendingKey(set, n), &pendingAccount{Set: set, Account: n}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return claimed, err
		}
		claimed = append(claimed, chunk...)
	}
	return claimed, nil
}

// releaseClaims undoes claimAccounts for names, on the way out of a
// PutLibrarySet that failed: each account that set does not list is
// freed, in batches. It runs even when ctx is canceled; its own errors
// are dropped (a claim left behind keeps the entry from other sets and
// static roles, and is taken over by the next PutLibrarySet of set that
// names the account).
func (e *Engine) releaseClaims(ctx context.Context, set string, names []string, dns map[string]string) {
	ctx = context.WithoutCancel(ctx)
	batch := claimBatch(e.store.Limits())
	for len(names) > 0 {
		chunk := names[:min(batch, len(names))]
		names = names[len(chunk):]
		_ = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			var cur setRecord
			if _, err := getJSON(tx, setKey(set), &cur); err != nil {
				return err
			}
			for _, n := range chunk {
				if slices.Contains(cur.Accounts, n) {
					continue
				}
				a, ok, err := loadAccount(tx, set, n)
				if err != nil || !ok || !strings.EqualFold(a.DN, dns[n]) {
					continue
				}
				if err := e.dropAccount(tx, set, n, &a); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

func sameSet(a, b *setRecord) bool {
	return slices.Equal(a.Accounts, b.Accounts) && a.TTL == b.TTL && a.MaxTTL == b.MaxTTL && a.DisableEnforcement == b.DisableEnforcement
}

// freeLeaving frees (see dropAccount) the accounts that left the set name
// (its leaving list), in as many transactions as the store's limits
// require, unless the set lists them again. It frees nothing else, so that
// the claims of a PutLibrarySet of the same set running meanwhile (account
// records the set does not list yet) stay. Run again after an error or a
// crash, it frees what is left.
func (e *Engine) freeLeaving(ctx context.Context, name string) error {
	prefix := leavingPrefix(name)
	_, err := storage.Batch(ctx, e.store, prefix, &storage.BatchOptions{Writes: 4, Reads: 3, KeysOnly: true}, func(tx storage.Tx, key string, _ []byte) error {
		n := strings.TrimPrefix(key, prefix)
		var cur setRecord
		ok, err := getJSON(tx, setKey(name), &cur)
		if err != nil {
			return err
		}
		if !ok || !slices.Contains(cur.Accounts, n) {
			a, ok, err := loadAccount(tx, name, n)
			if err != nil {
				return err
			}
			if ok {
				if err := e.dropAccount(tx, name, n, &a); err != nil {
					return err
				}
			}
		}
		return tx.Delete(key)
	})
	return err
}

// freeLeftAccounts frees (see dropAccount), in as many transactions as
// the store's limits require, every account record of the set name whose
// account the stored set does not list: those of a deleted set. It keeps
// no state: run again after an error or a crash, it frees what is left.
func (e *Engine) freeLeftAccounts(ctx context.Context, name string) error {
	acctPrefix := prefixLibAcct + url.PathEscape(name) + "/"
	_, err := storage.Batch(ctx, e.store, acctPrefix, &storage.BatchOptions{Writes: 3, Reads: 2}, func(tx storage.Tx, key string, raw []byte) error {
		n := strings.TrimPrefix(key, acctPrefix)
		var cur setRecord
		ok, err := getJSON(tx, setKey(name), &cur)
		if err != nil {
			return err
		}
		if ok && slices.Contains(cur.Accounts, n) {
			return nil // in the set (again)
		}
		a, ok, err := loadAccount(tx, name, n)
		if err != nil || !ok {
			return err
		}
		return e.dropAccount(tx, name, n, &a)
	})
	return err
}

// dropAccount removes the record of account n of set and frees its entry.
func (e *Engine) dropAccount(tx storage.Tx, set, n string, a *libAccount) error {
	var owner string
	if _, err := getJSON(tx, accountKey(a.DN), &owner); err != nil {
		return err
	}
	if owner == libOwner(set) {
		if err := tx.Delete(accountKey(a.DN)); err != nil {
			return err
		}
	}
	if err := tx.Delete(pendingKey(set, n)); err != nil {
		return err
	}
	return tx.Delete(acctKey(set, n))
}

// GetLibrarySet returns the library set name. It needs read on
// "MOUNT/library/NAME"; a missing set is keel.KindNotFound.
func (e *Engine) GetLibrarySet(ctx context.Context, name string) (_ LibrarySet, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.GetLibrarySet", name, nil, func(ctx context.Context) (LibrarySet, error) {
		return e.getLibrarySet(ctx, name)
	})
}

func (e *Engine) getLibrarySet(ctx context.Context, name string) (_ LibrarySet, err error) {
	defer prefixErr(&err)
	if err := e.libraryOnly(); err != nil {
		return LibrarySet{}, err
	}
	if err := checkSetName(name); err != nil {
		return LibrarySet{}, err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("library", name)); err != nil {
		return LibrarySet{}, err
	}
	var rec setRecord
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		var err error
		rec, err = loadSet(tx, name)
		return err
	})
	if err != nil {
		return LibrarySet{}, err
	}
	return LibrarySet{Name: name, ServiceAccountNames: rec.Accounts, TTL: rec.TTL, MaxTTL: rec.MaxTTL,
		DisableCheckInEnforcement: rec.DisableEnforcement}, nil
}

// ListLibrarySets returns one page of the names directly under path
// among the library sets, with folders ending in "/", paged as
// ListStaticRoles (r.Limit 0: 1,000; no set gives empty
// Items). It needs list on "MOUNT/library/PATH".
func (e *Engine) ListLibrarySets(ctx context.Context, path string, r keel.ListRequest) (_ keel.Page[string], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.ListLibrarySets", "", map[string]any{"path": path, "r": r}, func(ctx context.Context) (keel.Page[string], error) {
		return e.listLibrarySets(ctx, path, r)
	})
}

func (e *Engine) listLibrarySets(ctx context.Context, path string, r keel.ListRequest) (_ keel.Page[string], err error) {
	defer prefixErr(&err)
	if err := e.libraryOnly(); err != nil {
		return keel.Page[string]{}, err
	}
	return e.listChildren(ctx, e.resource("library"), prefixLibSet, path, r)
}

// DeleteLibrarySet removes the library set name and frees its accounts
// (they keep the password they have). It needs delete on
// "MOUNT/library/NAME". While an account of the set is checked out it
// fails with keel.KindConflict and changes nothing. A missing set is not an
// error.
//
// The set is removed in one transaction, then its accounts are freed in
// batches sized from the store's limits (storage.Batch): an error or a
// crash between them leaves the set gone and some accounts still held by
// it (other sets and static roles cannot take them yet); calling
// DeleteLibrarySet again frees them.
func (e *Engine) DeleteLibrarySet(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, e.obs, e.clock, "ldapengine.DeleteLibrarySet", name, nil, func(ctx context.Context) error {
		return e.deleteLibrarySet(ctx, name)
	})
}

func (e *Engine) deleteLibrarySet(ctx context.Context, name string) (err error) {
	defer prefixErr(&err)
	if err := e.libraryOnly(); err != nil {
		return err
	}
	if err := checkSetName(name); err != nil {
		return err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapDelete, e.resource("library", name)); err != nil {
		return err
	}
	// One transaction checks that no account is checked out and removes
	// the set: from then on no check-out can take its accounts. It reads
	// one key per account (see Limits.MaxLibraryAccounts).
	err = e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec setRecord
		found, err := getJSON(tx, setKey(name), &rec)
		if err != nil || !found {
			return err
		}
		for _, n := range rec.Accounts {
			a, ok, err := loadAccount(tx, name, n)
			if err != nil {
				return err
			}
			if ok && a.CheckedOut {
				return fmt.Errorf("ldapengine: library set %q: cannot be deleted while %q is checked out: %w", name, n, keel.KindConflict)
			}
		}
		return tx.Delete(setKey(name))
	})
	if err != nil {
		return err
	}
	// Then the accounts are freed in batches, and the leaving list is
	// dropped; run again, DeleteLibrarySet frees what an interrupted run
	// left.
	err = e.freeLeftAccounts(ctx, name)
	if err == nil {
		_, err = storage.DeletePrefix(ctx, e.store, leavingPrefix(name))
	}
	if err != nil {
		return wrapf(err, "library set %q: removed, but its accounts are not all freed (delete it again)", name)
	}
	return nil
}

// GetLibraryStatus returns the check-out state of every account of the
// library set name, by account name (at most Limits().MaxLibraryAccounts
// of them); a missing set is keel.KindNotFound. It needs read on
// "MOUNT/library/NAME/status".
func (e *Engine) GetLibraryStatus(ctx context.Context, name string) (_ map[string]AccountStatus, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, e.obs, e.clock, "ldapengine.GetLibraryStatus", name, nil, func(ctx context.Context) (map[string]AccountStatus, error) {
		return e.getLibraryStatus(ctx, name)
	})
}

func (e *Engine) getLibraryStatus(ctx context.Context, name string) (_ map[string]AccountStatus, err error) {
	defer prefixErr(&err)
	if err := e.libraryOnly(); err != nil {
		return nil, err
	}
	if err := checkSetName(name); err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, e.auth, keel.CapRead, e.resource("library", name, "status")); err != nil {
		return nil, err
	}
	var out map[string]AccountStatus
	err = e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := loadSet(tx, name)
		if err != nil {
			return err
		}
		out = make(map[string]AccountStatus, len(rec.Accounts))
		for _, n := range rec.Accounts {
			a, _, err := loadAccount(tx, name, n)
			if err != nil {
				return err
			}
			st := AccountStatus{Available: a.available()}
			if a.CheckedOut {
				st.BorrowerClientToken, st.BorrowerEntityID = a.ClientToken, a.EntityID
			}
			out[n] = st
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

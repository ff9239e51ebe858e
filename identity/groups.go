package identity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// The types of group.
const (
	// Internal groups list their members explicitly; the default type.
	Internal = "internal"
	// External groups take their members from an external identity
	// provider: they accept no member ids.
	External = "external"
)

// EntityDirectory tells whether identity entities exist. A program that
// keeps entities provides one in Options.Entities so that the ids of
// GroupRequest.MemberEntityIDs are checked; without it any id is accepted.
//
// Implementations must be safe for concurrent use. Exists is called
// outside any transaction of the Groups' store.
type EntityDirectory interface {
	// Exists reports whether the entity id exists. An error means the
	// answer is unknown; it is returned to the caller with its kind, or
	// as keel.KindUnavailable when it has none.
	Exists(ctx context.Context, id string) (bool, error)
}

// Options configure Groups. A nil *Options, and the zero value of each
// field, mean the defaults.
type Options struct {
	// Authorizer decides the caller's rights on each operation. Nil
	// allows everything. Its rules on group names are folded when it is
	// a keel.Folder (keel.RuleAuthorizer is); any other must fold them
	// itself (see Rights in the package documentation).
	Authorizer keel.Authorizer
	// Clock gives Group.CreationTime and LastUpdateTime. Nil:
	// keel.SystemClock{}.
	Clock keel.Clock
	// Entities, when not nil, checks every id of
	// GroupRequest.MemberEntityIDs that a write sets. Nil: entity ids
	// are stored as given.
	Entities EntityDirectory
	// Observer is told of every operation (see keel.Observer). Nil:
	// none.
	Observer keel.Observer
}

// Group is an identity group as read: its own fields, and its members and
// parents as they are at the time of the read.
type Group struct {
	// ID is the group's UUID, assigned at creation.
	ID string
	// Name is unique among groups ignoring case, kept with its case.
	Name string
	// Type is Internal or External; it never changes.
	Type string
	// Metadata holds the caller's pairs; never nil.
	Metadata map[string]string
	// Policies are lower case, de-duplicated and sorted; never nil.
	Policies []string
	// MemberGroupIDs are the ids of the member groups, sorted; never nil.
	MemberGroupIDs []string
	// MemberEntityIDs are the ids of the member entities, de-duplicated
	// and sorted; never nil.
	MemberEntityIDs []string
	// ParentGroupIDs are the ids of the groups this group is a member
	// of, sorted; never nil.
	ParentGroupIDs []string
	// CreationTime is when the group was created; LastUpdateTime when
	// it was last written, both from the clock of Options.
	CreationTime, LastUpdateTime time.Time
	// ModifyIndex is 1 at creation and grows by one with each write to
	// the group, including a change of its member groups made by
	// deleting one of them.
	ModifyIndex uint64
}

// GroupRequest is what a write sets on a group, field by field. A nil
// field leaves the stored value as it is (or takes the default, on
// creation); a non-nil field replaces it, so &[]string{} removes every
// member group. Go 1.26's new("x") and &[]string{…} make the pointers.
type GroupRequest struct {
	// Name renames the group (the name must be free, ignoring case). Nil
	// or "" keeps the name; a group created without one is named
	// "entity-<UUID>".
	Name *string
	// Type is Internal or External. It may be given on an update only
	// with the group's own type. Nil or "" means Internal on creation.
	Type *string
	// Metadata replaces the pairs: at most 64, keys of 1 to 128
	// characters, values of at most 512.
	Metadata *map[string]string
	// Policies replaces the policies: trimmed, lower-cased,
	// de-duplicated, empty names dropped, sorted; "root" is refused.
	Policies *[]string
	// MemberGroupIDs replaces the member groups: each must exist, must
	// not be the group itself, and must not create a cycle; at most
	// Limits().MaxMemberGroups of them on a store that bounds its
	// transactions.
	MemberGroupIDs *[]string
	// MemberEntityIDs replaces the member entities; each is checked by
	// Options.Entities when set.
	MemberEntityIDs *[]string
}

// Result is what a write returns: the group's id and name after the write,
// and whether the write created it.
type Result struct {
	ID      string
	Name    string
	Created bool
}

// Groups keeps identity groups in a store. Create one with New; the zero
// Groups is not usable. Groups is safe for concurrent use: it keeps no state
// besides its configuration.
type Groups struct {
	store    storage.Store // the store given to New
	authz    keel.Authorizer
	clock    keel.Clock
	obs      keel.Observer
	entities EntityDirectory
	limits   Limits
}

// New returns Groups that keep their keys in store, which its caller has
// scoped to them. It reads nothing from the store. A program gets them
// from the root of the Vault-like service, mount.Table.Groups, which keeps
// them under "identity/" of its store with its one Authorizer.
//
// The Groups ask opts.Authorizer's view keel.Fold(opts.Authorizer,
// "identity/group/name/", …) for their rights, in which rules on group
// names are folded as the names are, so that they hold for every spelling
// (see Rights in the package documentation). The Authorizer given is left
// as it is.
//
// New fails with an error of kind keel.KindInvalid, naming "Store", when
// store is nil, or is a view that would share keys with another component
// of a composition root on the same store (storage.CheckClaim): a view
// that holds the root's parts, or lies in one claimed for another kind
// (a kv mount's data).
func New(store storage.Store, opts *Options) (*Groups, error) {
	if store == nil {
		return nil, fmt.Errorf("identity: %w", keel.Invalid("Store", "is required"))
	}
	if err := storage.CheckClaim(store, ClaimKind); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	return &Groups{
		store:    store,
		authz:    keel.Fold(o.Authorizer, resourceName, foldName),
		clock:    keel.ClockOrSystem(o.Clock),
		entities: o.Entities,
		obs:      o.Observer,
		limits:   Limits{MaxMemberGroups: maxMemberGroups(store.Limits())},
	}, nil
}

// ClaimKind is the kind of the part of a store a composition root lays
// out for identity groups (see storage.Claim).
const ClaimKind = "identity"

// Limits are the bounds the Groups' store puts on a write, from its
// storage.Limits; a zero field means no bound.
type Limits struct {
	// MaxMemberGroups is the most member groups one write may list in
	// GroupRequest.MemberGroupIDs: 0 (none) when the store bounds no
	// transaction (memstore and boltstore by default), 30 on
	// etcdstore's default limits (128 operations and 128 reads per
	// transaction).
	//
	// A write replaces the member list in one transaction: it reads the
	// stored members and each group it adds, and writes two edge keys
	// for each member added or removed, so on a bounded store a write
	// may name at most min((MaxTxOps-3)/4, (MaxTxReads-8)/4) groups: the
	// stored list (at most as long) and the new one may then differ
	// entirely and still fit, with half the reads left for the cycle
	// check's walk over the ancestors. A longer list is refused before
	// anything is written, with keel.KindInvalid on "MemberGroupIDs"
	// naming the limit.
	MaxMemberGroups int
}

// Limits returns the limits of the Groups' store, as read by New. The
// bounds that depend on a group's edges (deleting a group of many parent
// groups, the cycle check of a group of many ancestors) are not fixed
// numbers: such an operation is refused with keel.KindTooLarge, naming the
// store's limit (see Errors in the package documentation).
func (g *Groups) Limits() Limits { return g.limits }

// maxMemberGroups is Limits.MaxMemberGroups for a store of limits l.
func maxMemberGroups(l storage.Limits) int {
	n := 0
	if l.MaxTxOps > 0 {
		n = max(1, (l.MaxTxOps-3)/4)
	}
	if l.MaxTxReads > 0 {
		r := max(1, (l.MaxTxReads-8)/4)
		if n == 0 || r < n {
			n = r
		}
	}
	return n
}

// The resources of the rights; see the package documentation.
const (
	resourceRoot = "identity/group"
	resourceID   = "identity/group/id/"
	resourceName = "identity/group/name/"
)

// nameResource is the resource of the group named name: its folded name,
// so that a right on one spelling holds for every spelling of the same
// group (names are case-insensitive). New folds the Authorizer's rules
// alike (keel.Fold).
func nameResource(name string) string { return resourceName + foldName(name) }

// Get returns the group of id.
//
// It needs keel.CapRead on "identity/group/id/<id>". It fails with
// keel.KindForbidden without the right and keel.KindNotFound when no group
// has that id.
func (g *Groups) Get(ctx context.Context, id string) (Group, error) {
	return keel.Observe(ctx, g.obs, g.clock, "identity.Get", id, nil, func(ctx context.Context) (Group, error) {
		return g.doGet(ctx, id)
	})
}

func (g *Groups) doGet(ctx context.Context, id string) (Group, error) {
	if err := g.authorize(ctx, keel.CapRead, resourceID+id); err != nil {
		return Group{}, fmt.Errorf("identity: read group %q: %w", id, err)
	}
	var out Group
	err := g.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		out, err = readGroup(tx, rec)
		return err
	})
	if err != nil {
		return Group{}, fmt.Errorf("identity: read group %q: %w", id, err)
	}
	return out, nil
}

// GetByName returns the group whose name is name, ignoring case.
//
// It needs keel.CapRead on "identity/group/name/<name>" (name folded).
// It fails with keel.KindForbidden without the right and keel.KindNotFound
// when no group has that name.
func (g *Groups) GetByName(ctx context.Context, name string) (Group, error) {
	return keel.Observe(ctx, g.obs, g.clock, "identity.GetByName", name, nil, func(ctx context.Context) (Group, error) {
		return g.getByName(ctx, name)
	})
}

func (g *Groups) getByName(ctx context.Context, name string) (Group, error) {
	if err := g.authorize(ctx, keel.CapRead, nameResource(name)); err != nil {
		return Group{}, fmt.Errorf("identity: read group named %q: %w", name, err)
	}
	var out Group
	err := g.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := getRecordByName(tx, name)
		if err != nil {
			return err
		}
		out, err = readGroup(tx, rec)
		return err
	})
	if err != nil {
		return Group{}, fmt.Errorf("identity: read group named %q: %w", name, err)
	}
	return out, nil
}

// defaultListLimit is how many ids or names a page of List or ListNames
// holds when the request sets no limit.
const defaultListLimit = 1000

// List returns a page of the ids of the groups, in ascending byte order:
// at most r.Limit ids (1,000 when it is 0 or less), those after
// r.Cursor; keel.All walks every page. The cursor is the last id of the
// page before: a group created or deleted between two pages is listed, or
// not, by where its id falls, and no other id is skipped or listed twice.
// A page reads only the ids it returns, and one more.
//
// It needs keel.CapList on "identity/group/id/", for every page. No group
// is not an error: the page is empty.
func (g *Groups) List(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
	return keel.Observe(ctx, g.obs, g.clock, "identity.List", "", r, func(ctx context.Context) (keel.Page[string], error) {
		return g.doList(ctx, r)
	})
}

func (g *Groups) doList(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
	if err := g.authorize(ctx, keel.CapList, resourceID); err != nil {
		return keel.Page[string]{}, fmt.Errorf("identity: list groups: %w", err)
	}
	limit := listLimit(r)
	var ids []string
	err := g.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		ids = ids[:0]
		opts := storage.ScanOptions{KeysOnly: true}
		if r.Cursor != "" {
			opts.After = groupPrefix + r.Cursor
		}
		return tx.Scan(groupPrefix, opts, func(key string, _ []byte) error {
			if len(ids) > limit { // one more than the page: another follows
				return storage.StopScan
			}
			ids = append(ids, key[len(groupPrefix):])
			return nil
		})
	})
	if err != nil {
		return keel.Page[string]{}, fmt.Errorf("identity: list groups: %w", err)
	}
	return page(ids, limit), nil
}

// ListNames returns a page of the names of the groups, with their case, in
// the order of their folded form (names compare without regard to case, as
// they are unique: "alpha" before "Beta"): at most r.Limit names
// (1,000 when it is 0 or less), those after r.Cursor; keel.All
// walks every page. The cursor names the last group of the page before: a
// group created, renamed or deleted between two pages is listed, or not,
// by where its name falls, and no other name is skipped or listed twice.
// A page reads the name index from its cursor on, no further than itself.
//
// It needs keel.CapList on "identity/group/name/", for every page. No group
// is not an error: the page is empty.
func (g *Groups) ListNames(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
	return keel.Observe(ctx, g.obs, g.clock, "identity.ListNames", "", r, func(ctx context.Context) (keel.Page[string], error) {
		return g.listNames(ctx, r)
	})
}

func (g *Groups) listNames(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
	if err := g.authorize(ctx, keel.CapList, resourceName); err != nil {
		return keel.Page[string]{}, fmt.Errorf("identity: list group names: %w", err)
	}
	limit := listLimit(r)
	var out keel.Page[string]
	err := g.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		out = keel.Page[string]{}
		var opts storage.ScanOptions
		if r.Cursor != "" {
			opts.After = nameKey(r.Cursor)
		}
		last := ""
		return tx.Scan(namePrefix, opts, func(key string, value []byte) error {
			if len(out.Items) == limit { // one more than the page: another follows
				out.Next = last
				return storage.StopScan
			}
			e, err := decodeNameEntry(value)
			if err != nil {
				return fmt.Errorf("name index entry %q: %v: %w", key, err, keel.KindInternal)
			}
			out.Items = append(out.Items, e.Name)
			last = e.Name
			return nil
		})
	})
	if err != nil {
		return keel.Page[string]{}, fmt.Errorf("identity: list group names: %w", err)
	}
	return out, nil
}

// listLimit is the size of a page asked for by r.
func listLimit(r keel.ListRequest) int {
	if r.Limit <= 0 {
		return defaultListLimit
	}
	return min(r.Limit, math.MaxInt-1) // room for the one more
}

// page is the page of the first limit items of sorted, with the cursor
// of the next when sorted holds more.
func page(sorted []string, limit int) keel.Page[string] {
	if len(sorted) > limit {
		return keel.Page[string]{Items: sorted[:limit:limit], Next: sorted[limit-1]}
	}
	return keel.Page[string]{Items: sorted}
}

// Delete deletes the group of id, in one transaction with its name,
// its membership in its parents (whose ModifyIndex grows) and its
// members' parent links.
//
// It needs keel.CapDelete on "identity/group/id/<id>". It fails with
// keel.KindForbidden without the right, keel.KindNotFound when no group
// has that id, and keel.KindTooLarge, writing nothing, when the group has
// more member and parent groups than one transaction of the store can
// unlink (see the package documentation: on etcd, at most 22 parent
// groups for a group of 30 member groups).
func (g *Groups) Delete(ctx context.Context, id string) error {
	return keel.ObserveErr(ctx, g.obs, g.clock, "identity.Delete", id, nil, func(ctx context.Context) error {
		return g.doDelete(ctx, id)
	})
}

func (g *Groups) doDelete(ctx context.Context, id string) error {
	if err := g.authorize(ctx, keel.CapDelete, resourceID+id); err != nil {
		return fmt.Errorf("identity: delete group %q: %w", id, err)
	}
	now := g.clock.Now()
	err := g.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		return deleteGroup(tx, g.store.Limits(), rec, now)
	})
	if err != nil {
		return fmt.Errorf("identity: delete group %q: %w", id, err)
	}
	return nil
}

// DeleteByName deletes the group whose name is name, ignoring case, as
// Delete does.
//
// It needs keel.CapDelete on "identity/group/name/<name>" (name folded).
// It fails with keel.KindForbidden without the right, keel.KindNotFound
// when no group has that name, and keel.KindTooLarge as Delete.
func (g *Groups) DeleteByName(ctx context.Context, name string) error {
	return keel.ObserveErr(ctx, g.obs, g.clock, "identity.DeleteByName", name, nil, func(ctx context.Context) error {
		return g.deleteByName(ctx, name)
	})
}

func (g *Groups) deleteByName(ctx context.Context, name string) error {
	if err := g.authorize(ctx, keel.CapDelete, nameResource(name)); err != nil {
		return fmt.Errorf("identity: delete group named %q: %w", name, err)
	}
	now := g.clock.Now()
	err := g.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		rec, err := getRecordByName(tx, name)
		if err != nil {
			return err
		}
		return deleteGroup(tx, g.store.Limits(), rec, now)
	})
	if err != nil {
		return fmt.Errorf("identity: delete group named %q: %w", name, err)
	}
	return nil
}

// authorize asks the Authorizer for c on resource. An error that carries
// no kind still refuses, as keel.KindForbidden.
func (g *Groups) authorize(ctx context.Context, c keel.Capability, resource string) error {
	err := keel.Authorize(ctx, g.authz, c, resource)
	if err != nil && keel.KindOf(err) == keel.KindUnknown {
		return fmt.Errorf("%q on %q refused: %w: %w", c, resource, keel.KindForbidden, err)
	}
	return err
}

// readGroup completes rec with its member and parent groups read through
// tx.
func readGroup(tx storage.Tx, rec *record) (Group, error) {
	members, err := edges(tx, memberPrefix(rec.ID))
	if err != nil {
		return Group{}, err
	}
	parents, err := edges(tx, parentPrefix(rec.ID))
	if err != nil {
		return Group{}, err
	}
	gr := Group{
		ID: rec.ID, Name: rec.Name, Type: rec.Type,
		Metadata:        rec.Metadata,
		Policies:        rec.Policies,
		MemberGroupIDs:  members,
		MemberEntityIDs: rec.MemberEntityIDs,
		ParentGroupIDs:  parents,
		CreationTime:    rec.CreationTime,
		LastUpdateTime:  rec.LastUpdateTime,
		ModifyIndex:     rec.ModifyIndex,
	}
	if gr.Metadata == nil {
		gr.Metadata = map[string]string{}
	}
	if gr.Policies == nil {
		gr.Policies = []string{}
	}
	if gr.MemberEntityIDs == nil {
		gr.MemberEntityIDs = []string{}
	}
	return gr, nil
}

// deleteCost is what deleting a group of m member groups and p parent
// groups costs one transaction: two edge keys deleted per member group,
// two per parent group and the parent's record rewritten, the record and
// the name deleted; it reads the name and the record, scans both edge
// lists (one per range and one per key) and reads each parent's record.
func deleteCost(m, p int) (writes, reads int) {
	return 2*m + 3*p + 2, 4 + m + 2*p
}

// deleteFits returns nil when deleting a group of m member groups and p
// parent groups fits one transaction of a store of limits l, and else an
// error of kind keel.KindTooLarge that names the limit and the remedy.
func deleteFits(l storage.Limits, m, p int) error {
	writes, reads := deleteCost(m, p)
	const what = "deleting it writes two keys per member group (%d member groups), three per parent group (%d parent groups) and two more"
	switch {
	case l.MaxTxOps > 0 && writes > l.MaxTxOps:
		return fmt.Errorf(what+": %d writes, at most %d fit in one transaction of this store (storage.Limits MaxTxOps); remove it from some parent groups, or some member groups from it, first: %w",
			m, p, writes, l.MaxTxOps, keel.KindTooLarge)
	case l.MaxTxReads > 0 && reads > l.MaxTxReads:
		return fmt.Errorf(what+", and reads %d keys and ranges, at most %d in one transaction of this store (storage.Limits MaxTxReads); remove it from some parent groups, or some member groups from it, first: %w",
			m, p, reads, l.MaxTxReads, keel.KindTooLarge)
	}
	return nil
}

// deleteGroup removes rec, its name, and every edge to and from it; the
// parents it leaves get a new ModifyIndex and LastUpdateTime. It reads
// both edge lists first and refuses, before any write, a group whose
// delete does not fit one transaction of a store of limits l (see
// deleteFits).
func deleteGroup(tx storage.Tx, l storage.Limits, rec *record, now time.Time) error {
	members, err := edges(tx, memberPrefix(rec.ID))
	if err != nil {
		return err
	}
	parents, err := edges(tx, parentPrefix(rec.ID))
	if err != nil {
		return err
	}
	if err := deleteFits(l, len(members), len(parents)); err != nil {
		return err
	}
	for _, c := range members {
		if err := unlink(tx, rec.ID, c); err != nil {
			return err
		}
	}
	for _, p := range parents {
		if err := unlink(tx, p, rec.ID); err != nil {
			return err
		}
		prec, err := getRecord(tx, p)
		if err != nil {
			if errors.Is(err, keel.KindNotFound) {
				return fmt.Errorf("parent %q of %q has no record: %w", p, rec.ID, keel.KindInternal)
			}
			return err
		}
		prec.ModifyIndex++
		prec.LastUpdateTime = now
		if err := putRecord(tx, prec); err != nil {
			return err
		}
	}
	if err := tx.Delete(nameKey(rec.Name)); err != nil {
		return err
	}
	return tx.Delete(groupKey(rec.ID))
}

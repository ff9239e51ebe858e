package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// how a write finds the group it changes.
type target struct {
	id, name   string // the group's id or (path) name; either may be ""
	mustExist  bool   // by id: updates only
	resource   string
	byNamePath bool // the name comes from the path and renames
}

// CreateOrUpdate updates or creates a group, as POST identity/group does:
// with id set it updates the group of that id (keel.KindNotFound when
// there is none); else with a name in r.Name it updates the group of that
// name, ignoring case, or creates it; else it creates a group named
// "entity-<UUID>". An update changes only the fields r sets; a creation
// takes the defaults for the others. The package assigns every group's id.
//
// It needs keel.CapCreate on "identity/group" when it creates and
// keel.CapUpdate there when it updates, chosen inside the transaction that
// writes. It fails with keel.KindForbidden without the right,
// keel.KindInvalid for any broken rule (see the package documentation),
// keel.KindNotFound as above, and keel.KindTooLarge beyond the store's
// limits. On any error nothing is written.
func (g *Groups) CreateOrUpdate(ctx context.Context, id string, r GroupRequest) (Result, error) {
	return keel.Observe(ctx, g.obs, g.clock, "identity.CreateOrUpdate", id, r, func(ctx context.Context) (Result, error) {
		return g.createOrUpdate(ctx, id, r)
	})
}

func (g *Groups) createOrUpdate(ctx context.Context, id string, r GroupRequest) (Result, error) {
	t := target{id: id, mustExist: id != "", resource: resourceRoot}
	if id == "" && r.Name != nil {
		t.name = *r.Name
	}
	res, err := g.write(ctx, t, r)
	if err != nil {
		return Result{}, fmt.Errorf("identity: write group: %w", err)
	}
	return res, nil
}

// Update changes the fields r sets on the group of id, as POST
// identity/group/id/:id does. A name in r.Name renames it.
//
// It needs keel.CapUpdate on "identity/group/id/<id>", even when no group
// has that id. It fails as CreateOrUpdate does, with keel.KindNotFound when
// no group has that id.
func (g *Groups) Update(ctx context.Context, id string, r GroupRequest) (Result, error) {
	return keel.Observe(ctx, g.obs, g.clock, "identity.Update", id, r, func(ctx context.Context) (Result, error) {
		return g.doUpdate(ctx, id, r)
	})
}

func (g *Groups) doUpdate(ctx context.Context, id string, r GroupRequest) (Result, error) {
	res, err := g.write(ctx, target{id: id, mustExist: true, resource: resourceID + id}, r)
	if err != nil {
		return Result{}, fmt.Errorf("identity: update group %q: %w", id, err)
	}
	return res, nil
}

// CreateOrUpdateByName updates the group named name, ignoring case, or
// creates it, as POST identity/group/name/:name does: an update changes
// only the fields r sets, a creation takes the defaults for the others.
// The group takes name with the case given here, as in Vault; r.Name is
// ignored.
//
// It needs keel.CapCreate on "identity/group/name/<name>" (name folded)
// when it creates and keel.CapUpdate there when it updates, chosen inside
// the transaction. It fails as CreateOrUpdate does; an invalid name is
// reported on the field "Name".
func (g *Groups) CreateOrUpdateByName(ctx context.Context, name string, r GroupRequest) (Result, error) {
	return keel.Observe(ctx, g.obs, g.clock, "identity.CreateOrUpdateByName", name, r, func(ctx context.Context) (Result, error) {
		return g.createOrUpdateByName(ctx, name, r)
	})
}

func (g *Groups) createOrUpdateByName(ctx context.Context, name string, r GroupRequest) (Result, error) {
	r.Name = &name
	t := target{name: name, resource: nameResource(name), byNamePath: true}
	res, err := g.write(ctx, t, r)
	if err != nil {
		return Result{}, fmt.Errorf("identity: write group named %q: %w", name, err)
	}
	return res, nil
}

func (g *Groups) write(ctx context.Context, t target, in GroupRequest) (Result, error) {
	n := normalize(in)
	if lim := g.limits.MaxMemberGroups; lim > 0 && n.in.MemberGroupIDs != nil && len(*n.in.MemberGroupIDs) > lim {
		// Reported with the other faults, after the rights, inside a
		// transaction that stops before it reads the members.
		n.problems = append(n.problems, &keel.FieldError{Field: "MemberGroupIDs",
			Rule: fmt.Sprintf("lists %d groups, at most %d on this store (see Groups.Limits)", len(*n.in.MemberGroupIDs), lim)})
	}
	if t.byNamePath && nameRule(t.name) != "" {
		// A path name that is empty or malformed names no resource
		// worth asking about.
		return Result{}, keel.Invalid("Name", "%s", nameRule(t.name))
	}
	entityErr := g.checkEntities(ctx, n)
	// Decided once, outside the closure, so that a rerun of the closure
	// creates the same group.
	newID := uuid.NewString()
	genName := "entity-" + uuid.NewString()
	now := g.clock.Now()

	var res Result
	err := g.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var rec *record
		var err error
		switch {
		case t.id != "":
			rec, err = getRecord(tx, t.id)
		case t.name != "" && nameRule(t.name) == "":
			rec, err = getRecordByName(tx, t.name)
		default:
			err = keel.KindNotFound
		}
		if err != nil && !errors.Is(err, keel.KindNotFound) {
			return err
		}
		want := keel.CapCreate
		if rec != nil || t.mustExist {
			want = keel.CapUpdate
		}
		if err := g.authorize(ctx, want, t.resource); err != nil {
			return err
		}
		if rec == nil && t.mustExist {
			return fmt.Errorf("no group %q: %w", t.id, keel.KindNotFound)
		}
		var v keel.Validation
		for _, fe := range n.problems {
			v.Add(fe.Field, "%s", fe.Rule)
		}
		for _, fe := range keel.FieldErrors(entityErr) {
			v.Add(fe.Field, "%s", fe.Rule)
		}
		if entityErr != nil && keel.KindOf(entityErr) != keel.KindInvalid {
			return entityErr
		}
		created := rec == nil
		if created {
			rec = &record{ID: newID, Name: genName, Type: Internal, CreationTime: now}
		}
		if err := apply(tx, &v, rec, created, n.in, g.store.Limits().MaxTxReads); err != nil {
			return err
		}
		if err := v.Err(); err != nil {
			return err
		}
		rec.ModifyIndex++
		rec.LastUpdateTime = now
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		if err := putName(tx, rec); err != nil {
			return err
		}
		res = Result{ID: rec.ID, Name: rec.Name, Created: created}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// apply changes rec (not yet written) as in asks and writes the edges of
// its member groups; a broken rule goes to v, and nothing is written
// when v holds any on return. created tells a group not yet stored;
// maxReads is the store's Limits.MaxTxReads (0: no bound).
func apply(tx storage.Tx, v *keel.Validation, rec *record, created bool, in GroupRequest, maxReads int) error {
	// Type: fixed at creation.
	if in.Type != nil && *in.Type != "" {
		switch {
		case created:
			rec.Type = *in.Type // invalid values are already reported
		case *in.Type != rec.Type:
			v.Add("Type", "group type cannot be changed")
		}
	}
	// Name: unique ignoring case.
	if in.Name != nil && *in.Name != "" && *in.Name != rec.Name && nameRule(*in.Name) == "" {
		owner, err := lookupName(tx, *in.Name)
		if err != nil {
			return err
		}
		if owner != "" && owner != rec.ID {
			v.Add("Name", "group name is already in use")
		} else {
			if !created && foldName(*in.Name) != foldName(rec.Name) {
				if err := tx.Delete(nameKey(rec.Name)); err != nil {
					return err
				}
			}
			rec.Name = *in.Name
		}
	}
	if created {
		owner, err := lookupName(tx, rec.Name)
		if err != nil {
			return err
		}
		if owner != "" {
			v.Add("Name", "group name is already in use")
		}
	}
	if in.Metadata != nil {
		rec.Metadata = *in.Metadata
	}
	if in.Policies != nil {
		rec.Policies = *in.Policies
	}
	if in.MemberEntityIDs != nil {
		if rec.Type == External && len(*in.MemberEntityIDs) > 0 {
			v.Add("MemberEntityIDs", "member entities can't be set manually for external groups")
		}
		rec.MemberEntityIDs = *in.MemberEntityIDs
	}
	if in.MemberGroupIDs == nil {
		return nil
	}
	want := *in.MemberGroupIDs
	if rec.Type == External && len(want) > 0 {
		v.Add("MemberGroupIDs", "member groups can't be set for external groups")
		return nil
	}
	return setMembers(tx, v, rec.ID, created, want, maxReads)
}

// writeFixedReads are the keys a write reads before the member groups, at
// most: the group's name (the path's), its record, and its new name.
const writeFixedReads = 3

// setMembers makes want (sorted, without duplicates) the member groups of
// id. It reads the current members once and compares the two sorted lists,
// so its cost is in proportion to the members, plus, when it adds any, the
// walk over id's ancestors that detects cycles. On a store that bounds the
// reads of a transaction (maxReads > 0), the walk gets what the write has
// not read, and a longer one is refused (see ancestorAmong).
func setMembers(tx storage.Tx, v *keel.Validation, id string, created bool, want []string, maxReads int) error {
	var have []string
	if !created {
		var err error
		if have, err = edges(tx, memberPrefix(id)); err != nil {
			return err
		}
	}
	var added, removed []string
	i, j := 0, 0
	for i < len(have) || j < len(want) {
		switch {
		case j == len(want) || (i < len(have) && have[i] < want[j]):
			removed = append(removed, have[i])
			i++
		case i == len(have) || want[j] < have[i]:
			added = append(added, want[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	bad := false
	for _, c := range added {
		if c == id {
			v.Add("MemberGroupIDs", "a group cannot contain itself")
			bad = true
			continue
		}
		if _, err := getRecord(tx, c); err != nil {
			if !errors.Is(err, keel.KindNotFound) {
				return err
			}
			v.Add("MemberGroupIDs", "invalid member group ID %q: no such group", c)
			bad = true
		}
	}
	if bad || v.Len() > 0 {
		return nil
	}
	if len(added) > 0 && !created {
		budget := 0 // no bound
		if maxReads > 0 {
			// The reads of the write so far: its fixed keys, the scan
			// of the members (one per range and per key) and the
			// record of each member added.
			budget = max(maxReads-writeFixedReads-1-len(have)-len(added), 1)
		}
		c, err := ancestorAmong(tx, id, added, budget, maxReads)
		if err != nil {
			return err
		}
		if c != "" {
			v.Add("MemberGroupIDs", "cyclic relationship detected for member group ID %q", c)
			return nil
		}
	}
	for _, c := range removed {
		if err := unlink(tx, id, c); err != nil {
			return err
		}
	}
	for _, c := range added {
		if err := link(tx, id, c); err != nil {
			return err
		}
	}
	return nil
}

// ancestorAmong walks up from id over the parent edges, depth first, and
// returns the first group of candidates it meets, or "". Each ancestor is
// visited once: the cost is in proportion to id's ancestors and their
// edges, not to the size of any group. A walk that reads (one per
// ancestor's parent list and one per parent in it) more than budget > 0
// stops with keel.KindTooLarge, naming maxReads, the store's
// Limits.MaxTxReads, before the write's transaction grows past it (budget
// counts the reads of the write at their most, so the refusal may come a
// read or two before the store's).
func ancestorAmong(tx storage.Tx, id string, candidates []string, budget, maxReads int) (string, error) {
	want := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		want[c] = true
	}
	seen := map[string]bool{id: true}
	stack := []string{id}
	reads := 0
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		parents, err := edges(tx, parentPrefix(x))
		if err != nil {
			return "", err
		}
		if reads += 1 + len(parents); budget > 0 && reads > budget {
			return "", fmt.Errorf("the check for cycles reads the parent groups of every ancestor group of the group: it needs more than the %d reads this write has left in one transaction of this store (storage.Limits MaxTxReads %d); remove the group, or its ancestors, from some parent groups before adding member groups to it: %w",
				budget, maxReads, keel.KindTooLarge)
		}
		for _, p := range parents {
			if want[p] {
				return p, nil
			}
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return "", nil
}

// checkEntities asks the EntityDirectory about every member entity id of
// n, outside any transaction. It returns nil, an error of kind
// keel.KindInvalid naming the unknown ids, or the directory's error.
func (g *Groups) checkEntities(ctx context.Context, n normalized) error {
	if g.entities == nil || n.in.MemberEntityIDs == nil {
		return nil
	}
	var v keel.Validation
	for _, id := range *n.in.MemberEntityIDs {
		ok, err := g.entities.Exists(ctx, id)
		if err != nil {
			if keel.KindOf(err) == keel.KindUnknown {
				return fmt.Errorf("entity directory: %w: %w", keel.KindUnavailable, err)
			}
			return fmt.Errorf("entity directory: %w", err)
		}
		if !ok {
			v.Add("MemberEntityIDs", "invalid member entity ID %q: no such entity", id)
		}
	}
	return v.Err()
}

package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/pager"
	"github.com/keelhq/keel/storage"
)

// Defaults of a policy set's settings, as HCP Terraform's.
const (
	// defaultPolicyToolVersion is a set's PolicyToolVersion when none is
	// sent.
	defaultPolicyToolVersion = "latest"
)

// PolicySet is a policy set as read.
type PolicySet struct {
	ID   string
	Org  string
	Name string
	// Description is nil until set.
	Description *string
	// Kind is Sentinel or OPA; the kind of every policy of the set.
	Kind string
	// Global sets apply to every workspace of the organization, but for
	// WorkspaceExclusionIDs; they are attached to no workspace or
	// project.
	Global      bool
	Overridable bool
	// AgentEnabled is false for Sentinel sets and true for OPA sets
	// unless sent.
	AgentEnabled bool
	// PolicyToolVersion is "latest" unless sent.
	PolicyToolVersion string
	// PolicyUpdatePatterns is empty, not nil, unless sent.
	PolicyUpdatePatterns []string
	// PoliciesPath is nil unless sent; keel keeps no versions of a set.
	PoliciesPath *string
	// The members, each list sorted and never nil.
	PolicyIDs             []string
	WorkspaceIDs          []string
	ProjectIDs            []string
	WorkspaceExclusionIDs []string
	// CreatedAt and UpdatedAt are UTC, to the millisecond; UpdatedAt
	// changes with the set's settings and its members. Both are zero for
	// a set stored before they were kept.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CreateSetRequest is the input of CreateSet: a nil field is not given (the
// default).
type CreateSetRequest struct {
	Name        *string
	Description *string
	// Kind is Sentinel (the default) or OPA; it cannot change.
	Kind                 *string
	Global               *bool
	Overridable          *bool
	AgentEnabled         *bool
	PolicyToolVersion    *string
	PolicyUpdatePatterns *[]string
	PoliciesPath         *string
	// The members; an id given twice counts once.
	PolicyIDs             []string
	WorkspaceIDs          []string
	ProjectIDs            []string
	WorkspaceExclusionIDs []string
}

// UpdateSetRequest is the input of UpdateSet: a nil field is not given
// (left as it is). The kind cannot change; members change through AddSetMembers and
// RemoveSetMembers.
type UpdateSetRequest struct {
	Name                 *string
	Description          *string
	Global               *bool
	Overridable          *bool
	AgentEnabled         *bool
	PolicyToolVersion    *string
	PolicyUpdatePatterns *[]string
	PoliciesPath         *string
}

type setRecord struct {
	ID                   string     `json:"id"`
	Org                  string     `json:"org"`
	Name                 string     `json:"name"`
	Description          *string    `json:"description,omitempty"`
	Kind                 string     `json:"kind,omitempty"` // "": Sentinel (sets stored before kinds)
	Global               bool       `json:"global,omitempty"`
	Overridable          bool       `json:"overridable,omitempty"`
	AgentEnabled         *bool      `json:"agent_enabled,omitempty"` // nil: the kind's default
	PolicyToolVersion    string     `json:"policy_tool_version,omitempty"`
	PolicyUpdatePatterns []string   `json:"policy_update_patterns,omitempty"`
	PoliciesPath         *string    `json:"policies_path,omitempty"`
	Counts               *setCounts `json:"counts,omitempty"` // nil: stored before counts, count the edges
	CreatedAt            time.Time  `json:"created_at,omitzero"`
	UpdatedAt            time.Time  `json:"updated_at,omitzero"`
}

func (r *setRecord) kind() string {
	if r.Kind == "" {
		return Sentinel
	}
	return r.Kind
}

func getSet(tx storage.Tx, id string) (*setRecord, error) {
	if !validID(id) {
		return nil, notFound(fmt.Sprintf("policy set %q", id))
	}
	raw, err := tx.Get(setKey(id))
	if isNotFound(err) {
		return nil, notFound(fmt.Sprintf("policy set %q", id))
	}
	if err != nil {
		return nil, err
	}
	var rec setRecord
	if err := decode(raw, &rec); err != nil || rec.ID != id {
		return nil, fmt.Errorf("record of policy set %q is corrupt (%v): %w", id, err, keel.KindInternal)
	}
	return &rec, nil
}

func putSet(tx storage.Tx, rec *setRecord) error {
	raw, err := encode(rec)
	if err != nil {
		return fmt.Errorf("encode policy set %q: %v: %w", rec.ID, err, keel.KindInternal)
	}
	return tx.Put(setKey(rec.ID), raw)
}

// The transaction costs of the set operations, from which the limits are
// derived (see Limits): reads and writes besides those per member.
const (
	// DeleteSet and UpdateSet: the index marker, the set, the
	// organization, the name key, one scan per kind of member.
	setFixedReads = 4 + len(setMembers)
	// DeleteSet: the record, its orgset key and its name key.
	setFixedWrites = 3
	// A deletion of a member (a policy by Delete, a workspace or project
	// by the catalog) reads and writes this much besides the sets it
	// leaves: the catalog's own work included.
	memberFixed = 8
)

// maxSetMembers is Limits().MaxSetMembers: the largest number of members (policies, workspaces,
// projects and exclusions together) a policy set may have in the
// Service's store: every operation on a set, its deletion included, then
// fits in one transaction of the store (storage.Limits: MaxTxOps and
// MaxTxReads). With etcd's default limits (128 operations, 128 reads) it
// is 62; a store that states no limit allows any number (math.MaxInt).
// CreateSet and AddSetMembers refuse a set that would grow past it, up
// front, with keel.KindTooLarge.
func (s *Service) maxSetMembers() int {
	l := s.store.Limits()
	n := math.MaxInt
	if l.MaxTxOps > 0 {
		n = min(n, (l.MaxTxOps-setFixedWrites)/2) // two edges per member
	}
	if l.MaxTxReads > 0 {
		// A scan visits each member once; an add reads the member and
		// its edge.
		n = min(n, l.MaxTxReads-setFixedReads, (l.MaxTxReads-2)/2)
	}
	return max(n, 0)
}

// maxMemberSets is Limits().MaxMemberSets: the largest number of sets whose edges the deletion of
// one policy, workspace or project can delete in one transaction of the
// Service's store: two edges and the set's counts per set. With etcd's
// default limits it is 40; a store that states no limit allows any
// number. A deletion of a member of more sets is refused with
// keel.KindTooLarge and leaves the store as it was: remove the member
// from some sets first. Create refuses a policy that would join more.
func (s *Service) maxMemberSets() int {
	l := s.store.Limits()
	n := math.MaxInt
	if l.MaxTxOps > 0 {
		n = min(n, (l.MaxTxOps-memberFixed)/3)
	}
	if l.MaxTxReads > 0 {
		n = min(n, (l.MaxTxReads-memberFixed)/2)
	}
	return max(n, 0)
}

// tooLarge is the error of a set or member past the limits.
func (s *Service) tooLarge(what string, n, most int) error {
	l := s.store.Limits()
	return fmt.Errorf("%s: %d, at most %d fit in one transaction of this store (storage.Limits MaxTxOps %d, MaxTxReads %d): %w",
		what, n, most, l.MaxTxOps, l.MaxTxReads, keel.KindTooLarge)
}

// visibleSet returns the record of the set id, checking the caller's
// right on its organization and that the organization exists; a set the
// caller may not manage, or of an organization being deleted, is not
// found.
func (s *Service) visibleSet(ctx context.Context, tx storage.Tx, live exists, id string) (*setRecord, error) {
	rec, err := getSet(tx, id)
	if err != nil {
		return nil, err
	}
	if err := keel.Authorize(ctx, s.authz, keel.CapManagePolicies, resource(rec.Org)); err != nil {
		if errors.Is(err, keel.KindForbidden) {
			return nil, notFound(fmt.Sprintf("policy set %q", id))
		}
		return nil, err
	}
	if err := orgExists(live, rec.Org, fmt.Sprintf("policy set %q", id)); err != nil {
		return nil, err
	}
	return rec, nil
}

// publicSet returns rec with its members, read from the set's edges.
func publicSet(tx storage.Tx, rec *setRecord) (PolicySet, error) {
	out := setOf(rec)
	if err := readMembers(tx, &out); err != nil {
		return PolicySet{}, err
	}
	return out, nil
}

// setOf returns rec without its members, its defaults resolved.
func setOf(rec *setRecord) PolicySet {
	out := PolicySet{
		ID: rec.ID, Org: rec.Org, Name: rec.Name, Description: rec.Description, Kind: rec.kind(),
		Global: rec.Global, Overridable: rec.Overridable, AgentEnabled: rec.kind() == OPA,
		PolicyToolVersion: rec.PolicyToolVersion, PolicyUpdatePatterns: slices.Clone(rec.PolicyUpdatePatterns),
		PoliciesPath: rec.PoliciesPath, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
	}
	if rec.AgentEnabled != nil {
		out.AgentEnabled = *rec.AgentEnabled
	}
	if out.PolicyToolVersion == "" {
		out.PolicyToolVersion = defaultPolicyToolVersion
	}
	if out.PolicyUpdatePatterns == nil {
		out.PolicyUpdatePatterns = []string{}
	}
	return out
}

// errUnindexed stops a set operation on a store whose sets are not all
// indexed (setsIndexed), so that it indexes them and runs again.
var errUnindexed = errors.New("policy: the policy sets are not indexed")

// indexed runs op, whose closures call checkIndexed first; when the sets
// are not all indexed yet, it indexes them (indexSets) and runs op again.
func (s *Service) indexed(ctx context.Context, op func() error) error {
	err := op()
	if !errors.Is(err, errUnindexed) {
		return err
	}
	if err := indexSets(ctx, s.store); err != nil {
		return err
	}
	return op()
}

// checkIndexed returns errUnindexed when setsIndexed is not in tx.
func checkIndexed(tx storage.Tx) error {
	_, err := tx.Get(setsIndexed)
	if isNotFound(err) {
		return errUnindexed
	}
	return err
}

// CreateSet creates a policy set in org with the members of in (see the
// package's rules). The organization must exist and the caller must hold
// manage-policies on it; otherwise keel.KindNotFound. A set of more than
// Limits().MaxSetMembers members is keel.KindTooLarge. It returns the set as
// created.
func (s *Service) CreateSet(ctx context.Context, org string, in CreateSetRequest) (_ PolicySet, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.CreateSet", org, in, func(ctx context.Context) (PolicySet, error) {
		return s.createSet(ctx, org, in)
	})
}

func (s *Service) createSet(ctx context.Context, org string, in CreateSetRequest) (_ PolicySet, err error) {
	defer prefixErr(&err)
	if err := s.allowed(ctx, org); err != nil {
		return PolicySet{}, err
	}
	var v keel.Validation
	name := ""
	if in.Name == nil || *in.Name == "" {
		v.Add("Name", "is required")
	} else if name = *in.Name; !validName(name) {
		v.Add("Name", "must be letters, numbers, - and _")
	}
	kind := Sentinel
	if in.Kind != nil && *in.Kind != "" {
		kind = *in.Kind
	}
	if kind != Sentinel && kind != OPA {
		v.Add("Kind", "must be sentinel or opa")
	}
	global := in.Global != nil && *in.Global
	if global && in.attaches() {
		v.Add("Global", "%s", notAttached())
	}
	if in.PolicyToolVersion != nil && *in.PolicyToolVersion == "" {
		v.Add("PolicyToolVersion", "must not be empty")
	}
	now := ms(s.clock.Now())
	rec := setRecord{
		ID: newID("polset"), Org: org, Name: name, Description: in.Description, Kind: kind, Global: global,
		Overridable: in.Overridable != nil && *in.Overridable, AgentEnabled: in.AgentEnabled,
		PoliciesPath: in.PoliciesPath, Counts: &setCounts{}, CreatedAt: now, UpdatedAt: now,
	}
	if in.PolicyToolVersion != nil {
		rec.PolicyToolVersion = *in.PolicyToolVersion
	}
	if in.PolicyUpdatePatterns != nil {
		rec.PolicyUpdatePatterns = slices.Clone(*in.PolicyUpdatePatterns)
	}
	// The members, de-duplicated, with the index of each in its field.
	members := inputMembers(&in, rec.Counts)
	// A broken rule, else too many members: refused once the organization
	// is known to exist.
	refused := v.Err()
	if total, most := rec.Counts.total(), s.maxSetMembers(); refused == nil && total > most {
		refused = s.tooLarge("policy set members", total, most)
	}
	var out PolicySet
	err = s.indexed(ctx, func() error {
		return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
				return err
			}
			if refused != nil {
				return refused
			}
			if err := checkIndexed(tx); err != nil {
				return err
			}
			key := setNames(org) + fold(name)
			if _, err := tx.Get(key); err == nil {
				return fmt.Errorf("policy set name %q is taken in %q: %w", name, org, keel.KindAlreadyExists)
			} else if !isNotFound(err) {
				return err
			}
			if err := s.checkMembers(ctx, tx, live, members, org, kind); err != nil {
				return err
			}
			out = setOf(&rec)
			if err := joinMembers(tx, members, &out); err != nil {
				return err
			}
			if err := putSet(tx, &rec); err != nil {
				return err
			}
			if err := tx.Put(orgSets(org)+rec.ID, nil); err != nil {
				return err
			}
			return tx.Put(key, []byte(rec.ID))
		})
	})
	if err != nil {
		return PolicySet{}, err
	}
	return out, nil
}

// GetSet returns the policy set id with its members. A set the caller may
// not manage, or of an organization being deleted, is not found.
func (s *Service) GetSet(ctx context.Context, id string) (_ PolicySet, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.GetSet", id, nil, func(ctx context.Context) (PolicySet, error) {
		return s.doGetSet(ctx, id)
	})
}

func (s *Service) doGetSet(ctx context.Context, id string) (_ PolicySet, err error) {
	defer prefixErr(&err)
	var out PolicySet
	err = s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		rec, err := s.visibleSet(ctx, tx, live, id)
		if err != nil {
			return err
		}
		out, err = publicSet(tx, rec)
		return err
	})
	return out, err
}

// UpdateSet changes the settings of the set id that in holds, and sets
// UpdatedAt. A new name follows the rules of CreateSet's. Global cannot
// become true while the set is attached to workspaces or projects
// ("Global"). It returns the set with its members.
func (s *Service) UpdateSet(ctx context.Context, id string, in UpdateSetRequest) (_ PolicySet, err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.UpdateSet", id, in, func(ctx context.Context) (PolicySet, error) {
		return s.updateSet(ctx, id, in)
	})
}

func (s *Service) updateSet(ctx context.Context, id string, in UpdateSetRequest) (_ PolicySet, err error) {
	defer prefixErr(&err)
	var v keel.Validation
	if in.Name != nil && *in.Name == "" {
		v.Add("Name", "is required")
	} else if in.Name != nil && !validName(*in.Name) {
		v.Add("Name", "must be letters, numbers, - and _")
	}
	if in.PolicyToolVersion != nil && *in.PolicyToolVersion == "" {
		v.Add("PolicyToolVersion", "must not be empty")
	}
	invalid := v.Err()
	now := ms(s.clock.Now())
	var out PolicySet
	err = s.indexed(ctx, func() error {
		return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			rec, err := s.visibleSet(ctx, tx, live, id)
			if err != nil {
				return err
			}
			if invalid != nil {
				return invalid
			}
			if err := checkIndexed(tx); err != nil {
				return err
			}
			c, err := counts(tx, rec)
			if err != nil {
				return err
			}
			if n, words := c.attached(); in.Global != nil && *in.Global && n > 0 {
				return keel.Invalid("Global", "%s: remove its %s first", notAttached(), words)
			}
			if in.Name != nil && *in.Name != rec.Name {
				if err := s.rename(tx, rec, *in.Name); err != nil {
					return err
				}
			}
			if in.Description != nil {
				rec.Description = in.Description
			}
			if in.Global != nil {
				rec.Global = *in.Global
			}
			if in.Overridable != nil {
				rec.Overridable = *in.Overridable
			}
			if in.AgentEnabled != nil {
				rec.AgentEnabled = in.AgentEnabled
			}
			if in.PolicyToolVersion != nil {
				rec.PolicyToolVersion = *in.PolicyToolVersion
			}
			if in.PolicyUpdatePatterns != nil {
				rec.PolicyUpdatePatterns = slices.Clone(*in.PolicyUpdatePatterns)
			}
			if in.PoliciesPath != nil {
				rec.PoliciesPath = in.PoliciesPath
			}
			rec.UpdatedAt = now
			out, err = publicSet(tx, rec)
			if err != nil {
				return err
			}
			return putSet(tx, rec)
		})
	})
	return out, err
}

// rename gives rec the name name in its organization's name index.
func (s *Service) rename(tx storage.Tx, rec *setRecord, name string) error {
	old, key := setNames(rec.Org)+fold(rec.Name), setNames(rec.Org)+fold(name)
	if key != old {
		if _, err := tx.Get(key); err == nil {
			return fmt.Errorf("policy set name %q is taken in %q: %w", name, rec.Org, keel.KindAlreadyExists)
		} else if !isNotFound(err) {
			return err
		}
		if err := deleteName(tx, rec); err != nil {
			return err
		}
	}
	rec.Name = name
	return tx.Put(key, []byte(rec.ID))
}

// deleteName deletes the name key of rec when it names rec.
func deleteName(tx storage.Tx, rec *setRecord) error {
	key := setNames(rec.Org) + fold(rec.Name)
	raw, err := tx.Get(key)
	if isNotFound(err) || err == nil && string(raw) != rec.ID {
		return nil
	}
	if err != nil {
		return err
	}
	return tx.Delete(key)
}

// DeleteSet deletes the set id and its members' edges; the members
// themselves stay.
func (s *Service) DeleteSet(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "policy.DeleteSet", id, nil, func(ctx context.Context) error {
		return s.deleteSet(ctx, id)
	})
}

func (s *Service) deleteSet(ctx context.Context, id string) (err error) {
	defer prefixErr(&err)
	return s.indexed(ctx, func() error {
		return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			rec, err := s.visibleSet(ctx, tx, live, id)
			if err != nil {
				return err
			}
			if err := checkIndexed(tx); err != nil {
				return err
			}
			if err := leaveSet(tx, id); err != nil {
				return err
			}
			if err := deleteName(tx, rec); err != nil {
				return err
			}
			if err := tx.Delete(orgSets(rec.Org) + id); err != nil && !isNotFound(err) {
				return err
			}
			return tx.Delete(setKey(id))
		})
	})
}

// ListSetsRequest asks for one page of the policy sets of an
// organization.
type ListSetsRequest struct {
	// ListRequest is the page: Cursor (a Next of an earlier page, "" for
	// the first) and Limit (0 or less: 20; at most
	// MaxPageSize, a larger limit is cut to it).
	keel.ListRequest
	// Offset, when Cursor is empty, starts the page at this position of
	// the filtered list (0, the default: its first set): a transport
	// renders numbered pages with it. It is at least 0.
	Offset int
	// Search keeps the sets whose name holds it, ignoring case.
	Search string
	// FilterKind, when not empty, keeps the sets of that kind (Sentinel
	// or OPA).
	FilterKind string
}

// ListSets returns a page of the policy sets of org, in name order (case
// folded), each with its members, as List does for policies.
func (s *Service) ListSets(ctx context.Context, org string, r ListSetsRequest) (_ keel.CountedPage[PolicySet], err error) {
	defer prefixErr(&err)
	return keel.Observe(ctx, s.obs, s.clock, "policy.ListSets", org, r, func(ctx context.Context) (keel.CountedPage[PolicySet], error) {
		return s.listSets(ctx, org, r)
	})
}

func (s *Service) listSets(ctx context.Context, org string, r ListSetsRequest) (out keel.CountedPage[PolicySet], err error) {
	defer prefixErr(&err)
	if err := s.allowed(ctx, org); err != nil {
		return out, err
	}
	pg, err := pager.New(r.ListRequest, r.Offset, false, defaultPageSize, MaxPageSize)
	if err != nil {
		return out, err
	}
	if r.FilterKind != "" && r.FilterKind != Sentinel && r.FilterKind != OPA {
		return out, keel.Invalid("FilterKind", "must be sentinel or opa")
	}
	q := strings.ToLower(r.Search)
	err = s.indexed(ctx, func() error {
		return s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			out = keel.CountedPage[PolicySet]{Page: keel.Page[PolicySet]{Items: []PolicySet{}}}
			pg.Seen, pg.Taken, pg.Last, pg.More = 0, 0, "", false
			if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
				return err
			}
			if err := checkIndexed(tx); err != nil {
				return err
			}
			prefix := setNames(org)
			err := tx.Scan(prefix, storage.ScanOptions{}, func(k string, v []byte) error {
				out.Total++
				name := k[len(prefix):]
				if !strings.Contains(name, q) {
					return nil
				}
				var rec *setRecord
				if r.FilterKind != "" {
					var err error
					if rec, err = getSet(tx, string(v)); err != nil {
						return err
					}
					if rec.kind() != r.FilterKind {
						return nil
					}
				}
				if !pg.Take(name) {
					return nil
				}
				if rec == nil {
					var err error
					if rec, err = getSet(tx, string(v)); err != nil {
						return err
					}
				}
				set, err := publicSet(tx, rec)
				if err != nil {
					return err
				}
				out.Items = append(out.Items, set)
				return nil
			})
			out.Matching, out.Next = pg.Seen, pg.Next()
			return err
		})
	})
	return out, err
}

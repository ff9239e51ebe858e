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
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
)

// SetMembers is a kind of member of a policy set.
type SetMembers uint8

// The kinds of member of a policy set.
const (
	// SetPolicies are the policies of a set; each is of the set's kind.
	SetPolicies SetMembers = iota + 1
	// SetWorkspaces are the workspaces a set is attached to.
	SetWorkspaces
	// SetProjects are the projects a set is attached to.
	SetProjects
	// SetWorkspaceExclusions are the workspaces a set does not apply to,
	// though it is global or attached to their project.
	SetWorkspaceExclusions
)

// setMembers lists every kind of member, in the order of PolicySet's
// lists.
var setMembers = [...]SetMembers{SetPolicies, SetWorkspaces, SetProjects, SetWorkspaceExclusions}

// String returns the kind's name in words ("policies", "workspace
// exclusions").
func (m SetMembers) String() string {
	switch m {
	case SetPolicies:
		return "policies"
	case SetWorkspaces:
		return "workspaces"
	case SetProjects:
		return "projects"
	case SetWorkspaceExclusions:
		return "workspace exclusions"
	}
	return fmt.Sprintf("SetMembers(%d)", uint8(m))
}

// one names one member of the kind ("policy", "workspace").
func (m SetMembers) one() string {
	switch m {
	case SetPolicies:
		return "policy"
	case SetProjects:
		return "project"
	}
	return "workspace"
}

func (m SetMembers) valid() bool { return m >= SetPolicies && m <= SetWorkspaceExclusions }

// setSide is the prefix of the edges of set of kind m, seen from the set;
// memberSide the prefix of the same edges seen from the member id.
func (m SetMembers) setSide(set string) string {
	switch m {
	case SetPolicies:
		return setPolicies(set)
	case SetWorkspaces:
		return "setws/" + set + "/"
	case SetProjects:
		return "setprj/" + set + "/"
	}
	return "setwsx/" + set + "/"
}

func (m SetMembers) memberSide(id string) string {
	switch m {
	case SetPolicies:
		return policySets(id)
	case SetWorkspaces:
		return "wsset/" + id + "/"
	case SetProjects:
		return "prjset/" + id + "/"
	}
	return "wsxset/" + id + "/"
}

// Defaults of a policy set's settings, as HCP Terraform's.
const (
	// DefaultPolicyToolVersion is a set's PolicyToolVersion when none is
	// sent.
	DefaultPolicyToolVersion = "latest"
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
	// PolicyToolVersion is DefaultPolicyToolVersion unless sent.
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

// Members returns the list of the members of kind m.
func (p *PolicySet) Members(m SetMembers) []string {
	switch m {
	case SetPolicies:
		return p.PolicyIDs
	case SetWorkspaces:
		return p.WorkspaceIDs
	case SetProjects:
		return p.ProjectIDs
	case SetWorkspaceExclusions:
		return p.WorkspaceExclusionIDs
	}
	return nil
}

func (p *PolicySet) members(m SetMembers) *[]string {
	switch m {
	case SetPolicies:
		return &p.PolicyIDs
	case SetWorkspaces:
		return &p.WorkspaceIDs
	case SetProjects:
		return &p.ProjectIDs
	}
	return &p.WorkspaceExclusionIDs
}

// SetInput is the body of a policy set's create; a nil field was not sent.
type SetInput struct {
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

// ids returns the member ids of kind m of the input, and the Go name of
// their field.
func (in *SetInput) ids(m SetMembers) ([]string, string) {
	switch m {
	case SetPolicies:
		return in.PolicyIDs, "PolicyIDs"
	case SetWorkspaces:
		return in.WorkspaceIDs, "WorkspaceIDs"
	case SetProjects:
		return in.ProjectIDs, "ProjectIDs"
	}
	return in.WorkspaceExclusionIDs, "WorkspaceExclusionIDs"
}

// SetUpdate is the body of a policy set's update; a nil field was not
// sent. The kind cannot change; members change through AddSetMembers and
// RemoveSetMembers.
type SetUpdate struct {
	Name                 *string
	Description          *string
	Global               *bool
	Overridable          *bool
	AgentEnabled         *bool
	PolicyToolVersion    *string
	PolicyUpdatePatterns *[]string
	PoliciesPath         *string
}

// setCounts are the numbers of members of a set, by kind.
type setCounts struct {
	Policies            int `json:"policies"`
	Workspaces          int `json:"workspaces"`
	Projects            int `json:"projects"`
	WorkspaceExclusions int `json:"workspace_exclusions"`
}

func (c *setCounts) of(m SetMembers) *int {
	switch m {
	case SetPolicies:
		return &c.Policies
	case SetWorkspaces:
		return &c.Workspaces
	case SetProjects:
		return &c.Projects
	}
	return &c.WorkspaceExclusions
}

func (c *setCounts) total() int {
	return c.Policies + c.Workspaces + c.Projects + c.WorkspaceExclusions
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
		return nil, fmt.Errorf("record of policy set %q is corrupt (%v): %w", id, err, keel.ErrInternal)
	}
	return &rec, nil
}

func putSet(tx storage.Tx, rec *setRecord) error {
	raw, err := encode(rec)
	if err != nil {
		return fmt.Errorf("encode policy set %q: %v: %w", rec.ID, err, keel.ErrInternal)
	}
	return tx.Put(setKey(rec.ID), raw)
}

// counts returns the counts of rec, counting its edges for a set stored
// before counts were kept.
func counts(tx storage.Tx, rec *setRecord) (*setCounts, error) {
	if rec.Counts != nil {
		return rec.Counts, nil
	}
	c := &setCounts{}
	for _, m := range setMembers {
		err := tx.Scan(m.setSide(rec.ID), storage.ScanOptions{KeysOnly: true}, func(string, []byte) error {
			*c.of(m)++
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	rec.Counts = c
	return c, nil
}

// join makes member a member of kind m of set (edges only).
func join(tx storage.Tx, m SetMembers, set, member string) error {
	if err := tx.Put(m.setSide(set)+member, nil); err != nil {
		return err
	}
	return tx.Put(m.memberSide(member)+set, nil)
}

// leave removes the edges of join.
func leave(tx storage.Tx, m SetMembers, set, member string) error {
	if err := tx.Delete(m.setSide(set) + member); err != nil && !isNotFound(err) {
		return err
	}
	if err := tx.Delete(m.memberSide(member) + set); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// The transaction costs of the set operations, from which the limits are
// derived (see MaxSetMembers): reads and writes besides those per member.
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

// MaxSetMembers is the largest number of members (policies, workspaces,
// projects and exclusions together) a policy set may have in the
// Service's store: every operation on a set, its deletion included, then
// fits in one transaction of the store (storage.Limits: MaxTxOps and
// MaxTxReads). With etcd's default limits (128 operations, 128 reads) it
// is 62; a store that states no limit allows any number (math.MaxInt).
// CreateSet and AddSetMembers refuse a set that would grow past it, up
// front, with keel.KindTooLarge.
func (s *Service) MaxSetMembers() int {
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

// MaxMemberSets is the largest number of sets whose edges the deletion of
// one policy, workspace or project can delete in one transaction of the
// Service's store: two edges and the set's counts per set. With etcd's
// default limits it is 40; a store that states no limit allows any
// number. A deletion of a member of more sets is refused with
// keel.KindTooLarge and leaves the store as it was: remove the member
// from some sets first. Create refuses a policy that would join more.
func (s *Service) MaxMemberSets() int {
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
		what, n, most, l.MaxTxOps, l.MaxTxReads, keel.ErrTooLarge)
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
		if errors.Is(err, keel.ErrForbidden) {
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
	for _, m := range setMembers {
		list := []string{}
		prefix := m.setSide(rec.ID)
		err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			list = append(list, k[len(prefix):])
			return nil
		})
		if err != nil {
			return PolicySet{}, err
		}
		*out.members(m) = list
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
		out.PolicyToolVersion = DefaultPolicyToolVersion
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

// checkMember records in v, on field, why id cannot be a member of kind m
// of a set of org and kind, reading its record: it must exist and be of
// org, and a policy must be of the set's kind. A workspace or project the
// caller may not read (read on project.WorkspaceResource or
// project.ProjectResource) is recorded as a missing one, so that the
// answer does not tell whether it exists.
func (s *Service) checkMember(ctx context.Context, v *keel.Validation, tx storage.Tx, live exists, m SetMembers, org, kind, field, id string) error {
	var memberOrg string
	var err error
	switch m {
	case SetPolicies:
		var p *record
		if p, err = getRecord(tx, id); err == nil {
			memberOrg = p.Org
			if p.Org == org && p.Kind != kind {
				v.Add(field, "policy %q is of kind %s, the policy set of kind %s", id, p.Kind, kind)
				return nil
			}
		}
	case SetWorkspaces, SetWorkspaceExclusions:
		if memberOrg, err = live.WorkspaceOrg(id); err == nil && memberOrg == org {
			err = s.readable(ctx, project.WorkspaceResource(org, id))
		}
	case SetProjects:
		if memberOrg, err = live.ProjectOrg(id); err == nil && memberOrg == org {
			err = s.readable(ctx, project.ProjectResource(org, id))
		}
	}
	switch {
	case errors.Is(err, keel.ErrNotFound) || err == nil && memberOrg != org:
		v.Add(field, "no %s %q in %q", m.one(), id, org)
	case err != nil:
		return err
	}
	return nil
}

// readable returns nil when the caller may read resource, and
// keel.KindNotFound when it may not.
func (s *Service) readable(ctx context.Context, resource string) error {
	err := keel.Authorize(ctx, s.authz, keel.CapRead, resource)
	if errors.Is(err, keel.ErrForbidden) {
		return notFound(resource)
	}
	return err
}

// CreateSet creates a policy set in org with the members of in (see the
// package's rules). The organization must exist and the caller must hold
// manage-policies on it; otherwise keel.KindNotFound. A set of more than
// MaxSetMembers members is keel.KindTooLarge. It returns the set as
// created.
func (s *Service) CreateSet(ctx context.Context, org string, in SetInput) (PolicySet, error) {
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
	if global && (len(in.WorkspaceIDs) > 0 || len(in.ProjectIDs) > 0) {
		v.Add("Global", "a global policy set is attached to no workspace or project")
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
	type member struct {
		id    string
		field string
	}
	members := map[SetMembers][]member{}
	total := 0
	for _, m := range setMembers {
		ids, field := in.ids(m)
		seen := map[string]bool{}
		for i, id := range ids {
			if !seen[id] {
				seen[id] = true
				members[m] = append(members[m], member{id, fmt.Sprintf("%s[%d]", field, i)})
			}
		}
		*rec.Counts.of(m) = len(members[m])
		total += len(members[m])
	}
	invalid := v.Err()
	var tooLarge error
	if most := s.MaxSetMembers(); total > most {
		tooLarge = s.tooLarge("policy set members", total, most)
	}
	var out PolicySet
	err := s.indexed(ctx, func() error {
		return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
				return err
			}
			if invalid != nil {
				return invalid
			}
			if tooLarge != nil {
				return tooLarge
			}
			if err := checkIndexed(tx); err != nil {
				return err
			}
			key := setNames(org) + fold(name)
			if _, err := tx.Get(key); err == nil {
				return fmt.Errorf("policy set name %q is taken in %q: %w", name, org, keel.ErrAlreadyExists)
			} else if !isNotFound(err) {
				return err
			}
			var v keel.Validation
			for _, m := range setMembers {
				for _, mb := range members[m] {
					if err := s.checkMember(ctx, &v, tx, live, m, org, kind, mb.field, mb.id); err != nil {
						return err
					}
				}
			}
			if err := v.Err(); err != nil {
				return err
			}
			out = setOf(&rec)
			for _, m := range setMembers {
				list := []string{}
				for _, mb := range members[m] {
					if err := join(tx, m, rec.ID, mb.id); err != nil {
						return err
					}
					list = append(list, mb.id)
				}
				slices.Sort(list)
				*out.members(m) = list
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
func (s *Service) GetSet(ctx context.Context, id string) (PolicySet, error) {
	var out PolicySet
	err := s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
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
func (s *Service) UpdateSet(ctx context.Context, id string, in SetUpdate) (PolicySet, error) {
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
	err := s.indexed(ctx, func() error {
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
			if in.Global != nil && *in.Global && (c.Workspaces > 0 || c.Projects > 0) {
				return keel.Invalid("Global", "a global policy set is attached to no workspace or project: remove its %d workspaces and %d projects first", c.Workspaces, c.Projects)
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
			return fmt.Errorf("policy set name %q is taken in %q: %w", name, rec.Org, keel.ErrAlreadyExists)
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
func (s *Service) DeleteSet(ctx context.Context, id string) error {
	return s.indexed(ctx, func() error {
		return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			rec, err := s.visibleSet(ctx, tx, live, id)
			if err != nil {
				return err
			}
			if err := checkIndexed(tx); err != nil {
				return err
			}
			set, err := publicSet(tx, rec)
			if err != nil {
				return err
			}
			for _, m := range setMembers {
				for _, member := range set.Members(m) {
					if err := leave(tx, m, id, member); err != nil {
						return err
					}
				}
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

// AddSetMembers makes the members ids (de-duplicated) members of kind m
// of the set id, all or none, and sets UpdatedAt. Each must exist and be
// of the set's organization, a policy of the set's kind ("IDs[<i>]");
// workspaces and projects cannot be attached to a global set ("IDs");
// members already in the set stay. A set that would have more than
// MaxSetMembers members is keel.KindTooLarge.
func (s *Service) AddSetMembers(ctx context.Context, id string, m SetMembers, ids []string) error {
	return s.changeMembers(ctx, id, m, ids, true)
}

// RemoveSetMembers removes the members ids of kind m from the set id and
// sets UpdatedAt; an id that is not a member of that kind is ignored, so
// that removing twice, or after the member's deletion, succeeds. More
// distinct ids than MaxSetMembers (more than any set holds) are
// keel.KindTooLarge, refused before anything is written.
func (s *Service) RemoveSetMembers(ctx context.Context, id string, m SetMembers, ids []string) error {
	return s.changeMembers(ctx, id, m, ids, false)
}

func (s *Service) changeMembers(ctx context.Context, id string, m SetMembers, ids []string, add bool) error {
	if !m.valid() {
		return keel.Invalid("Members", "unknown kind of member %d", uint8(m))
	}
	if len(ids) == 0 {
		return s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			if _, err := s.visibleSet(ctx, tx, live, id); err != nil {
				return err
			}
			return keel.Invalid("IDs", "at least one is required")
		})
	}
	type member struct {
		id    string
		field string
	}
	var list []member
	seen := map[string]bool{}
	for i, x := range ids {
		if !seen[x] {
			seen[x] = true
			list = append(list, member{x, fmt.Sprintf("IDs[%d]", i)})
		}
	}
	most := s.MaxSetMembers()
	now := ms(s.clock.Now())
	return s.update(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
		rec, err := s.visibleSet(ctx, tx, live, id)
		if err != nil {
			return err
		}
		if len(list) > most {
			// A set has at most most members, and each id is read.
			return s.tooLarge("policy set members", len(list), most)
		}
		if add && rec.Global && (m == SetWorkspaces || m == SetProjects) {
			return keel.Invalid("IDs", "a global policy set is attached to no workspace or project")
		}
		c, err := counts(tx, rec)
		if err != nil {
			return err
		}
		var v keel.Validation
		var change []string
		for _, mb := range list {
			if !validID(mb.id) {
				if add {
					v.Add(mb.field, "no %s %q", m.one(), mb.id)
				}
				continue
			}
			_, err := tx.Get(m.setSide(id) + mb.id)
			in := err == nil
			if err != nil && !isNotFound(err) {
				return err
			}
			if add && !in {
				if err := s.checkMember(ctx, &v, tx, live, m, rec.Org, rec.kind(), mb.field, mb.id); err != nil {
					return err
				}
			}
			if in != add {
				change = append(change, mb.id)
			}
		}
		if err := v.Err(); err != nil {
			return err
		}
		if n := c.total() + len(change); add && n > most {
			return s.tooLarge("policy set members", n, most)
		}
		for _, member := range change {
			if add {
				err = join(tx, m, id, member)
				*c.of(m)++
			} else {
				err = leave(tx, m, id, member)
				*c.of(m)--
			}
			if err != nil {
				return err
			}
		}
		rec.UpdatedAt = now
		return putSet(tx, rec)
	})
}

// leaveAll removes member, of kind m, from every set it is a member of,
// updating their counts: the deletion of a policy (Delete), a workspace or
// a project (forget). A member of more than MaxMemberSets sets (with the
// kinds of also) is keel.KindTooLarge.
func (s *Service) leaveAll(tx storage.Tx, member string, kinds ...SetMembers) error {
	type edge struct {
		m   SetMembers
		set string
	}
	var edges []edge
	for _, m := range kinds {
		prefix := m.memberSide(member)
		err := tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			edges = append(edges, edge{m, k[len(prefix):]})
			return nil
		})
		if err != nil {
			return err
		}
	}
	if most := s.MaxMemberSets(); len(edges) > most {
		return s.tooLarge(fmt.Sprintf("policy sets of %q to leave (remove it from some first)", member), len(edges), most)
	}
	for _, e := range edges {
		if err := leave(tx, e.m, e.set, member); err != nil {
			return err
		}
		rec, err := getSet(tx, e.set)
		if errors.Is(err, keel.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if rec.Counts != nil {
			*rec.Counts.of(e.m) = max(*rec.Counts.of(e.m)-1, 0)
			if err := putSet(tx, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// forget is the project.ForgetFunc New registers: a deleted workspace or
// project leaves every set, in the catalog's transaction.
func (s *Service) forget(_ context.Context, tx storage.Tx, f project.Forgotten) error {
	switch f.Kind {
	case project.ForgetWorkspace:
		return s.leaveAll(tx, f.ID, SetWorkspaces, SetWorkspaceExclusions)
	case project.ForgetProject:
		return s.leaveAll(tx, f.ID, SetProjects)
	}
	return nil
}

// SetListOptions are the query parameters of a policy set list.
type SetListOptions struct {
	// PageNumber, PageSize and Search are those of ListOptions.
	PageNumber int
	PageSize   int
	Search     string
	// FilterKind, when not empty, keeps the sets of that kind (Sentinel
	// or OPA).
	FilterKind string
}

// SetPage is one page of policy sets, in name order.
type SetPage struct {
	Sets       []PolicySet
	Pagination keel.Pagination
}

// ListSets returns a page of the policy sets of org, in name order (case
// folded), each with its members, as List does for policies.
func (s *Service) ListSets(ctx context.Context, org string, opts SetListOptions) (SetPage, error) {
	if err := s.allowed(ctx, org); err != nil {
		return SetPage{}, err
	}
	if opts.PageNumber > MaxPageNumber {
		return SetPage{}, keel.Invalid("PageNumber", "must be at most %d", MaxPageNumber)
	}
	if opts.FilterKind != "" && opts.FilterKind != Sentinel && opts.FilterKind != OPA {
		return SetPage{}, keel.Invalid("FilterKind", "must be sentinel or opa")
	}
	opts.PageNumber = max(opts.PageNumber, 1)
	if opts.PageSize < 1 {
		opts.PageSize = DefaultPageSize
	}
	opts.PageSize = min(opts.PageSize, MaxPageSize)
	q := strings.ToLower(opts.Search)
	start := (opts.PageNumber - 1) * opts.PageSize
	var out SetPage
	err := s.indexed(ctx, func() error {
		return s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			out = SetPage{Sets: []PolicySet{}}
			if err := orgExists(live, org, fmt.Sprintf("organization %q", org)); err != nil {
				return err
			}
			if err := checkIndexed(tx); err != nil {
				return err
			}
			prefix := setNames(org)
			total := 0
			err := tx.Scan(prefix, storage.ScanOptions{}, func(k string, v []byte) error {
				if !strings.Contains(k[len(prefix):], q) {
					return nil
				}
				inPage := total >= start && total < start+opts.PageSize
				if opts.FilterKind == "" && !inPage {
					total++
					return nil
				}
				rec, err := getSet(tx, string(v))
				if err != nil {
					return err
				}
				if opts.FilterKind != "" && rec.kind() != opts.FilterKind {
					return nil
				}
				if inPage {
					set, err := publicSet(tx, rec)
					if err != nil {
						return err
					}
					out.Sets = append(out.Sets, set)
				}
				total++
				return nil
			})
			out.Pagination = keel.NewPagination(opts.PageNumber, opts.PageSize, total)
			return err
		})
	})
	return out, err
}

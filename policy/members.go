package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
)

// SetMembers is a kind of member of a policy set.
type SetMembers uint8

// The kinds of member of a policy set; memberKinds describes each.
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

// memberKind is what the set operations know of one kind of member:
// CreateSet, GetSet and ListSets, AddSetMembers and RemoveSetMembers,
// DeleteSet, the deletion of a member and purge all read it here and
// nowhere else. A new kind is a SetMembers constant, its entry in
// memberKinds, and its fields in the structs that hold one per kind
// (CreateSetRequest, PolicySet, setCounts), each named in the struct's lists or
// slots below.
type memberKind struct {
	// name names the kind ("workspace exclusions"), one names one member
	// of it ("workspace"), in String and in the errors.
	name, one string
	// setSide and memberSide start the keys of an edge between a set and
	// a member of the kind: <setSide><set>/<member>, and
	// <memberSide><member>/<set> seen from the member (see the keys in
	// policy.go).
	setSide, memberSide string
	// field is the Go name of the kind's list in CreateSetRequest (and in
	// PolicySet), the path of CreateSet's errors ("PolicyIDs[<i>]").
	field string
	// lookup returns the organization of the member id, and its policy
	// kind (Sentinel or OPA) when the kind has one; an unknown id is
	// keel.KindNotFound.
	lookup func(tx storage.Tx, live exists, id string) (org, kind string, err error)
	// sameKind: a member must be of the set's kind (policies).
	sameKind bool
	// resource, when not nil, is the resource on which naming a member
	// needs read (as the catalog asks it): without it the member is
	// refused exactly as a missing one.
	resource func(org, id string) string
	// attached: the set is attached to its members, so that a global
	// set has none.
	attached bool
	// forgotten, when not zero, is the catalog's deletion that takes a
	// member out of its sets (forget); a policy leaves them by Delete.
	forgotten project.ForgetKind
}

// memberKinds describes every kind of member, indexed by SetMembers
// (none at 0), in the order of PolicySet's lists.
var memberKinds = [...]memberKind{
	SetPolicies: {
		name: "policies", one: "policy", field: "PolicyIDs", setSide: "setpol/", memberSide: "polset/",
		lookup: policyOf, sameKind: true,
	},
	SetWorkspaces: {
		name: "workspaces", one: "workspace", field: "WorkspaceIDs", setSide: "setws/", memberSide: "wsset/",
		lookup: workspaceOf, resource: project.WorkspaceResource, attached: true, forgotten: project.ForgetWorkspace,
	},
	SetProjects: {
		name: "projects", one: "project", field: "ProjectIDs", setSide: "setprj/", memberSide: "prjset/",
		lookup: projectOf, resource: project.ProjectResource, attached: true, forgotten: project.ForgetProject,
	},
	SetWorkspaceExclusions: {
		name: "workspace exclusions", one: "workspace", field: "WorkspaceExclusionIDs", setSide: "setwsx/", memberSide: "wsxset/",
		lookup: workspaceOf, resource: project.WorkspaceResource, forgotten: project.ForgetWorkspace,
	},
}

// setMembers lists every kind of member, in the order of memberKinds.
var setMembers = func() (all [len(memberKinds) - 1]SetMembers) {
	for i := range all {
		all[i] = SetMembers(i + 1)
	}
	return all
}()

func (m SetMembers) valid() bool { return m > 0 && int(m) < len(memberKinds) }

// kind returns the description of m, a valid kind.
func (m SetMembers) kind() *memberKind { return &memberKinds[m] }

// String returns the kind's name in words ("policies", "workspace
// exclusions").
func (m SetMembers) String() string {
	if !m.valid() {
		return fmt.Sprintf("SetMembers(%d)", uint8(m))
	}
	return m.kind().name
}

// setSide is the prefix of the edges of set of kind m, seen from the set;
// memberSide the prefix of the same edges seen from the member id.
func (m SetMembers) setSide(set string) string   { return m.kind().setSide + set + "/" }
func (m SetMembers) memberSide(id string) string { return m.kind().memberSide + id + "/" }

// policyOf, workspaceOf and projectOf are the lookups of memberKinds.
func policyOf(tx storage.Tx, _ exists, id string) (string, string, error) {
	p, err := getRecord(tx, id)
	if err != nil {
		return "", "", err
	}
	return p.Org, p.Kind, nil
}

func workspaceOf(_ storage.Tx, live exists, id string) (string, string, error) {
	org, err := live.WorkspaceOrg(id)
	return org, "", err
}

func projectOf(_ storage.Tx, live exists, id string) (string, string, error) {
	org, err := live.ProjectOrg(id)
	return org, "", err
}

// notAttached is the rule a global set breaks when attached: "a global
// policy set is attached to no workspace or project".
func notAttached() string {
	var ones []string
	for _, m := range setMembers {
		if k := m.kind(); k.attached {
			ones = append(ones, k.one)
		}
	}
	return "a global policy set is attached to no " + strings.Join(ones, " or ")
}

// Members returns the list of the members of kind m.
func (p *PolicySet) Members(m SetMembers) []string {
	if !m.valid() {
		return nil
	}
	return *p.lists()[m]
}

// lists returns the lists of p, by kind.
func (p *PolicySet) lists() [len(memberKinds)]*[]string {
	return [len(memberKinds)]*[]string{
		SetPolicies: &p.PolicyIDs, SetWorkspaces: &p.WorkspaceIDs, SetProjects: &p.ProjectIDs,
		SetWorkspaceExclusions: &p.WorkspaceExclusionIDs,
	}
}

// lists returns the member ids of in, by kind.
func (in *CreateSetRequest) lists() [len(memberKinds)][]string {
	return [len(memberKinds)][]string{
		SetPolicies: in.PolicyIDs, SetWorkspaces: in.WorkspaceIDs, SetProjects: in.ProjectIDs,
		SetWorkspaceExclusions: in.WorkspaceExclusionIDs,
	}
}

// attaches tells whether in attaches the set to a member (of an attached
// kind).
func (in *CreateSetRequest) attaches() bool {
	for _, m := range setMembers {
		if k := m.kind(); k.attached && len(in.lists()[m]) > 0 {
			return true
		}
	}
	return false
}

// setCounts are the numbers of members of a set, by kind.
type setCounts struct {
	Policies            int `json:"policies"`
	Workspaces          int `json:"workspaces"`
	Projects            int `json:"projects"`
	WorkspaceExclusions int `json:"workspace_exclusions"`
}

// slots returns the counts of c, by kind.
func (c *setCounts) slots() [len(memberKinds)]*int {
	return [len(memberKinds)]*int{
		SetPolicies: &c.Policies, SetWorkspaces: &c.Workspaces, SetProjects: &c.Projects,
		SetWorkspaceExclusions: &c.WorkspaceExclusions,
	}
}

func (c *setCounts) total() int {
	n := 0
	for _, m := range setMembers {
		n += *c.slots()[m]
	}
	return n
}

// attached returns the number of members of the attached kinds, and the
// words that count them ("2 workspaces and 0 projects").
func (c *setCounts) attached() (int, string) {
	n := 0
	var words []string
	for _, m := range setMembers {
		if k := m.kind(); k.attached {
			n += *c.slots()[m]
			words = append(words, fmt.Sprintf("%d %s", *c.slots()[m], k.name))
		}
	}
	return n, strings.Join(words, " and ")
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
			*c.slots()[m]++
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	rec.Counts = c
	return c, nil
}

// readMembers sets the lists of out, the set as read, from its edges.
func readMembers(tx storage.Tx, out *PolicySet) error {
	for _, m := range setMembers {
		list, err := keysUnder(tx, m.setSide(out.ID))
		if err != nil {
			return err
		}
		*out.lists()[m] = list
	}
	return nil
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

// leaveSet removes the edges of every member of the set id, reading them
// all first.
func leaveSet(tx storage.Tx, id string) error {
	set := PolicySet{ID: id}
	if err := readMembers(tx, &set); err != nil {
		return err
	}
	for _, m := range setMembers {
		for _, member := range set.Members(m) {
			if err := leave(tx, m, id, member); err != nil {
				return err
			}
		}
	}
	return nil
}

// member is an id named as a member, with the Go path of its field
// ("PolicyIDs[2]", "IDs[0]").
type member struct {
	id    string
	field string
}

// distinct returns ids without repeats, each with the path field[<i>] of
// its first place.
func distinct(field string, ids []string) []member {
	var list []member
	seen := map[string]bool{}
	for i, id := range ids {
		if !seen[id] {
			seen[id] = true
			list = append(list, member{id, fmt.Sprintf("%s[%d]", field, i)})
		}
	}
	return list
}

// newMembers are the members of a set being created, by kind.
type newMembers [len(memberKinds)][]member

// inputMembers returns the members of in, de-duplicated, and sets their
// counts in c.
func inputMembers(in *CreateSetRequest, c *setCounts) *newMembers {
	var members newMembers
	for _, m := range setMembers {
		members[m] = distinct(m.kind().field, in.lists()[m])
		*c.slots()[m] = len(members[m])
	}
	return &members
}

// checkMembers checks every member of a new set of org and kind
// (checkMember), and returns the broken rules, all at once.
func (s *Service) checkMembers(ctx context.Context, tx storage.Tx, live exists, members *newMembers, org, kind string) error {
	var v keel.Validation
	for _, m := range setMembers {
		for _, mb := range members[m] {
			if err := s.checkMember(ctx, &v, tx, live, m, org, kind, mb.field, mb.id); err != nil {
				return err
			}
		}
	}
	return v.Err()
}

// joinMembers makes members the members of the new set out, and sets its
// lists, sorted.
func joinMembers(tx storage.Tx, members *newMembers, out *PolicySet) error {
	for _, m := range setMembers {
		list := []string{}
		for _, mb := range members[m] {
			if err := join(tx, m, out.ID, mb.id); err != nil {
				return err
			}
			list = append(list, mb.id)
		}
		slices.Sort(list)
		*out.lists()[m] = list
	}
	return nil
}

// checkMember records in v, on field, why id cannot be a member of kind m
// of a set of org and kind, reading its record: it must exist and be of
// org, and a policy must be of the set's kind. A workspace or project the
// caller may not read (read on project.WorkspaceResource or
// project.ProjectResource) is recorded as a missing one, so that the
// answer does not tell whether it exists.
func (s *Service) checkMember(ctx context.Context, v *keel.Validation, tx storage.Tx, live exists, m SetMembers, org, kind, field, id string) error {
	k := m.kind()
	memberOrg, memberKind, err := k.lookup(tx, live, id)
	if err == nil && memberOrg == org {
		if k.sameKind && memberKind != kind {
			v.Add(field, "%s %q is of kind %s, the policy set of kind %s", k.one, id, memberKind, kind)
			return nil
		}
		if k.resource != nil {
			err = s.readable(ctx, k.resource(org, id))
		}
	}
	switch {
	case errors.Is(err, keel.KindNotFound) || err == nil && memberOrg != org:
		v.Add(field, "no %s %q in %q", k.one, id, org)
	case err != nil:
		return err
	}
	return nil
}

// readable returns nil when the caller may read resource, and
// keel.KindNotFound when it may not.
func (s *Service) readable(ctx context.Context, resource string) error {
	err := keel.Authorize(ctx, s.authz, keel.CapRead, resource)
	if errors.Is(err, keel.KindForbidden) {
		return notFound(resource)
	}
	return err
}

// AddSetMembers makes the members ids (de-duplicated) members of kind m
// of the set id, all or none, and sets UpdatedAt. Each must exist and be
// of the set's organization, a policy of the set's kind ("IDs[<i>]");
// workspaces and projects cannot be attached to a global set ("IDs");
// members already in the set stay. A set that would have more than
// Limits().MaxSetMembers members is keel.KindTooLarge.
func (s *Service) AddSetMembers(ctx context.Context, id string, m SetMembers, ids []string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "policy.AddSetMembers", id, map[string]any{"m": m, "ids": ids}, func(ctx context.Context) error {
		return s.addSetMembers(ctx, id, m, ids)
	})
}

func (s *Service) addSetMembers(ctx context.Context, id string, m SetMembers, ids []string) (err error) {
	defer prefixErr(&err)
	return s.changeMembers(ctx, id, m, ids, true)
}

// RemoveSetMembers removes the members ids of kind m from the set id and
// sets UpdatedAt; an id that is not a member of that kind is ignored, so
// that removing twice, or after the member's deletion, succeeds. More
// distinct ids than Limits().MaxSetMembers (more than any set holds) are
// keel.KindTooLarge, refused before anything is written.
func (s *Service) RemoveSetMembers(ctx context.Context, id string, m SetMembers, ids []string) (err error) {
	defer prefixErr(&err)
	return keel.ObserveErr(ctx, s.obs, s.clock, "policy.RemoveSetMembers", id, map[string]any{"m": m, "ids": ids}, func(ctx context.Context) error {
		return s.removeSetMembers(ctx, id, m, ids)
	})
}

func (s *Service) removeSetMembers(ctx context.Context, id string, m SetMembers, ids []string) (err error) {
	defer prefixErr(&err)
	return s.changeMembers(ctx, id, m, ids, false)
}

func (s *Service) changeMembers(ctx context.Context, id string, m SetMembers, ids []string, add bool) error {
	if !m.valid() {
		return keel.Invalid("Members", "unknown kind of member %d", uint8(m))
	}
	k := m.kind()
	if len(ids) == 0 {
		return s.view(ctx, func(ctx context.Context, tx storage.Tx, live exists) error {
			if _, err := s.visibleSet(ctx, tx, live, id); err != nil {
				return err
			}
			return keel.Invalid("IDs", "at least one is required")
		})
	}
	list := distinct("IDs", ids)
	most := s.maxSetMembers()
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
		if add && rec.Global && k.attached {
			return keel.Invalid("IDs", "%s", notAttached())
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
					v.Add(mb.field, "no %s %q", k.one, mb.id)
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
				*c.slots()[m]++
			} else {
				err = leave(tx, m, id, member)
				*c.slots()[m]--
			}
			if err != nil {
				return err
			}
		}
		rec.UpdatedAt = now
		return putSet(tx, rec)
	})
}

// leaveAll removes member, a member of the kinds kinds, from every set it
// is a member of, updating their counts: the deletion of a policy
// (Delete), a workspace or a project (forget). A member of more than
// Limits().MaxMemberSets sets (all kinds together) is keel.KindTooLarge.
func (s *Service) leaveAll(tx storage.Tx, member string, kinds ...SetMembers) error {
	type edge struct {
		m   SetMembers
		set string
	}
	var edges []edge
	for _, m := range kinds {
		sets, err := keysUnder(tx, m.memberSide(member))
		if err != nil {
			return err
		}
		for _, set := range sets {
			edges = append(edges, edge{m, set})
		}
	}
	if most := s.maxMemberSets(); len(edges) > most {
		return s.tooLarge(fmt.Sprintf("policy sets of %q to leave (remove it from some first)", member), len(edges), most)
	}
	for _, e := range edges {
		if err := leave(tx, e.m, e.set, member); err != nil {
			return err
		}
		rec, err := getSet(tx, e.set)
		if errors.Is(err, keel.KindNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if rec.Counts != nil {
			n := rec.Counts.slots()[e.m]
			*n = max(*n-1, 0)
			if err := putSet(tx, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// forget is the project.ForgetFunc New registers: a deleted workspace or
// project leaves every set, of every kind it is forgotten from, in the
// catalog's transaction.
func (s *Service) forget(_ context.Context, tx storage.Tx, f project.Forgotten) error {
	var kinds []SetMembers
	for _, m := range setMembers {
		if k := m.kind(); k.forgotten != 0 && k.forgotten == f.Kind {
			kinds = append(kinds, m)
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	return s.leaveAll(tx, f.ID, kinds...)
}

package policy

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// world is an env with a project, two workspaces, an OPA policy and a
// second organization "beta" with a workspace and a policy of its own.
type world struct {
	*env
	prj, ws1, ws2, betaWS string
	opa, betaPol          string
}

func newWorld(t *testing.T, open everystore.Open, authz keel.Authorizer, wrap func(storage.Store) storage.Store) *world {
	t.Helper()
	e := newEnv(t, open, authz, wrap)
	return populate(t, e)
}

func populate(t *testing.T, e *env) *world {
	t.Helper()
	ctx := root()
	w := &world{env: e}
	p, err := e.cat.Create(ctx, "acme", project.ProjectRequest{Name: ptr("apps")})
	if err != nil {
		t.Fatal(err)
	}
	w.prj = p.ID
	for _, name := range []string{"web", "db"} {
		ws, err := e.cat.CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new(name), ProjectID: new(p.ID)})
		if err != nil {
			t.Fatal(err)
		}
		if name == "web" {
			w.ws1 = ws.ID
		} else {
			w.ws2 = ws.ID
		}
	}
	o, err := e.s.Create(ctx, "acme", CreateRequest{Name: ptr("o"), Kind: ptr(OPA), Query: ptr("data.x"), EnforcementLevel: ptr(Advisory)})
	if err != nil {
		t.Fatal(err)
	}
	w.opa = o.ID
	beta, err := e.cat.CreateOrganization(ctx, project.OrganizationRequest{Name: new("beta"), Email: new("")})
	if err != nil {
		t.Fatal(err)
	}
	bws, err := e.cat.CreateWorkspace(ctx, "beta", project.WorkspaceRequest{Name: new("web"), ProjectID: new(beta.DefaultProjectID)})
	if err != nil {
		t.Fatal(err)
	}
	w.betaWS = bws.ID
	bp, err := e.s.Create(ctx, "beta", CreateRequest{Name: ptr("b"), EnforcementLevel: ptr(Advisory)})
	if err != nil {
		t.Fatal(err)
	}
	w.betaPol = bp.ID
	return w
}

// unchanged runs op, which must fail with want (kind) on fields, and
// checks that the store is as it was.
func (e *env) unchanged(t *testing.T, op func() error, want error, fields ...string) {
	t.Helper()
	before := storagetest.Dump(t, e.raw)
	err := op()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if got := fieldsOf(err); len(fields) > 0 && !slices.Equal(got, fields) {
		t.Fatalf("fields %v, want %v (%v)", got, fields, err)
	}
	if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
		t.Fatal("a refused operation changed the store")
	}
}

func fieldsOf(err error) []string {
	var out []string
	for _, fe := range keel.FieldErrors(err) {
		out = append(out, fe.Field)
	}
	return out
}

// TestSetCreateRules: each rule of CreateSet, on its Go field, all at
// once, nothing written.
func TestSetCreateRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		p := w.mk(t, "p")
		if _, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("Taken")}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name   string
			in     CreateSetRequest
			want   error
			fields []string
		}{
			{"name required", CreateSetRequest{}, keel.KindInvalid, []string{"Name"}},
			{"name empty", CreateSetRequest{Name: ptr("")}, keel.KindInvalid, []string{"Name"}},
			{"name characters", CreateSetRequest{Name: ptr("a b")}, keel.KindInvalid, []string{"Name"}},
			{"name taken, case folded", CreateSetRequest{Name: ptr("taken")}, keel.KindAlreadyExists, nil},
			{"kind", CreateSetRequest{Name: ptr("k"), Kind: ptr("rego")}, keel.KindInvalid, []string{"Kind"}},
			{"global attached", CreateSetRequest{Name: ptr("g"), Global: ptr(true), WorkspaceIDs: []string{w.ws1}}, keel.KindInvalid, []string{"Global"}},
			{"tool version empty", CreateSetRequest{Name: ptr("t"), PolicyToolVersion: ptr("")}, keel.KindInvalid, []string{"PolicyToolVersion"}},
			{"several at once", CreateSetRequest{Name: ptr("a b"), Kind: ptr("x")}, keel.KindInvalid, []string{"Name", "Kind"}},
			{"members unknown or of another organization", CreateSetRequest{
				Name:                  ptr("m"),
				PolicyIDs:             []string{p.ID, "pol-x", w.betaPol},
				WorkspaceIDs:          []string{w.ws1, w.betaWS, "a/b"},
				ProjectIDs:            []string{"prj-x", w.prj},
				WorkspaceExclusionIDs: []string{w.betaWS},
			}, keel.KindInvalid, []string{"PolicyIDs[1]", "PolicyIDs[2]", "WorkspaceIDs[1]", "WorkspaceIDs[2]", "ProjectIDs[0]", "WorkspaceExclusionIDs[0]"}},
			{"policy of another kind", CreateSetRequest{Name: ptr("o"), PolicyIDs: []string{p.ID, w.opa}}, keel.KindInvalid, []string{"PolicyIDs[1]"}},
			{"opa set, sentinel policy", CreateSetRequest{Name: ptr("o"), Kind: ptr(OPA), PolicyIDs: []string{w.opa, p.ID}}, keel.KindInvalid, []string{"PolicyIDs[1]"}},
			{"workspace as a project", CreateSetRequest{Name: ptr("wp"), ProjectIDs: []string{w.ws1}}, keel.KindInvalid, []string{"ProjectIDs[0]"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				w.unchanged(t, func() error { _, err := w.s.CreateSet(root(), "acme", tt.in); return err }, tt.want, tt.fields...)
			})
		}
		// Unknown organization first, whatever the body.
		if _, err := w.s.CreateSet(root(), "nope", CreateSetRequest{Name: ptr("a b")}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("unknown organization: %v", err)
		}
	})
}

// TestSetCreateDefaultsAndMembers: HCP Terraform's defaults, members
// de-duplicated and sorted, the same set read back, and the policy's
// policy-set ids.
func TestSetCreateDefaultsAndMembers(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		a, b := w.mk(t, "a"), w.mk(t, "b")
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{
			Name: ptr("s"), PolicyIDs: []string{b.ID, a.ID, b.ID}, WorkspaceIDs: []string{w.ws2, w.ws1},
			ProjectIDs: []string{w.prj}, WorkspaceExclusionIDs: []string{w.ws1},
		})
		if err != nil {
			t.Fatal(err)
		}
		if set.Kind != Sentinel || set.Global || set.Overridable || set.AgentEnabled || set.PolicyToolVersion != defaultPolicyToolVersion ||
			set.PolicyUpdatePatterns == nil || len(set.PolicyUpdatePatterns) != 0 || set.Description != nil || set.PoliciesPath != nil {
			t.Fatalf("defaults %+v", set)
		}
		if !set.CreatedAt.Equal(t0) || !set.UpdatedAt.Equal(t0) {
			t.Fatalf("times %v %v", set.CreatedAt, set.UpdatedAt)
		}
		if want := slices.Sorted(slices.Values([]string{a.ID, b.ID})); !slices.Equal(set.PolicyIDs, want) ||
			!slices.Equal(set.WorkspaceIDs, slices.Sorted(slices.Values([]string{w.ws1, w.ws2}))) ||
			!slices.Equal(set.ProjectIDs, []string{w.prj}) || !slices.Equal(set.WorkspaceExclusionIDs, []string{w.ws1}) {
			t.Fatalf("members %+v", set)
		}
		got, err := w.s.GetSet(root(), set.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !equalSets(got, set) {
			t.Fatalf("read %+v, created %+v", got, set)
		}
		if p, _ := w.s.Get(root(), a.ID); !slices.Equal(p.PolicySetIDs, []string{set.ID}) {
			t.Fatalf("policy's sets %v", p.PolicySetIDs)
		}
		o, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("o"), Kind: ptr(OPA), PolicyIDs: []string{w.opa}, Global: ptr(true)})
		if err != nil {
			t.Fatal(err)
		}
		if !o.AgentEnabled || o.Kind != OPA || !o.Global {
			t.Fatalf("opa set %+v", o)
		}
	})
}

func equalSets(a, b PolicySet) bool {
	for _, m := range setMembers {
		if !slices.Equal(a.Members(m), b.Members(m)) {
			return false
		}
	}
	a.PolicyIDs, a.WorkspaceIDs, a.ProjectIDs, a.WorkspaceExclusionIDs = nil, nil, nil, nil
	b.PolicyIDs, b.WorkspaceIDs, b.ProjectIDs, b.WorkspaceExclusionIDs = nil, nil, nil, nil
	return a.Name == b.Name && a.Kind == b.Kind && a.Global == b.Global && a.AgentEnabled == b.AgentEnabled &&
		a.PolicyToolVersion == b.PolicyToolVersion && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		slices.Equal(a.PolicyUpdatePatterns, b.PolicyUpdatePatterns)
}

// TestSetUpdate: settings change, a rename moves the name, a taken name
// and a global set with workspaces are refused, UpdatedAt moves.
func TestSetUpdate(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s"), WorkspaceIDs: []string{w.ws1}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("other")}); err != nil {
			t.Fatal(err)
		}
		w.unchanged(t, func() error {
			_, err := w.s.UpdateSet(root(), set.ID, UpdateSetRequest{Name: ptr("OTHER")})
			return err
		}, keel.KindAlreadyExists)
		w.unchanged(t, func() error { _, err := w.s.UpdateSet(root(), set.ID, UpdateSetRequest{Name: ptr("a/b")}); return err }, keel.KindInvalid, "Name")
		w.unchanged(t, func() error { _, err := w.s.UpdateSet(root(), set.ID, UpdateSetRequest{Global: ptr(true)}); return err }, keel.KindInvalid, "Global")
		w.clock.Advance(time.Minute)
		got, err := w.s.UpdateSet(root(), set.ID, UpdateSetRequest{
			Name: ptr("renamed"), Description: ptr("d"), Overridable: ptr(true), AgentEnabled: ptr(true),
			PolicyToolVersion: ptr("0.40.0"), PolicyUpdatePatterns: &[]string{"*.sentinel"}, PoliciesPath: ptr("p/"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "renamed" || *got.Description != "d" || !got.Overridable || !got.AgentEnabled || got.PolicyToolVersion != "0.40.0" ||
			!slices.Equal(got.PolicyUpdatePatterns, []string{"*.sentinel"}) || *got.PoliciesPath != "p/" ||
			!got.UpdatedAt.Equal(t0.Add(time.Minute)) || !got.CreatedAt.Equal(t0) || !slices.Equal(got.WorkspaceIDs, []string{w.ws1}) {
			t.Fatalf("updated %+v", got)
		}
		// The old name is free again, the new one taken.
		if _, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s")}); err != nil {
			t.Fatalf("old name: %v", err)
		}
		if _, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("Renamed")}); !errors.Is(err, keel.KindAlreadyExists) {
			t.Fatalf("new name: %v", err)
		}
		if err := w.s.RemoveSetMembers(root(), set.ID, SetWorkspaces, []string{w.ws1}); err != nil {
			t.Fatal(err)
		}
		if got, err := w.s.UpdateSet(root(), set.ID, UpdateSetRequest{Global: ptr(true)}); err != nil || !got.Global {
			t.Fatalf("global once detached: %+v, %v", got, err)
		}
	})
}

// TestSetMembers: adding and removing members of each kind; the rules of
// AddSetMembers, all or none.
func TestSetMembers(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		a, b := w.mk(t, "a"), w.mk(t, "b")
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s"), PolicyIDs: []string{a.ID}})
		if err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Second)
		add := func(m SetMembers, ids ...string) error { return w.s.AddSetMembers(root(), set.ID, m, ids) }
		for _, c := range []struct {
			m   SetMembers
			ids []string
		}{{SetPolicies, []string{b.ID, a.ID, b.ID}}, {SetWorkspaces, []string{w.ws1}}, {SetProjects, []string{w.prj}}, {SetWorkspaceExclusions, []string{w.ws2}}} {
			if err := add(c.m, c.ids...); err != nil {
				t.Fatalf("add %s: %v", c.m, err)
			}
		}
		got, _ := w.s.GetSet(root(), set.ID)
		if len(got.PolicyIDs) != 2 || !slices.Equal(got.WorkspaceIDs, []string{w.ws1}) || !slices.Equal(got.ProjectIDs, []string{w.prj}) ||
			!slices.Equal(got.WorkspaceExclusionIDs, []string{w.ws2}) || !got.UpdatedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("members %+v", got)
		}
		w.unchanged(t, func() error { return add(SetPolicies, a.ID, "pol-x", w.betaPol, w.opa) }, keel.KindInvalid, "IDs[1]", "IDs[2]", "IDs[3]")
		w.unchanged(t, func() error { return add(SetWorkspaces, w.ws2, w.betaWS) }, keel.KindInvalid, "IDs[1]")
		w.unchanged(t, func() error { return add(SetProjects, w.ws1) }, keel.KindInvalid, "IDs[0]")
		w.unchanged(t, func() error { return add(SetWorkspaces) }, keel.KindInvalid, "IDs")
		w.unchanged(t, func() error { return w.s.AddSetMembers(root(), "polset-x", SetWorkspaces, []string{w.ws1}) }, keel.KindNotFound)

		// Removing: members go, ids that are not members are ignored.
		if err := w.s.RemoveSetMembers(root(), set.ID, SetPolicies, []string{a.ID, "pol-x", w.opa}); err != nil {
			t.Fatal(err)
		}
		if err := w.s.RemoveSetMembers(root(), set.ID, SetWorkspaces, []string{w.ws1, w.ws1}); err != nil {
			t.Fatal(err)
		}
		got, _ = w.s.GetSet(root(), set.ID)
		if !slices.Equal(got.PolicyIDs, []string{b.ID}) || len(got.WorkspaceIDs) != 0 {
			t.Fatalf("after remove %+v", got)
		}
		if p, _ := w.s.Get(root(), a.ID); len(p.PolicySetIDs) != 0 {
			t.Fatalf("a removed policy still names the set: %v", p.PolicySetIDs)
		}

		// A global set is attached to no workspace or project.
		g, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("g"), Global: ptr(true)})
		if err != nil {
			t.Fatal(err)
		}
		w.unchanged(t, func() error { return w.s.AddSetMembers(root(), g.ID, SetWorkspaces, []string{w.ws1}) }, keel.KindInvalid, "IDs")
		w.unchanged(t, func() error { return w.s.AddSetMembers(root(), g.ID, SetProjects, []string{w.prj}) }, keel.KindInvalid, "IDs")
		if err := w.s.AddSetMembers(root(), g.ID, SetWorkspaceExclusions, []string{w.ws1}); err != nil {
			t.Fatalf("exclusion of a global set: %v", err)
		}
	})
}

// TestSetDelete: a deleted set leaves no edge; its members stay.
func TestSetDelete(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		a := w.mk(t, "a")
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s"), PolicyIDs: []string{a.ID}, WorkspaceIDs: []string{w.ws1},
			ProjectIDs: []string{w.prj}, WorkspaceExclusionIDs: []string{w.ws2}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.s.DeleteSet(root(), set.ID); err != nil {
			t.Fatal(err)
		}
		for k := range storagetest.Dump(t, w.raw) {
			if strings.Contains(k, set.ID) {
				t.Errorf("key left: %s", k)
			}
		}
		if _, err := w.s.GetSet(root(), set.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("read deleted: %v", err)
		}
		if p, err := w.s.Get(root(), a.ID); err != nil || len(p.PolicySetIDs) != 0 {
			t.Fatalf("member %+v, %v", p, err)
		}
		if _, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s")}); err != nil {
			t.Fatalf("the name is free again: %v", err)
		}
	})
}

// TestSetMembersForgotten: deleting a policy, a workspace or a project
// leaves no set pointing at it, in the deleting transaction, and the
// set's counts follow.
func TestSetMembersForgotten(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		a := w.mk(t, "a")
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s"), PolicyIDs: []string{a.ID}, WorkspaceIDs: []string{w.ws1},
			WorkspaceExclusionIDs: []string{w.ws1, w.ws2}})
		if err != nil {
			t.Fatal(err)
		}
		p2, err := w.cat.Create(root(), "acme", project.ProjectRequest{Name: ptr("empty")})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.s.AddSetMembers(root(), set.ID, SetProjects, []string{p2.ID, w.prj}); err != nil {
			t.Fatal(err)
		}
		if err := w.s.Delete(root(), a.ID); err != nil {
			t.Fatal(err)
		}
		if err := w.cat.DeleteWorkspace(root(), w.ws1); err != nil {
			t.Fatal(err)
		}
		if err := w.cat.Delete(root(), p2.ID); err != nil {
			t.Fatal(err)
		}
		got, err := w.s.GetSet(root(), set.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.PolicyIDs) != 0 || len(got.WorkspaceIDs) != 0 || !slices.Equal(got.WorkspaceExclusionIDs, []string{w.ws2}) ||
			!slices.Equal(got.ProjectIDs, []string{w.prj}) {
			t.Fatalf("members %+v", got)
		}
		for k := range storagetest.Dump(t, w.raw) {
			for _, id := range []string{a.ID, w.ws1, p2.ID} {
				if strings.HasPrefix(k, "policy/") && strings.Contains(k, id) {
					t.Errorf("key left: %s", k)
				}
			}
		}
		var rec *setRecord
		_ = w.s.store.View(context.Background(), func(_ context.Context, tx storage.Tx) error {
			rec, err = getSet(tx, set.ID)
			return err
		})
		if err != nil || *rec.Counts != (setCounts{Projects: 1, WorkspaceExclusions: 1}) {
			t.Fatalf("counts %+v, %v", rec.Counts, err)
		}
	})
}

// TestSetHidden: a caller without manage-policies finds no set, and
// changes nothing.
func TestSetHidden(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
			"reader": {{Path: "organizations*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		w := newWorld(t, open, authz, nil)
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s")})
		if err != nil {
			t.Fatal(err)
		}
		ctx := as("r", "reader")
		for name, op := range map[string]func() error{
			"create": func() error { _, err := w.s.CreateSet(ctx, "acme", CreateSetRequest{Name: ptr("a b")}); return err },
			"get":    func() error { _, err := w.s.GetSet(ctx, set.ID); return err },
			"list":   func() error { _, err := w.s.ListSets(ctx, "acme", ListSetsRequest{Offset: -1}); return err },
			"update": func() error { _, err := w.s.UpdateSet(ctx, set.ID, UpdateSetRequest{Name: ptr("a b")}); return err },
			"delete": func() error { return w.s.DeleteSet(ctx, set.ID) },
			"add":    func() error { return w.s.AddSetMembers(ctx, set.ID, SetWorkspaces, nil) },
			"remove": func() error { return w.s.RemoveSetMembers(ctx, set.ID, SetWorkspaces, []string{w.ws1}) },
		} {
			t.Run(name, func(t *testing.T) { w.unchanged(t, op, keel.KindNotFound) })
		}
	})
}

// TestListSets: name order, search, kind filter, pages.
func TestListSets(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		w := newWorld(t, open, nil, nil)
		for _, n := range []string{"b-net", "A-net", "c"} {
			if _, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr(n)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("opa-net"), Kind: ptr(OPA), PolicyIDs: []string{w.opa}}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name  string
			opts  ListSetsRequest
			want  []string
			total int
		}{
			{"all", ListSetsRequest{}, []string{"A-net", "b-net", "c", "opa-net"}, 4},
			{"search", ListSetsRequest{Search: "NET"}, []string{"A-net", "b-net", "opa-net"}, 3},
			{"kind", ListSetsRequest{FilterKind: OPA}, []string{"opa-net"}, 1},
			{"kind and search", ListSetsRequest{FilterKind: Sentinel, Search: "net"}, []string{"A-net", "b-net"}, 2},
			{"page 2", ListSetsRequest{ListRequest: keel.ListRequest{Limit: 3}, Offset: 3}, []string{"opa-net"}, 4},
			{"past the end", ListSetsRequest{ListRequest: keel.ListRequest{Limit: 3}, Offset: 24}, nil, 4},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				page, err := w.s.ListSets(root(), "acme", tt.opts)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, s := range page.Items {
					names = append(names, s.Name)
				}
				if !slices.Equal(names, tt.want) || page.Matching != tt.total || page.Total != 4 {
					t.Fatalf("names %v matching %d total %d", names, page.Matching, page.Total)
				}
				if tt.opts.Limit != 0 {
					return
				}
				var walked []string
				for set, err := range keel.All(root(), 1, func(ctx context.Context, r keel.ListRequest) (keel.Page[PolicySet], error) {
					opts := tt.opts
					opts.ListRequest = r
					page, err := w.s.ListSets(ctx, "acme", opts)
					return page.Page, err
				}) {
					if err != nil {
						t.Fatal(err)
					}
					walked = append(walked, set.Name)
				}
				if !slices.Equal(walked, tt.want) {
					t.Fatalf("walked %v, want %v", walked, tt.want)
				}
			})
		}
		if page, _ := w.s.ListSets(root(), "acme", ListSetsRequest{FilterKind: OPA}); !slices.Equal(page.Items[0].PolicyIDs, []string{w.opa}) {
			t.Fatalf("a listed set lacks its members: %+v", page.Items[0])
		}
		if _, err := w.s.ListSets(root(), "acme", ListSetsRequest{FilterKind: "x"}); !slices.Equal(fieldsOf(err), []string{"FilterKind"}) {
			t.Fatalf("bad kind: %v", err)
		}
		if _, err := w.s.ListSets(root(), "acme", ListSetsRequest{Offset: -1}); !slices.Equal(fieldsOf(err), []string{"Offset"}) {
			t.Fatalf("negative offset: %v", err)
		}
	})
}

// TestSetLimitsEtcd: with etcd's default limits (128 operations and reads
// per transaction), in memstore and in a real etcd, a set of MaxSetMembers (62) members is created, read,
// updated and deleted, each in one transaction; one more member is
// refused up front, naming the limit; a member of more than MaxMemberSets
// (40) sets cannot be deleted until it leaves one.
func TestSetLimitsEtcd(t *testing.T) {
	for _, k := range []everystore.Kind{
		{Name: "memstore with etcd's limits", Open: func(t testing.TB) storage.Store {
			s := memstore.New(&memstore.Options{Limits: etcdstore.DefaultLimits()})
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{Name: "etcdstore", Open: everystore.Etcd},
	} {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, k.Open, nil, nil)
			s := e.s
			var err error
			if s.Limits().MaxSetMembers != 62 || s.Limits().MaxMemberSets != 40 || s.Limits().MaxCodeBytes != 1429504 {
				t.Fatalf("limits %d %d %d; the package doc says 62, 40 and 1429504", s.Limits().MaxSetMembers, s.Limits().MaxMemberSets, s.Limits().MaxCodeBytes)
			}
			var ids []string
			for i := range 63 {
				ids = append(ids, e.mk(t, "p"+string(rune('a'+i/26))+string(rune('a'+i%26))).ID)
			}
			e.unchanged(t, func() error {
				_, err := s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("big"), PolicyIDs: ids})
				return err
			}, keel.KindTooLarge)
			_, err = s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("x"), PolicyIDs: ids})
			if err == nil || !strings.Contains(err.Error(), "at most 62") || !strings.Contains(err.Error(), "MaxTxOps 128") {
				t.Fatalf("the refusal does not name the limit: %v", err)
			}
			set, err := s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("big"), PolicyIDs: ids[:61]})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.AddSetMembers(root(), set.ID, SetPolicies, ids[61:62]); err != nil {
				t.Fatal(err)
			}
			e.unchanged(t, func() error { return s.AddSetMembers(root(), set.ID, SetPolicies, ids[62:]) }, keel.KindTooLarge)
			// A removal reads every id it names: more than a set holds is
			// refused up front, naming the limit (twice as many would not
			// fit one transaction).
			e.unchanged(t, func() error { return s.RemoveSetMembers(root(), set.ID, SetPolicies, ids) }, keel.KindTooLarge)
			if err := s.RemoveSetMembers(root(), set.ID, SetPolicies, append(slices.Clone(ids), ids...)); err == nil || !strings.Contains(err.Error(), "at most 62") {
				t.Fatalf("a removal of 63 ids: %v, want a refusal naming the limit", err)
			}
			if got, err := s.UpdateSet(root(), set.ID, UpdateSetRequest{Name: ptr("big2")}); err != nil || len(got.PolicyIDs) != 62 {
				t.Fatalf("update of the largest set: %d, %v", len(got.PolicyIDs), err)
			}
			if err := s.Delete(root(), ids[0]); err != nil {
				t.Fatalf("delete a member of the largest set: %v", err)
			}
			if err := s.DeleteSet(root(), set.ID); err != nil {
				t.Fatalf("delete of the largest set: %v", err)
			}

			// One policy in 41 sets.
			p := ids[1]
			var sets []string
			for i := range 41 {
				set, err := s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s" + string(rune('a'+i/26)) + string(rune('a'+i%26)))})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.AddSetMembers(root(), set.ID, SetPolicies, []string{p}); err != nil {
					t.Fatal(err)
				}
				sets = append(sets, set.ID)
			}
			e.unchanged(t, func() error { return s.Delete(root(), p) }, keel.KindTooLarge)
			if err := s.RemoveSetMembers(root(), sets[0], SetPolicies, []string{p}); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(root(), p); err != nil {
				t.Fatalf("delete a member of 40 sets: %v", err)
			}
			// A new policy joining more sets than fit is refused up front.
			e.unchanged(t, func() error {
				_, err := s.Create(root(), "acme", CreateRequest{Name: ptr("many"), EnforcementLevel: ptr(Advisory), PolicySetIDs: sets})
				return err
			}, keel.KindTooLarge)
		})
	}
}

// TestSetOperationsRetrySafe: every set operation, its closure run twice
// as a store that retries does, has the effect of one run.
func TestSetOperationsRetrySafe(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		var fs *faultstore.Store
		w := newWorld(t, open, nil, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		a := w.mk(t, "a")
		fs.Rerun(true)
		set, err := w.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s"), PolicyIDs: []string{a.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.s.AddSetMembers(root(), set.ID, SetWorkspaces, []string{w.ws1, w.ws2}); err != nil {
			t.Fatal(err)
		}
		if err := w.s.RemoveSetMembers(root(), set.ID, SetWorkspaces, []string{w.ws1}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.UpdateSet(root(), set.ID, UpdateSetRequest{Name: ptr("t")}); err != nil {
			t.Fatal(err)
		}
		if err := w.cat.DeleteWorkspace(root(), w.ws2); err != nil {
			t.Fatal(err)
		}
		got, err := w.s.GetSet(root(), set.ID)
		if err != nil || got.Name != "t" || len(got.WorkspaceIDs) != 0 || !slices.Equal(got.PolicyIDs, []string{a.ID}) {
			t.Fatalf("%+v, %v", got, err)
		}
		if err := w.s.DeleteSet(root(), set.ID); err != nil {
			t.Fatal(err)
		}
		for k := range storagetest.Dump(t, w.raw) {
			if strings.Contains(k, set.ID) || strings.Contains(k, "setname/acme/") {
				t.Errorf("key left: %s", k)
			}
		}
	})
}

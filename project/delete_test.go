package project

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// old is what an organization held before it was deleted.
type old struct {
	project, defaultProject, workspace, team string
	workspaceName                            string
	workspaces                               []string
	others                                   []string // other ids of the organization
}

// populate gives acme a project, n workspaces in it, a team and the team's
// access to the project.
func populate(t testing.TB, c *Catalog, n int) old {
	t.Helper()
	ctx := root()
	org, err := c.GetOrganization(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Create(ctx, "acme", ProjectRequest{Name: ptr("infra")})
	if err != nil {
		t.Fatal(err)
	}
	o := old{project: p.ID, defaultProject: org.DefaultProjectID, workspaceName: "ws-000"}
	for i := range n {
		w, err := c.CreateWorkspace(ctx, "acme", WorkspaceRequest{Name: new(fmt.Sprintf("ws-%03d", i)), ProjectID: new(p.ID)})
		if err != nil {
			t.Fatal(err)
		}
		o.workspaces = append(o.workspaces, w.ID)
	}
	o.workspace = o.workspaces[0]
	team, err := c.CreateTeam(ctx, "acme", TeamRequest{Name: new("devs")})
	if err != nil {
		t.Fatal(err)
	}
	o.team = team.ID
	if _, err := c.PutTeamAccess(ctx, TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "write"}); err != nil {
		t.Fatal(err)
	}
	return o
}

// checkGone checks that no read or write of c reaches anything of o.
func checkGone(t *testing.T, c *Catalog, o old) {
	t.Helper()
	ctx := root()
	notFound := map[string]error{}
	_, notFound["project"] = c.Get(ctx, o.project)
	_, notFound["default project"] = c.Get(ctx, o.defaultProject)
	_, notFound["update project"] = c.Update(ctx, o.project, ProjectRequest{Description: ptr("x")})
	_, notFound["workspace"] = c.GetWorkspace(ctx, o.workspace)
	_, notFound["workspaces of the project"] = projectWorkspaces(c, ctx, o.project)
	_, notFound["team"] = c.GetTeam(ctx, o.team)
	_, notFound["team accesses"] = teamAccesses(c, ctx, o.project)
	_, notFound["set team access"] = c.PutTeamAccess(ctx, TeamAccess{ProjectID: o.project, TeamID: o.team, Access: "read"})
	notFound["delete workspace"] = c.DeleteWorkspace(ctx, o.workspace)
	notFound["move workspaces"] = c.MoveWorkspaces(ctx, o.defaultProject, []string{o.workspace})
	for op, err := range notFound {
		if !errors.Is(err, keel.KindNotFound) {
			t.Errorf("%s: err = %v, want not found", op, err)
		}
	}
}

// checkNothingOld checks that the acme created again shows nothing of o.
func checkNothingOld(t *testing.T, c *Catalog, o old) {
	t.Helper()
	checkGone(t, c, o)
	ctx := root()
	page, err := c.List(ctx, "acme", ListRequest{})
	if err != nil || page.Total != 1 || len(page.Items) != 1 || page.Items[0].ID == o.defaultProject || page.Items[0].WorkspaceCount != 0 {
		t.Fatalf("projects of the new acme = %+v, %v", page, err)
	}
	if _, err := c.GetWorkspaceByName(ctx, "acme", o.workspaceName); !errors.Is(err, keel.KindNotFound) {
		t.Errorf("workspace by its old name: %v", err)
	}
	// The old names are free.
	if _, err := c.CreateWorkspace(ctx, "acme", WorkspaceRequest{Name: new(o.workspaceName)}); err != nil {
		t.Errorf("create a workspace of an old name: %v", err)
	}
	if _, err := c.CreateTeam(ctx, "acme", TeamRequest{Name: new("devs")}); err != nil {
		t.Errorf("create a team of an old name: %v", err)
	}
	if _, err := c.Create(ctx, "acme", ProjectRequest{Name: ptr("infra")}); err != nil {
		t.Errorf("create a project of an old name: %v", err)
	}
}

// keysOf returns the keys of dump that name one of o's ids or the
// organization's index or pending deletion.
func keysOf(dump map[string]string, o old) []string {
	ids := slices.Concat([]string{o.project, o.defaultProject, o.team}, o.workspaces, o.others)
	var out []string
	for k := range dump {
		for _, id := range ids {
			if strings.Contains(k, id) {
				out = append(out, k)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestRecreatedOrganizationShowsNothingOld(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		o := populate(t, e.c, 3)
		if err := e.c.DeleteOrganization(root(), "acme"); err != nil {
			t.Fatal(err)
		}
		if left := storagetest.Dump(t, e.raw); len(left) != 0 {
			t.Fatalf("keys left: %v", slices.Sorted(maps.Keys(left)))
		}
		checkGone(t, e.c, o)
		if _, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		checkNothingOld(t, e.c, o)
	})
}

// TestRefusedDeletionLeavesStore: a caller without delete on the
// organization gets not found, and the store is as it was, whether the
// deletion is new or pending.
func TestRefusedDeletionLeavesStore(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"reader": {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}}},
		})
		var fs *faultstore.Store
		e := newEnv(t, open, authz, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		o := populate(t, e.c, 2)
		before := storagetest.Dump(t, e.raw)
		if err := e.c.DeleteOrganization(as("u", "reader"), "acme"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("delete without the right: %v", err)
		}
		if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("a refused deletion changed the store")
		}
		// Stop a deletion midway, then try to finish it without the right.
		boom := errors.New("disk full")
		fs.Fail(faultstore.OpDelete, "project/ws/"+o.workspaces[1], 1, boom)
		if err := e.c.DeleteOrganization(root(), "acme"); !errors.Is(err, boom) {
			t.Fatalf("delete: %v", err)
		}
		before = storagetest.Dump(t, e.raw)
		if err := e.c.DeleteOrganization(as("u", "reader"), "acme"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("finish without the right: %v", err)
		}
		if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("a refused finish changed the store")
		}
	})
}

// stopMidway makes the deletion of acme stop after some of its
// transactions committed and before the others, on a store whose limits
// make it take many (two index keys each); it checks what the store holds
// then, and that the project o.project, its workspaces and the team are
// still stored.
func stopMidway(t *testing.T) (*faultstore.Store, *memstore.Store, *Catalog, old) {
	t.Helper()
	// 5 operations: the fewest that still create an organization (its
	// record, the default project and the owners team with their names).
	mem := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 5, MaxTxReads: 5}})
	t.Cleanup(func() { mem.Close() })
	fs := faultstore.New(mem)
	c, err := New(storage.Sub(fs, "project/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
		t.Fatal(err)
	}
	o := populate(t, c, 3)
	last, err := c.Create(root(), "acme", ProjectRequest{Name: ptr("zz-last")})
	if err != nil {
		t.Fatal(err)
	}
	before := storagetest.Dump(t, mem)
	boom := errors.New("disk full")
	// The index of acme, in order: the team's access, the project names
	// ("default project", "infra", "zz-last"), ... The first batch
	// deletes the access and the default project; the second fails.
	fs.Fail(faultstore.OpDelete, "project/prj/"+last.ID, 1, boom)
	if err := c.DeleteOrganization(root(), "acme"); !errors.Is(err, boom) {
		t.Fatalf("delete: err = %v, want %v", err, boom)
	}
	mid := storagetest.Dump(t, mem)
	for _, id := range []string{"prj/" + o.project, "prj/" + last.ID, "ws/" + o.workspace, "team/" + o.team} {
		if _, ok := mid["project/"+id]; !ok {
			t.Fatalf("%s was deleted: the deletion did not stop midway", id)
		}
	}
	for _, key := range []string{"ix/acme/access/" + o.project + "/" + o.team, "prj/" + o.defaultProject} {
		if _, ok := mid["project/"+key]; ok || len(mid) >= len(before) {
			t.Fatalf("%s is left: no batch of the deletion committed", key)
		}
	}
	o.others = append(o.others, last.ID)
	return fs, mem, c, o
}

// TestDeletionStoppedMidway: after some batches of a deletion committed,
// the organization and everything of it read as not found and nothing can
// be added to it; deleting again, creating the name again, or
// FinishDeletions in a new process leaves no key of it.
func TestDeletionStoppedMidway(t *testing.T) {
	finishers := []struct {
		name string
		fn   func(t *testing.T, fs *faultstore.Store, c *Catalog) *Catalog
		keys int // left after: the new organization's
	}{
		{"delete again", func(t *testing.T, _ *faultstore.Store, c *Catalog) *Catalog {
			if err := c.DeleteOrganization(root(), "acme"); err != nil {
				t.Fatal(err)
			}
			return c
		}, 0},
		{"create again", func(t *testing.T, _ *faultstore.Store, c *Catalog) *Catalog {
			if _, err := c.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
				t.Fatal(err)
			}
			return c
		}, 5}, // its record, the default project and the owners team, each named in the index
		{"finish in a new process", func(t *testing.T, fs *faultstore.Store, _ *Catalog) *Catalog {
			c, err := New(storage.Sub(fs, "project/"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.FinishDeletions(context.Background()); err != nil {
				t.Fatal(err)
			}
			return c
		}, 0},
	}
	for _, f := range finishers {
		t.Run(f.name, func(t *testing.T) {
			fs, mem, c, o := stopMidway(t)
			ctx := root()
			if _, err := c.GetOrganization(ctx, "acme"); !errors.Is(err, keel.KindNotFound) {
				t.Fatalf("organization: %v", err)
			}
			if orgs, err := allOrganizations(c, ctx); err != nil || len(orgs) != 0 {
				t.Fatalf("organizations = %v, %v", orgs, err)
			}
			if _, err := c.List(ctx, "acme", ListRequest{}); !errors.Is(err, keel.KindNotFound) {
				t.Fatalf("list: %v", err)
			}
			checkGone(t, c, o)
			adds := map[string]error{}
			_, adds["workspace"] = c.CreateWorkspace(ctx, "acme", WorkspaceRequest{Name: new("late")})
			_, adds["team"] = c.CreateTeam(ctx, "acme", TeamRequest{Name: new("late")})
			_, adds["project"] = c.Create(ctx, "acme", ProjectRequest{Name: ptr("late")})
			for what, err := range adds {
				if !errors.Is(err, keel.KindNotFound) {
					t.Errorf("create %s in the organization being deleted: %v", what, err)
				}
			}
			c = f.fn(t, fs, c)
			left := storagetest.Dump(t, mem)
			if len(left) != f.keys || len(keysOf(left, o)) != 0 {
				t.Fatalf("keys left: %v", slices.Sorted(maps.Keys(left)))
			}
			if _, ok := left["project/del/acme"]; ok {
				t.Fatal("the pending deletion is left")
			}
			if f.keys > 0 {
				checkNothingOld(t, c, o)
			}
		})
	}
}

// TestLateFinisherSparesNewOrganization: a finisher of a deletion that
// another caller finished, after which the name was taken again, deletes
// nothing of the new organization.
func TestLateFinisherSparesNewOrganization(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		populate(t, e.c, 2)
		d, err := e.c.startDeletion(root(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		fresh := populate(t, e.c, 2)
		before := storagetest.Dump(t, e.raw)
		if err := e.c.finish(root(), "acme", d); err != nil {
			t.Fatalf("late finish: %v", err)
		}
		if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("the late finisher changed the store")
		}
		if _, err := e.c.GetWorkspace(root(), fresh.workspace); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRegisterRefusesViewsItCannotJoin(t *testing.T) {
	root := memstore.New(nil)
	other := memstore.New(nil)
	c, err := New(storage.Sub(root, "project/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	purge := func(context.Context, string, storage.Store) error { return nil }
	if _, err := c.Register(storage.Sub(root, "policy/"), purge); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(storage.Sub(root, "policy/"), purge); err != nil {
		t.Fatalf("the same view again: %v", err)
	}
	tests := []struct {
		name  string
		store storage.Store
		purge PurgeFunc
	}{
		{"no store", nil, purge},
		{"no purge", storage.Sub(root, "other/"), nil},
		{"another store", storage.Sub(other, "policy/"), purge},
		{"the whole store", root, purge},
		{"inside the catalog", storage.Sub(root, "project/x/"), purge},
		{"inside a registered view", storage.Sub(root, "policy/x/"), purge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.Register(tt.store, tt.purge); keel.KindOf(err) != keel.KindInvalid {
				t.Fatalf("err = %v, want an error of kind invalid", err)
			}
		})
	}
	if got := slices.Sorted(maps.Keys(c.registered())); !slices.Equal(got, []string{"policy/"}) {
		t.Fatalf("registered = %v", got)
	}
}

// TestPendingDeletionWaitsForItsServices: a deletion started while a
// service was registered is finished only by a Catalog where it is
// registered again, so that its data never outlives the organization.
func TestPendingDeletionWaitsForItsServices(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		fs := faultstore.New(store)
		svc := storage.Sub(fs, "svc/")
		purge := func(ctx context.Context, org string, store storage.Store) error {
			_, err := storage.DeletePrefix(ctx, store, org+"/")
			return err
		}
		c, err := New(storage.Sub(fs, "project/"), nil)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := c.Register(svc, purge)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		err = reg.Update(root(), func(ctx context.Context, tx storage.Tx, orgs Orgs) error {
			if ok, err := orgs.Exists("acme"); !ok || err != nil {
				return fmt.Errorf("acme exists = %v, %v", ok, err)
			}
			return tx.Put("acme/data", []byte("x"))
		})
		if err != nil {
			t.Fatal(err)
		}
		boom := errors.New("disk full")
		fs.Fail(faultstore.OpDelete, "svc/acme/", 1, boom)
		if err := c.DeleteOrganization(root(), "acme"); !errors.Is(err, boom) {
			t.Fatalf("delete: %v", err)
		}
		err = reg.View(root(), func(ctx context.Context, tx storage.Tx, orgs Orgs) error {
			if ok, err := orgs.Exists("acme"); ok || err != nil {
				return fmt.Errorf("acme exists = %v, %v during its deletion", ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		restarted, err := New(storage.Sub(fs, "project/"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := restarted.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("")}); !errors.Is(err, keel.KindConflict) {
			t.Fatalf("create without the service: %v", err)
		}
		if _, err := restarted.Register(svc, purge); err != nil {
			t.Fatal(err)
		}
		if _, err := restarted.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
			t.Fatalf("create with the service: %v", err)
		}
		for k := range storagetest.Dump(t, store) {
			if strings.HasPrefix(k, "svc/") || strings.HasPrefix(k, "project/del/") {
				t.Errorf("key left: %s", k)
			}
		}
	})
}

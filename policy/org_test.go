package policy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestMain gives the tests on etcdstore, of both packages, one embedded
// etcd (see everystore).
func TestMain(m *testing.M) { everystore.Main(m) }

// services are a catalog and the policies registered with it, over views
// of one store, as a program builds them.
type services struct {
	cat *project.Catalog
	pol *policy.Service
}

func build(t testing.TB, store storage.Store) services {
	t.Helper()
	cat, err := project.New(storage.Sub(store, "project/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(storage.Sub(store, "policy/"), &policy.Options{Organizations: cat})
	if err != nil {
		t.Fatal(err)
	}
	return services{cat: cat, pol: pol}
}

// held is what acme held before its deletion.
type held struct {
	projects, workspaces, teams, policies, sets []string
}

// populate gives acme a project with workspaces workspaces, a team with
// access to it, policies policies (with code) and two policy sets, one
// with the first 12 policies as members and one empty.
func populate(t testing.TB, s services, workspaces, policies int) held {
	t.Helper()
	ctx := context.Background()
	org, err := s.cat.CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("")})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.cat.Create(ctx, "acme", project.ProjectRequest{Name: ptr("infra")})
	if err != nil {
		t.Fatal(err)
	}
	h := held{projects: []string{org.DefaultProjectID, p.ID}}
	for i := range workspaces {
		w, err := s.cat.CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new(fmt.Sprintf("ws-%03d", i)), ProjectID: new(p.ID)})
		if err != nil {
			t.Fatal(err)
		}
		h.workspaces = append(h.workspaces, w.ID)
	}
	team, err := s.cat.CreateTeam(ctx, "acme", project.TeamRequest{Name: new("devs")})
	if err != nil {
		t.Fatal(err)
	}
	h.teams = append(h.teams, team.ID)
	if _, err := s.cat.PutTeamAccess(ctx, project.TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "write"}); err != nil {
		t.Fatal(err)
	}
	for i := range policies {
		name := fmt.Sprintf("pol-%03d", i)
		pol, err := s.pol.Create(ctx, "acme", policy.CreateRequest{Name: &name, EnforcementLevel: ptr(policy.Advisory)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.pol.Upload(ctx, pol.ID, []byte("main = rule { true }")); err != nil {
			t.Fatal(err)
		}
		h.policies = append(h.policies, pol.ID)
	}
	for _, members := range [][]string{h.policies[:min(12, len(h.policies))], nil} {
		set, err := s.pol.CreateSet(ctx, "acme", policy.CreateSetRequest{Name: ptr(fmt.Sprintf("set-%d", len(h.sets))), PolicyIDs: members})
		if err != nil {
			t.Fatal(err)
		}
		h.sets = append(h.sets, set.ID)
	}
	return h
}

// checkNothingVisible checks that no operation of s reaches anything of h.
func checkNothingVisible(t *testing.T, s services, h held) {
	t.Helper()
	ctx := context.Background()
	errs := map[string]error{}
	for i, id := range h.projects {
		_, errs["project "+id] = s.cat.Get(ctx, id)
		_, errs["workspaces of project "+id] = projectWorkspaces(s.cat, ctx, id)
		_, errs["team accesses of project "+id] = teamAccesses(s.cat, ctx, id)
		if i == 1 {
			_, errs["set team access "+id] = s.cat.PutTeamAccess(ctx, project.TeamAccess{ProjectID: id, TeamID: h.teams[0], Access: "read"})
		}
	}
	for _, id := range h.workspaces[:min(len(h.workspaces), 3)] {
		_, errs["workspace "+id] = s.cat.GetWorkspace(ctx, id)
	}
	_, errs["workspace by name"] = s.cat.GetWorkspaceByName(ctx, "acme", "ws-000")
	for _, id := range h.teams {
		_, errs["team "+id] = s.cat.GetTeam(ctx, id)
	}
	for _, id := range h.policies {
		_, errs["policy "+id] = s.pol.Get(ctx, id)
		_, errs["download "+id] = s.pol.Download(ctx, id)
		_, errs["update "+id] = s.pol.Update(ctx, id, policy.UpdateRequest{Description: ptr("x")})
		errs["upload "+id] = s.pol.Upload(ctx, id, []byte("x"))
		errs["delete "+id] = s.pol.Delete(ctx, id)
	}
	for _, id := range h.sets {
		_, errs["policy set "+id] = s.pol.GetSet(ctx, id)
	}
	for op, err := range errs {
		if !errors.Is(err, keel.KindNotFound) {
			t.Errorf("%s: err = %v, want not found", op, err)
		}
	}
}

// checkNewOrgIsNew checks that the acme created again holds nothing of h:
// its lists are empty and the old names are free.
func checkNewOrgIsNew(t *testing.T, s services, h held) {
	t.Helper()
	ctx := context.Background()
	checkNothingVisible(t, s, h)
	page, err := s.pol.List(ctx, "acme", policy.ListRequest{})
	if err != nil || len(page.Items) != 0 || page.Matching != 0 {
		t.Errorf("policies of the new acme = %+v, %v", page, err)
	}
	if page, err := s.pol.List(ctx, "acme", policy.ListRequest{Search: "pol"}); err != nil || len(page.Items) != 0 {
		t.Errorf("searched policies of the new acme = %+v, %v", page, err)
	}
	prjs, err := s.cat.List(ctx, "acme", project.ListRequest{})
	if err != nil || prjs.Total != 1 || len(prjs.Items) != 1 || slices.Contains(h.projects, prjs.Items[0].ID) {
		t.Fatalf("projects of the new acme = %+v, %v", prjs, err)
	}
	if ws, err := projectWorkspaces(s.cat, ctx, prjs.Items[0].ID); err != nil || len(ws) != 0 {
		t.Errorf("workspaces of the new default project = %v, %v", ws, err)
	}
	if _, err := s.pol.Create(ctx, "acme", policy.CreateRequest{Name: ptr("pol-000"), EnforcementLevel: ptr(policy.Advisory)}); err != nil {
		t.Errorf("create a policy of an old name: %v", err)
	}
	if _, err := s.cat.CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new("ws-000")}); err != nil {
		t.Errorf("create a workspace of an old name: %v", err)
	}
	if _, err := s.cat.CreateTeam(ctx, "acme", project.TeamRequest{Name: new("devs")}); err != nil {
		t.Errorf("create a team of an old name: %v", err)
	}
}

// TestRecreatedOrganizationShowsNothingOld: deleting an organization
// deletes its projects, workspaces, teams and their access, policies and
// policy sets, on every store; an organization of the same name created
// again shows none of them through any operation.
func TestRecreatedOrganizationShowsNothingOld(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		store := open(t)
		s := build(t, store)
		h := populate(t, s, 3, 3)
		if err := s.cat.DeleteOrganization(context.Background(), "acme"); err != nil {
			t.Fatal(err)
		}
		if left := keysLeft(t, store); len(left) != 0 {
			t.Fatalf("keys left: %v", left)
		}
		checkNothingVisible(t, s, h)
		if _, err := s.cat.CreateOrganization(context.Background(), project.OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		checkNewOrgIsNew(t, s, h)
	})
}

// TestDeleteLargeOrganizationOnEtcd: an organization of 200 workspaces and
// 40 policies, more than one etcd transaction can delete (128 operations
// and 128 comparisons at most), is deleted in batches from an etcd store
// with its default limits, and leaves no key behind.
func TestDeleteLargeOrganizationOnEtcd(t *testing.T) {
	client := etcdtest.Client(t)
	prefix := etcdtest.Prefix()
	store := etcdstore.New(client, &etcdstore.Options{Prefix: prefix})
	s := build(t, store)
	h := populate(t, s, 200, 40)
	ctx := context.Background()
	if n := countKeys(t, client, prefix); n < 2*128 {
		t.Fatalf("only %d keys: one transaction could delete them", n)
	}
	start := time.Now()
	if err := s.cat.DeleteOrganization(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted in %v", time.Since(start))
	// One key is not of acme: the mark that every set is indexed.
	if n := countKeys(t, client, prefix); n != 1 {
		t.Fatalf("%d keys left: %v", n, slices.Sorted(maps.Keys(storagetest.Dump(t, store))))
	}
	if left := keysLeft(t, store); len(left) != 0 {
		t.Fatalf("keys left: %v", left)
	}
	checkNothingVisible(t, s, h)
}

// keysLeft returns the keys of store, but for the one that is of no
// organization: the mark of the policies' store that every set is indexed
// by organization, written by the first deletion.
func keysLeft(t testing.TB, store storage.Store) []string {
	t.Helper()
	dump := storagetest.Dump(t, store)
	delete(dump, "policy/v/setname")
	return slices.Sorted(maps.Keys(dump))
}

// countKeys counts the keys under prefix in etcd itself.
func countKeys(t testing.TB, client *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := client.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestPolicyDeletionStoppedMidway: a deletion that stops while it deletes
// the policies (some of them deleted, some not) leaves the organization, its
// policies and sets not found and closed to writes; a new process finishes
// it with FinishDeletions and no key is left.
func TestPolicyDeletionStoppedMidway(t *testing.T) {
	mem := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxOps: 32, MaxTxReads: 32}})
	t.Cleanup(func() { mem.Close() })
	fs := faultstore.New(mem)
	s := build(t, fs)
	h := populate(t, s, 2, 40)
	ctx := context.Background()
	before := storagetest.Dump(t, mem)
	boom := errors.New("disk full")
	// Policies are deleted in name order, a few per transaction: this
	// one is deleted after others were.
	stopAt := h.policies[30]
	fs.Fail(faultstore.OpDelete, "policy/pol/"+stopAt, 1, boom)
	if err := s.cat.DeleteOrganization(ctx, "acme"); !errors.Is(err, boom) {
		t.Fatalf("delete: err = %v, want %v", err, boom)
	}
	mid := storagetest.Dump(t, mem)
	if _, ok := mid["policy/pol/"+stopAt]; !ok {
		t.Fatal("the policies were all deleted")
	}
	if _, ok := mid["policy/pol/"+h.policies[0]]; ok || len(mid) >= len(before) {
		t.Fatal("no batch of policies was deleted")
	}
	if _, err := s.cat.GetOrganization(ctx, "acme"); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("organization: %v", err)
	}
	if _, err := s.pol.List(ctx, "acme", policy.ListRequest{}); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("list: %v", err)
	}
	if _, err := s.pol.Create(ctx, "acme", policy.CreateRequest{Name: ptr("late"), EnforcementLevel: ptr(policy.Advisory)}); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("create a policy in the organization being deleted: %v", err)
	}
	if _, err := s.pol.CreateSet(ctx, "acme", policy.CreateSetRequest{Name: ptr("late"), PolicyIDs: nil}); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("create a set in the organization being deleted: %v", err)
	}
	checkNothingVisible(t, s, h)

	// A new process, built over the same store, finishes the deletion.
	restarted := build(t, fs)
	if err := restarted.cat.FinishDeletions(ctx); err != nil {
		t.Fatal(err)
	}
	if left := keysLeft(t, mem); len(left) != 0 {
		t.Fatalf("keys left: %v", left)
	}
}

// TestNewRefusesViewsItCannotJoin: policy.New registers the Service with
// the catalog, and fails when their stores cannot share a transaction.
func TestNewRefusesViewsItCannotJoin(t *testing.T) {
	root, other := memstore.New(nil), memstore.New(nil)
	cat, err := project.New(storage.Sub(root, "project/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		store storage.Store
	}{
		{"no store", nil},
		{"another store", storage.Sub(other, "policy/")},
		{"the catalog's view", storage.Sub(root, "project/")},
		{"the whole store", root},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.New(tt.store, &policy.Options{Organizations: cat})
			if keel.KindOf(err) != keel.KindInvalid || !strings.HasPrefix(err.Error(), "policy: ") {
				t.Fatalf("err = %v, want an error of kind invalid", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// projectWorkspaces lists the workspaces of the project id that the caller
// of ctx may read, with the rights of a read of the project.
func projectWorkspaces(c *project.Catalog, ctx context.Context, id string) ([]project.Workspace, error) {
	p, err := c.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []project.Workspace
	for w, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[project.Workspace], error) {
		page, err := c.ListWorkspaces(ctx, p.Org, project.ListWorkspacesRequest{ListRequest: r, ProjectID: id})
		return page.Page, err
	}) {
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// teamAccesses lists the teams with access to the project id.
func teamAccesses(c *project.Catalog, ctx context.Context, id string) ([]project.TeamAccess, error) {
	page, err := c.ListTeamAccesses(ctx, id, project.ListTeamAccessesRequest{ListRequest: keel.ListRequest{Limit: project.MaxPageSize}})
	return page.Items, err
}

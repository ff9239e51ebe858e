package project

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// t0 is the start of every fake clock.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// env is a Catalog under test over a store of everystore, with a fake
// clock and the organization "acme".
type env struct {
	c     *Catalog
	raw   storage.Store // the store opened, without wrap: to look at it
	clock *keel.FakeClock
	org   Organization
}

// newEnv returns an env over a new store from open (everystore.Mem for a
// test of one store). authz may be nil (everything allowed); wrap, when
// not nil, wraps the store (a faultstore, say).
func newEnv(t testing.TB, open everystore.Open, authz keel.Authorizer, wrap func(storage.Store) storage.Store) *env {
	t.Helper()
	raw := open(t)
	store := raw
	if wrap != nil {
		store = wrap(raw)
	}
	clock := keel.NewFakeClock(t0)
	c, err := New(storage.Sub(store, "project/"), &Options{Authorizer: authz, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{c: c, raw: raw, clock: clock}
	org, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")})
	if err != nil {
		t.Fatalf("create organization: %v", err)
	}
	e.org = org
	return e
}

// TestMain gives the tests on etcdstore one embedded etcd (see everystore).
func TestMain(m *testing.M) { everystore.Main(m) }

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own).
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

// root is a context whose caller holds every right.
func root() context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
}

// as is a context whose caller has the given policies.
func as(id string, policies ...string) context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: id, Policies: policies})
}

// rules builds a RuleAuthorizer, or fails t.
func rules(t testing.TB, policies map[string][]keel.Rule) keel.Authorizer {
	t.Helper()
	a, err := keel.NewRuleAuthorizer(policies)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// mkProject creates a project in acme, or fails t.
func (e *env) mkProject(t testing.TB, name string) Project {
	t.Helper()
	p, err := e.c.Create(root(), "acme", ProjectRequest{Name: &name})
	if err != nil {
		t.Fatalf("create project %q: %v", name, err)
	}
	return p
}

// mkWorkspace creates a workspace in a project of acme, or fails t.
func (e *env) mkWorkspace(t testing.TB, name, projectID string) Workspace {
	t.Helper()
	w, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new(name), ProjectID: new(projectID)})
	if err != nil {
		t.Fatalf("create workspace %q: %v", name, err)
	}
	return w
}

func ptr[T any](v T) *T { return &v }

// projectWorkspaces lists the workspaces of the project id that the caller
// of ctx may read, in name order, with the rights of a read of the
// project.
func projectWorkspaces(c *Catalog, ctx context.Context, id string) ([]Workspace, error) {
	p, err := c.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return collect(keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[Workspace], error) {
		page, err := c.ListWorkspaces(ctx, p.Org, ListWorkspacesRequest{ListRequest: r, ProjectID: id})
		return page.Page, err
	}))
}

// allOrganizations lists every organization the caller of ctx may read.
func allOrganizations(c *Catalog, ctx context.Context) ([]Organization, error) {
	return collect(keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[Organization], error) {
		return c.ListOrganizations(ctx, r)
	}))
}

// collect gathers the items of a walk of a list, or its error.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	out := []T{}
	for it, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// teamAccesses lists the teams with access to the project id, by team id.
func teamAccesses(c *Catalog, ctx context.Context, id string) ([]TeamAccess, error) {
	return collect(keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[TeamAccess], error) {
		page, err := c.ListTeamAccesses(ctx, id, ListTeamAccessesRequest{ListRequest: r})
		return page.Page, err
	}))
}

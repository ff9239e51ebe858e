package project

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// t0 is the start of every fake clock.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// env is a Catalog under test over a memory store, with a fake clock and
// the organization "acme".
type env struct {
	c     *Catalog
	mem   *memstore.Store
	clock *keel.FakeClock
	org   Organization
}

// newEnv returns an env. authz may be nil (everything allowed); wrap, when
// not nil, wraps the memory store (a faultstore, say).
func newEnv(t testing.TB, authz keel.Authorizer, wrap func(storage.Store) storage.Store) *env {
	t.Helper()
	mem := memstore.New(nil)
	t.Cleanup(func() { mem.Close() })
	var store storage.Store = mem
	if wrap != nil {
		store = wrap(mem)
	}
	clock := keel.NewFakeClock(t0)
	e := &env{c: New(storage.Sub(store, "project/"), &Options{Authorizer: authz, Clock: clock}), mem: mem, clock: clock}
	org, err := e.c.CreateOrganization(root(), "acme", "ops@acme.test", nil)
	if err != nil {
		t.Fatalf("create organization: %v", err)
	}
	e.org = org
	return e
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
	p, err := e.c.Create(root(), "acme", Input{Name: &name})
	if err != nil {
		t.Fatalf("create project %q: %v", name, err)
	}
	return p
}

// mkWorkspace creates a workspace in a project of acme, or fails t.
func (e *env) mkWorkspace(t testing.TB, name, projectID string) Workspace {
	t.Helper()
	w, err := e.c.CreateWorkspace(root(), "acme", name, projectID, nil)
	if err != nil {
		t.Fatalf("create workspace %q: %v", name, err)
	}
	return w
}

func ptr[T any](v T) *T { return &v }

package policy

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
)

// t0 is the start of every fake clock.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// env is a Service under test with a project catalog holding "acme".
type env struct {
	s     *Service
	cat   *project.Catalog
	raw   storage.Store // the store opened, without wrap: to look at it
	clock *keel.FakeClock
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
	cat, err := project.New(storage.Sub(store, "project/"), &project.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateOrganization(context.Background(), project.OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
		t.Fatal(err)
	}
	s, err := New(storage.Sub(store, "policy/"), &Options{Authorizer: authz, Clock: clock, Organizations: cat})
	if err != nil {
		t.Fatal(err)
	}
	return &env{s: s, cat: cat, raw: raw, clock: clock}
}

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each test has its own). TestMain is in org_test.go.
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

func root() context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
}

func as(id string, policies ...string) context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: id, Policies: policies})
}

// mk creates a sentinel policy named name in acme, or fails t.
func (e *env) mk(t testing.TB, name string) Policy {
	t.Helper()
	p, err := e.s.Create(root(), "acme", CreateRequest{Name: &name, Enforce: &[]Enforce{{Path: name + ".policy"}}})
	if err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

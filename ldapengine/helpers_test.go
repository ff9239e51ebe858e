package ldapengine

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

const (
	bindDN  = "cn=keel,dc=example,dc=org"
	aliceDN = "uid=alice,ou=users,dc=example,dc=org"
	bobDN   = "uid=bob,ou=users,dc=example,dc=org"
)

type env struct {
	e     *Engine
	dir   *fakeDirectory
	clock *keel.FakeClock
	store storage.Store
	pol   *passwordpolicy.Policies
}

// newEnv returns an engine of flavor, over a new store from open
// (everystore.Mem for a test of one store), on a fake directory holding the
// bind account and alice and bob. wrap, when not nil, wraps the store (a
// faultstore, say).
func newEnv(t testing.TB, open everystore.Open, flavor Flavor, wrap func(storage.Store) storage.Store) *env {
	t.Helper()
	s := open(t)
	if wrap != nil {
		s = wrap(s)
	}
	dir := newFakeDirectory()
	dir.Add(bindDN, "bind-pw", "cn", "keel")
	dir.Add(aliceDN, "alice-pw", "cn", "alice", "uid", "alice")
	dir.Add(bobDN, "bob-pw", "cn", "bob", "uid", "bob")
	clock := keel.NewFakeClock(t0)
	pol, err := passwordpolicy.New(storage.Sub(s, policiesPrefix), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(storage.Sub(s, storePrefix("ldap")), flavor, "ldap", &Options{Directory: dir, Clock: clock, Policies: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return &env{e: e, dir: dir, clock: clock, store: s, pol: pol}
}

// onEveryStore runs fn on every store of everystore, the stores in
// parallel (each has its own engine, directory and clock). TestMain is in
// size_test.go.
func onEveryStore(t *testing.T, fn func(t *testing.T, open everystore.Open)) {
	t.Helper()
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		fn(t, open)
	})
}

func (v *env) configure(t testing.TB) {
	t.Helper()
	if err := v.e.PutConfig(context.Background(), Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
}

func wantKind(t testing.TB, err error, k keel.Kind) {
	t.Helper()
	if got := keel.KindOf(err); got != k {
		t.Fatalf("error %v: kind %v, want %v", err, got, k)
	}
}

// The key prefixes the tests give the engine, the password policies and
// the lease manager in their stores: those of the example server.
const (
	policiesPrefix = "ldapengine/password-policies/"
	leasePrefix    = "lease/"
)

// storePrefix is the prefix of the engine of mount in the tests' stores.
func storePrefix(mount string) string {
	return "ldapengine/mounts/" + url.PathEscape(mount) + "/"
}

// newLeases returns a lease manager over the view leasePrefix of s.
func newLeases(t testing.TB, s storage.Store, opts *lease.Options) *lease.Manager {
	t.Helper()
	m, err := lease.New(storage.Sub(s, leasePrefix), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ldapLeases registers the mount "ldap/" of the engine whose view of s is
// storage.Sub(s, storePrefix("ldap")) with m, as package mount does, and
// returns its Issuer: the engine's Options.Leases.
func ldapLeases(t testing.TB, m *lease.Manager, s storage.Store) *lease.Issuer {
	t.Helper()
	iss, err := m.Register(lease.Mount{Path: "ldap/", Store: storage.Sub(s, storePrefix("ldap"))})
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

// listAll returns every name of one of the engine's paged lists (such as
// e.ListStaticRoles) under path, walking its pages with keel.All at the
// default limit; none gives an empty slice.
func listAll(ctx context.Context, list func(context.Context, string, keel.ListRequest) (keel.Page[string], error), path string) ([]string, error) {
	names := []string{}
	for n, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
		return list(ctx, path, r)
	}) {
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}

package ldapengine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
)

const (
	groupDN = "cn=devs,ou=groups,dc=example,dc=org"

	testCreationLDIF = `dn: uid={{.Username}},ou=users,dc=example,dc=org
objectClass: inetOrgPerson
uid: {{.Username}}
cn: {{.Username}}
sn: {{.Username}}
userPassword: {{.Password}}

dn: cn=devs,ou=groups,dc=example,dc=org
changetype: modify
add: member
member: uid={{.Username}},ou=users,dc=example,dc=org
-
`
	testDeletionLDIF = `dn: cn=devs,ou=groups,dc=example,dc=org
changetype: modify
delete: member
member: uid={{.Username}},ou=users,dc=example,dc=org
-

dn: uid={{.Username}},ou=users,dc=example,dc=org
changetype: delete
`
	testRollbackLDIF = `dn: uid={{.Username}},ou=users,dc=example,dc=org
changetype: delete
`
)

// dynEnv is an engine with a lease manager on one store, over a
// fake directory that holds the bind account and the group devs.
type dynEnv struct {
	e      *Engine
	dir    *fakeDirectory
	clock  *keel.FakeClock
	store  storage.Store
	leases *lease.Manager
}

// newDynEnv returns a configured engine of flavor with a lease manager
// registered for its mount "ldap/", over a new store from open
// (everystore.Mem for a test of one store). edit, when not nil, changes
// the Options before New.
func newDynEnv(t testing.TB, open everystore.Open, flavor Flavor, edit func(*Options)) *dynEnv {
	t.Helper()
	s := open(t)
	dir := newFakeDirectory()
	dir.Add(bindDN, "bind-pw", "cn", "keel")
	dir.Add(groupDN, "", "cn", "devs", "member", "cn=admin,dc=example,dc=org")
	clock := keel.NewFakeClock(t0)
	lm := newLeases(t, s, &lease.Options{Clock: clock, MaxAttempts: 2})
	opts := &Options{Directory: dir, Clock: clock, Leases: ldapLeases(t, lm, s)}
	if edit != nil {
		edit(opts)
	}
	e, err := New(storage.Sub(s, storePrefix("ldap")), flavor, "ldap", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	t.Cleanup(lm.Stop)
	if err := e.PutConfig(context.Background(), Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	return &dynEnv{e: e, dir: dir, clock: clock, store: s, leases: lm}
}

func strp(s string) *string { return &s }

// putTestRole stores the role name with the test LDIF.
func (v *dynEnv) putTestRole(t testing.TB, name string, edit func(*DynamicRoleRequest)) {
	t.Helper()
	r := DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF), RollbackLDIF: strp(testRollbackLDIF)}
	if edit != nil {
		edit(&r)
	}
	if err := v.e.PutDynamicRole(context.Background(), name, r); err != nil {
		t.Fatal(err)
	}
}

// userDN is the DN the test LDIF gives username.
func userDN(username string) string { return "uid=" + username + ",ou=users,dc=example,dc=org" }

// asCaller returns a context whose principal has the display name.
func asCaller(display string) context.Context {
	return keel.WithPrincipal(context.Background(), keel.Principal{ID: display, DisplayName: display})
}

// storeKeys returns every key of the store.
func storeKeys(t testing.TB, s storage.Store) []string {
	t.Helper()
	var keys []string
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		keys = keys[:0]
		return tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			keys = append(keys, k)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// recAuth records every right asked and refuses those in deny.
type recAuth struct {
	mu    sync.Mutex
	asked []string
	deny  map[string]bool
}

func (a *recAuth) Authorize(_ context.Context, _ keel.Principal, c keel.Capability, resource string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := string(c) + " " + resource
	a.asked = append(a.asked, k)
	if a.deny[k] {
		return keel.KindForbidden
	}
	return nil
}

func (a *recAuth) take() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := strings.Join(a.asked, "|")
	a.asked = nil
	return s
}

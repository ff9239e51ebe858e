package ldapengine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestHierarchicalNames: role and set names may hold "/" (Vault's
// hierarchical paths), each segment a plain name, and LIST shows one level
// with folders.
func TestHierarchicalNames(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		for _, name := range []string{"", "/a", "a/", "a//b", "a/-b", "a b/c", string(make([]byte, MaxNameLen+1))} {
			if validName(name) {
				t.Errorf("name %q accepted", name)
			}
		}
		v := newEnv(t, open, FlavorLDAP, nil)
		v.configure(t)
		for _, r := range []struct{ name, dn string }{{"top", aliceDN}, {"team/app", bobDN}} {
			if err := v.e.PutStaticRole(ctx, r.name, StaticRoleRequest{Username: "u", DN: r.dn, RotationPeriod: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		v.dir.Add("uid=carol,ou=users,dc=example,dc=org", "pw", "uid", "carol")
		if err := v.e.PutStaticRole(ctx, "team/deep/app", StaticRoleRequest{Username: "carol", DN: "uid=carol,ou=users,dc=example,dc=org", RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string][]string{"": {"team/", "top"}, "team": {"app", "deep/"}, "team/": {"app", "deep/"}, "team/deep": {"app"}, "nothing": {}} {
			got, err := v.e.ListStaticRoles(ctx, path)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("ListStaticRoles(%q) = %q, %v; want %q", path, got, err, want)
			}
		}
		if _, err := v.e.ListStaticRoles(ctx, "a//b"); keel.KindOf(err) != keel.KindInvalid {
			t.Errorf("list of a malformed path: %v", err)
		}
		if c, err := v.e.StaticCred(ctx, "team/deep/app"); err != nil || v.dir.Bind(ctx, Conn{}, "uid=carol,ou=users,dc=example,dc=org", c.Password) != nil {
			t.Fatalf("static-cred of a hierarchical role: %v", err)
		}
		if err := v.e.DeleteStaticRole(ctx, "team/app"); err != nil {
			t.Fatal(err)
		}
		if got, _ := v.e.ListStaticRoles(ctx, "team"); !slices.Equal(got, []string{"deep/"}) {
			t.Fatalf("after delete: %q", got)
		}
	})
}

// TestHierarchicalSetsKeepAccountsApart: set "a" with account "b/c" and
// set "a/b" with account "c" are different accounts.
func TestHierarchicalSetsKeepAccountsApart(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 0, libOptions{})
		v.dir.Add("uid=b/c,"+libUsersDN, "pw1", "uid", "b/c")
		v.dir.Add("uid=c,"+libUsersDN, "pw2", "uid", "c")
		v.putSet(t, "a", "b/c")
		v.putSet(t, "a/b", "c")
		co, err := v.e.CheckOut(libCaller("x", ""), "a/b", 0)
		if err != nil || co.ServiceAccountName != "c" {
			t.Fatalf("check-out of a/b: %+v, %v", co, err)
		}
		st, err := v.e.LibraryStatus(ctx, "a")
		if err != nil || !st["b/c"].Available {
			t.Fatalf("status of a after a check-out of a/b: %+v, %v", st, err)
		}
		if got, _ := v.e.ListLibrarySets(ctx, ""); !slices.Equal(got, []string{"a", "a/"}) {
			t.Fatalf("sets %q", got)
		}
	})
}

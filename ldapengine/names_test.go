package ldapengine

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// TestHierarchicalNames: role and set names may hold "/" (Vault's
// hierarchical paths), each segment a plain name, and LIST shows one level
// with folders.
func TestHierarchicalNames(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		for _, name := range []string{"", "/a", "a/", "a//b", "a/-b", "a b/c", string(make([]byte, maxNameLen+1))} {
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
			got, err := listAll(ctx, v.e.ListStaticRoles, path)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("ListStaticRoles(%q) = %q, %v; want %q", path, got, err, want)
			}
		}
		if _, err := listAll(ctx, v.e.ListStaticRoles, "a//b"); keel.KindOf(err) != keel.KindInvalid {
			t.Errorf("list of a malformed path: %v", err)
		}
		if c, err := v.e.GetStaticCred(ctx, "team/deep/app"); err != nil || v.dir.Bind(ctx, Conn{}, "uid=carol,ou=users,dc=example,dc=org", c.Password) != nil {
			t.Fatalf("static-cred of a hierarchical role: %v", err)
		}
		if err := v.e.DeleteStaticRole(ctx, "team/app"); err != nil {
			t.Fatal(err)
		}
		if got, _ := listAll(ctx, v.e.ListStaticRoles, "team"); !slices.Equal(got, []string{"deep/"}) {
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
		co, err := v.e.CheckOut(libCaller("x", ""), "a/b", CheckOutRequest{})
		if err != nil || co.ServiceAccountName != "c" {
			t.Fatalf("check-out of a/b: %+v, %v", co, err)
		}
		st, err := v.e.GetLibraryStatus(ctx, "a")
		if err != nil || !st["b/c"].Available {
			t.Fatalf("status of a after a check-out of a/b: %+v, %v", st, err)
		}
		if got, _ := listAll(ctx, v.e.ListLibrarySets, ""); !slices.Equal(got, []string{"a", "a/"}) {
			t.Fatalf("sets %q", got)
		}
	})
}

// storeDump returns every key of the store with its value.
func storeDump(t testing.TB, s storage.Store) map[string]string {
	t.Helper()
	var dump map[string]string
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		dump = map[string]string{}
		return tx.Scan("", storage.ScanOptions{}, func(k string, v []byte) error {
			dump[k] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return dump
}

// TestNamesThatShadowARoute (issue 29): a set name whose path also means
// another route ("manage/lib1", whose check-in path is the forced check-in
// of "lib1"; "a/status", whose path is the status of "a") is refused at
// write, naming Name, with the store unchanged, and answers not found
// after; a set name that shadows no route is kept, and so is every role
// name, as no route follows a role's name.
func TestNamesThatShadowARoute(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := libRoot()
		kept := []string{"manage", "status", "check-in", "check-out", "ops/manage/x", "a/status/b", "a/check-in/b", "lib1/manage"}
		roles := []string{"manage/lib1", "manage/check-in", "a/check-in", "a/status", "a/check-out"}
		v := newLibEnv(t, open, 1+len(kept)+len(roles), libOptions{})
		v.putSet(t, "lib1", libSvcName(0))
		co, err := v.e.CheckOut(libCaller("tok-a", ""), "lib1", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}

		for _, name := range []string{"manage/lib1", "manage/a/b", "manage/check-in", "manage/status", "a/check-in", "a/status",
			"a/check-out", "team/a/status", "lib1/check-in", "lib1/check-out", "lib1/status"} {
			before := storeDump(t, v.store)
			err := v.e.PutLibrarySet(ctx, name, LibrarySetRequest{ServiceAccountNames: []string{"alice"}})
			if fe := keel.FieldErrors(err); keel.KindOf(err) != keel.KindInvalid || len(fe) != 1 || fe[0].Field != "Name" {
				t.Errorf("set %q: %v, want a keel.KindInvalid on Name", name, err)
			}
			if after := storeDump(t, v.store); !maps.Equal(before, after) {
				t.Errorf("set %q: the refused write changed the store", name)
			}
			if _, err := v.e.GetLibrarySet(ctx, name); keel.KindOf(err) != keel.KindNotFound {
				t.Errorf("read of set %q: %v, want not found", name, err)
			}
		}
		err = v.e.PutLibrarySet(ctx, "manage/lib1", LibrarySetRequest{ServiceAccountNames: []string{"alice"}})
		if err == nil || !strings.Contains(err.Error(), `library/manage/lib1/check-in, the path library/:name/check-in of library set "manage/lib1", is library/manage/:name/check-in of library set "lib1"`) {
			t.Errorf("the error does not name both routes: %v", err)
		}

		// The borrower check-in of "manage/lib1" finds nothing; the forced
		// check-in of "lib1" takes back the account of "lib1".
		if _, err := v.e.CheckIn(libCaller("tok-a", ""), "manage/lib1", CheckInRequest{}); keel.KindOf(err) != keel.KindNotFound {
			t.Errorf("check-in of set manage/lib1: %v, want not found", err)
		}
		if done, err := v.e.CheckIn(ctx, "lib1", CheckInRequest{Manage: true}); err != nil || !slices.Equal(done, []string{co.ServiceAccountName}) {
			t.Fatalf("forced check-in of lib1: %q, %v", done, err)
		}

		// alice was claimed by no refused write: she joins a set.
		v.putSet(t, "alice-set", "alice")
		for i, name := range kept {
			v.putSet(t, name, libSvcName(1+i))
			if s, err := v.e.GetLibrarySet(ctx, name); err != nil || !slices.Equal(s.ServiceAccountNames, []string{libSvcName(1 + i)}) {
				t.Errorf("set %q: %+v, %v", name, s, err)
			}
		}
		for i, name := range roles {
			n := 1 + len(kept) + i
			if err := v.e.PutStaticRole(ctx, name, StaticRoleRequest{Username: libSvcName(n), DN: libSvcDN(n), RotationPeriod: time.Hour}); err != nil {
				t.Errorf("static role %q: %v", name, err)
			}
			if c, err := v.e.GetStaticCred(ctx, name); err != nil || c.Username != libSvcName(n) {
				t.Errorf("static-cred of %q: %+v, %v", name, c, err)
			}
			r := DynamicRoleRequest{CreationLDIF: strp(testCreationLDIF), DeletionLDIF: strp(testDeletionLDIF)}
			if err := v.e.PutDynamicRole(ctx, name, r); err != nil {
				t.Errorf("dynamic role %q: %v", name, err)
			}
			if _, err := v.e.GetDynamicRole(ctx, name); err != nil {
				t.Errorf("read of dynamic role %q: %v", name, err)
			}
		}
	})
}

// TestNameRuleIsTheRoutes checks the rule over every name of up to three
// segments among the words of the routes: it is the rule of the package
// documentation (a set's name may not start with "manage/" nor end in
// "/status", "/check-out" or "/check-in"; role names are free), no two
// objects whose names it accepts share a path, and each name it refuses
// shares a path with another object.
func TestNameRuleIsTheRoutes(t *testing.T) {
	words := []string{"a", "lib1", "manage", "status", "check-out", "check-in"}
	names := []string{}
	var grow func(prefix string, depth int)
	grow = func(prefix string, depth int) {
		for _, w := range words {
			names = append(names, prefix+w)
			if depth > 1 {
				grow(prefix+w+"/", depth-1)
			}
		}
	}
	grow("", 3)

	type object struct {
		kind nameKind
		name string
	}
	holders := map[string][]object{} // path -> the objects it is a path of, accepted or not
	accepted := map[object]bool{}
	for _, kind := range []nameKind{staticRoleName, dynamicRoleName, setName} {
		for _, name := range names {
			want := true
			if kind == setName {
				first, _, deeper := strings.Cut(name, "/")
				last := name[strings.LastIndex(name, "/")+1:]
				want = !deeper || first != "manage" && last != "status" && last != "check-out" && last != "check-in"
			}
			err := checkNewName(kind, name)
			if (err == nil) != want {
				t.Errorf("%s %q: %v, want accepted %v", kind, name, err, want)
			}
			if err == nil {
				accepted[object{kind, name}] = true
			} else if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Name" {
				t.Errorf("%s %q: %v, want a keel.KindInvalid on Name", kind, name, err)
			}
			for _, r := range namedRoutes {
				if r.kind == kind {
					path := r.prefix + name + r.suffix
					holders[path] = append(holders[path], object{kind, name})
				}
			}
		}
	}
	shared := map[object]bool{}
	for path, objects := range holders {
		var kept []object
		for _, o := range objects {
			shared[o] = shared[o] || len(objects) > 1
			if accepted[o] {
				kept = append(kept, o)
			}
		}
		if len(kept) > 1 {
			t.Errorf("%s is a path of %v", path, kept)
		}
	}
	for o, ok := range shared {
		if !ok && !accepted[o] {
			t.Errorf("%s %q is refused but shares no path", o.kind, o.name)
		}
	}
}

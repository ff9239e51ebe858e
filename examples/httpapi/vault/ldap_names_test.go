package vault_test

import (
	"fmt"
	"testing"
)

// TestLDAPHierarchicalNames: role and set names with "/" (Vault's
// hierarchical paths), LIST of a sub-path, and library actions under such
// a name.
func TestLDAPHierarchicalNames(t *testing.T) {
	_, c := newLibraryEnv(t)
	for _, p := range []string{"ldap/static-role/team/one", "ldap/static-role/team/deep/two"} {
		user := map[string]string{"ldap/static-role/team/one": "svc1", "ldap/static-role/team/deep/two": "svc2"}[p]
		if _, err := c.Write(p, map[string]any{"username": user, "rotation_period": "1h"}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for path, want := range map[string]string{"ldap/static-role": "[team/]", "ldap/static-role/team": "[deep/ one]", "ldap/static-role/team/deep/": "[two]"} {
		l, err := c.List(path)
		if err != nil || l == nil || fmt.Sprint(l.Data["keys"]) != want {
			t.Fatalf("LIST %s = %v, %v; want keys %s", path, l, err, want)
		}
	}
	if s, err := c.Read("ldap/static-cred/team/deep/two"); err != nil || s == nil || s.Data["username"] != "svc2" {
		t.Fatalf("static-cred of a hierarchical role: %v, %v", s, err)
	}
	for _, p := range []string{"ldap/static-role/team/one", "ldap/static-role/team/deep/two"} {
		if _, err := c.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Write("ldap/library/ops/blue", map[string]any{"service_account_names": "svc1"}); err != nil {
		t.Fatal(err)
	}
	if l, err := c.List("ldap/library/ops"); err != nil || l == nil || fmt.Sprint(l.Data["keys"]) != "[blue]" {
		t.Fatalf("LIST ldap/library/ops = %v, %v", l, err)
	}
	co, err := c.Write("ldap/library/ops/blue/check-out", nil)
	if err != nil || co.Data["service_account_name"] != "svc1" {
		t.Fatalf("check-out under a hierarchical name: %v, %v", co, err)
	}
	st, err := c.Read("ldap/library/ops/blue/status")
	if err != nil || fmt.Sprint(st.Data["svc1"]) == "" || st.Data["svc1"].(map[string]any)["available"] != false {
		t.Fatalf("status: %v, %v", st, err)
	}
	in, err := c.Write("ldap/library/manage/ops/blue/check-in", map[string]any{"service_account_names": "svc1"})
	if err != nil || fmt.Sprint(in.Data["check_ins"]) != "[svc1]" {
		t.Fatalf("manage check-in under a hierarchical name: %v, %v", in, err)
	}
}

// TestLDAPNamesThatShadowARoute (issue 29): a set named "manage/lib1",
// whose check-in path would be the forced check-in of the set "lib1", is
// refused with 400 naming name, and nothing is stored; the forced
// check-in path of "lib1" then reaches "lib1" only.
func TestLDAPNamesThatShadowARoute(t *testing.T) {
	e, c := newLibraryEnv(t)
	if _, err := c.Write("ldap/library/lib1", map[string]any{"service_account_names": "svc1"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"manage/lib1", "manage/team/app"} {
		_, err := c.Write("ldap/library/"+name, map[string]any{"service_account_names": "svc2"})
		wantField(t, err, "name", "must not give a path that means another route: library/"+name+"/check-in")
		if s, err := c.Read("ldap/library/" + name); err != nil || s != nil {
			t.Fatalf("read of the refused set %s: %v, %v; want nothing (404)", name, s, err)
		}
	}
	if l, err := c.List("ldap/library"); err != nil || l == nil || fmt.Sprint(l.Data["keys"]) != "[lib1]" {
		t.Fatalf("LIST ldap/library = %v, %v", l, err)
	}
	// svc2 was claimed by no refused write: it joins another set, which
	// another borrower checks out.
	if _, err := c.Write("ldap/library/team", map[string]any{"service_account_names": "svc2"}); err != nil {
		t.Fatal(err)
	}
	if co, err := c.Write("ldap/library/lib1/check-out", nil); err != nil || co.Data["service_account_name"] != "svc1" {
		t.Fatalf("check-out of lib1: %v, %v", co, err)
	}
	if co, err := e.client(t, root2Token).Logical().Write("ldap/library/team/check-out", nil); err != nil || co.Data["service_account_name"] != "svc2" {
		t.Fatalf("check-out of team: %v, %v", co, err)
	}

	in, err := c.Write("ldap/library/manage/lib1/check-in", nil)
	if err != nil || fmt.Sprint(in.Data["check_ins"]) != "[svc1]" {
		t.Fatalf("manage check-in of lib1: %v, %v", in, err)
	}
	for set, want := range map[string]string{"lib1": "map[svc1:map[available:true]]",
		"team": "map[svc2:map[available:false borrower_client_token:ct-root2 borrower_entity_id:entity-root2]]"} {
		if st, err := c.Read("ldap/library/" + set + "/status"); err != nil || fmt.Sprint(st.Data) != want {
			t.Errorf("status of %s after the manage check-in of lib1: %v, %v; want %s", set, st, err, want)
		}
	}
}

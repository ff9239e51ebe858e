package vault_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/vault/api"
)

// newLibraryEnv is an ldap env whose directory holds the service accounts
// svc1 and svc2, and whose ldap/ mount is configured to find them by uid
// under ou=users.
func newLibraryEnv(t *testing.T) (*env, *api.Logical) {
	t.Helper()
	e := newLDAPEnv(t)
	for _, n := range []string{"svc1", "svc2"} {
		e.dir.Add("uid="+n+",ou=users,dc=example,dc=org", n+"-initial", "uid", n)
	}
	c := e.client(t, rootToken).Logical()
	if _, err := c.Write("ldap/config", map[string]any{"binddn": adminDN, "bindpass": "admin-pw",
		"userdn": "ou=users,dc=example,dc=org", "userattr": "uid"}); err != nil {
		t.Fatal(err)
	}
	return e, c
}

func TestLDAPLibrarySets(t *testing.T) {
	e, c := newLibraryEnv(t)
	if _, err := c.Write("ldap/library/team", map[string]any{"service_account_names": "svc1, svc2", "ttl": "1h", "max_ttl": 7200}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Read("ldap/library/team")
	if err != nil || s == nil {
		t.Fatalf("read: %v, %v", s, err)
	}
	if fmt.Sprint(s.Data["service_account_names"]) != "[svc1 svc2]" || fmt.Sprint(s.Data["ttl"]) != "3600" ||
		fmt.Sprint(s.Data["max_ttl"]) != "7200" || s.Data["disable_check_in_enforcement"] != false {
		t.Fatalf("read = %v", s.Data)
	}
	if pw, _ := e.dir.Password("uid=svc1,ou=users,dc=example,dc=org"); pw == "svc1-initial" {
		t.Fatal("an account that joined a set kept its password")
	}
	l, err := c.List("ldap/library")
	if err != nil || l == nil || fmt.Sprint(l.Data["keys"]) != "[team]" {
		t.Fatalf("list: %v, %v", l, err)
	}

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			body map[string]any
			want string // the wire name of a broken rule, or part of the message
		}{
			{"ldap/library/bad", map[string]any{"service_account_names": "svc2, nobody"}, "service_account_names: \"nobody\" does not exist"},
			{"ldap/library/bad", map[string]any{"service_account_names": []string{"svc1", "svc1"}}, "service_account_names: \"svc1\" is given twice"},
			{"ldap/library/bad", map[string]any{"ttl": "1h"}, "service_account_names: is required"},
			{"ldap/library/bad", map[string]any{"service_account_names": "svc1", "ttl": "2h", "max_ttl": "1h"}, "max_ttl: (1h0m0s) must not be below the TTL"},
			{"ldap/library/bad", map[string]any{"service_account_names": "svc1", "ttl": "soon"}, "ttl: must be a duration"}, // the adapter's
			{"ldap/library/bad", map[string]any{"service_account_names": "svc1"}, "already"},
			{"openldap/library/bad", map[string]any{"service_account_names": "svc1"}, "openldap"},
		} {
			_, err := c.Write(tc.path, tc.body)
			if code := statusOf(err); code != http.StatusBadRequest { // an account in another set too, as Vault
				t.Errorf("write %s %v: status %d (%v)", tc.path, tc.body, code, err)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("write %s %v: error %v does not name %q", tc.path, tc.body, err, tc.want)
			}
		}
	})

	out, err := c.Write("ldap/library/team/check-out", map[string]any{"ttl": "30m"})
	if err != nil {
		t.Fatal(err)
	}
	first := out.Data["service_account_name"].(string)
	if first != "svc1" || !out.Renewable || out.LeaseDuration != 1800 || !strings.HasPrefix(out.LeaseID, "ldap/library/team/check-out/") {
		t.Fatalf("check-out: %+v", out)
	}
	svc1DN := "uid=svc1,ou=users,dc=example,dc=org"
	if pw, _ := e.dir.Password(svc1DN); pw != out.Data["password"] {
		t.Fatalf("check-out password %v, directory %q", out.Data["password"], pw)
	}
	if _, err := e.client(t, root2Token).Logical().Write("ldap/library/team/check-out", nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.Write("ldap/library/team/check-out", nil)
	if statusOf(err) != http.StatusBadRequest {
		t.Fatalf("check-out with none free: %v, want 400", err)
	}

	st, err := c.Read("ldap/library/team/status")
	if err != nil {
		t.Fatal(err)
	}
	svc1 := st.Data["svc1"].(map[string]any)
	svc2 := st.Data["svc2"].(map[string]any)
	if svc1["available"] != false || svc1["borrower_client_token"] != "ct-root" ||
		svc2["borrower_entity_id"] != "entity-root2" {
		t.Fatalf("status = %v", st.Data)
	}

	_, err = c.Write("ldap/library/manage/team/check-in", map[string]any{"service_account_names": "svc1,nobody"})
	wantField(t, err, "service_account_names", `"nobody" is not an account of library set "team"`)

	// Only the borrower checks in, unless through the manage path.
	_, err = e.client(t, root2Token).Logical().Write("ldap/library/team/check-in", map[string]any{"service_account_names": "svc1"})
	if statusOf(err) != http.StatusForbidden {
		t.Fatalf("check-in by another caller: %v, want 403", err)
	}
	in, err := c.Write("ldap/library/team/check-in", nil) // the one account root holds
	if err != nil || fmt.Sprint(in.Data["check_ins"]) != "[svc1]" {
		t.Fatalf("check-in: %v, %v", in, err)
	}
	if pw, _ := e.dir.Password(svc1DN); pw == out.Data["password"] {
		t.Fatal("the returned password still works after check-in")
	}
	in, err = c.Write("ldap/library/manage/team/check-in", map[string]any{"service_account_names": []string{"svc1", "svc2"}})
	if err != nil || fmt.Sprint(in.Data["check_ins"]) != "[svc2]" {
		t.Fatalf("manage check-in: %v, %v (svc1 was in already)", in, err)
	}
	if _, err := e.client(t, rootToken).Sys().Lookup(out.LeaseID); err == nil {
		t.Fatal("the check-out lease outlives the check-in")
	}

	if _, err := c.Delete("ldap/library/team"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Read("ldap/library/team"); err != nil || s != nil {
		t.Fatalf("read after delete: %v, %v", s, err)
	}
	if l, err := c.List("ldap/library"); err != nil || l != nil {
		t.Fatalf("list after delete: %v, %v", l, err)
	}
}

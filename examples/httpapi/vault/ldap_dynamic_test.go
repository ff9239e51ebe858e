package vault_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/vault/api"
)

const (
	creationLDIF = `dn: cn={{.Username}},ou=users,dc=example,dc=org
objectClass: person
objectClass: top
cn: {{.Username}}
sn: {{.Username}}
userPassword: {{.Password}}
`
	deletionLDIF = `dn: cn={{.Username}},ou=users,dc=example,dc=org
changetype: delete
`
)

func TestLDAPDynamicRolesAndCreds(t *testing.T) {
	e := newLDAPEnv(t)
	root := e.client(t, rootToken)
	c := root.Logical()
	configure(t, root, "ldap")
	if _, err := c.Write("ldap/role/dev", map[string]any{
		"creation_ldif": base64.StdEncoding.EncodeToString([]byte(creationLDIF)), // may come base64 encoded
		"deletion_ldif": deletionLDIF,
		"rollback_ldif": deletionLDIF,
		"default_ttl":   "1h",
		"max_ttl":       7200,
	}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Read("ldap/role/dev")
	if err != nil || s == nil {
		t.Fatalf("read: %v, %v", s, err)
	}
	if s.Data["creation_ldif"] != creationLDIF || s.Data["deletion_ldif"] != deletionLDIF ||
		fmt.Sprint(s.Data["default_ttl"]) != "3600" || fmt.Sprint(s.Data["max_ttl"]) != "7200" {
		t.Fatalf("read = %v", s.Data)
	}

	t.Run("partial update", func(t *testing.T) {
		if _, err := c.Write("ldap/role/dev", map[string]any{"rollback_ldif": "", "username_template": "app_{{.RoleName}}_{{random 8}}"}); err != nil {
			t.Fatal(err)
		}
		s, _ := c.Read("ldap/role/dev")
		if s.Data["rollback_ldif"] != "" || s.Data["creation_ldif"] != creationLDIF || s.Data["username_template"] != "app_{{.RoleName}}_{{random 8}}" ||
			fmt.Sprint(s.Data["default_ttl"]) != "3600" {
			t.Fatalf("after partial update: %v", s.Data)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			body       map[string]any
			field, has string // the wire name of the problem, part of its rule
		}{
			{map[string]any{"creation_ldif": "dn: cn=x\nchangetype: frobnicate\n"}, "creation_ldif", "LDIF entry 1"},
			{map[string]any{"deletion_ldif": "dn: cn={{.Nope}}\nchangetype: delete\n"}, "deletion_ldif", ""},
			{map[string]any{"rollback_ldif": "not ldif"}, "rollback_ldif", ""},
			{map[string]any{"username_template": "{{.Nope}}"}, "username_template", ""},
			{map[string]any{"max_ttl": "forever"}, "max_ttl", "must be a duration"}, // the adapter's
			{map[string]any{"default_ttl": "3h"}, "default_ttl", "must not exceed the maximum TTL"},
		} {
			_, err := c.Write("ldap/role/dev", tc.body)
			wantField(t, err, tc.field, tc.has)
		}
		_, err := c.Write("ldap/role/new", map[string]any{"creation_ldif": creationLDIF})
		wantField(t, err, "deletion_ldif", "is required")
	})
	if l, err := c.List("ldap/role"); err != nil || l == nil || fmt.Sprint(l.Data["keys"]) != "[dev]" {
		t.Fatalf("list: %v, %v", l, err)
	}

	cred, err := c.Read("ldap/creds/dev")
	if err != nil {
		t.Fatal(err)
	}
	user, _ := cred.Data["username"].(string)
	dn := "cn=" + user + ",ou=users,dc=example,dc=org"
	if !strings.HasPrefix(user, "app_dev_") || fmt.Sprint(cred.Data["distinguished_names"]) != "["+dn+"]" ||
		!cred.Renewable || cred.LeaseDuration != 3600 || !strings.HasPrefix(cred.LeaseID, "ldap/creds/dev/") {
		t.Fatalf("creds: %+v %v", cred, cred.Data)
	}
	if pw, ok := e.dir.Password(dn); !ok || pw != cred.Data["password"] {
		t.Fatalf("directory entry %s: %q, %v; creds password %v", dn, pw, ok, cred.Data["password"])
	}
	if err := root.Sys().RevokeWithOptions(&api.RevokeOptions{LeaseID: cred.LeaseID, Sync: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.dir.Password(dn); ok {
		t.Fatal("revoking the lease left the entry")
	}

	if _, err := c.Write("openldap/role/dev", map[string]any{"creation_ldif": creationLDIF, "deletion_ldif": deletionLDIF}); err != nil {
		t.Fatalf("openldap role: %v", err)
	}
	if _, err := c.Read("openldap/creds/dev"); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("openldap creds: %v, want 400", err)
	}
	if _, err := c.Delete("ldap/role/dev"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Read("ldap/role/dev"); err != nil || s != nil {
		t.Fatalf("read after delete: %v, %v", s, err)
	}
}

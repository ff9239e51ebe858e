package ldapengine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

const slapdGroupDN = "cn=devs,ou=groups," + slapdtest.Suffix

// slapdCreationLDIF adds a user under ou=users and makes it a member of
// the group devs.
const slapdCreationLDIF = `dn: uid={{.Username}},` + slapdtest.UsersDN + `
objectClass: inetOrgPerson
uid: {{.Username}}
cn: {{.Username}}
sn: {{.RoleName}}
description: issued {{.IssueTime}} until {{.ExpirationTime}}
userPassword: {{.Password}}

dn: ` + slapdGroupDN + `
changetype: modify
add: member
member: uid={{.Username}},` + slapdtest.UsersDN + `
-
`

const slapdDeletionLDIF = `dn: ` + slapdGroupDN + `
changetype: modify
delete: member
member: uid={{.Username}},` + slapdtest.UsersDN + `
-

dn: uid={{.Username}},` + slapdtest.UsersDN + `
changetype: delete
`

const slapdRollbackLDIF = `dn: uid={{.Username}},` + slapdtest.UsersDN + `
changetype: delete
`

type slapdDyn struct {
	srv    *slapdtest.Server
	e      *Engine
	leases *lease.Manager
	admin  *ldap.Conn
}

// startDynSlapd starts slapd (or skips tb), adds ou=groups and the group
// devs (whose first member is the admin), and returns a configured ldap
// engine with a lease manager and the role "app".
func startDynSlapd(tb testing.TB) *slapdDyn {
	tb.Helper()
	srv := slapdtest.Start(tb)
	admin, err := ldap.DialURL(srv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { admin.Close() })
	if err := admin.Bind(slapdtest.AdminDN, slapdtest.AdminPW); err != nil {
		tb.Fatal(err)
	}
	ou := ldap.NewAddRequest("ou=groups,"+slapdtest.Suffix, nil)
	ou.Attribute("objectClass", []string{"organizationalUnit"})
	ou.Attribute("ou", []string{"groups"})
	g := ldap.NewAddRequest(slapdGroupDN, nil)
	g.Attribute("objectClass", []string{"groupOfNames"})
	g.Attribute("cn", []string{"devs"})
	g.Attribute("member", []string{slapdtest.AdminDN})
	for _, r := range []*ldap.AddRequest{ou, g} {
		if err := admin.Add(r); err != nil {
			tb.Fatal(err)
		}
	}
	s := memstore.New(nil)
	lm := newLeases(tb, s, &lease.Options{MaxAttempts: 2})
	e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorLDAP, "ldap", &Options{Leases: ldapLeases(tb, lm, s)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(lm.Stop)
	ctx := context.Background()
	if err := e.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: srv.URL,
		UserDN: slapdtest.UsersDN, UserAttr: "uid", ConnectionTimeout: 2 * time.Second, RequestTimeout: 5 * time.Second}); err != nil {
		tb.Fatal(err)
	}
	if err := e.PutDynamicRole(ctx, "app", DynamicRoleRequest{CreationLDIF: strp(slapdCreationLDIF),
		DeletionLDIF: strp(slapdDeletionLDIF), RollbackLDIF: strp(slapdRollbackLDIF), DefaultTTL: ptrDur(time.Hour)}); err != nil {
		tb.Fatal(err)
	}
	return &slapdDyn{srv: srv, e: e, leases: lm, admin: admin}
}

// entry returns the attribute values of dn, or nil when it is missing.
func (s *slapdDyn) entry(tb testing.TB, dn string, attrs ...string) *ldap.Entry {
	tb.Helper()
	res, err := s.admin.Search(ldap.NewSearchRequest(dn, ldap.ScopeBaseObject, ldap.NeverDerefAliases, 0, 0, false,
		"(objectClass=*)", attrs, nil))
	if ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	return res.Entries[0]
}

// TestSlapdDynamicCreds runs dynamic credentials against a real OpenLDAP
// slapd; it skips when slapd is not installed.
func TestSlapdDynamicCreds(t *testing.T) {
	s := startDynSlapd(t)
	ctx := context.Background()
	conn := Conn{URLs: []string{s.srv.URL}}
	c, err := s.e.CreateDynamicCred(asCaller("alice"), "app")
	if err != nil {
		t.Fatal(err)
	}
	dn := "uid=" + c.Username + "," + slapdtest.UsersDN
	t.Run("the account exists, binds, and is a group member", func(t *testing.T) {
		if !slices.Equal(c.DistinguishedNames, []string{dn, slapdGroupDN}) {
			t.Fatalf("distinguished names %v", c.DistinguishedNames)
		}
		if err := (LDAP{}).Bind(ctx, conn, dn, c.Password); err != nil {
			t.Fatalf("the new account does not bind: %v", err)
		}
		wantKind(t, LDAP{}.Bind(ctx, conn, dn, c.Password+"x"), keel.KindUnauthenticated)
		g := s.entry(t, slapdGroupDN, "member")
		if g == nil || !slices.ContainsFunc(g.GetAttributeValues("member"), func(m string) bool { return strings.EqualFold(m, dn) }) {
			t.Fatalf("not a member of %s", slapdGroupDN)
		}
		if e := s.entry(t, dn, "sn", "description"); e.GetAttributeValue("sn") != "app" || !strings.HasPrefix(e.GetAttributeValue("description"), "issued ") {
			t.Fatalf("entry attributes %v", e.Attributes)
		}
	})
	t.Run("revoking the lease deletes the account and the membership", func(t *testing.T) {
		if err := s.leases.Revoke(ctx, c.Lease.ID, true); err != nil {
			t.Fatal(err)
		}
		if s.entry(t, dn) != nil {
			t.Fatal("the account survives revocation")
		}
		g := s.entry(t, slapdGroupDN, "member")
		if slices.ContainsFunc(g.GetAttributeValues("member"), func(m string) bool { return strings.EqualFold(m, dn) }) {
			t.Fatal("the membership survives revocation")
		}
		// Idempotent against the real server too.
		if err := (revoker{s.e}).Revoke(ctx, c.Lease); err != nil {
			t.Fatalf("second revocation: %v", err)
		}
	})
	t.Run("a failing creation rolls back", func(t *testing.T) {
		bad := strings.ReplaceAll(slapdCreationLDIF, "cn=devs,", "cn=nosuchgroup,")
		if err := s.e.PutDynamicRole(ctx, "broken", DynamicRoleRequest{CreationLDIF: &bad, DeletionLDIF: strp(slapdDeletionLDIF),
			RollbackLDIF: strp(slapdRollbackLDIF), UsernameTemplate: strp("broken_user")}); err != nil {
			t.Fatal(err)
		}
		_, err := s.e.CreateDynamicCred(asCaller("alice"), "broken")
		wantKind(t, err, keel.KindNotFound)
		if !strings.Contains(err.Error(), "entry 2") {
			t.Fatalf("error %v does not name entry 2", err)
		}
		if s.entry(t, "uid=broken_user,"+slapdtest.UsersDN) != nil {
			t.Fatal("the account of a failed creation was not rolled back")
		}
		if ids, _ := s.leases.List(ctx, "ldap/creds/broken/", keel.ListRequest{}); len(ids.Items) != 0 {
			t.Fatalf("a lease was issued: %v", ids)
		}
	})
	t.Run("a deletion the directory refuses keeps the lease visible", func(t *testing.T) {
		// The deletion LDIF deletes ou=groups, which is not a leaf:
		// slapd refuses it (notAllowedOnNonLeaf).
		nonLeaf := "dn: ou=groups," + slapdtest.Suffix + "\nchangetype: delete\n"
		if err := s.e.PutDynamicRole(ctx, "stuck", DynamicRoleRequest{CreationLDIF: strp(slapdCreationLDIF), DeletionLDIF: &nonLeaf}); err != nil {
			t.Fatal(err)
		}
		c, err := s.e.CreateDynamicCred(asCaller("bob"), "stuck")
		if err != nil {
			t.Fatal(err)
		}
		err = s.leases.Revoke(ctx, c.Lease.ID, true)
		if keel.KindOf(err) != keel.KindConflict || !strings.Contains(err.Error(), "Not Allowed On Non Leaf") {
			t.Fatalf("sync revocation refused by the directory: %v (kind %v), want a conflict naming its answer", err, keel.KindOf(err))
		}
		if l, err := s.leases.Get(ctx, c.Lease.ID); err != nil || l.Attempts != 1 {
			t.Fatalf("the lease after a refused revocation: %+v, %v", l, err)
		}
	})
	t.Run("an existing account makes creation fail with already exists", func(t *testing.T) {
		if err := s.e.PutDynamicRole(ctx, "fixed", DynamicRoleRequest{CreationLDIF: strp(slapdCreationLDIF), DeletionLDIF: strp(slapdDeletionLDIF),
			UsernameTemplate: strp("alice")}); err != nil {
			t.Fatal(err)
		}
		_, err := s.e.CreateDynamicCred(asCaller("x"), "fixed")
		wantKind(t, err, keel.KindAlreadyExists)
		if s.entry(t, slapdtest.AliceDN) == nil {
			t.Fatal("alice is gone")
		}
	})
}

package ldapengine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestSlapdRevocationThatLeavesTheAccountFails proves against a real
// OpenLDAP slapd that a revocation which did not remove the credential is
// not a revocation. The role's deletion LDIF drops the group membership
// but deletes uid=other_USERNAME instead of the account the creation
// added (a template typo): the synchronous revoke fails with
// keel.KindInvalid on DeletionLDIF naming the account's DN, the lease stays
// with its attempt and error recorded, and the account still binds with
// the issued password; the worker's retry fails the same way. Once the
// role is fixed, the worker's next retry (driven by a fake clock) deletes
// the account and ends the lease, and a lease issued before the fix is
// revoked synchronously too. It skips when slapd is not installed.
func TestSlapdRevocationThatLeavesTheAccountFails(t *testing.T) {
	t.Parallel()
	s := startDynSlapd(t) // slapd with ou=groups and cn=devs; its engine is not used
	ctx := context.Background()

	// An engine and lease manager of their own on that slapd, on a fake
	// clock, so that the worker's retries are driven by Step.
	clock := keel.NewFakeClock(t0)
	st := memstore.New(nil)
	lm := newLeases(t, st, &lease.Options{Clock: clock, MaxAttempts: 6})
	t.Cleanup(lm.Stop)
	e, err := New(storage.Sub(st, storePrefix("ldap")), FlavorLDAP, "ldap", &Options{Clock: clock, Leases: ldapLeases(t, lm, st)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := e.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: s.srv.URL,
		UserDN: slapdtest.UsersDN, UserAttr: "uid", ConnectionTimeout: 2 * time.Second, RequestTimeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	s.e, s.leases = e, lm // s.entry searches slapd as its admin

	const accountDN = "dn: uid={{.Username}}," + slapdtest.UsersDN
	if !strings.Contains(slapdDeletionLDIF, accountDN) {
		t.Fatalf("the deletion LDIF does not delete %q", accountDN)
	}
	typo := strings.Replace(slapdDeletionLDIF, accountDN, "dn: uid=other_{{.Username}},"+slapdtest.UsersDN, 1)
	if err := e.PutDynamicRole(ctx, "typo", DynamicRoleRequest{CreationLDIF: strp(slapdCreationLDIF), DeletionLDIF: &typo,
		RollbackLDIF: strp(slapdRollbackLDIF), DefaultTTL: ptrDur(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	conn := Conn{URLs: []string{s.srv.URL}}
	member := func(dn string) bool {
		t.Helper()
		g := s.entry(t, slapdGroupDN, "member")
		return g != nil && slices.ContainsFunc(g.GetAttributeValues("member"), func(m string) bool { return strings.EqualFold(m, dn) })
	}
	issue := func(caller string) (DynamicCred, string) {
		t.Helper()
		c, err := e.CreateDynamicCred(asCaller(caller), "typo")
		if err != nil {
			t.Fatal(err)
		}
		dn := "uid=" + c.Username + "," + slapdtest.UsersDN
		if len(c.DistinguishedNames) == 0 || c.DistinguishedNames[0] != dn {
			t.Fatalf("distinguished names %v, want %s first", c.DistinguishedNames, dn)
		}
		if s.entry(t, dn) == nil || !member(dn) {
			t.Fatalf("the account %s was not created with its membership", dn)
		}
		if err := (LDAP{}).Bind(ctx, conn, dn, c.Password); err != nil {
			t.Fatalf("the new account does not bind: %v", err)
		}
		return c, dn
	}
	// stillLive checks that the account survived a failed revocation:
	// slapd finds it, it binds with the issued password, and its lease is
	// kept with the failure recorded (its last error names the account)
	// and a retry scheduled.
	stillLive := func(c DynamicCred, dn string, attempts int) lease.Lease {
		t.Helper()
		if s.entry(t, dn) == nil {
			t.Fatalf("the account %s is gone from slapd, yet the revocation failed", dn)
		}
		if err := (LDAP{}).Bind(ctx, conn, dn, c.Password); err != nil {
			t.Fatalf("the account %s no longer binds, yet the revocation failed: %v", dn, err)
		}
		l, err := lm.Get(ctx, c.Lease.ID)
		if err != nil {
			t.Fatalf("the lease is gone after a failed revocation: %v", err)
		}
		if l.Attempts != attempts || l.Irrevocable || !strings.Contains(l.LastError, "DeletionLDIF: left the entry \""+dn+"\"") || !l.NextAttempt.After(clock.Now()) {
			t.Fatalf("the lease after %d failed revocations: attempts %d, irrevocable %v, last error %q, next attempt %v (now %v)",
				attempts, l.Attempts, l.Irrevocable, l.LastError, l.NextAttempt, clock.Now())
		}
		return l
	}

	alice, aliceDN := issue("alice")
	bob, bobDN := issue("bob")

	// The synchronous revocation runs the deletion LDIF (the membership
	// goes) but the account stays: it fails, naming the account.
	err = lm.Revoke(ctx, alice.Lease.ID, true)
	if !errors.Is(err, keel.KindInvalid) {
		t.Fatalf("revoke with a deletion LDIF that misses the account: %v (kind %v), want invalid", err, keel.KindOf(err))
	}
	if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "DeletionLDIF" || !strings.Contains(fe[0].Rule, aliceDN) {
		t.Fatalf("revoke error %v: field errors %v, want one on DeletionLDIF naming %s", err, fe, aliceDN)
	}
	if member(aliceDN) {
		t.Fatal("the deletion LDIF did not run: the membership survived")
	}
	l := stillLive(alice, aliceDN, 1)

	// The worker retries when the retry is due, and fails the same way
	// while the role is wrong.
	clock.Set(l.NextAttempt)
	if _, err := lm.Step(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	l = stillLive(alice, aliceDN, 2)

	// The operator fixes the role; the leases keep the LDIF rendered at
	// creation, so the role's current deletion LDIF is what removes the
	// accounts.
	if err := e.PutDynamicRole(ctx, "typo", DynamicRoleRequest{DeletionLDIF: strp(slapdDeletionLDIF)}); err != nil {
		t.Fatal(err)
	}
	clock.Set(l.NextAttempt)
	if _, err := lm.Step(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := lm.Get(ctx, alice.Lease.ID); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("alice's lease after the retry that followed the fix: %v, want not found", err)
	}
	if s.entry(t, aliceDN) != nil {
		t.Fatal("alice's account survived the retry after the fix")
	}
	wantKind(t, LDAP{}.Bind(ctx, conn, aliceDN, alice.Password), keel.KindUnauthenticated)

	// A lease issued before the fix, revoked synchronously after it.
	if !member(bobDN) {
		t.Fatal("bob's membership went with alice's revocation")
	}
	if err := lm.Revoke(ctx, bob.Lease.ID, true); err != nil {
		t.Fatalf("revoke of bob's lease after the fix: %v", err)
	}
	if _, err := lm.Get(ctx, bob.Lease.ID); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("bob's lease after the revocation: %v, want not found", err)
	}
	if s.entry(t, bobDN) != nil || member(bobDN) {
		t.Fatal("bob's account or membership survived the revocation after the fix")
	}
	wantKind(t, LDAP{}.Bind(ctx, conn, bobDN, bob.Password), keel.KindUnauthenticated)
	if ids, err := lm.List(ctx, "ldap/creds/typo/", keel.ListRequest{}); err != nil || len(ids.Items) != 0 {
		t.Fatalf("leases left: %v, %v", ids, err)
	}
}

package ldapengine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// A deletion LDIF that names another entry than the one the creation
// added does not revoke: the sync revoke fails Invalid on DeletionLDIF
// naming the entry, the lease stays with its error, the account stays in
// the directory; once the role is fixed, the next revocation removes it.
func TestRevocationThatLeavesTheAccountFails(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newDynEnv(t, open, FlavorLDAP, nil)
		wrong := strings.Replace(testDeletionLDIF, "dn: uid={{.Username}},ou=users", "dn: uid={{.Username}}-typo,ou=users", 1)
		v.putTestRole(t, "app", func(r *DynamicRoleRequest) { r.DeletionLDIF = &wrong })
		c, err := v.e.CreateDynamicCred(asCaller("alice"), "app")
		if err != nil {
			t.Fatal(err)
		}
		err = v.leases.Revoke(ctx, c.Lease.ID, true)
		if fe := keel.FieldErrors(err); keel.KindOf(err) != keel.KindInvalid || len(fe) != 1 || fe[0].Field != "DeletionLDIF" || !strings.Contains(fe[0].Rule, userDN(c.Username)) {
			t.Fatalf("revoke with a deletion LDIF that misses the account: %v", err)
		}
		l, err := v.leases.Get(ctx, c.Lease.ID)
		if err != nil || l.Attempts != 1 || !strings.Contains(l.LastError, "left the entry") {
			t.Fatalf("the lease after the failed revocation: %+v, %v", l, err)
		}
		if !slices.Contains(v.dir.DNs(), userDN(c.Username)) {
			t.Fatal("the account is gone, yet the revocation failed")
		}

		v.putTestRole(t, "app", nil) // the operator fixes the role
		if err := v.leases.Revoke(ctx, c.Lease.ID, true); err != nil {
			t.Fatalf("revoke after the fix: %v", err)
		}
		if slices.Contains(v.dir.DNs(), userDN(c.Username)) {
			t.Fatal("the account survived the revocation after the fix")
		}
		if _, err := v.leases.Get(ctx, c.Lease.ID); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("the lease after the revocation: %v", err)
		}
		// Idempotent: the engine's revocation of an account already gone
		// succeeds again.
		c2, err := v.e.CreateDynamicCred(asCaller("bob"), "app")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := (revoker{v.e}).Revoke(ctx, c2.Lease); err != nil {
				t.Fatalf("revocation %d of bob's account: %v", i+1, err)
			}
		}
	})
}

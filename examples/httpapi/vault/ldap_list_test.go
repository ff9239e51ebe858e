package vault_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine"
)

// TestLDAPListAnswersEveryKey: Vault's LIST of roles answers every key in
// one response, in the engine's order, also when the engine's list has
// more names than one of its pages (1000).
func TestLDAPListAnswersEveryKey(t *testing.T) {
	e := newLDAPEnv(t)
	root := e.client(t, rootToken)
	configure(t, root, "ldap")
	m, _, ok := e.table.Route("ldap/role/x")
	if !ok || m.LDAP == nil {
		t.Fatal("no ldap engine at ldap/")
	}
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	creation, deletion := creationLDIF, deletionLDIF
	var want []string
	for i := range 1000 + 2 {
		name := fmt.Sprintf("role%05d", i)
		if err := m.LDAP.PutDynamicRole(ctx, name, ldapengine.DynamicRoleRequest{CreationLDIF: &creation, DeletionLDIF: &deletion}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	if err := m.LDAP.PutDynamicRole(ctx, "team/app", ldapengine.DynamicRoleRequest{CreationLDIF: &creation, DeletionLDIF: &deletion}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "team/")
	l, err := root.Logical().List("ldap/role")
	if err != nil || l == nil {
		t.Fatalf("list: %v, %v", l, err)
	}
	keys, _ := l.Data["keys"].([]any)
	got := make([]string, len(keys))
	for i, k := range keys {
		got[i], _ = k.(string)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("LIST ldap/role: %d keys (first %q), want %d", len(got), got[:min(3, len(got))], len(want))
	}
}

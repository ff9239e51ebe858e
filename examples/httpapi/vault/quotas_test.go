package vault_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/hashicorp/vault/api"
	"github.com/keelhq/keel/storage/memstore"
)

// TestLeaseCountQuotas: sys/quotas/lease-count round trip with Vault's
// client, Vault's fields, and the 429 of a leased read beyond the quota,
// in Vault's error body.
func TestLeaseCountQuotas(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := context.Background()
	c := e.client(t, rootToken)
	err := c.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"version": "1", "leased_passthrough": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.KVv1("leased").Put(ctx, "db", map[string]any{"password": "p", "ttl": "30m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KVv1("leased").Get(ctx, "db"); err != nil {
		t.Fatal(err)
	}

	// A quota set over an existing lease counts it.
	if _, err := c.Logical().Write("sys/quotas/lease-count/kv", map[string]any{"path": "leased/", "max_leases": 2}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Logical().Read("sys/quotas/lease-count/kv")
	if err != nil || s == nil {
		t.Fatalf("read: %v, %v", s, err)
	}
	want := map[string]any{"name": "kv", "path": "leased/", "type": "lease-count", "role": "", "inheritable": false,
		"max_leases": json.Number("2"), "counter": json.Number("1")}
	if len(s.Data) != len(want) {
		t.Fatalf("read: %v, want %v", s.Data, want)
	}
	for k, v := range want {
		if s.Data[k] != v {
			t.Fatalf("read: %s is %v, want %v", k, s.Data[k], v)
		}
	}
	list, err := c.Logical().List("sys/quotas/lease-count")
	if err != nil || list == nil || !slices.Equal(toStrings(list.Data["keys"].([]any)), []string{"kv"}) {
		t.Fatalf("list: %v, %v", list, err)
	}

	if _, err := c.KVv1("leased").Get(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	_, err = c.KVv1("leased").Get(ctx, "db")
	if statusOf(err) != http.StatusTooManyRequests {
		t.Fatalf("a read beyond the quota: %v, want 429", err)
	}
	status, _, body := do(t, e, http.MethodGet, "/v1/leased/db", "X-Vault-Token", rootToken)
	if wantBody := `{"errors":["1 error occurred:\n\t* request path \"leased/db\": lease count quota exceeded (quota \"kv\", max_leases 2, path \"leased/\")\n\n"]}`; status != http.StatusTooManyRequests || body != wantBody+"\n" && body != wantBody {
		t.Fatalf("a read beyond the quota: %d %s", status, body)
	}

	// An update without max_leases keeps it; a raised max lets the read in.
	if _, err := c.Logical().Write("sys/quotas/lease-count/kv", map[string]any{"max_leases": "3"}); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Logical().Read("sys/quotas/lease-count/kv"); err != nil || s.Data["path"] != "leased/" {
		t.Fatalf("read after update: %v, %v", s, err)
	}
	if _, err := c.KVv1("leased").Get(ctx, "db"); err != nil {
		t.Fatal(err)
	}

	// Refused writes name their field.
	for _, tc := range []struct {
		body       map[string]any
		wire, rule string
	}{
		{map[string]any{"path": "leased/", "max_leases": 1, "rate": 5}, "rate", "is not a field"},
		{map[string]any{"path": "auth/approle/", "max_leases": 1, "role": "app"}, "role", "auth mounts"},
		{map[string]any{"path": "leased/", "max_leases": 1, "inheritable": true}, "inheritable", "namespaces"},
		{map[string]any{"path": "other/"}, "max_leases", "must be positive"},
		{map[string]any{"path": "leased", "max_leases": 1}, "path", "is the path of the quota"},
	} {
		_, err := c.Logical().Write("sys/quotas/lease-count/other", tc.body)
		wantField(t, err, tc.wire, tc.rule)
	}

	if _, err := c.Logical().Delete("sys/quotas/lease-count/kv"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Logical().Delete("sys/quotas/lease-count/kv"); err != nil {
		t.Fatalf("delete of a missing quota: %v, want 204", err)
	}
	if s, err := c.Logical().Read("sys/quotas/lease-count/kv"); err != nil || s != nil {
		t.Fatalf("read of a deleted quota: %v, %v", s, err)
	}
	if _, err := c.KVv1("leased").Get(ctx, "db"); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseCountQuotaCreds: an ldap credential beyond a lease-count quota
// answers 429 in Vault's words, and the engine creates no account for it
// (it asks the quota before touching the directory).
func TestLeaseCountQuotaCreds(t *testing.T) {
	e := newLDAPEnv(t)
	root := e.client(t, rootToken)
	c := root.Logical()
	configure(t, root, "ldap")
	if _, err := c.Write("ldap/role/dev", map[string]any{"creation_ldif": creationLDIF, "deletion_ldif": deletionLDIF}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write("sys/quotas/lease-count/dev", map[string]any{"path": "ldap/creds/dev", "max_leases": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read("ldap/creds/dev"); err != nil {
		t.Fatal(err)
	}
	applied, dns := e.dir.Applied(), len(e.dir.DNs())
	status, _, body := do(t, e, http.MethodGet, "/v1/ldap/creds/dev", "X-Vault-Token", rootToken)
	if wantBody := `{"errors":["1 error occurred:\n\t* request path \"ldap/creds/dev\": lease count quota exceeded (quota \"dev\", max_leases 1, path \"ldap/creds/dev\")\n\n"]}`; status != http.StatusTooManyRequests || body != wantBody+"\n" && body != wantBody {
		t.Fatalf("creds beyond the quota: %d %s", status, body)
	}
	if e.dir.Applied() != applied || len(e.dir.DNs()) != dns {
		t.Fatalf("creds refused by the quota touched the directory: %d changes applied, then %d", applied, e.dir.Applied())
	}
}

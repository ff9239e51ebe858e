package vault_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

const (
	rootToken   = "root-token"
	root2Token  = "second-root-token" // another caller with every right
	readerToken = "reader-token"
	createToken = "create-only-token"
	updateToken = "update-only-token"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// testServer is what the test servers say of themselves in sys/health,
// sys/seal-status and the mount entries.
var testServer = vault.Server{Version: "v0.9.0", BuildDate: "2026-11-01T00:00:00Z",
	ClusterName: "keel-cluster-5f1a2b3c", ClusterID: "5f1a2b3c-0000-4000-8000-000000000001", StorageType: "inmem"}

// env is a server of the adapter over a memory store, with a fake clock.
type env struct {
	store  storage.Store
	clock  *keel.FakeClock
	leases *lease.Manager
	table  *mount.Table // its engines, for tests that drive their Step
	authz  keel.Authorizer
	dir    *ldaptest.Directory // the directory of the ldap mounts
	srv    *httptest.Server
}

var principals = map[string]keel.Principal{
	rootToken:   {ID: "root", DisplayName: "root", ClientTokenID: "ct-root", Policies: []string{keel.RootPolicy}},
	root2Token:  {ID: "root2", DisplayName: "root2", ClientTokenID: "ct-root2", EntityID: "entity-root2", Policies: []string{keel.RootPolicy}},
	readerToken: {ID: "reader", DisplayName: "reader", ClientTokenID: "ct-reader", Policies: []string{"reader"}},
	createToken: {ID: "creator", DisplayName: "creator", ClientTokenID: "ct-creator", Policies: []string{"creator"}},
	updateToken: {ID: "updater", DisplayName: "updater", ClientTokenID: "ct-updater", Policies: []string{"updater"}},
}

func newEnv(t testing.TB, store storage.Store) *env {
	t.Helper()
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"reader": {{Path: "secret/*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}},
			{Path: "identity/group*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}}},
		"creator": {{Path: "secret/*", Capabilities: []keel.Capability{keel.CapCreate, keel.CapRead}}},
		"updater": {{Path: "secret/*", Capabilities: []keel.Capability{keel.CapUpdate, keel.CapRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{store: store, clock: keel.NewFakeClock(t0), authz: authz, dir: ldaptest.NewDirectory()}
	table, err := mount.Open(context.Background(), store, &mount.Options{Authorizer: authz, Clock: e.clock,
		Directory: e.dir, Defaults: mount.VaultDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	e.table = table
	// The tests drive the lease worker's Step themselves.
	e.leases = table.Leases()
	e.leases.Stop()
	h := vault.New(table, &vault.Options{Clock: e.clock, Server: testServer})
	mux := http.NewServeMux()
	h.Register(mux)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := principals[vault.RequestToken(r)]; ok {
			r = r.WithContext(keel.WithPrincipal(r.Context(), p))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// client is the official Vault client as a user's program gets it:
// api.NewClient(api.DefaultConfig()) configured by the environment alone,
// VAULT_ADDR and VAULT_TOKEN, so that it sends the token in Vault's own
// header, X-Vault-Token; and VAULT_MAX_RETRIES=0, so that a test sees the
// first answer to a request, a 503 included, not the answer to a retry.
// TestDefaultClient uses the client with VAULT_ADDR and VAULT_TOKEN only.
func (e *env) client(t testing.TB, token string) *api.Client {
	t.Helper()
	t.Setenv("VAULT_MAX_RETRIES", "0")
	return e.defaultClient(t, token)
}

// defaultClient is the official Vault client configured by VAULT_ADDR and
// VAULT_TOKEN alone (any other VAULT_ variable as the test has set it).
func (e *env) defaultClient(t testing.TB, token string) *api.Client {
	t.Helper()
	t.Setenv("VAULT_ADDR", e.srv.URL)
	t.Setenv("VAULT_TOKEN", token)
	c, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func statusOf(err error) int {
	var re *api.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// wantField reports an error on t unless err is a 400 whose errors list
// holds a message "wire: …" (Vault's wire name of a broken rule's field)
// containing rule.
func wantField(t *testing.T, err error, wire, rule string) {
	t.Helper()
	var re *api.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest {
		t.Errorf("error %v, want 400 with %q", err, wire+": …"+rule)
		return
	}
	if !slices.ContainsFunc(re.Errors, func(m string) bool {
		return strings.HasPrefix(m, wire+": ") && strings.Contains(m, rule)
	}) {
		t.Errorf("errors %q, want one %q", re.Errors, wire+": …"+rule)
	}
}

func TestKVv1ReadWriteListDelete(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := context.Background()
	kv := e.client(t, rootToken).KVv1("secret")

	if err := kv.Put(ctx, "app/db", map[string]any{"user": "ada", "password": "s3cr3t", "ttl": "1h"}); err != nil {
		t.Fatal(err)
	}
	if err := kv.Put(ctx, "app/cache/redis", map[string]any{"password": "x"}); err != nil {
		t.Fatal(err)
	}
	s, err := kv.Get(ctx, "app/db")
	if err != nil {
		t.Fatal(err)
	}
	if s.Data["user"] != "ada" || s.Data["password"] != "s3cr3t" || s.Raw.LeaseDuration != 3600 || s.Raw.LeaseID != "" {
		t.Fatalf("read = %v, lease_duration %d, lease_id %q", s.Data, s.Raw.LeaseDuration, s.Raw.LeaseID)
	}
	other, err := kv.Get(ctx, "app/cache/redis")
	if err != nil || other.Raw.LeaseDuration != 2764800 {
		t.Fatalf("read without ttl: lease_duration %v, %v; want the mount default 2764800", other, err)
	}

	list, err := e.client(t, rootToken).Logical().List("secret/app")
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := list.Data["keys"].([]any)
	if got := toStrings(keys); !slices.Equal(got, []string{"cache/", "db"}) {
		t.Fatalf("list = %q", got)
	}
	if missing, err := e.client(t, rootToken).Logical().List("secret/nothing"); err != nil || missing != nil {
		t.Fatalf("list of a missing folder = %v, %v; want nil, nil (404)", missing, err)
	}

	if err := kv.Delete(ctx, "app/db"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "app/db"); !errors.Is(err, api.ErrSecretNotFound) {
		t.Fatalf("read after delete: %v, want ErrSecretNotFound", err)
	}
}

func toStrings(in []any) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i], _ = v.(string)
	}
	return out
}

func TestKVErrorsAndRights(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := context.Background()
	root := e.client(t, rootToken).Logical()

	if _, err := root.Write("secret/empty", map[string]any{}); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "missing data fields") {
		t.Fatalf("empty write: %v, want 400 missing data fields", err)
	}
	// As Vault: a ttl that is not a duration is data; a read reports the
	// mount default.
	for _, ttl := range []any{"soon", -5} {
		if _, err := root.Write("secret/bad", map[string]any{"ttl": ttl}); err != nil {
			t.Fatalf("write of ttl %v: %v", ttl, err)
		}
		if s, err := root.Read("secret/bad"); err != nil || s.LeaseDuration != 768*3600 || fmt.Sprint(s.Data["ttl"]) != fmt.Sprint(ttl) {
			t.Fatalf("read of ttl %v: %+v, %v", ttl, s, err)
		}
	}
	_, err := root.Write("secret/a\x01b", map[string]any{"k": "v"})
	wantField(t, err, "path", "control characters")
	if _, err := e.client(t, readerToken).Logical().Write("secret/x", map[string]any{"a": "b"}); statusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("write by a reader: %v, want 403 permission denied", err)
	}
	if _, err := e.client(t, "no-such-token").Logical().Read("secret/x"); statusOf(err) != http.StatusForbidden {
		t.Fatalf("read by an unknown token: %v, want 403", err)
	}

	// create on a new path, update on an existing one.
	creator, updater := e.client(t, createToken).KVv1("secret"), e.client(t, updateToken).KVv1("secret")
	if err := updater.Put(ctx, "new", map[string]any{"a": "1"}); statusOf(err) != http.StatusForbidden {
		t.Fatalf("update-only caller created a secret: %v", err)
	}
	if err := creator.Put(ctx, "new", map[string]any{"a": "1"}); err != nil {
		t.Fatalf("create-only caller could not create: %v", err)
	}
	if err := creator.Put(ctx, "new", map[string]any{"a": "2"}); statusOf(err) != http.StatusForbidden {
		t.Fatalf("create-only caller overwrote a secret: %v", err)
	}
	if err := updater.Put(ctx, "new", map[string]any{"a": "3"}); err != nil {
		t.Fatalf("update-only caller could not update: %v", err)
	}
	s, err := creator.Get(ctx, "new")
	if err != nil || s.Data["a"] != "3" {
		t.Fatalf("value = %v, %v; want a=3", s, err)
	}
}

func TestMountsLeasedReadsAndLeaseCalls(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := context.Background()
	c := e.client(t, rootToken)

	err := c.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"version": "1", "leased_passthrough": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := c.Sys().ListMounts()
	if err != nil {
		t.Fatal(err)
	}
	if m := mounts["leased/"]; m == nil || m.Type != "kv" || m.Options["leased_passthrough"] != "true" || mounts["secret/"] == nil {
		t.Fatalf("mounts = %v", mounts)
	}
	if err := c.Sys().Mount("leased/inner", &api.MountInput{Type: "kv"}); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("nested mount: %v, want 400", err)
	}

	if err := c.KVv1("leased").Put(ctx, "db", map[string]any{"password": "p", "ttl": "30m"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.KVv1("leased").Get(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	id := s.Raw.LeaseID
	if !strings.HasPrefix(id, "leased/db/") || !s.Raw.Renewable || s.Raw.LeaseDuration != 1800 {
		t.Fatalf("leased read: lease_id %q renewable %v duration %d", id, s.Raw.Renewable, s.Raw.LeaseDuration)
	}

	look, err := c.Sys().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	if look.Data["id"] != id || look.Data["last_renewal_time"] != nil || look.Data["renewable"] != true {
		t.Fatalf("lookup = %v", look.Data)
	}
	if ttl, _ := look.Data["ttl"].(json.Number).Int64(); ttl != 1800 {
		t.Fatalf("lookup ttl = %d, want 1800", ttl)
	}

	e.clock.Advance(10 * time.Minute)
	ren, err := c.Sys().Renew(id, 600)
	if err != nil {
		t.Fatal(err)
	}
	if ren.LeaseID != id || ren.LeaseDuration != 600 {
		t.Fatalf("renew = %q, %d", ren.LeaseID, ren.LeaseDuration)
	}
	look, err = c.Sys().Lookup(id)
	if err != nil || look.Data["last_renewal_time"] == nil {
		t.Fatalf("lookup after renew: %v, %v", look, err)
	}

	list, err := c.Logical().List("sys/leases/lookup/leased/db/")
	if err != nil || list == nil {
		t.Fatalf("list leases: %v, %v", list, err)
	}
	if keys := toStrings(list.Data["keys"].([]any)); len(keys) != 1 || "leased/db/"+keys[0] != id {
		t.Fatalf("lease list = %q, want the id of %q", keys, id)
	}
	if _, err := e.client(t, readerToken).Logical().List("sys/leases/lookup/leased/"); statusOf(err) != http.StatusForbidden {
		t.Fatalf("list leases without sudo: %v, want 403", err)
	}

	if err := c.Sys().RevokeWithOptions(&api.RevokeOptions{LeaseID: id, Sync: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sys().Lookup(id); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "invalid lease") {
		t.Fatalf("lookup of a revoked lease: %v, want 400 invalid lease", err)
	}

	// Queued revocation of everything under a prefix, then the worker.
	for range 3 {
		if _, err := c.KVv1("leased").Get(ctx, "db"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Sys().RevokePrefix("leased/"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Logical().List("sys/leases/lookup/leased/db/"); err != nil || list != nil {
		t.Fatalf("leases left after revoke-prefix: %v, %v", list, err)
	}

	if _, err := c.Logical().Write("sys/leases/tidy", nil); err != nil {
		t.Fatalf("tidy: %v", err)
	}
}

func TestLeaseExpiresOnReadBeforeTheWorkerRuns(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.client(t, rootToken)
	if err := c.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.KVv1("leased").Put(ctx, "k", map[string]any{"v": "1", "ttl": "10s"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.KVv1("leased").Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(11 * time.Second)
	if _, err := c.Sys().Lookup(s.Raw.LeaseID); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("lookup of an expired lease: %v, want 400 invalid lease", err)
	}
	if _, err := c.Sys().Renew(s.Raw.LeaseID, 10); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("renew of an expired lease: %v, want 400", err)
	}
}

// failingEngine is a test engine whose revocations fail for good.
type failingEngine struct{}

func (failingEngine) Revoke(context.Context, lease.Lease) error {
	return lease.Permanent(errors.New("directory says no"))
}

func TestIrrevocableLeases(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	iss, err := e.leases.Register(lease.Mount{Path: "test/", Revoker: failingEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := iss.Issue(ctx, lease.IssueRequest{Path: "test/creds/app", TTL: time.Minute, Renewable: true})
	if err != nil {
		t.Fatal(err)
	}
	c := e.client(t, rootToken)
	if err := c.Sys().Revoke(l.ID); err != nil { // queued: 202
		t.Fatal(err)
	}
	if _, err := e.leases.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}

	count, err := c.Logical().ReadWithData("sys/leases/count", map[string][]string{"type": {"irrevocable"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := count.Data["lease_count"].(json.Number).Int64(); n != 1 {
		t.Fatalf("count = %v", count.Data)
	}
	list, err := c.Logical().ReadWithData("sys/leases", map[string][]string{"type": {"irrevocable"}, "limit": {"none"}})
	if err != nil {
		t.Fatal(err)
	}
	leases, _ := list.Data["leases"].([]any)
	if len(leases) != 1 {
		t.Fatalf("irrevocable list = %v", list.Data)
	}
	first, _ := leases[0].(map[string]any)
	if first["lease_id"] != l.ID || !strings.Contains(first["error"].(string), "directory says no") {
		t.Fatalf("irrevocable lease = %v", first)
	}
	if _, err := c.Logical().ReadWithData("sys/leases/count", map[string][]string{"type": {"expiring"}}); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("count of another type: %v, want 400", err)
	}
	if _, err := c.Sys().Renew(l.ID, 10); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("renew of an irrevocable lease: %v, want 400", err)
	}

	if err := c.Sys().RevokeForce("test/"); err != nil {
		t.Fatal(err)
	}
	count, err = c.Logical().ReadWithData("sys/leases/count", map[string][]string{"type": {"irrevocable"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := count.Data["lease_count"].(json.Number).Int64(); n != 0 {
		t.Fatalf("count after revoke-force = %v", count.Data)
	}
}

func TestMountsPersistAndUnmountDeletesData(t *testing.T) {
	store := memstore.New(nil)
	ctx := context.Background()
	e := newEnv(t, store)
	c := e.client(t, rootToken)
	if err := c.Sys().Mount("team/kv", &api.MountInput{Type: "kv", Description: "team secrets"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Sys().Unmount("secret"); err != nil {
		t.Fatal(err)
	}
	if err := c.KVv1("team/kv").Put(ctx, "a", map[string]any{"v": "1"}); err != nil {
		t.Fatal(err)
	}

	// A new adapter over the same store: the same mounts, no default
	// "secret/" brought back.
	e2 := newEnv(t, store)
	c2 := e2.client(t, rootToken)
	mounts, err := c2.Sys().ListMounts()
	if err != nil {
		t.Fatal(err)
	}
	if mounts["team/kv/"] == nil || mounts["team/kv/"].Description != "team secrets" || mounts["secret/"] != nil {
		t.Fatalf("mounts after restart = %v", mounts)
	}
	if s, err := c2.KVv1("team/kv").Get(ctx, "a"); err != nil || s.Data["v"] != "1" {
		t.Fatalf("data after restart: %v, %v", s, err)
	}

	if err := c2.Sys().Unmount("team/kv"); err != nil {
		t.Fatal(err)
	}
	if s, err := c2.Logical().Read("team/kv/a"); err != nil || s != nil {
		t.Fatalf("read under an unmounted path: %v, %v; want nothing (404)", s, err)
	}
	resp, err := http.Get(e2.srv.URL + "/v1/team/kv/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET under an unmounted path: status %d, want 404", resp.StatusCode)
	}
	left := 0
	store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("kv/", storage.ScanOptions{KeysOnly: true}, func(string, []byte) error { left++; return nil })
	})
	if left != 0 {
		t.Fatalf("%d keys of unmounted engines left in the store", left)
	}
}

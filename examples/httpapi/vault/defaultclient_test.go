package vault_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/storage/memstore"
)

// TestDefaultClient: vault/api in its default configuration, with nothing
// but VAULT_ADDR and VAULT_TOKEN in the environment (it sends the token in
// X-Vault-Token), writes, reads and lists kv, reads identity groups,
// renews and revokes leases, and reads what `vault status` reads.
func TestDefaultClient(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := context.Background()
	c := e.defaultClient(t, rootToken)

	// kv.
	if err := c.KVv1("secret").Put(ctx, "app/db", map[string]any{"user": "ada", "password": "s3cr3t"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.KVv1("secret").Get(ctx, "app/db")
	if err != nil || s.Data["password"] != "s3cr3t" || s.Raw.MountType != "kv" {
		t.Fatalf("kv read = %+v, %v; want the secret with mount_type kv", s, err)
	}
	list, err := c.Logical().List("secret/app")
	if err != nil || list == nil || !slices.Equal(toStrings(list.Data["keys"].([]any)), []string{"db"}) || list.MountType != "kv" {
		t.Fatalf("kv list = %+v, %v", list, err)
	}

	// Identity groups.
	w, err := c.Logical().Write("identity/group/name/admins", map[string]any{"policies": []string{"admin"}})
	if err != nil || w.MountType != "identity" {
		t.Fatalf("group write = %+v, %v", w, err)
	}
	id, _ := w.Data["id"].(string)
	for _, path := range []string{"identity/group/name/admins", "identity/group/id/" + id} {
		g, err := c.Logical().Read(path)
		if err != nil || g == nil || g.Data["name"] != "admins" || g.Data["id"] != id || g.MountType != "identity" {
			t.Fatalf("read %s = %+v, %v", path, g, err)
		}
	}
	names, err := c.Logical().List("identity/group/name")
	if err != nil || names == nil || !slices.Equal(toStrings(names.Data["keys"].([]any)), []string{"admins"}) {
		t.Fatalf("group list = %+v, %v", names, err)
	}

	// Leases: a leased kv mount, a read, renew, lookup, revoke.
	if err := c.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.KVv1("leased").Put(ctx, "db", map[string]any{"password": "p", "ttl": "1h"}); err != nil {
		t.Fatal(err)
	}
	ls, err := c.KVv1("leased").Get(ctx, "db")
	if err != nil || ls.Raw.LeaseID == "" || !ls.Raw.Renewable {
		t.Fatalf("leased read = %+v, %v", ls, err)
	}
	lease := ls.Raw.LeaseID
	ren, err := c.Sys().Renew(lease, 600)
	if err != nil || ren.LeaseID != lease || ren.LeaseDuration != 600 || ren.MountType != "system" {
		t.Fatalf("renew = %+v, %v", ren, err)
	}
	if look, err := c.Sys().Lookup(lease); err != nil || look.Data["id"] != lease {
		t.Fatalf("lookup = %+v, %v", look, err)
	}
	if err := c.Sys().RevokeWithOptions(&api.RevokeOptions{LeaseID: lease, Sync: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sys().Lookup(lease); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("lookup of a revoked lease: %v, want 400 invalid lease", err)
	}

	// What `vault status` reads.
	seal, err := c.Sys().SealStatus()
	if err != nil || seal.Sealed || !seal.Initialized || seal.Type != "shamir" || seal.T != 1 || seal.N != 1 ||
		seal.Version != testServer.Version || seal.ClusterID != testServer.ClusterID || seal.StorageType != "inmem" {
		t.Fatalf("seal-status = %+v, %v", seal, err)
	}
	leader, err := c.Sys().Leader()
	if err != nil || leader.HAEnabled || leader.IsSelf {
		t.Fatalf("leader = %+v, %v", leader, err)
	}
	health, err := c.Sys().Health()
	if err != nil || !health.Initialized || health.Sealed || health.Standby || health.ReplicationDRMode != "disabled" ||
		health.ClusterName != testServer.ClusterName || health.ServerTimeUTC != t0.Unix() {
		t.Fatalf("health = %+v, %v", health, err)
	}

	// The token.
	self, err := c.Auth().Token().LookupSelf()
	if err != nil || self.Data["id"] != rootToken || self.Data["display_name"] != "root" || self.MountType != "token" {
		t.Fatalf("lookup-self = %+v, %v", self, err)
	}
	if pol, err := self.TokenPolicies(); err != nil || !slices.Equal(pol, []string{"root"}) {
		t.Fatalf("lookup-self policies = %q, %v", pol, err)
	}
}

// The members of sys/health: Vault 1.21's 14, cluster_name and cluster_id
// included when the server names its cluster.
var vaultHealthMembers = []string{
	"clock_skew_ms", "cluster_id", "cluster_name", "echo_duration_ms", "enterprise", "initialized",
	"performance_standby", "replication_dr_mode", "replication_performance_mode",
	"replication_primary_canary_age_ms", "sealed", "server_time_utc", "standby", "version",
}

// do sends method path with headers (name, value, …) to e's server and
// returns the status, the headers and the body.
func do(t *testing.T, e *env, method, path string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

// members returns the names of the members of the JSON object body,
// sorted.
func members(t *testing.T, body string) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, body)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestHealth: sys/health answers Vault's members without a token, 200 or
// the activecode asked for; a malformed query parameter is a 400 naming
// it, never a 500 nor a panic; HEAD answers the status alone; other
// methods 405.
func TestHealth(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	status, _, body := do(t, e, "GET", "/v1/sys/health")
	if status != http.StatusOK || !slices.Equal(members(t, body), vaultHealthMembers) {
		t.Fatalf("health: %d, members %q; want 200 and %q", status, members(t, body), vaultHealthMembers)
	}
	for _, tc := range []struct {
		query  string
		status int
		names  string // in the errors
	}{
		{"?standbyok=true&perfstandbyok=1", 200, ""},
		{"?activecode=299&sealedcode=299&uninitcode=299&standbycode=299", 299, ""},
		{"?standbycode=200&drsecondarycode=473&performancestandbycode=472&haunhealthycode=474&removedcode=530", 200, ""},
		{"?activecode=abc", 400, "activecode"},
		{"?activecode=99", 400, "activecode"},
		{"?activecode=1000", 400, "activecode"},
		{"?activecode=-200", 400, "activecode"},
		{"?sealedcode=", 400, "sealedcode"},
		{"?removedcode=9999999999999999999999", 400, "removedcode"},
		{"?standbyok=maybe", 400, "standbyok"},
		{"?perfstandbyok=2&haunhealthycode=x", 400, "perfstandbyok haunhealthycode"},
	} {
		status, _, body := do(t, e, "GET", "/v1/sys/health"+tc.query)
		if status != tc.status {
			t.Errorf("GET %s: %d %s, want %d", tc.query, status, body, tc.status)
		}
		for _, name := range strings.Fields(tc.names) {
			if !strings.Contains(body, name+": ") {
				t.Errorf("GET %s: %s, want an error naming %s", tc.query, body, name)
			}
		}
	}
	status, h, body := do(t, e, "HEAD", "/v1/sys/health?activecode=204")
	if status != http.StatusNoContent || body != "" || h.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD: %d %q %q, want 204 with no body", status, h.Get("Content-Type"), body)
	}
	for _, path := range []string{"/v1/sys/health", "/v1/sys/seal-status", "/v1/sys/leader"} {
		if status, h, _ := do(t, e, "POST", path); status != http.StatusMethodNotAllowed || h.Get("Allow") == "" {
			t.Errorf("POST %s: %d, Allow %q; want 405 with Allow", path, status, h.Get("Allow"))
		}
	}
}

// TestSealStatusAndLeader: what `vault status` reads, Vault's members,
// without a token.
func TestSealStatusAndLeader(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	status, _, body := do(t, e, "GET", "/v1/sys/seal-status")
	want := []string{"build_date", "cluster_id", "cluster_name", "initialized", "migration", "n", "nonce", "progress",
		"recovery_seal", "sealed", "storage_type", "t", "type", "version"}
	if status != http.StatusOK || !slices.Equal(members(t, body), want) || !strings.Contains(body, `"sealed":false`) {
		t.Errorf("seal-status: %d %s, want 200 with %q and sealed false", status, body, want)
	}
	status, _, body = do(t, e, "GET", "/v1/sys/leader")
	want = []string{"active_time", "ha_enabled", "is_self", "leader_address", "leader_cluster_address",
		"performance_standby", "performance_standby_last_remote_wal"}
	if status != http.StatusOK || !slices.Equal(members(t, body), want) || !strings.Contains(body, `"ha_enabled":false`) {
		t.Errorf("leader: %d %s, want 200 with %q and ha_enabled false", status, body, want)
	}
}

// TestTokenHeaders: the token is read from X-Secrets-Token, X-Vault-Token
// or Authorization: Bearer, the first present wins (an unknown token in
// the first is refused, not replaced by a later header's); lookup-self
// describes it, and refuses a request without a known token with 403.
func TestTokenHeaders(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	for _, tc := range []struct {
		name    string
		headers []string
		want    string // the token lookup-self describes; "": 403
	}{
		{"spec header", []string{"X-Secrets-Token", readerToken}, readerToken},
		{"vault header", []string{"X-Vault-Token", readerToken}, readerToken},
		{"bearer", []string{"Authorization", "Bearer " + readerToken}, readerToken},
		{"bearer in lower case", []string{"Authorization", "bearer " + readerToken}, readerToken},
		{"spec header first", []string{"X-Secrets-Token", readerToken, "X-Vault-Token", rootToken}, readerToken},
		{"vault header before bearer", []string{"X-Vault-Token", readerToken, "Authorization", "Bearer " + rootToken}, readerToken},
		{"unknown first token is not replaced", []string{"X-Secrets-Token", "nope", "X-Vault-Token", rootToken}, ""},
		{"empty header is absent", []string{"X-Secrets-Token", "", "X-Vault-Token", readerToken}, readerToken},
		{"basic auth", []string{"Authorization", "Basic cm9vdA=="}, ""},
		{"no token", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST", "PUT"} {
				status, _, body := do(t, e, method, "/v1/auth/token/lookup-self", tc.headers...)
				if tc.want == "" {
					if status != http.StatusForbidden || !strings.Contains(body, "permission denied") {
						t.Errorf("%s: %d %s, want 403 permission denied", method, status, body)
					}
					continue
				}
				var got struct {
					Data      map[string]any `json:"data"`
					MountType string         `json:"mount_type"`
				}
				if err := json.Unmarshal([]byte(body), &got); err != nil || status != http.StatusOK {
					t.Fatalf("%s: %d %s", method, status, body)
				}
				if got.Data["id"] != tc.want || got.Data["display_name"] != "reader" || got.Data["accessor"] != "ct-reader" ||
					got.Data["renewable"] != false || got.Data["ttl"] != 0.0 || got.Data["expire_time"] != nil || got.MountType != "token" {
					t.Errorf("%s: %s", method, body)
				}
				if pol, _ := got.Data["policies"].([]any); len(pol) != 1 || pol[0] != "reader" {
					t.Errorf("%s: policies %v, want [reader]", method, got.Data["policies"])
				}
			}
		})
	}
}

// TestRequestTokenAllocates: reading the token costs no allocation, on
// every request.
func TestRequestTokenAllocates(t *testing.T) {
	for _, h := range []string{vault.HeaderSecretsToken, vault.HeaderVaultToken, vault.HeaderAuthorization} {
		r, _ := http.NewRequest("GET", "/v1/secret/x", nil)
		v := "t-1"
		if h == vault.HeaderAuthorization {
			v = "Bearer t-1"
		}
		r.Header.Set(h, v)
		if n := testing.AllocsPerRun(100, func() {
			if vault.RequestToken(r) != "t-1" {
				t.Fatal("token not read")
			}
		}); n != 0 {
			t.Errorf("RequestToken with %s: %v allocations, want 0", h, n)
		}
	}
}

// TestKVVersionProbe: the vault CLI asks sys/internal/ui/mounts/PATH
// before a kv command; a kv version 1 mount answers its entry with its
// path and options.version 1, so that `vault kv get secret/x` reads
// secret/x. A path under no mount, or under a mount the caller has no
// right on, answers 403.
func TestKVVersionProbe(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	for _, tc := range []struct {
		token, path string
		status      int
	}{
		{rootToken, "secret/app/db", 200},
		{rootToken, "secret", 200},
		{readerToken, "secret/app/db", 200},
		{readerToken, "ldap/config", 403},
		{rootToken, "nowhere/x", 403},
		{"", "secret/app/db", 403},
		{rootToken, "", 400},
	} {
		status, _, body := do(t, e, "GET", "/v1/sys/internal/ui/mounts/"+tc.path, "X-Vault-Token", tc.token)
		if status != tc.status {
			t.Errorf("%s as %q: %d %s, want %d", tc.path, tc.token, status, body, tc.status)
			continue
		}
		if status == http.StatusOK {
			var got struct {
				Data      map[string]any `json:"data"`
				MountType string         `json:"mount_type"`
			}
			json.Unmarshal([]byte(body), &got)
			opts, _ := got.Data["options"].(map[string]any)
			if got.Data["path"] != "secret/" || got.Data["type"] != "kv" || opts["version"] != "1" || got.MountType != "system" {
				t.Errorf("%s: %s", tc.path, body)
			}
		}
	}
}

// TestMountEntries: sys/mounts and sys/mounts/:path answer Vault's members
// of a mount entry; a path without a mount is 400, as Vault's.
func TestMountEntries(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.defaultClient(t, rootToken)
	mounts, err := c.Sys().ListMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"secret/", "ldap/", "openldap/"} {
		m := mounts[path]
		if m == nil || m.UUID == "" || m.Accessor == "" || m.DeprecationStatus != "supported" ||
			m.RunningVersion != testServer.Version+"+builtin.keel" || m.PluginVersion != "" {
			t.Errorf("mount %s = %+v", path, m)
		}
	}
	m, err := c.Sys().GetMount("secret")
	if err != nil || m.Type != "kv" || m.Options["version"] != "1" || m.UUID != mounts["secret/"].UUID {
		t.Errorf("GetMount(secret) = %+v, %v", m, err)
	}
	if _, err := c.Sys().GetMount("nothing"); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "No secret engine mount at nothing/") {
		t.Errorf("GetMount(nothing): %v, want 400", err)
	}
	_, _, body := do(t, e, "GET", "/v1/sys/mounts", "X-Vault-Token", rootToken)
	var raw struct {
		Data      map[string]map[string]any `json:"data"`
		MountType string                    `json:"mount_type"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil || raw.MountType != "system" {
		t.Fatalf("sys/mounts: %v %s", err, body)
	}
	var got []string
	for k := range raw.Data["secret/"] {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"accessor", "config", "deprecation_status", "description", "external_entropy_access", "local",
		"options", "plugin_version", "running_plugin_version", "running_sha256", "seal_wrap", "type", "uuid"}
	if !slices.Equal(got, want) {
		t.Errorf("members of a mount entry %q, want %q", got, want)
	}
}

// TestMountTypeEverywhere: every logical answer names the mount type of
// its path, as Vault's: kv, ldap and openldap engines, identity, system
// (sys/…) and token.
func TestMountTypeEverywhere(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.defaultClient(t, rootToken)
	configure(t, c, "ldap")
	configure(t, c, "openldap")
	if _, err := c.Logical().Write("ldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "1h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Logical().Write("sys/policies/password/p", map[string]any{"policy": `length = 20
rule "charset" { charset = "abcdefghijklmnopqrstuvwxyz" }`}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"sys/policies/password/p":          "system",
		"sys/policies/password/p/generate": "system",
		"sys/mounts":                       "system",
		"sys/mounts/secret":                "system",
		"auth/token/lookup-self":           "token",
		"ldap/config":                      "ldap",
		"openldap/config":                  "openldap",
		"ldap/static-role/app":             "ldap",
		"ldap/static-cred/app":             "ldap",
	} {
		s, err := c.Logical().Read(path)
		if err != nil || s == nil || s.MountType != want {
			t.Errorf("read %s: %+v, %v; want mount_type %s", path, s, err, want)
		}
	}
	for path, want := range map[string]string{"sys/policies/password": "system", "ldap/static-role": "ldap"} {
		s, err := c.Logical().List(path)
		if err != nil || s == nil || s.MountType != want {
			t.Errorf("list %s: %+v, %v; want mount_type %s", path, s, err, want)
		}
	}
}

package vault_test

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel/storage/memstore"
)

const (
	adminDN = "cn=admin,dc=example,dc=org"
	appDN   = "uid=app,ou=users,dc=example,dc=org"
)

// newLDAPEnv is an env whose fake directory holds the bind account and one
// user, app.
func newLDAPEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, memstore.New(nil))
	e.dir.Add(adminDN, "admin-pw")
	e.dir.Add(appDN, "initial", "uid", "app")
	return e
}

func configure(t *testing.T, c *api.Client, mount string) {
	t.Helper()
	if _, err := c.Logical().Write(mount+"/config", map[string]any{"binddn": adminDN, "bindpass": "admin-pw", "url": "ldap://ldap.example.org"}); err != nil {
		t.Fatal(err)
	}
}

func TestLDAPConfigWriteReadDelete(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()

	if s, err := c.Read("ldap/config"); err != nil || s != nil {
		t.Fatalf("config before write: %v, %v; want nothing (404)", s, err)
	}
	if _, err := c.Write("ldap/config", map[string]any{
		"binddn": adminDN, "bindpass": "admin-pw", "url": "ldap://a.example.org,ldaps://b.example.org",
		"request_timeout": "2m", "connection_timeout": 15, "starttls": "true", "length": 20,
	}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Read("ldap/config")
	if err != nil {
		t.Fatal(err)
	}
	d := s.Data
	if d["binddn"] != adminDN || d["url"] != "ldap://a.example.org,ldaps://b.example.org" || d["schema"] != "openldap" ||
		d["userattr"] != "cn" || d["starttls"] != true || d["tls_min_version"] != "tls12" {
		t.Fatalf("config = %v", d)
	}
	for k, want := range map[string]string{"request_timeout": "120", "connection_timeout": "15", "length": "20"} {
		if got := d[k]; got == nil || got.(interface{ String() string }).String() != want {
			t.Fatalf("config %s = %v, want %s", k, got, want)
		}
	}
	if _, ok := d["bindpass"]; ok {
		t.Fatalf("config read returns bindpass: %v", d)
	}
	if _, ok := d["client_tls_key"]; ok {
		t.Fatalf("config read returns client_tls_key: %v", d)
	}

	if _, err := c.Delete("ldap/config"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Read("ldap/config"); err != nil || s != nil {
		t.Fatalf("config after delete: %v, %v; want nothing (404)", s, err)
	}
}

func TestLDAPConfigRefusals(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()

	ok := map[string]any{"binddn": adminDN, "bindpass": "x"}
	with := func(kv ...any) map[string]any {
		m := maps.Clone(ok)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		path       string
		body       map[string]any
		field, has string // the wire name of the problem, part of its rule
	}{
		{"ldap/config", with("length", 20, "password_policy", "p"), "length", "cannot be set together with a password policy"},
		{"ldap/config", map[string]any{"bindpass": "x"}, "binddn", "is required"},
		{"ldap/config", map[string]any{"binddn": adminDN}, "bindpass", "is required"},
		{"ldap/config", with("url", "http://ldap.example.org"), "url", "is not an ldap:// or ldaps:// URL"},
		{"ldap/config", with("schema", "x500"), "schema", "must be"},
		{"ldap/config", with("password_policy", "bad name!"), "password_policy", "not a valid policy name"},
		{"ldap/config", with("length", -1), "length", "must not be negative"},
		{"ldap/config", with("tls_min_version", "tls13", "tls_max_version", "tls12"), "tls_max_version", "must not be below"},
		{"ldap/config", with("tls_min_version", "ssl3"), "tls_min_version", "must be tls10"},
		{"ldap/config", with("certificate", "not PEM"), "certificate", "holds no PEM certificate"},
		{"ldap/config", with("request_timeout", "soon"), "request_timeout", "must be a duration"}, // the adapter's
		{"ldap/config", with("starttls", "maybe"), "starttls", "must be a boolean"},               // the adapter's
		{"openldap/config", with("userdn", "ou=users,dc=example,dc=org"), "userdn", "only supported by the ldap engine"},
		{"openldap/config", with("connection_timeout", "10s"), "connection_timeout", "only supported by the ldap engine"},
	} {
		_, err := c.Write(tc.path, tc.body)
		wantField(t, err, tc.field, tc.has)
	}
	if s, err := c.Read("openldap/config"); err != nil || s != nil {
		t.Fatalf("a refused config was stored: %v, %v", s, err)
	}
}

func TestPasswordPolicyWriteGenerate(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()
	policy := `length = 12
rule "charset" {
  charset = "abc"
  min-chars = 1
}
rule "charset" {
  charset = "0123456789"
  min-chars = 2
}`
	if _, err := c.Write("sys/policies/password/short", map[string]any{"policy": policy}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Read("sys/policies/password/short")
	if err != nil || s == nil || s.Data["policy"] != policy {
		t.Fatalf("policy read = %v, %v", s, err)
	}
	s, err = c.Read("sys/policies/password/short/generate")
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := s.Data["password"].(string)
	if len(pw) != 12 || strings.Trim(pw, "abc0123456789") != "" || strings.Trim(pw, "abc") == "" {
		t.Fatalf("generated %q", pw)
	}
	if list, err := c.List("sys/policies/password"); err != nil || list == nil || len(list.Data["keys"].([]any)) != 1 {
		t.Fatalf("policy list = %v, %v", list, err)
	}

	// A policy that cannot be met, or does not parse, is refused.
	if _, err := c.Write("sys/policies/password/bad", map[string]any{"policy": "length = 1\nrule \"charset\" {\n charset = \"a\"\n min-chars = 2\n}"}); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("impossible policy: %v; want 400", err)
	}
	if _, err := c.Write("sys/policies/password/bad", map[string]any{"policy": "length = "}); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("unparsable policy: %v; want 400", err)
	}
	resp, err := c.ReadRaw("sys/policies/password/missing/generate")
	if resp != nil {
		resp.Body.Close()
	}
	if statusOf(err) != http.StatusNotFound || !strings.Contains(err.Error(), "policy does not exist") {
		t.Fatalf("generate from a missing policy: %v; want Vault's 404 \"policy does not exist\"", err)
	}

	// A mount whose configuration names the policy rotates with it.
	if _, err := c.Write("openldap/config", map[string]any{"binddn": adminDN, "bindpass": "admin-pw", "password_policy": "short"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write("openldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "24h"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.dir.Password(appDN); len(got) != 12 {
		t.Fatalf("password after rotation with the policy: %q", got)
	}

	if _, err := c.Delete("sys/policies/password/short"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Read("sys/policies/password/short"); err != nil || s != nil {
		t.Fatalf("policy after delete: %v, %v", s, err)
	}
}

func TestLDAPStaticRoles(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()

	if _, err := c.Write("openldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "1h"}); statusOf(err) != http.StatusNotFound {
		t.Fatalf("static role before config: %v; want 404", err)
	}
	configure(t, e.client(t, rootToken), "openldap")
	_, err := c.Write("openldap/static-role/app", map[string]any{"username": "app", "rotation_period": "1h"})
	wantField(t, err, "dn", "is required")
	_, err = c.Write("openldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "2s"})
	wantField(t, err, "rotation_period", "must be at least")
	_, err = c.Write("openldap/static-role/app", map[string]any{"dn": appDN, "rotation_period": "1h"})
	wantField(t, err, "username", "is required")
	_, err = c.Write("openldap/static-role/app", map[string]any{"username": "app", "dn": appDN})
	wantField(t, err, "rotation_period", "is required")
	_, err = c.Write("openldap/static-role/-app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "1h"})
	wantField(t, err, "name", "must be segments of 1 to 128 letters")
	if list, err := c.List("openldap/static-role"); err != nil || list != nil {
		t.Fatalf("empty list = %v, %v; want nothing (404)", list, err)
	}

	if _, err := c.Write("openldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": 3600}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Read("openldap/static-role/app")
	if err != nil || s == nil {
		t.Fatalf("read: %v, %v", s, err)
	}
	if s.Data["username"] != "app" || s.Data["dn"] != appDN || s.Data["rotation_period"].(interface{ String() string }).String() != "3600" {
		t.Fatalf("static role = %v", s.Data)
	}
	if ts, _ := s.Data["last_secrets_rotation"].(string); ts != t0.Format(time.RFC3339) {
		t.Fatalf("last_secrets_rotation = %v, want %s", s.Data["last_secrets_rotation"], t0.Format(time.RFC3339))
	}
	list, err := c.List("openldap/static-role")
	if err != nil || list == nil || len(list.Data["keys"].([]any)) != 1 || list.Data["keys"].([]any)[0] != "app" {
		t.Fatalf("list = %v, %v", list, err)
	}

	// static-cred returns the password the directory holds.
	cred, err := c.Read("openldap/static-cred/app")
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := cred.Data["password"].(string)
	if held, _ := e.dir.Password(appDN); pw == "" || pw != held || held == "initial" {
		t.Fatalf("static-cred password %q, directory holds %q", pw, held)
	}
	if cred.Data["ttl"].(interface{ String() string }).String() != "3600" || cred.Data["dn"] != appDN || cred.Data["username"] != "app" {
		t.Fatalf("static-cred = %v", cred.Data)
	}
	if _, ok := cred.Data["last_password"]; ok {
		t.Fatalf("openldap static-cred returns last_password: %v", cred.Data)
	}

	// rotate-role changes it.
	if _, err := c.Write("openldap/rotate-role/app", nil); err != nil {
		t.Fatal(err)
	}
	cred2, err := c.Read("openldap/static-cred/app")
	if err != nil {
		t.Fatal(err)
	}
	pw2, _ := cred2.Data["password"].(string)
	if held, _ := e.dir.Password(appDN); pw2 == pw || pw2 != held {
		t.Fatalf("after rotate-role: static-cred %q (was %q), directory holds %q", pw2, pw, held)
	}
	if _, err := c.Write("openldap/rotate-role/nobody", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("rotate a missing role: %v; want 404", err)
	}

	if _, err := c.Delete("openldap/static-role/app"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Read("openldap/static-role/app"); err != nil || s != nil {
		t.Fatalf("role after delete: %v, %v", s, err)
	}
	if s, err := c.Read("openldap/static-cred/app"); err != nil || s != nil {
		t.Fatalf("cred after delete: %v, %v", s, err)
	}
}

func TestLDAPRotateRoot(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken)
	configure(t, c, "ldap")
	if _, err := c.Logical().Write("ldap/rotate-root", nil); err != nil {
		t.Fatal(err)
	}
	held, _ := e.dir.Password(adminDN)
	if held == "admin-pw" || held == "" {
		t.Fatalf("bind password after rotate-root: %q", held)
	}
	s, err := c.Logical().Read("ldap/config")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range s.Data {
		if v == held {
			t.Fatalf("config read reveals the new root password in %s", k)
		}
	}
	// The engine binds with the new password: a static role still rotates.
	if _, err := c.Logical().Write("ldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "1h"}); err != nil {
		t.Fatal(err)
	}
	cred, err := c.Logical().Read("ldap/static-cred/app")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.dir.Password(appDN); cred.Data["password"] != got {
		t.Fatalf("static-cred %v, directory %q", cred.Data["password"], got)
	}
	if _, err := c.Logical().Write("ldap/rotate-role/app", nil); err != nil {
		t.Fatal(err)
	}
	cred, err = c.Logical().Read("ldap/static-cred/app")
	if err != nil {
		t.Fatal(err)
	}
	if lp, _ := cred.Data["last_password"].(string); lp == "" || lp == cred.Data["password"] {
		t.Fatalf("ldap static-cred last_password = %v", cred.Data["last_password"])
	}
}

func TestLDAPMountThroughSysMounts(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken)
	mounts, err := c.Sys().ListMounts()
	if err != nil {
		t.Fatal(err)
	}
	if mounts["ldap/"] == nil || mounts["ldap/"].Type != "ldap" || mounts["openldap/"] == nil || mounts["openldap/"].Type != "openldap" {
		t.Fatalf("default mounts = %v", mounts)
	}
	if err := c.Sys().Mount("team/dir", &api.MountInput{Type: "ldap"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Sys().Mount("team/bad", &api.MountInput{Type: "ldap", Options: map[string]string{"version": "2"}}); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("ldap mount with a kv option: %v; want 400", err)
	}
	configure(t, c, "team/dir")
	if _, err := c.Logical().Write("team/dir/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "1h"}); err != nil {
		t.Fatal(err)
	}
	cred, err := c.Logical().Read("team/dir/static-cred/app")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.dir.Password(appDN); cred.Data["password"] != got {
		t.Fatalf("static-cred %v, directory %q", cred.Data["password"], got)
	}
	if _, err := c.Logical().Write("team/dir/nothing", map[string]any{}); statusOf(err) != http.StatusNotFound {
		t.Fatalf("unknown path under an ldap mount: %v; want 404", err)
	}

	// Unmounting deletes the engine's data: mounted again, it is empty.
	if err := c.Sys().Unmount("team/dir"); err != nil {
		t.Fatal(err)
	}
	if err := c.Sys().Mount("team/dir", &api.MountInput{Type: "ldap"}); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Logical().Read("team/dir/config"); err != nil || s != nil {
		t.Fatalf("config after remount: %v, %v; want nothing", s, err)
	}
}

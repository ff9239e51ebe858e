package vault_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The answers of Vault's openldap plugin where the spec is silent.

// A config write merges into the stored configuration: only the keys sent
// change (the case: a write of binddn and request_timeout after a
// full configuration).
func TestLDAPConfigWriteMerges(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()
	if _, err := c.Write("ldap/config", map[string]any{"binddn": adminDN, "bindpass": "admin-pw",
		"url": "ldap://ldap.example.org", "userdn": "ou=users,dc=example,dc=org", "userattr": "uid", "length": 20}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []map[string]any{
		{"request_timeout": "30s"},
		{"binddn": adminDN, "request_timeout": "30s"},
	} {
		if _, err := c.Write("ldap/config", body); err != nil {
			t.Fatal(err)
		}
		s, err := c.Read("ldap/config")
		if err != nil {
			t.Fatal(err)
		}
		d := s.Data
		if d["url"] != "ldap://ldap.example.org" || d["userdn"] != "ou=users,dc=example,dc=org" || d["userattr"] != "uid" ||
			d["binddn"] != adminDN || fmt.Sprint(d["request_timeout"]) != "30" || fmt.Sprint(d["length"]) != "20" {
			t.Fatalf("after writing %v: config %v", body, d)
		}
	}
	// The stored bindpass is kept: the engine still binds.
	if _, err := c.Write("ldap/static-role/app", map[string]any{"username": "app", "rotation_period": "1h"}); err != nil {
		t.Fatal(err)
	}
	// A refused merge changes nothing; the rule holds across the merged
	// values (the stored length and a new password_policy).
	_, err := c.Write("ldap/config", map[string]any{"password_policy": "p", "url": "ldaps://other.example.org"})
	wantField(t, err, "length", "cannot be set together with a password policy")
	if s, _ := c.Read("ldap/config"); s == nil || s.Data["url"] != "ldap://ldap.example.org" || s.Data["password_policy"] != "" {
		t.Fatalf("a refused write changed the config: %v", s)
	}
	if _, err := c.Write("ldap/config", map[string]any{"password_policy": "p", "length": 0}); err != nil {
		t.Fatal("switching from length to a password policy in one write:", err)
	}
	// An empty value sets the default.
	if _, err := c.Write("ldap/config", map[string]any{"url": ""}); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Read("ldap/config"); s == nil || s.Data["url"] != "ldap://127.0.0.1" || s.Data["userattr"] != "uid" {
		t.Fatalf("config %v", s)
	}
}

// vaultConfigDefaults are the members of a config read of Vault's openldap
// plugin (1.21) on a configuration written with binddn, bindpass and url
// only, as JSON decodes them; userdn, userattr, upndomain and
// connection_timeout are checked for ldap mounts only.
var vaultConfigDefaults = map[string]string{
	"binddn": adminDN, "url": "ldap://ldap.example.org", "schema": "openldap", "request_timeout": "90",
	"starttls": "false", "insecure_tls": "false", "certificate": "", "tls_min_version": "tls12", "tls_max_version": "tls12",
	"length": "64", "password_policy": "",
	"groupdn": "", "groupfilter": "(|(memberUid={{.Username}})(member={{.UserDN}})(uniqueMember={{.UserDN}}))",
	"groupattr": "cn", "userfilter": "({{.UserAttr}}={{.Username}})", "deny_null_bind": "true", "discoverdn": "false",
	"use_token_groups": "false", "anonymous_group_search": "false", "username_as_alias": "false",
	"dereference_aliases": "never", "max_page_size": "0", "enable_samaccountname_login": "false",
	"case_sensitive_names": "false", "credential_type": "password", "skip_static_role_import_rotation": "false",
	"rotation_period": "0", "rotation_schedule": "", "rotation_window": "0", "disable_automated_rotation": "false",
}

// A config read returns every member Vault's plugin returns, with its
// defaults (the ldap-only ones on ldap mounts only, as the spec says);
// Vault's settings that keel does not use round-trip.
func TestLDAPConfigReadAsVault(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()
	ldapOnly := map[string]string{"userdn": "", "userattr": "cn", "upndomain": "", "connection_timeout": "30"}
	for _, mount := range []string{"ldap", "openldap"} {
		configure(t, e.client(t, rootToken), mount)
		s, err := c.Read(mount + "/config")
		if err != nil || s == nil {
			t.Fatalf("%s: %v, %v", mount, s, err)
		}
		for k, want := range vaultConfigDefaults {
			if got, ok := s.Data[k]; !ok || fmt.Sprint(got) != want {
				t.Errorf("%s config %s = %v (present %v), want %s", mount, k, got, ok, want)
			}
		}
		for k, want := range ldapOnly {
			got, ok := s.Data[k]
			if mount == "openldap" && ok {
				t.Errorf("openldap config returns the ldap-only %s", k)
			}
			if mount == "ldap" && fmt.Sprint(got) != want {
				t.Errorf("ldap config %s = %v, want %s", k, got, want)
			}
		}
		for _, k := range []string{"bindpass", "client_tls_key", "use_pre111_group_cn_behavior", "last_bind_password_rotation"} {
			if _, ok := s.Data[k]; ok {
				t.Errorf("%s config returns %s: %v", mount, k, s.Data)
			}
		}
	}

	set := map[string]any{"groupdn": "ou=groups,dc=example,dc=org", "groupfilter": "(member={{.UserDN}})", "groupattr": "memberOf",
		"userfilter": "(uid={{.Username}})", "deny_null_bind": false, "discoverdn": true, "use_token_groups": true,
		"anonymous_group_search": true, "username_as_alias": true, "dereference_aliases": "always", "max_page_size": 500,
		"enable_samaccountname_login": true, "case_sensitive_names": true, "use_pre111_group_cn_behavior": true,
		"skip_static_role_import_rotation": true, "disable_automated_rotation": true,
		"rotation_period": 0, "rotation_schedule": "", "rotation_window": 0, "credential_type": "password"}
	if _, err := c.Write("openldap/config", set); err != nil {
		t.Fatal(err)
	}
	s, err := c.Read("openldap/config")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range set {
		if fmt.Sprint(s.Data[k]) != fmt.Sprint(want) {
			t.Errorf("config %s = %v, want %v", k, s.Data[k], want)
		}
	}
	if s.Data["url"] != "ldap://ldap.example.org" {
		t.Errorf("url = %v", s.Data["url"])
	}

	for _, tc := range []struct {
		body       map[string]any
		field, has string
	}{
		{map[string]any{"credential_type": "phrase"}, "credential_type", "not supported"},
		{map[string]any{"rotation_period": "24h"}, "rotation_period", "rotate-root"},
		{map[string]any{"rotation_schedule": "0 * * * *", "rotation_window": "1h"}, "rotation_schedule", "rotate-root"},
		{map[string]any{"rotation_schedule": "0 * * * *", "rotation_window": "1h"}, "rotation_window", "rotate-root"},
		{map[string]any{"groupfilter": "{{.UserDN"}, "groupfilter", "not a valid Go template"},
		{map[string]any{"dereference_aliases": "sometimes"}, "dereference_aliases", "must be never"},
		{map[string]any{"deny_null_bind": "perhaps"}, "deny_null_bind", "must be a boolean"}, // the adapter's
	} {
		_, err := c.Write("openldap/config", tc.body)
		wantField(t, err, tc.field, tc.has)
	}
}

// rawGet answers GET path with the root token: the response and its body.
func rawGet(t *testing.T, e *env, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Vault-Token", rootToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// While the outcome of a password change is unknown (the directory made
// it, its reply was lost), static-cred answers 503 with Retry-After rather
// than a password that may not bind; once the engine's worker has settled
// it, 200 with the password the directory holds.
func TestLDAPStaticCredRetryAfter(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken)
	configure(t, c, "openldap")
	if _, err := c.Logical().Write("openldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "1h"}); err != nil {
		t.Fatal(err)
	}
	e.dir.LoseReplies(appDN, true)
	if _, err := c.Logical().Write("openldap/rotate-role/app", nil); statusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("rotate-role whose reply is lost: %v, want 503", err)
	}
	resp, body := rawGet(t, e, "openldap/static-cred/app")
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(body, "password\"") {
		t.Fatalf("static-cred while the change is unknown: %d %s, want 503 without a password", resp.StatusCode, body)
	}
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n < 1 || n > 10 {
		t.Fatalf("Retry-After %q, want 1 to 10 seconds", resp.Header.Get("Retry-After"))
	}

	e.dir.LoseReplies(appDN, false)
	m, _, ok := e.table.Route("openldap/static-cred/app")
	if !ok || m.LDAP == nil {
		t.Fatal("no openldap engine")
	}
	e.clock.Advance(11 * time.Second) // past the retry
	if _, err := m.LDAP.Step(context.Background(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	cred, err := c.Logical().Read("openldap/static-cred/app")
	if err != nil || cred == nil {
		t.Fatalf("static-cred once settled: %v, %v", cred, err)
	}
	if held, _ := e.dir.Password(appDN); cred.Data["password"] != held {
		t.Fatalf("static-cred %v, directory holds %q", cred.Data["password"], held)
	}
}

// The time of the last rotation is returned as the spec's
// last_secrets_rotation and as Vault's last_vault_rotation.
func TestLDAPLastVaultRotation(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()
	configure(t, e.client(t, rootToken), "ldap")
	if _, err := c.Write("ldap/static-role/app", map[string]any{"username": "app", "dn": appDN, "rotation_period": "1h"}); err != nil {
		t.Fatal(err)
	}
	want := t0.Format(time.RFC3339)
	for _, path := range []string{"ldap/static-role/app", "ldap/static-cred/app"} {
		s, err := c.Read(path)
		if err != nil || s == nil {
			t.Fatalf("%s: %v, %v", path, s, err)
		}
		if s.Data["last_vault_rotation"] != want || s.Data["last_secrets_rotation"] != want {
			t.Fatalf("%s: last_vault_rotation %v, last_secrets_rotation %v, want %s", path,
				s.Data["last_vault_rotation"], s.Data["last_secrets_rotation"], want)
		}
	}
}

// A bind account the directory refuses is the configuration's problem:
// rotate-root answers 400 naming the directory's answer, never 403 (which
// would read as an ACL denial).
func TestLDAPRotateRootWrongBindPass(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken).Logical()
	if _, err := c.Write("ldap/config", map[string]any{"binddn": adminDN, "bindpass": "wrong"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Write("ldap/rotate-root", nil)
	if statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), adminDN) || !strings.Contains(err.Error(), "refused") ||
		strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("rotate-root with a wrong bindpass: %v, want 400 naming the directory's refusal", err)
	}
	if held, _ := e.dir.Password(adminDN); held != "admin-pw" {
		t.Fatalf("the bind password changed: %q", held)
	}
	if s, _ := c.Read("ldap/config"); s == nil || s.Data["last_bind_password_rotation"] != nil {
		t.Fatalf("a failed rotate-root is recorded: %v", s)
	}
}

// After rotate-root, the config read tells when (Vault's
// last_bind_password_rotation).
func TestLDAPLastBindPasswordRotation(t *testing.T) {
	e := newLDAPEnv(t)
	c := e.client(t, rootToken)
	configure(t, c, "ldap")
	e.clock.Advance(time.Minute)
	if _, err := c.Logical().Write("ldap/rotate-root", nil); err != nil {
		t.Fatal(err)
	}
	s, err := c.Logical().Read("ldap/config")
	if err != nil || s == nil {
		t.Fatalf("config: %v, %v", s, err)
	}
	got, ok := s.Data["last_bind_password_rotation"].(string)
	if !ok {
		t.Fatalf("config after rotate-root has no last_bind_password_rotation: %v", s.Data)
	}
	if at, err := time.Parse(time.RFC3339Nano, got); err != nil || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("last_bind_password_rotation %q, want %s", got, t0.Add(time.Minute).Format(time.RFC3339Nano))
	}
}

// An entry already managed by a static role, or an account in a library
// set, cannot be taken by another role or set: 400, as Vault.
func TestLDAPAccountManagedTwice(t *testing.T) {
	_, c := newLibraryEnv(t)
	if _, err := c.Write("ldap/static-role/app", map[string]any{"username": "app", "rotation_period": "1h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write("ldap/library/team", map[string]any{"service_account_names": "svc1"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		body map[string]any
	}{
		{"ldap/static-role/app2", map[string]any{"username": "app", "rotation_period": "1h"}},
		{"ldap/static-role/svc", map[string]any{"username": "svc1", "rotation_period": "1h"}},
		{"ldap/library/other", map[string]any{"service_account_names": "svc1"}},
		{"ldap/library/other", map[string]any{"service_account_names": "app"}},
	} {
		_, err := c.Write(tc.path, tc.body)
		if statusOf(err) != http.StatusBadRequest {
			t.Errorf("write %s %v: %v, want 400", tc.path, tc.body, err)
		}
	}
	if s, err := c.Read("ldap/static-role/app2"); err != nil || s != nil {
		t.Fatalf("a refused role was stored: %v, %v", s, err)
	}
}

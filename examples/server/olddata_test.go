package main

// testdata/keel-v0.db is a bbolt file written by the server of commit
// 173e4cd ("README: keel.Pagination"), the last one before the mount
// package, so that TestDataFromBeforeMountPackage can check that data
// written before that change is still served after it. Do not regenerate
// it with a newer server: its point is to be old.
//
// How it was made, on 2026-11-24 (UTC):
//
//  1. The server of 173e4cd ran over a new file, in a worktree of that
//     commit: go run ./examples/server -data keel.db -root-token
//     old-root-token -addr 127.0.0.1:18210. Everything below was sent to it
//     with curl and that root token. With -root-token and no -config, the
//     file holds no token: the test passes the same flag.
//  2. Besides the three mounts of the first start (secret/ kv, ldap/ and
//     openldap/), two were enabled with POST /v1/sys/mounts/:path:
//     team-a/ {"type":"kv","description":"team A secrets","options":
//     {"version":"1","leased_passthrough":"true"},"config":
//     {"default_lease_ttl":"1h","max_lease_ttl":"768h"}} and corp-ldap/
//     {"type":"ldap","description":"corporate directory","config":
//     {"default_lease_ttl":"30m","max_lease_ttl":"24h"}}.
//  3. Secrets were written with PUT: the values of oldSecrets below, at
//     their paths (secret/app is both a secret and a folder).
//  4. GET /v1/team-a/db issued the lease oldLeaseDB (768h, the system
//     maximum), then PUT /v1/sys/leases/renew with increment 2764800 gave
//     it a last_renewal_time (its expire_time stayed at the cap).
//  5. PUT /v1/sys/policies/password/corp-pw wrote oldPasswordPolicy.
//  6. A throwaway OpenLDAP slapd (the one of ldapengine's slapd tests, on
//     a free port) served as corp-ldap's directory: POST corp-ldap/config
//     (binddn cn=keel,dc=example,dc=org, its bindpass, userdn, userattr
//     uid, password_policy corp-pw, connection_timeout 2s, request_timeout
//     5s), POST corp-ldap/role/app (oldLDAPRole) and GET
//     corp-ldap/creds/app, which created an account in the directory
//     under the lease oldLeaseLDAP (60s). Then slapd was stopped and the
//     config rewritten, without bindpass (which keeps the old one), with
//     the url ldap://127.0.0.1:1, where nothing answers. The lease
//     expired, its six revocations failed over ten minutes, and it became
//     irrevocable: it stays stored and listed as such, whatever the date.
//  7. Identity groups: PUT /v1/identity/group/name/dbas {"policies":
//     ["db-admin"],"member_entity_ids":["e-alice","e-bob"],"metadata":
//     {"team":"dba"}}, then PUT /v1/identity/group/name/engineering
//     {"policies":["default","eng"],"member_group_ids":[<id of dbas>]},
//     which made engineering a parent of dbas.
//  8. JSON:API, with "Authorization: Bearer old-root-token": POST
//     /api/v2/organizations (acme, ops@acme.test); POST
//     organizations/acme/projects (platform, "shared infrastructure");
//     POST organizations/acme/workspaces network in platform, and sandbox
//     without a project (the default project); POST
//     organizations/acme/teams (ops); POST /team-projects (ops maintains
//     platform); POST organizations/acme/policies require-tags (sentinel,
//     enforce require-tags.policy soft-mandatory) and deny-public (opa,
//     query data.terraform.deny, enforcement-level mandatory), then PUT
//     policies/:id/upload of oldPolicyTags and oldPolicyDeny.
//  9. Last, GET /v1/team-a/tmp issued oldLeaseTmp (60s), and the server
//     was stopped with SIGINT at once, before that lease expired: it is
//     stored expired, and every start revokes it.
// 10. bbolt had grown the file to 16 MiB, nearly all free pages: it was
//     compacted with bbolt.Compact (what the bbolt CLI's "compact" does)
//     into a new file, which kept the bucket "keel" and its 45 keys, and
//     is 64 KiB.
//
// Leases expire by the wall clock, and the server has no clock to fake:
// oldLeaseDB is looked up as live until its expire_time (2026-12-26) and
// checked as expired, then revoked at start, afterwards; oldLeaseTmp is
// always the expired case; oldLeaseLDAP the irrevocable one (a start more
// than a day after its last attempt retries it, which fails again: nothing
// answers at ldap://127.0.0.1:1, so it stays irrevocable).

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
)

// The root token the file was written with.
const oldRootToken = "old-root-token"

// oldMount is a mount of the file, as GET /v1/sys/mounts shows it.
type oldMount struct {
	Type, Description, UUID, Accessor string
	Options                           map[string]string
	DefaultLeaseTTL, MaxLeaseTTL      int64 // seconds
}

var oldMounts = map[string]oldMount{
	"secret/": {"kv", "key/value secret storage", "7ff1e083-a029-4469-ab19-97c267578735", "kv_46bd76f9",
		map[string]string{"version": "1"}, 0, 0},
	"ldap/": {"ldap", "ldap secrets engine", "edafe61a-28a6-4b55-a69e-312bede0859a", "ldap_975d3ab6",
		map[string]string{}, 0, 0},
	"openldap/": {"openldap", "openldap secrets engine", "c46022e9-f1e8-4bda-82c0-4334d73049c0", "openldap_047b52a9",
		map[string]string{}, 0, 0},
	"team-a/": {"kv", "team A secrets", "23b6134f-e53b-4200-aea3-84f89a47192e", "kv_4791a34c",
		map[string]string{"version": "1", "leased_passthrough": "true"}, 3600, 2764800},
	"corp-ldap/": {"ldap", "corporate directory", "ec02f448-6d18-4d3b-97fb-0e77d41dc796", "ldap_e473a128",
		map[string]string{}, 1800, 86400},
}

// oldSecrets are the kv secrets of the file, by path under /v1/.
var oldSecrets = map[string]string{
	"secret/app":                 `{"owner":"team-a"}`,
	"secret/app/db":              `{"username":"app","password":"s3cr3t","port":5432}`,
	"secret/app/config":          `{"log_level":"debug","features":["a","b"],"max_conns":12345678901234567890,"tls":{"enabled":true,"ca":null}}`,
	"secret/app/nested/deep/key": `{"value":"deep"}`,
	"team-a/db":                  `{"username":"svc-a","password":"pa55","ttl":"768h"}`,
	"team-a/api":                 `{"key":"k-123"}`,
	"team-a/tmp":                 `{"v":"short-lived","ttl":"1m"}`,
}

// oldLease is a lease of the file, as PUT /v1/sys/leases/lookup showed it
// when it was written.
type oldLease struct {
	ID, IssueTime, ExpireTime, LastRenewalTime string // "" LastRenewalTime: null
}

var (
	oldLeaseDB = oldLease{"team-a/db/eW5imRpzls6xTkQ5dNe3qe8f",
		"2026-11-24T08:18:22.567043937Z", "2026-12-26T08:18:22.567043937Z", "2026-11-24T08:18:22.591590481Z"}
	oldLeaseTmp = oldLease{"team-a/tmp/UrNhAVFs1bD6YDGQPdVk8Ayv",
		"2026-11-24T08:30:15.281334833Z", "2026-11-24T08:31:15.281334833Z", ""}
)

// oldLeaseLDAP is the irrevocable lease of corp-ldap/.
const oldLeaseLDAP = "corp-ldap/creds/app/VbB1RwxLpJM991ZBpJccoPKq"

const oldPasswordPolicy = "length = 20\nrule \"charset\" {\n  charset = \"abcdefghijklmnopqrstuvwxyz\"\n  min-chars = 1\n}\nrule \"charset\" {\n  charset = \"0123456789\"\n  min-chars = 2\n}\n"

// oldLDAPRole is the dynamic role app of corp-ldap/, as GET shows it.
const oldLDAPRole = `{
	"creation_ldif": "dn: uid={{.Username}},ou=users,dc=example,dc=org\nobjectClass: inetOrgPerson\nuid: {{.Username}}\ncn: {{.Username}}\nsn: {{.RoleName}}\nuserPassword: {{.Password}}\n",
	"deletion_ldif": "dn: uid={{.Username}},ou=users,dc=example,dc=org\nchangetype: delete\n",
	"rollback_ldif": "dn: uid={{.Username}},ou=users,dc=example,dc=org\nchangetype: delete\n",
	"username_template": "app_{{random 8}}",
	"default_ttl": 60,
	"max_ttl": 3600
}`

// The identity groups.
const (
	oldGroupDBAs        = "1a5c0b33-b0cc-435c-aa7e-4b5f0b3954f8"
	oldGroupEngineering = "3108bdcb-b570-4c73-8f69-ff981786b7f8"
)

// The JSON:API objects.
const (
	oldDefaultProject = "prj-P0NE7o2c4wrMcx16"
	oldProject        = "prj-Lvlny9eBGi0bNms7" // platform
	oldWorkspace      = "ws-1yjhSfnm829D4odS"  // network, in platform
	oldWorkspaceSBox  = "ws-0fPKr1u2V4eZ9tB0"  // sandbox, in the default project
	oldTeam           = "team-8ojM3rSkUd14Vgdu"
	oldPolicyTagsID   = "pol-OejfHVbiKpCMnTWv"
	oldPolicyDenyID   = "pol-noMoQFVaLl3ArtRd"
)

const oldPolicyTags = "import \"tfplan/v2\" as tfplan\n\nmain = rule {\n\tall tfplan.resource_changes as _, rc {\n\t\trc.change.after.tags is not null\n\t}\n}\n"

const oldPolicyDeny = "package terraform\n\ndeny[msg] {\n  input.resource_changes[_].change.after.acl == \"public-read\"\n  msg := \"no public buckets\"\n}\n"

// TestDataFromBeforeMountPackage starts the server on a copy of
// testdata/keel-v0.db (see the top of this file) and checks over HTTP that
// everything in it is served: mounts, secrets, leases, the ldap mount's
// config and role, identity groups, the password policy, and the JSON:API
// organization with its projects, workspaces, team and policies. Then it
// writes to the old mounts, restarts, and reads old and new data again.
func TestDataFromBeforeMountPackage(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "keel-v0.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "keel.db")
	if err := os.WriteFile(db, src, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := start(t, hooks{}, "-data", db, "-root-token", oldRootToken)
	c := oldDataClient{t, ts}

	t.Run("mounts", func(t *testing.T) { c.on(t).checkMounts() })
	// The leases first: reading a leased secret issues new leases.
	t.Run("leases", func(t *testing.T) {
		c := c.on(t)
		c.checkKVLease(oldLeaseDB)
		c.checkKVLease(oldLeaseTmp)
		c.checkIrrevocableLease()
	})
	t.Run("secrets", func(t *testing.T) { c.on(t).checkSecrets() })
	t.Run("ldap mount", func(t *testing.T) { c.on(t).checkLDAPMount() })
	t.Run("groups", func(t *testing.T) { c.on(t).checkGroups() })
	t.Run("password policy", func(t *testing.T) { c.on(t).checkPasswordPolicy() })
	t.Run("organization", func(t *testing.T) { c.on(t).checkOrganization() })
	t.Run("policies", func(t *testing.T) { c.on(t).checkPolicies() })
	if t.Failed() {
		return
	}

	// New writes to old mounts, then a restart over the same file.
	c.vaultWant(http.MethodPut, "/v1/secret/app/added", `{"n":1}`, http.StatusNoContent)
	c.vaultWant(http.MethodPut, "/v1/team-a/added", `{"n":2}`, http.StatusNoContent)
	if err := ts.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	ts = start(t, hooks{}, "-data", db, "-root-token", oldRootToken)
	c = oldDataClient{t, ts}
	c.checkMounts()
	c.checkSecret("secret/app/added", `{"n":1}`)
	c.checkSecret("team-a/added", `{"n":2}`)
	c.checkSecret("secret/app/config", oldSecrets["secret/app/config"])
	c.checkSecret("team-a/db", oldSecrets["team-a/db"])
	c.checkList("secret/app/", "added", "config", "db", "nested/")
	c.checkList("team-a/", "added", "api", "db", "tmp")
	c.checkIrrevocableLease()
}

// oldDataClient talks to the server with the old file's root token.
type oldDataClient struct {
	t  *testing.T
	ts *testServer
}

// on returns c reporting to t.
func (c oldDataClient) on(t *testing.T) oldDataClient { c.t = t; return c }

// do sends method path with body (none when empty) and the header name,
// value, and returns the status and body.
func (c oldDataClient) do(method, path, body, name, value string) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.ts.url+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set(name, value)
	resp, err := client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// vault sends a request of the Vault dialect.
func (c oldDataClient) vault(method, path, body string) (int, []byte) {
	c.t.Helper()
	return c.do(method, path, body, "X-Secrets-Token", oldRootToken)
}

// vaultWant sends a request of the Vault dialect, fails the test unless it
// answers want, and returns the body decoded (nil when empty).
func (c oldDataClient) vaultWant(method, path, body string, want int) map[string]any {
	c.t.Helper()
	status, b := c.vault(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, b)
	}
	if len(b) == 0 {
		return nil
	}
	m, ok := decodeOldJSON(c.t, b).(map[string]any)
	if !ok {
		c.t.Fatalf("%s %s: not an object: %s", method, path, b)
	}
	return m
}

// tfeGet reads path of the JSON:API and returns the document, failing the
// test unless it answers 200.
func (c oldDataClient) tfeGet(path string) map[string]any {
	c.t.Helper()
	status, b := c.do(http.MethodGet, path, "", "Authorization", "Bearer "+oldRootToken)
	if status != http.StatusOK {
		c.t.Fatalf("GET %s: status %d: %s", path, status, b)
	}
	m, ok := decodeOldJSON(c.t, b).(map[string]any)
	if !ok {
		c.t.Fatalf("GET %s: not an object: %s", path, b)
	}
	return m
}

// decodeOldJSON decodes b keeping numbers as json.Number, so that no digit
// is lost and 5432 compares equal to 5432.
func decodeOldJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// oldSameJSON fails the test unless got (decoded by decodeOldJSON) equals the
// JSON want.
func oldSameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	w := decodeOldJSON(t, []byte(want))
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s = %s, want %s", what, g, want)
	}
}

// oldAt returns the member of v found by the keys, or nil.
func oldAt(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// oldJSON returns v as JSON, for comparisons with oldSameJSON.
func oldJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (c oldDataClient) checkMounts() {
	t := c.t
	t.Helper()
	data, ok := oldAt(c.vaultWant(http.MethodGet, "/v1/sys/mounts", "", http.StatusOK), "data").(map[string]any)
	if !ok {
		t.Fatal("GET /v1/sys/mounts: no data")
	}
	for path, m := range oldMounts {
		got, ok := data[path]
		if !ok {
			t.Errorf("mount %s is not listed", path)
			continue
		}
		seen := map[string]any{
			"type": oldAt(got, "type"), "description": oldAt(got, "description"),
			"uuid": oldAt(got, "uuid"), "accessor": oldAt(got, "accessor"), "options": oldAt(got, "options"),
			"default_lease_ttl": oldAt(got, "config", "default_lease_ttl"), "max_lease_ttl": oldAt(got, "config", "max_lease_ttl"),
		}
		want := map[string]any{
			"type": m.Type, "description": m.Description, "uuid": m.UUID, "accessor": m.Accessor, "options": m.Options,
			"default_lease_ttl": m.DefaultLeaseTTL, "max_lease_ttl": m.MaxLeaseTTL,
		}
		oldSameJSON(t, "mount "+path, seen, oldJSON(t, want))
	}
}

// checkSecret reads path and compares its data with want.
func (c oldDataClient) checkSecret(path, want string) map[string]any {
	c.t.Helper()
	resp := c.vaultWant(http.MethodGet, "/v1/"+path, "", http.StatusOK)
	oldSameJSON(c.t, path, resp["data"], want)
	return resp
}

// checkList lists folder and compares the keys with want.
func (c oldDataClient) checkList(folder string, want ...string) {
	c.t.Helper()
	resp := c.vaultWant("LIST", "/v1/"+folder, "", http.StatusOK)
	oldSameJSON(c.t, "LIST "+folder, oldAt(resp, "data", "keys"), oldJSON(c.t, want))
}

func (c oldDataClient) checkSecrets() {
	t := c.t
	for path, want := range oldSecrets {
		resp := c.checkSecret(path, want)
		mount, rest, _ := strings.Cut(path, "/")
		if mount != "team-a" {
			if id := resp["lease_id"]; id != "" {
				t.Errorf("%s: lease %v from a mount without leased_passthrough", path, id)
			}
			continue
		}
		// team-a/ is leased: each read issues a lease of the secret's
		// ttl, or the mount's default (1h), capped at its max; renewable
		// when the secret has a ttl (as Vault).
		wantTTL := map[string]string{"db": "2764800", "api": "3600", "tmp": "60"}[rest]
		renewable := rest != "api" // api's secret has no ttl key
		if id, _ := resp["lease_id"].(string); !strings.HasPrefix(id, path+"/") || resp["renewable"] != renewable ||
			resp["lease_duration"] != json.Number(wantTTL) {
			t.Errorf("%s: lease_id %v, renewable %v, lease_duration %v; want a lease under %s/ of %ss, renewable %v",
				path, resp["lease_id"], resp["renewable"], resp["lease_duration"], path, wantTTL, renewable)
		}
	}
	c.checkList("secret/", "app", "app/")
	c.checkList("secret/app/", "config", "db", "nested/")
	c.checkList("secret/app", "config", "db", "nested/")
	c.checkList("secret/app/nested/deep", "key")
	c.checkList("team-a/", "api", "db", "tmp")
	if status, _ := c.vault(http.MethodGet, "/v1/secret/nope", ""); status != http.StatusNotFound {
		t.Errorf("GET secret/nope: status %d, want 404", status)
	}
}

// leaseKeys lists the lease ids under folder (with a trailing "/"); none
// when the listing is empty.
func (c oldDataClient) leaseKeys(folder string) []string {
	c.t.Helper()
	status, b := c.vault("LIST", "/v1/sys/leases/lookup/"+folder, "")
	if status == http.StatusNotFound {
		return nil
	}
	if status != http.StatusOK {
		c.t.Fatalf("LIST sys/leases/lookup/%s: status %d: %s", folder, status, b)
	}
	var keys []string
	for _, k := range oldAt(decodeOldJSON(c.t, b), "data", "keys").([]any) {
		keys = append(keys, k.(string))
	}
	return keys
}

// irrevocable returns the irrevocable leases: lease_id, mount_id, error.
func (c oldDataClient) irrevocable() []map[string]any {
	c.t.Helper()
	resp := c.vaultWant(http.MethodGet, "/v1/sys/leases?type=irrevocable", "", http.StatusOK)
	list, _ := oldAt(resp, "data", "leases").([]any)
	out := []map[string]any{}
	for _, l := range list {
		out = append(out, l.(map[string]any))
	}
	if n := oldAt(resp, "data", "lease_count"); n != json.Number(oldJSON(c.t, len(out))) {
		c.t.Errorf("irrevocable leases: lease_count %v, but %d listed", n, len(out))
	}
	return out
}

// checkKVLease checks a lease of team-a/: before its expire time, lookup
// shows it as it was written and it is listed; after it, lookup answers
// "invalid lease" and the server's lease worker revokes it soon after the
// start (a kv lease has nothing to undo), so that it leaves the listing
// without becoming irrevocable.
func (c oldDataClient) checkKVLease(l oldLease) {
	t := c.t
	t.Helper()
	expire, err := time.Parse(time.RFC3339Nano, l.ExpireTime)
	if err != nil {
		t.Fatal(err)
	}
	folder, suffix := l.ID[:strings.LastIndex(l.ID, "/")+1], l.ID[strings.LastIndex(l.ID, "/")+1:]
	lookup := `{"lease_id":"` + l.ID + `"}`
	switch now := time.Now(); {
	case now.Before(expire.Add(-time.Minute)):
		resp := c.vaultWant(http.MethodPut, "/v1/sys/leases/lookup", lookup, http.StatusOK)
		data, _ := resp["data"].(map[string]any)
		n, _ := data["ttl"].(json.Number)
		ttl, err := n.Int64()
		if err != nil {
			t.Errorf("lease %s: ttl %v", l.ID, data["ttl"])
		}
		if left := int64(expire.Sub(now)/time.Second) + 1; ttl <= 0 || ttl > left {
			t.Errorf("lease %s: ttl %d, want in (0, %d]", l.ID, ttl, left)
		}
		delete(data, "ttl")
		var last any
		if l.LastRenewalTime != "" {
			last = l.LastRenewalTime
		}
		oldSameJSON(t, "lookup "+l.ID, data, oldJSON(t, map[string]any{
			"id": l.ID, "issue_time": l.IssueTime, "expire_time": l.ExpireTime, "last_renewal_time": last, "renewable": true,
		}))
		if keys := c.leaseKeys(folder); !slices.Contains(keys, suffix) {
			t.Errorf("LIST sys/leases/lookup/%s = %q, want it to hold %s", folder, keys, suffix)
		}
	case !now.Before(expire):
		status, b := c.vault(http.MethodPut, "/v1/sys/leases/lookup", lookup)
		if status != http.StatusBadRequest {
			t.Errorf("lookup of the expired lease %s: status %d, want 400: %s", l.ID, status, b)
		} else {
			oldSameJSON(t, "lookup of the expired lease "+l.ID, decodeOldJSON(t, b), `{"errors":["invalid lease"]}`)
		}
		keeltest.Until(t, "the expired lease "+l.ID+" removed after the start", func() bool { return !slices.Contains(c.leaseKeys(folder), suffix) })
		for _, irr := range c.irrevocable() {
			if irr["lease_id"] == l.ID {
				t.Errorf("the expired kv lease %s became irrevocable: %v", l.ID, irr["error"])
			}
		}
	default:
		t.Logf("lease %s expires at %s, too close to now to check either way", l.ID, l.ExpireTime)
	}
}

// checkIrrevocableLease checks the lease of corp-ldap/ whose revocation
// ran out of attempts: listed and counted as irrevocable under the
// accessor of corp-ldap/, still stored, and gone for lookup (it expired).
func (c oldDataClient) checkIrrevocableLease() {
	t := c.t
	t.Helper()
	acc := oldMounts["corp-ldap/"].Accessor
	list := c.irrevocable()
	if len(list) != 1 || list[0]["lease_id"] != oldLeaseLDAP || list[0]["mount_id"] != acc || list[0]["error"] == "" {
		t.Errorf("irrevocable leases %v, want one: %s of mount %s, with its error", list, oldLeaseLDAP, acc)
	}
	resp := c.vaultWant(http.MethodGet, "/v1/sys/leases/count?type=irrevocable", "", http.StatusOK)
	oldSameJSON(t, "irrevocable count", resp["data"], `{"counts":{"`+acc+`":1},"lease_count":1}`)
	if keys := c.leaseKeys("corp-ldap/creds/app/"); !slices.Equal(keys, []string{strings.TrimPrefix(oldLeaseLDAP, "corp-ldap/creds/app/")}) {
		t.Errorf("LIST sys/leases/lookup/corp-ldap/creds/app/ = %q, want the irrevocable lease", keys)
	}
	// Its revocation failed: it stays visible, expired, until revoked.
	resp = c.vaultWant(http.MethodPut, "/v1/sys/leases/lookup", `{"lease_id":"`+oldLeaseLDAP+`"}`, http.StatusOK)
	if id, ttl := oldAt(resp, "data", "id"), oldAt(resp, "data", "ttl"); id != oldLeaseLDAP || ttl != json.Number("0") {
		t.Errorf("lookup of the irrevocable (expired) lease: id %v, ttl %v", id, ttl)
	}
}

func (c oldDataClient) checkLDAPMount() {
	t := c.t
	resp := c.vaultWant(http.MethodGet, "/v1/corp-ldap/config", "", http.StatusOK)
	data, _ := resp["data"].(map[string]any)
	if _, ok := data["bindpass"]; ok {
		t.Error("GET corp-ldap/config shows bindpass")
	}
	seen := map[string]any{}
	for _, k := range []string{"binddn", "url", "userdn", "userattr", "password_policy", "connection_timeout", "request_timeout"} {
		seen[k] = data[k]
	}
	oldSameJSON(t, "corp-ldap/config", seen, `{"binddn":"cn=keel,dc=example,dc=org","url":"ldap://127.0.0.1:1",
		"userdn":"ou=users,dc=example,dc=org","userattr":"uid","password_policy":"corp-pw",
		"connection_timeout":2,"request_timeout":5}`)
	resp = c.vaultWant(http.MethodGet, "/v1/corp-ldap/role/app", "", http.StatusOK)
	oldSameJSON(t, "corp-ldap/role/app", resp["data"], oldLDAPRole)
	c.checkList("corp-ldap/role", "app")
	// The default ldap mount has no config.
	if status, b := c.vault(http.MethodGet, "/v1/ldap/config", ""); status != http.StatusNotFound {
		t.Errorf("GET ldap/config: status %d, want 404: %s", status, b)
	}
}

// oldNormGroup returns a group's data with null lists as empty ones (the
// server writes either for a group without members of a kind) and without
// alias.
func oldNormGroup(data any) any {
	m, _ := data.(map[string]any)
	delete(m, "alias")
	for _, k := range []string{"member_entity_ids", "member_group_ids", "parent_group_ids", "policies"} {
		if m[k] == nil {
			m[k] = []any{}
		}
	}
	return m
}

func (c oldDataClient) checkGroups() {
	t := c.t
	dbas := `{"id":"` + oldGroupDBAs + `","name":"dbas","type":"internal",
		"policies":["db-admin"],"member_entity_ids":["e-alice","e-bob"],"member_group_ids":[],
		"parent_group_ids":["` + oldGroupEngineering + `"],"metadata":{"team":"dba"},
		"creation_time":"2026-11-24T08:18:22.683607283Z","last_update_time":"2026-11-24T08:18:22.683607283Z","modify_index":1}`
	eng := `{"id":"` + oldGroupEngineering + `","name":"engineering","type":"internal",
		"policies":["default","eng"],"member_entity_ids":[],"member_group_ids":["` + oldGroupDBAs + `"],
		"parent_group_ids":[],"metadata":{},
		"creation_time":"2026-11-24T08:18:22.700179931Z","last_update_time":"2026-11-24T08:18:22.700179931Z","modify_index":1}`
	for _, g := range []struct{ path, want string }{
		{"name/dbas", dbas}, {"id/" + oldGroupDBAs, dbas},
		{"name/engineering", eng}, {"id/" + oldGroupEngineering, eng},
	} {
		resp := c.vaultWant(http.MethodGet, "/v1/identity/group/"+g.path, "", http.StatusOK)
		oldSameJSON(t, "group "+g.path, oldNormGroup(resp["data"]), g.want)
	}
	c.checkList("identity/group/name", "dbas", "engineering")
	c.checkList("identity/group/id", oldGroupDBAs, oldGroupEngineering)
}

func (c oldDataClient) checkPasswordPolicy() {
	t := c.t
	resp := c.vaultWant(http.MethodGet, "/v1/sys/policies/password/corp-pw", "", http.StatusOK)
	oldSameJSON(t, "password policy corp-pw", resp["data"], oldJSON(t, map[string]string{"policy": oldPasswordPolicy}))
	c.checkList("sys/policies/password", "corp-pw")
	resp = c.vaultWant(http.MethodGet, "/v1/sys/policies/password/corp-pw/generate", "", http.StatusOK)
	pw, _ := oldAt(resp, "data", "password").(string)
	digits := 0
	for _, r := range pw {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'a' && r <= 'z':
		default:
			t.Errorf("generated password %q has %q, outside the policy's charsets", pw, r)
		}
	}
	if len(pw) != 20 || digits < 2 || digits > 19 {
		t.Errorf("generated password %q: want 20 characters, at least 2 digits and 1 letter", pw)
	}
}

// oldAttrs returns the attributes names of the resource of a JSON:API
// document: those the old data stored (later versions render more).
func oldAttrs(doc map[string]any, names ...string) map[string]any {
	out := map[string]any{}
	for _, n := range names {
		out[n] = oldAt(doc, "data", "attributes", n)
	}
	return out
}

// oldIDs returns the ids of the resources of a JSON:API list document.
func oldIDs(doc map[string]any) []string {
	list, _ := doc["data"].([]any)
	out := []string{}
	for _, r := range list {
		id, _ := oldAt(r, "id").(string)
		out = append(out, id)
	}
	return out
}

func (c oldDataClient) checkOrganization() {
	t := c.t
	org := c.tfeGet("/api/v2/organizations/acme")
	oldSameJSON(t, "organization acme", map[string]any{
		"id": oldAt(org, "data", "id"), "attributes": oldAttrs(org, "name", "email", "created-at"),
		"default-project": oldAt(org, "data", "relationships", "default-project", "data", "id"),
	}, `{"id":"acme","attributes":{"name":"acme","email":"ops@acme.test","created-at":"2026-11-24T08:18:22.736Z"},
		"default-project":"`+oldDefaultProject+`"}`)
	if got := oldIDs(c.tfeGet("/api/v2/organizations")); !slices.Equal(got, []string{"acme"}) {
		t.Errorf("organizations %q, want [acme]", got)
	}

	prj := c.tfeGet("/api/v2/projects/" + oldProject)
	oldSameJSON(t, "project platform", map[string]any{
		"id": oldAt(prj, "data", "id"), "org": oldAt(prj, "data", "relationships", "organization", "data", "id"),
		"name": oldAt(prj, "data", "attributes", "name"), "description": oldAt(prj, "data", "attributes", "description"),
		"workspace-count": oldAt(prj, "data", "attributes", "workspace-count"), "team-count": oldAt(prj, "data", "attributes", "team-count"),
	}, `{"id":"`+oldProject+`","org":"acme","name":"platform","description":"shared infrastructure","workspace-count":1,"team-count":1}`)
	dflt := c.tfeGet("/api/v2/projects/" + oldDefaultProject)
	if name := oldAt(dflt, "data", "attributes", "name"); name != "Default Project" {
		t.Errorf("default project's name %v", name)
	}
	if got := oldIDs(c.tfeGet("/api/v2/organizations/acme/projects")); !slices.Equal(got, []string{oldDefaultProject, oldProject}) {
		t.Errorf("projects of acme %q, want %q", got, []string{oldDefaultProject, oldProject})
	}

	for _, path := range []string{"/api/v2/organizations/acme/workspaces/network", "/api/v2/workspaces/" + oldWorkspace} {
		ws := c.tfeGet(path)
		oldSameJSON(t, path, map[string]any{
			"id": oldAt(ws, "data", "id"), "attributes": oldAttrs(ws, "name", "created-at"),
			"org":     oldAt(ws, "data", "relationships", "organization", "data", "id"),
			"project": oldAt(ws, "data", "relationships", "project", "data", "id"),
		}, `{"id":"`+oldWorkspace+`","attributes":{"name":"network","created-at":"2026-11-24T08:18:22.771Z"},
			"org":"acme","project":"`+oldProject+`"}`)
	}
	if got := oldIDs(c.tfeGet("/api/v2/organizations/acme/workspaces?filter%5Bproject%5D%5Bid%5D=" + oldProject)); !slices.Equal(got, []string{oldWorkspace}) {
		t.Errorf("workspaces of platform %q, want [%s]", got, oldWorkspace)
	}
	if got := oldIDs(c.tfeGet("/api/v2/organizations/acme/workspaces")); !slices.Equal(got, []string{oldWorkspace, oldWorkspaceSBox}) {
		t.Errorf("workspaces of acme %q, want [%s %s]", got, oldWorkspace, oldWorkspaceSBox)
	}

	team := c.tfeGet("/api/v2/teams/" + oldTeam)
	oldSameJSON(t, "team ops", map[string]any{
		"id": oldAt(team, "data", "id"), "name": oldAt(team, "data", "attributes", "name"),
		"org": oldAt(team, "data", "relationships", "organization", "data", "id"),
	}, `{"id":"`+oldTeam+`","name":"ops","org":"acme"}`)
	access := c.tfeGet("/api/v2/team-projects?filter%5Bproject%5D%5Bid%5D=" + oldProject)
	list, _ := access["data"].([]any)
	if len(list) != 1 {
		t.Fatalf("team access to platform: %v", access["data"])
	}
	oldSameJSON(t, "team access to platform", map[string]any{
		"id": oldAt(list[0], "id"), "access": oldAt(list[0], "attributes", "access"),
		"team":    oldAt(list[0], "relationships", "team", "data", "id"),
		"project": oldAt(list[0], "relationships", "project", "data", "id"),
	}, `{"id":"tprj_`+oldTeam+`_`+oldProject+`","access":"maintain","team":"`+oldTeam+`","project":"`+oldProject+`"}`)
}

func (c oldDataClient) checkPolicies() {
	t := c.t
	for _, p := range []struct{ id, attrs, code string }{
		{oldPolicyTagsID, `{"name":"require-tags","description":"every resource is tagged","kind":"sentinel",
			"enforce":[{"path":"require-tags.policy","mode":"soft-mandatory"}],"enforcement-level":"soft-mandatory",
			"policy-set-count":0,"updated-at":"2026-11-24T08:18:22.862Z"}`, oldPolicyTags},
		{oldPolicyDenyID, `{"name":"deny-public","description":null,"kind":"opa","query":"data.terraform.deny",
			"enforce":[{"path":"deny-public.policy","mode":"mandatory"}],"enforcement-level":"mandatory",
			"policy-set-count":0,"updated-at":"2026-11-24T08:18:22.870Z"}`, oldPolicyDeny},
	} {
		doc := c.tfeGet("/api/v2/policies/" + p.id)
		oldSameJSON(t, "policy "+p.id, oldAt(doc, "data", "attributes"), p.attrs)
		if org := oldAt(doc, "data", "relationships", "organization", "data", "id"); org != "acme" {
			t.Errorf("policy %s: organization %v", p.id, org)
		}
		status, code := c.do(http.MethodGet, "/api/v2/policies/"+p.id+"/download", "", "Authorization", "Bearer "+oldRootToken)
		if status != http.StatusOK || string(code) != p.code {
			t.Errorf("download of policy %s: status %d, %q; want 200, %q", p.id, status, code, p.code)
		}
	}
	if got := oldIDs(c.tfeGet("/api/v2/organizations/acme/policies")); !slices.Equal(got, []string{oldPolicyDenyID, oldPolicyTagsID}) {
		t.Errorf("policies of acme %q, want %q (name order)", got, []string{oldPolicyDenyID, oldPolicyTagsID})
	}
}

package vault_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"

	"github.com/keelhq/keel/storage/memstore"
)

// Vault's answers where the spec is silent (issue 19, item 3): each
// changed answer is checked through vault/api in its default
// configuration, or over raw HTTP where the client hides it (a 404's
// body, a status it takes as success).

// send sends method path with body (JSON, or nil) and headers (name,
// value, …) to e's server with token in X-Vault-Token, and returns the
// status and the body.
func send(t *testing.T, e *env, method, path, token string, body any, headers ...string) (int, string) {
	t.Helper()
	var r *strings.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = strings.NewReader(string(b))
	} else {
		r = strings.NewReader("")
	}
	req, err := http.NewRequest(method, e.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Vault-Token", token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// vaultErrors returns the errors list of a vault/api error, and its
// status.
func vaultErrors(err error) (int, []string) {
	var re *api.ResponseError
	if !errors.As(err, &re) {
		return 0, nil
	}
	return re.StatusCode, re.Errors
}

// TestGroupListKeyInfo: LIST identity/group/id answers key_info, each id's
// name and numbers of member entities and parent groups, as Vault's; LIST
// by name answers the names without key_info, as Vault's (whose key_info
// is keyed by id and kept only for the keys listed).
func TestGroupListKeyInfo(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.defaultClient(t, rootToken).Logical()
	child, err := c.Write("identity/group/name/child", map[string]any{"member_entity_ids": []string{"e1", "e2"}})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := c.Write("identity/group/name/parent", map[string]any{"member_group_ids": []string{child.Data["id"].(string)}})
	if err != nil {
		t.Fatal(err)
	}
	childID, parentID := child.Data["id"].(string), parent.Data["id"].(string)

	s, err := c.List("identity/group/id")
	if err != nil || s == nil {
		t.Fatalf("list by id: %v, %v", s, err)
	}
	ids := toStrings(s.Data["keys"].([]any))
	slices.Sort(ids)
	want := []string{childID, parentID}
	slices.Sort(want)
	if !slices.Equal(ids, want) || s.MountType != "identity" {
		t.Fatalf("list by id: keys %q, mount_type %q", ids, s.MountType)
	}
	info, _ := s.Data["key_info"].(map[string]any)
	ci, _ := info[childID].(map[string]any)
	pi, _ := info[parentID].(map[string]any)
	if ci["name"] != "child" || ci["num_member_entities"] != json.Number("2") || ci["num_parent_groups"] != json.Number("1") {
		t.Errorf("key_info of child = %v", ci)
	}
	if pi["name"] != "parent" || pi["num_member_entities"] != json.Number("0") || pi["num_parent_groups"] != json.Number("0") {
		t.Errorf("key_info of parent = %v", pi)
	}

	s, err = c.List("identity/group/name")
	if err != nil || s == nil {
		t.Fatalf("list by name: %v, %v", s, err)
	}
	if _, ok := s.Data["key_info"]; ok || len(s.Data["keys"].([]any)) != 2 {
		t.Errorf("list by name = %v, want the names and no key_info", s.Data)
	}

	// Empty: 404 with an empty errors list, which the client reads as nothing.
	for _, id := range []string{childID, parentID} {
		if _, err := c.Delete("identity/group/id/" + id); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := c.List("identity/group/id"); s != nil || err != nil {
		t.Errorf("empty list by id = %v, %v; want nothing", s, err)
	}
	if status, body := send(t, e, "LIST", "/v1/identity/group/id", rootToken, nil); status != 404 || body != `{"errors":[]}` {
		t.Errorf("empty list by id: %d %s", status, body)
	}
}

// TestGroupReadNulls: the members the spec allows to be null read as null
// when empty (member_group_ids, parent_group_ids), as Vault's; the others
// keep the spec's types ([] and {}).
func TestGroupReadNulls(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.defaultClient(t, rootToken).Logical()
	if _, err := c.Write("identity/group/name/lone", nil); err != nil {
		t.Fatal(err)
	}
	status, body := send(t, e, "GET", "/v1/identity/group/name/lone", rootToken, nil)
	for _, want := range []string{`"member_group_ids":null`, `"parent_group_ids":null`, `"policies":[]`,
		`"member_entity_ids":[]`, `"metadata":{}`, `"alias":{}`} {
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("read: %d %s; want %s", status, body, want)
		}
	}
}

// TestPasswordPolicyVaultAnswers: a policy sent in base64 is decoded and
// stored as text, as Vault's; a missing policy answers 404 "policy does
// not exist" to a read and to generate.
func TestPasswordPolicyVaultAnswers(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.defaultClient(t, rootToken).Logical()
	const text = "length = 12\nrule \"charset\" { charset = \"abc\" }"
	if _, err := c.Write("sys/policies/password/b64", map[string]any{"policy": base64.StdEncoding.EncodeToString([]byte(text))}); err != nil {
		t.Fatalf("write of a base64 policy: %v", err)
	}
	s, err := c.Read("sys/policies/password/b64")
	if err != nil || s == nil || s.Data["policy"] != text {
		t.Fatalf("read = %v, %v; want the decoded text", s, err)
	}
	g, err := c.Read("sys/policies/password/b64/generate")
	if pw, _ := g.Data["password"].(string); err != nil || len(pw) != 12 || strings.Trim(pw, "abc") != "" {
		t.Fatalf("generate = %v, %v", g, err)
	}
	// Base64 of something that is not a policy is refused as a policy.
	_, err = c.Write("sys/policies/password/bad", map[string]any{"policy": base64.StdEncoding.EncodeToString([]byte("length = 2"))})
	wantField(t, err, "policy", "length must be")
	// Base64 of bytes that are not text is a client's mistake: 400, never 500.
	_, err = c.Write("sys/policies/password/bad", map[string]any{"policy": base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0, 1})})
	if status, _ := vaultErrors(err); status != http.StatusBadRequest {
		t.Errorf("write of base64 binary: %v; want 400", err)
	}

	// The client reads a 404 as nothing: the body is checked over HTTP.
	if s, err := c.Read("sys/policies/password/nope"); s != nil || err != nil {
		t.Errorf("read of a missing policy = %v, %v", s, err)
	}
	for _, path := range []string{"/v1/sys/policies/password/nope", "/v1/sys/policies/password/nope/generate"} {
		if status, body := send(t, e, "GET", path, rootToken, nil); status != 404 || body != `{"errors":["policy does not exist"]}` {
			t.Errorf("GET %s: %d %s", path, status, body)
		}
	}
}

// TestKVFolderRead: a read of a kv mount's root or of a path ending in "/"
// answers 404 with an empty errors list, as Vault's (the client reads
// nothing); 403 to a caller without read on it.
func TestKVFolderRead(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.defaultClient(t, rootToken)
	if err := c.KVv1("secret").Put(context.Background(), "app/db", map[string]any{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"secret", "secret/", "secret/app/"} {
		if s, err := c.Logical().Read(path); s != nil || err != nil {
			t.Errorf("read %s = %v, %v; want nothing", path, s, err)
		}
		if status, body := send(t, e, "GET", "/v1/"+path, rootToken, nil); status != 404 || body != `{"errors":[]}` {
			t.Errorf("GET %s: %d %s; want 404 {\"errors\":[]}", path, status, body)
		}
		if status, body := send(t, e, "GET", "/v1/"+path, "", nil); status != 403 || body != `{"errors":["permission denied"]}` {
			t.Errorf("GET %s without a token: %d %s; want 403", path, status, body)
		}
	}
}

// TestPatch: PATCH answers as Vault's on paths without a patch operation:
// 400 without a Content-Type that parses, 415 with another media type than
// application/merge-patch+json, 405 with it (what vault/api's
// JSONMergePatch gets).
func TestPatch(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.defaultClient(t, rootToken)
	for _, path := range []string{"/v1/secret/app/db", "/v1/identity/group/name/g", "/v1/sys/mounts/secret", "/v1/nowhere/x"} {
		for _, tc := range []struct {
			contentType string
			status      int
			msg         string
		}{
			{"", 400, "mime: no media type"},
			{"application/json", 415, "PATCH requires Content-Type of application/merge-patch+json, provided application/json"},
			{"application/merge-patch+json; charset=utf-8", 405, "unsupported operation"},
		} {
			status, body := send(t, e, "PATCH", path, rootToken, map[string]any{"a": "b"}, "Content-Type", tc.contentType)
			var got struct{ Errors []string }
			json.Unmarshal([]byte(body), &got)
			if status != tc.status || !slices.Equal(got.Errors, []string{tc.msg}) {
				t.Errorf("PATCH %s (%q): %d %s; want %d %q", path, tc.contentType, status, body, tc.status, tc.msg)
			}
		}
	}
	_, err := c.Logical().JSONMergePatch(context.Background(), "secret/app/db", map[string]any{"a": "b"})
	if status, _ := vaultErrors(err); status != http.StatusMethodNotAllowed {
		t.Errorf("JSONMergePatch: %v; want 405", err)
	}
}

// TestLeaseVaultAnswers: renew takes increment as seconds, a duration
// string or days ("7d"); a leased kv read's renewal answers the secret's
// data; its warnings print durations as Vault's ("2h", not "2h0m0s");
// a request without lease id answers Vault's "lease_id must be
// specified"; revoking an unknown id succeeds (202, or 204 with sync);
// tidy answers 202 with Vault's warning.
func TestLeaseVaultAnswers(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	c := e.defaultClient(t, rootToken)
	ctx := context.Background()
	if err := c.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"},
		Config: api.MountConfigInput{MaxLeaseTTL: "1h"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.KVv1("leased").Put(ctx, "db", map[string]any{"password": "p", "ttl": "5m"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.KVv1("leased").Get(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	id := s.Raw.LeaseID

	for _, inc := range []any{"10m", "600", 600, "600s"} {
		r, err := c.Logical().Write("sys/leases/renew", map[string]any{"lease_id": id, "increment": inc})
		if err != nil || r.LeaseDuration != 600 || r.LeaseID != id || len(r.Warnings) != 0 {
			t.Errorf("renew with increment %#v = %+v, %v; want 600 seconds", inc, r, err)
		}
	}
	// As Vault: the renewal of a leased kv read answers the secret read
	// anew.
	if err := c.KVv1("leased").Put(ctx, "db", map[string]any{"password": "q", "ttl": "5m"}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Sys().Renew(id, 60); err != nil || r.Data["password"] != "q" || r.LeaseDuration != 60 {
		t.Errorf("renew of a leased kv read = %+v, %v; want the secret's current data", r, err)
	}
	// Days, as Vault's parseutil reads them: capped at the max TTL.
	if r, err := c.Logical().Write("sys/leases/renew", map[string]any{"lease_id": id, "increment": "7d"}); err != nil ||
		!slices.Equal(r.Warnings, []string{`TTL of "168h" exceeded the effective max_ttl of "1h"; TTL value is capped accordingly`}) {
		t.Errorf("renew with increment 7d = %+v, %v", r, err)
	}
	// Vault prints whole hours without minutes: 32 days are "768h".
	if r, err := c.Sys().Renew(id, 32*24*3600); err != nil ||
		!slices.Equal(r.Warnings, []string{`TTL of "768h" exceeded the effective max_ttl of "1h"; TTL value is capped accordingly`}) {
		t.Errorf("renew by 32 days = %+v, %v", r, err)
	}
	r, err := c.Sys().Renew(id, 7200)
	if err != nil || r.LeaseDuration != 3600 ||
		!slices.Equal(r.Warnings, []string{`TTL of "2h" exceeded the effective max_ttl of "1h"; TTL value is capped accordingly`}) {
		t.Errorf("capped renew = %+v, %v", r, err)
	}
	e.clock.Advance(1500 * time.Millisecond)
	r, err = c.Sys().Renew(id, 7200)
	if err != nil || !slices.Equal(r.Warnings, []string{`TTL of "2h" exceeded the effective max_ttl of "59m58s"; TTL value is capped accordingly`}) {
		t.Errorf("capped renew after 1.5s = %+v, %v", r, err)
	}

	for _, path := range []string{"sys/leases/renew", "sys/leases/revoke", "sys/leases/lookup"} {
		_, err := c.Logical().Write(path, nil)
		if status, msgs := vaultErrors(err); status != 400 || !slices.Equal(msgs, []string{"lease_id must be specified"}) {
			t.Errorf("%s without lease_id: %v", path, err)
		}
	}

	if status, body := send(t, e, "PUT", "/v1/sys/leases/revoke", rootToken, map[string]any{"lease_id": "leased/nope/x"}); status != 202 || body != "" {
		t.Errorf("queued revoke of an unknown lease: %d %s; want 202", status, body)
	}
	if err := c.Sys().RevokeWithOptions(&api.RevokeOptions{LeaseID: "leased/nope/x", Sync: true}); err != nil {
		t.Errorf("sync revoke of an unknown lease: %v", err)
	}

	// Revoke and revoke-prefix are queued by default (the spec): 202.
	if status, body := send(t, e, "PUT", "/v1/sys/leases/revoke", rootToken, map[string]any{"lease_id": id}); status != 202 || body != "" {
		t.Errorf("queued revoke of a lease: %d %s; want 202", status, body)
	}
	if status, body := send(t, e, "PUT", "/v1/sys/leases/revoke-prefix/leased/", rootToken, nil); status != 202 || body != "" {
		t.Errorf("queued revoke-prefix: %d %s; want 202", status, body)
	}

	tidy, err := c.Logical().Write("sys/leases/tidy", nil)
	if err != nil || tidy == nil ||
		!slices.Equal(tidy.Warnings, []string{"Tidy operation successfully started. Any information from the operation will be printed to Vault's server logs."}) {
		t.Errorf("tidy = %+v, %v", tidy, err)
	}
	if status, _ := send(t, e, "POST", "/v1/sys/leases/tidy", rootToken, nil); status != http.StatusAccepted {
		t.Errorf("tidy: %d, want 202", status)
	}
}

// TestUnsupportedOperations: a path of the adapter's own routes asked with
// a method it does not serve answers Vault's 405 "unsupported operation"
// (not the catch-all's 404), and a subtree's path without its final slash
// is not redirected: a listing of it lists the path with the slash, as
// Vault lists "p/" when asked for "p", and any other method is 405.
func TestUnsupportedOperations(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	for _, tc := range []struct{ method, path string }{
		{"DELETE", "/v1/sys/leases/tidy"},
		{"GET", "/v1/sys/leases/renew"},
		{"LIST", "/v1/sys/mounts"},
		{"POST", "/v1/sys/mounts"},
		{"DELETE", "/v1/sys/mounts"},
		{"PUT", "/v1/sys/leases/revoke-prefix"},
		{"PUT", "/v1/sys/leases/revoke-force"},
		{"GET", "/v1/sys/leases/revoke/x"},
		{"POST", "/v1/sys/internal/ui/mounts/secret"},
		{"DELETE", "/v1/identity/group/id"},
		{"POST", "/v1/identity/group/name"},
		{"PUT", "/v1/sys/policies/password"},
	} {
		status, body := send(t, e, tc.method, tc.path, rootToken, nil)
		var got struct{ Errors []string }
		json.Unmarshal([]byte(body), &got)
		if status != http.StatusMethodNotAllowed || !slices.Equal(got.Errors, []string{"unsupported operation"}) {
			t.Errorf("%s %s: %d %s; want 405 unsupported operation", tc.method, tc.path, status, body)
		}
	}
	c := e.defaultClient(t, rootToken)
	if err := c.Sys().Mount("leased", &api.MountInput{Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.KVv1("leased").Put(context.Background(), "db", map[string]any{"password": "p", "ttl": "5m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KVv1("leased").Get(context.Background(), "db"); err != nil {
		t.Fatal(err)
	}
	wantStatus, want := send(t, e, "LIST", "/v1/sys/leases/lookup/", rootToken, nil)
	if wantStatus != http.StatusOK || !strings.Contains(want, `"leased/"`) {
		t.Fatalf("LIST sys/leases/lookup/: %d %s", wantStatus, want)
	}
	for _, method := range []string{"LIST", "GET?list=true"} {
		m, query, _ := strings.Cut(method, "?")
		status, body := send(t, e, m, "/v1/sys/leases/lookup?"+query, rootToken, nil)
		var got, exp struct{ Data any }
		json.Unmarshal([]byte(body), &got)
		json.Unmarshal([]byte(want), &exp)
		if status != wantStatus || fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Errorf("%s sys/leases/lookup: %d %s; want the listing of sys/leases/lookup/, %d %s", method, status, body, wantStatus, want)
		}
	}
}

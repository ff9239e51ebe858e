package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestGroupRightsHoldForEverySpelling: a deny rule of the configuration on
// the group "Admins" holds through the Vault dialect for every spelling of
// the name (group names are case-insensitive): the limited caller can
// neither read, change nor delete the group as ADMINS or admins.
func TestGroupRightsHoldForEverySpelling(t *testing.T) {
	cfg := writeFile(t, "config.json", `{
		"policies": {"limited": [
			{"path": "identity/group/name/*", "capabilities": ["create", "read", "update", "delete"]},
			{"path": "identity/group/name/Admins", "capabilities": ["deny"]}
		]},
		"tokens": [{"token": "t-limited", "principal": {"id": "l"}, "policies": ["limited"]}]
	}`)
	ts := start(t, hooks{}, "-data", "memory", "-config", cfg, "-root-token", "root-t")
	do := func(method, path, token, body string) int {
		req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Vault-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do(http.MethodPost, "/v1/identity/group/name/admins", "root-t", `{"policies":["admin"]}`); code >= 300 {
		t.Fatalf("root creates admins: %d", code)
	}
	for _, spelling := range []string{"Admins", "ADMINS", "admins"} {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			if code := do(m, "/v1/identity/group/name/"+spelling, "t-limited", `{"member_entity_ids":["me"]}`); code != http.StatusForbidden {
				t.Errorf("%s %s by the limited caller: %d, want 403", m, spelling, code)
			}
		}
	}
	if code := do(http.MethodGet, "/v1/identity/group/name/ADMINS", "root-t", ""); code != http.StatusOK {
		t.Fatalf("the group after the refused requests: %d", code)
	}
}

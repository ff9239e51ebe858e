package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestRateLimitQuotasApplyToVaultRequests: a rate-limit quota written
// through sys/quotas/rate-limit applies to the Vault dialect's requests
// of the server, from the connection's address: beyond the rate, 429 with
// Retry-After before the request acts; the Consul and HCP Terraform
// dialects' paths and Vault's exempt paths are never limited.
func TestRateLimitQuotasApplyToVaultRequests(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", "root-t")
	do := func(method, path, body string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Vault-Token", "root-t")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	if status, _, body := do("PUT", "/v1/sys/quotas/rate-limit/kv", `{"path":"secret/","rate":2,"interval":"1h"}`); status != http.StatusNoContent {
		t.Fatalf("quota write: %d %s", status, body)
	}
	for i := range 2 {
		if status, _, body := do("PUT", "/v1/secret/app", `{"a":"b"}`); status != http.StatusNoContent {
			t.Fatalf("write %d: %d %s", i+1, status, body)
		}
	}
	status, h, body := do("PUT", "/v1/secret/app", `{"a":"changed"}`)
	after, _ := strconv.Atoi(h.Get("Retry-After"))
	if status != http.StatusTooManyRequests || after < 1 || after > 3600 ||
		body != `{"errors":["request path \"secret/app\": rate limit quota exceeded"]}`+"\n" {
		t.Fatalf("beyond the rate: %d %v %s", status, h, body)
	}
	if status, _, body := do("GET", "/v1/sys/mounts", ""); status != http.StatusOK {
		t.Fatalf("a path under no quota: %d %s", status, body)
	}
	// Once the quota is deleted, the secret is the one written before
	// it ran out: the refused write did not act.
	if status, _, body := do("DELETE", "/v1/sys/quotas/rate-limit/kv", ""); status != http.StatusNoContent {
		t.Fatalf("quota delete: %d %s", status, body)
	}
	if status, _, body := do("GET", "/v1/secret/app", ""); status != http.StatusOK || !strings.Contains(body, `"a":"b"`) {
		t.Fatalf("read after the quota's deletion: %d %s", status, body)
	}

	if status, _, body := do("PUT", "/v1/sys/quotas/rate-limit/global", `{"rate":1,"interval":"1h"}`); status != http.StatusNoContent {
		t.Fatalf("global quota write: %d %s", status, body)
	}
	do("GET", "/v1/sys/mounts", "")
	if status, _, _ := do("GET", "/v1/sys/mounts", ""); status != http.StatusTooManyRequests {
		t.Fatalf("under the global quota: %d", status)
	}
	for range 3 {
		for _, path := range []string{"/v1/peerings", "/v1/peering/x", "/v1/sys/health", "/api/v2/ping"} {
			if status, _, body := do("GET", path, ""); status == http.StatusTooManyRequests {
				t.Fatalf("%s limited: %s", path, body)
			}
		}
	}
}

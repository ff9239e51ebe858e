package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// The Vault adapter is mounted: a secret written with the root token is
// read back, refused without a token, and still there after a restart on
// the same file.
func TestVaultAdapterIsMounted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "keel.db")
	ts := start(t, hooks{}, "-data", db, "-root-token", "root-t")
	put := func(ts *testServer, token string) int {
		req, err := http.NewRequest(http.MethodPut, ts.url+"/v1/secret/app", strings.NewReader(`{"password":"p"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Secrets-Token", token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := put(ts, "not-a-token"); status != http.StatusForbidden {
		t.Fatalf("write without a known token: %d, want 403", status)
	}
	if status := put(ts, "root-t"); status != http.StatusNoContent {
		t.Fatalf("write with the root token: %d, want 204", status)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}

	ts = start(t, hooks{}, "-data", db, "-root-token", "root-t")
	status, body := ts.get("/v1/secret/app", "X-Secrets-Token", "root-t")
	if status != http.StatusOK || !strings.Contains(string(body), `"password":"p"`) {
		t.Fatalf("read after restart: %d %s", status, body)
	}
}

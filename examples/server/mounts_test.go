package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

// do sends method path with body and the token "root-t", and returns the
// status.
func (ts *testServer) do(method, path, body string) int {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("X-Secrets-Token", "root-t")
	resp, err := client.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRefusedMountsDoNotBrickTheServer: the mounts that used to be saved
// before their checks ran (and stopped the server at its next start) are
// refused with 400, the server restarts on the same file and serves every
// other mount; a mount made invalid by hand in the file is not served and
// the rest is.
func TestRefusedMountsDoNotBrickTheServer(t *testing.T) {
	data := filepath.Join(t.TempDir(), "keel.db")
	args := []string{"-data", data, "-root-token", "root-t"}
	ts := start(t, hooks{}, args...)
	if got := ts.do("PUT", "/v1/secret/app", `{"password":"p"}`); got != http.StatusNoContent {
		t.Fatalf("write: %d", got)
	}
	for _, c := range []struct{ path, body string }{
		{"poison1", `{"type":"kv","config":{"max_lease_ttl":"100000h"}}`},
		{"poison2", `{"type":"kv","config":{"default_lease_ttl":"9223372037"}}`},
		{"poison3", `{"type":"kv","config":{"default_lease_ttl":"18446744074"}}`},
		{"a..b", `{"type":"kv"}`},
		{"a%01b", `{"type":"kv"}`},
		{"x%7f", `{"type":"kv"}`},
		{strings.Repeat("p", 300), `{"type":"kv"}`},
	} {
		if got := ts.do("POST", "/v1/sys/mounts/"+c.path, c.body); got != http.StatusBadRequest {
			t.Errorf("POST sys/mounts/%.20s: %d, want 400", c.path, got)
		}
	}
	if got := ts.do("POST", "/v1/sys/mounts/team-a", `{"type":"kv"}`); got != http.StatusNoContent {
		t.Fatalf("a good mount: %d", got)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}

	// Break team-a/ by hand, as an older version or an editor could.
	s, err := boltstore.Open(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		raw, err := tx.Get("sys/mounts")
		if err != nil {
			return err
		}
		var entries []map[string]any
		if err := json.Unmarshal(raw, &entries); err != nil {
			return err
		}
		if len(entries) != 4 {
			t.Errorf("stored table holds %d mounts, want 4: %s", len(entries), raw)
		}
		for _, e := range entries {
			if e["path"] == "team-a/" {
				e["path"] = "team..a/"
			}
		}
		raw, _ = json.Marshal(entries)
		return tx.Put("sys/mounts", raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ts = start(t, hooks{}, args...)
	if status, body := ts.get("/v1/secret/app", "X-Secrets-Token", "root-t"); status != http.StatusOK || !strings.Contains(string(body), `"password":"p"`) {
		t.Fatalf("read after restart: %d %s", status, body)
	}
	if status, _ := ts.get("/v1/team..a/x", "X-Secrets-Token", "root-t"); status == http.StatusOK {
		t.Fatal("the broken mount is served")
	}
	if !strings.Contains(ts.stderr.String(), "mount not served") || !strings.Contains(ts.stderr.String(), "team..a/") {
		t.Fatalf("the broken mount is not reported:\n%s", ts.stderr)
	}
	status, body := ts.get("/v1/sys/mounts", "X-Secrets-Token", "root-t")
	var list struct {
		Data map[string]struct {
			Type  string `json:"type"`
			Error string `json:"error"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); status != http.StatusOK || err != nil {
		t.Fatalf("GET sys/mounts: %d %v %s", status, err, body)
	}
	if broken := list.Data["team..a/"]; broken.Type != "kv" || !strings.Contains(broken.Error, "Path") {
		t.Fatalf("the broken mount is listed as %+v, want kv with its error", broken)
	}
	if ok := list.Data["secret/"]; ok.Type != "kv" || ok.Error != "" {
		t.Fatalf("secret/ listed as %+v", ok)
	}
	// Unmounting it removes it.
	if got := ts.do("DELETE", "/v1/sys/mounts/team..a", ""); got != http.StatusNoContent {
		t.Fatalf("DELETE of the broken mount: %d", got)
	}
	if _, body := ts.get("/v1/sys/mounts", "X-Secrets-Token", "root-t"); strings.Contains(string(body), "team..a/") {
		t.Fatalf("the broken mount is still listed: %s", body)
	}
}

// TestConsulPathsAreReserved: no mount is enabled at, above or below a
// path the Consul dialect serves under /v1/ (it would be partly
// unreachable); the refusal names the path; a path beside them is
// mounted.
func TestConsulPathsAreReserved(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", "root-t")
	for _, p := range []string{"peering", "peerings", "config", "internal", "peering/x", "config/exported-services"} {
		if got := ts.do("POST", "/v1/sys/mounts/"+p, `{"type":"kv"}`); got != http.StatusBadRequest {
			t.Errorf("mount at %s: %d, want 400", p, got)
		}
	}
	if got := ts.do("POST", "/v1/sys/mounts/configs", `{"type":"kv"}`); got != http.StatusNoContent {
		t.Errorf("mount at configs: %d, want 204", got)
	}
	if got := ts.do("GET", "/v1/peerings", ""); got != http.StatusOK {
		t.Errorf("GET /v1/peerings after the refusals: %d, want 200 (Consul's)", got)
	}
}

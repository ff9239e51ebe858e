package vault_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"
	"github.com/keelhq/keel"
	"github.com/keelhq/keel/examples/httpapi/vault"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/ratelimit"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// rateEnv is a Vault dialect server whose requests pass LimitRate first,
// the limiter on a fake clock.
type rateEnv struct {
	srv   *httptest.Server
	clock *keel.FakeClock
}

func newRateEnv(t *testing.T) *rateEnv {
	t.Helper()
	ctx := context.Background()
	store := memstore.New(nil)
	clock := keel.NewFakeClock(t0)
	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Clock: clock, Defaults: mount.VaultDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	rl, err := ratelimit.Open(ctx, storage.Sub(store, "ratelimit/"), &ratelimit.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rl.Close() })
	mux := http.NewServeMux()
	vault.New(table, &vault.Options{Clock: clock, Server: testServer, RateLimits: rl}).Register(mux)
	limited := vault.LimitRate(rl, mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := principals[vault.RequestToken(r)]; ok {
			r = r.WithContext(keel.WithPrincipal(r.Context(), p))
		}
		limited.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &rateEnv{srv: srv, clock: clock}
}

func (e *rateEnv) client(t *testing.T) *api.Client {
	t.Helper()
	t.Setenv("VAULT_ADDR", e.srv.URL)
	t.Setenv("VAULT_TOKEN", rootToken)
	c, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRateLimitQuotaRoutes: sys/quotas/rate-limit round trip with Vault's
// client in its default configuration: Vault's fields and read shape,
// LIST, 404 on a missing quota, 204 on deleting one, and the refusals of a
// malformed write named by Vault's field names.
func TestRateLimitQuotaRoutes(t *testing.T) {
	e := newRateEnv(t)
	c := e.client(t).Logical()
	if _, err := c.Write("sys/quotas/rate-limit/kv", map[string]any{"path": "secret/", "rate": 12.5, "interval": "1m", "block_interval": 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write("sys/quotas/rate-limit/global", map[string]any{"rate": "1000"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Read("sys/quotas/rate-limit/kv")
	if err != nil || s == nil {
		t.Fatalf("read: %v, %v", s, err)
	}
	want := map[string]any{"name": "kv", "path": "secret/", "type": "rate-limit", "role": "", "inheritable": false,
		"rate": json.Number("12.5"), "interval": json.Number("60"), "block_interval": json.Number("30")}
	if len(s.Data) != len(want) {
		t.Fatalf("read: %v, want %v", s.Data, want)
	}
	for k, v := range want {
		if s.Data[k] != v {
			t.Fatalf("read: %s is %v, want %v", k, s.Data[k], v)
		}
	}
	g, err := c.Read("sys/quotas/rate-limit/global")
	if err != nil || g.Data["inheritable"] != true || g.Data["interval"] != json.Number("1") || g.Data["path"] != "" {
		t.Fatalf("read of the global quota: %v, %v", g, err)
	}
	list, err := c.List("sys/quotas/rate-limit")
	if err != nil || list == nil || !slices.Equal(toStrings(list.Data["keys"].([]any)), []string{"global", "kv"}) {
		t.Fatalf("list: %v, %v", list, err)
	}
	for body, wire := range map[string]string{
		`{"rate": 0}`:                       "rate: ",
		`{"path": "secret/"}`:               "rate: ",
		`{"rate": 1, "block_interval": -5}`: "block_interval: ",
		`{"rate": 1, "path": "a/b*"}`:       "path: ",
		`{"rate": 1, "path": "secret"}`:     "path: ",
		`{"rate": 1, "group_by": "ip"}`:     "group_by: ",
		`{"rate": 1, "role": "r"}`:          "role: ",
		`{"rate": 1, "inheritable": false}`: "inheritable: ",
		`{"rate": "fast"}`:                  "rate: ",
	} {
		status, _, errs := e.raw(t, "PUT", "sys/quotas/rate-limit/bad", body)
		if status != http.StatusBadRequest || len(errs) != 1 || !strings.HasPrefix(errs[0], wire) {
			t.Errorf("write %s: %d %q, want 400 naming %q", body, status, errs, wire)
		}
	}
	if s, err := c.Read("sys/quotas/rate-limit/bad"); err != nil || s != nil {
		t.Fatalf("a refused write stored %v, %v", s, err)
	}
	if _, err := c.Delete("sys/quotas/rate-limit/kv"); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Read("sys/quotas/rate-limit/kv"); err != nil || s != nil {
		t.Fatalf("read after delete: %v, %v", s, err)
	}
	if _, err := c.Delete("sys/quotas/rate-limit/kv"); err != nil {
		t.Fatalf("delete of a missing quota: %v", err)
	}
}

// raw sends a request with the root token and returns the answer's status,
// headers and errors list.
func (e *rateEnv) raw(t *testing.T, method, path, body string) (int, http.Header, []string) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+"/v1/"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Vault-Token", rootToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var eb struct{ Errors []string }
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &eb); err != nil {
			t.Fatalf("%s %s: %d %q", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, resp.Header, eb.Errors
}

// TestRateLimitRefusesWith429: with a quota written by Vault's client in
// its default configuration, a burst beyond the rate answers 429 with
// Vault's message, Retry-After and the X-Ratelimit headers, to the
// client too (after its own retries, which the fake clock keeps
// refused); once the window has passed, the same read succeeds. A blocked
// client gets Retry-After until its block ends.
func TestRateLimitRefusesWith429(t *testing.T) {
	e := newRateEnv(t)
	c := e.client(t)
	ctx := context.Background()
	if _, err := c.Logical().Write("sys/quotas/rate-limit/kv", map[string]any{"path": "secret", "rate": 3, "interval": "10s"}); err != nil {
		t.Fatal(err)
	}
	kv := c.KVv1("secret")
	if err := kv.Put(ctx, "x", map[string]any{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := kv.Get(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(4 * time.Second)
	status, h, errs := e.raw(t, "GET", "secret/x", "")
	if status != http.StatusTooManyRequests || !slices.Equal(errs, []string{`request path "secret/x": rate limit quota exceeded`}) {
		t.Fatalf("beyond the rate: %d %q", status, errs)
	}
	for k, v := range map[string]string{"Retry-After": "6", "X-Ratelimit-Limit": "3", "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "6"} {
		if h.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, h.Get(k), v)
		}
	}
	if _, err := c.Logical().Read("sys/mounts"); err != nil {
		t.Fatalf("a path under no quota: %v", err)
	}
	_, err := kv.Get(ctx, "x")
	if statusOf(err) != http.StatusTooManyRequests || !strings.Contains(err.Error(), "rate limit quota exceeded") {
		t.Fatalf("Vault's client beyond the rate: %v", err)
	}
	e.clock.Advance(6 * time.Second)
	if s, err := kv.Get(ctx, "x"); err != nil || s.Data["a"] != "b" {
		t.Fatalf("after the window: %v, %v", s, err)
	}

	if _, err := c.Logical().Write("sys/quotas/rate-limit/mounts", map[string]any{"path": "sys/mounts", "rate": 1, "block_interval": "1m"}); err != nil {
		t.Fatal(err)
	}
	e.raw(t, "GET", "sys/mounts", "")
	status, h, _ = e.raw(t, "GET", "sys/mounts", "")
	if status != http.StatusTooManyRequests || h.Get("Retry-After") != "60" || h.Get("X-Ratelimit-Limit") != "" {
		t.Fatalf("blocked: %d %v", status, h)
	}
	e.clock.Advance(59 * time.Second)
	if status, h, _ = e.raw(t, "GET", "sys/mounts", ""); status != http.StatusTooManyRequests || h.Get("Retry-After") != "1" {
		t.Fatalf("still blocked: %d %v", status, h)
	}
	e.clock.Advance(time.Second)
	if status, _, _ = e.raw(t, "GET", "sys/mounts", ""); status != http.StatusOK {
		t.Fatalf("after the block: %d", status)
	}
	if status, _, _ = e.raw(t, "GET", "sys/health", ""); status != http.StatusOK {
		t.Fatalf("an exempt path: %d", status)
	}
}

package vault_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage/memstore"
)

// TestIrrevocableListWarning: the adapter renders a page of
// lease.Manager.ListIrrevocable cut at the limit (a page with a Next) as
// Vault's warning, word for word, and only then; it accepts
// include_child_namespaces as a boolean (which changes nothing) and
// refuses anything else, as Vault.
func TestIrrevocableListWarning(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	iss, err := e.leases.Register(lease.Mount{Path: "test/", Revoker: failingEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		l, err := iss.Issue(ctx, lease.IssueRequest{Path: "test/creds/app", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.leases.Revoke(ctx, l.ID, true); err == nil {
			t.Fatal("revocation did not fail")
		}
	}
	get := func(query string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/sys/leases?type=irrevocable"+query, nil)
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
		return resp.StatusCode, body
	}
	const halted = `["Command halted because many irrevocable leases were found. To emit the entire list, re-run the command with force set true."]`
	for query, want := range map[string]struct {
		count    int
		warnings string
	}{
		"":                                       {3, "null"},
		"&limit=3":                               {3, "null"},
		"&limit=none":                            {3, "null"},
		"&limit=2":                               {2, halted},
		"&limit=1&include_child_namespaces=true": {1, halted},
		"&include_child_namespaces=false":        {3, "null"},
	} {
		status, body := get(query)
		var r struct {
			Data struct {
				LeaseCount int   `json:"lease_count"`
				Leases     []any `json:"leases"`
			} `json:"data"`
			Warnings json.RawMessage `json:"warnings"`
		}
		if err := json.Unmarshal(body, &r); status != http.StatusOK || err != nil {
			t.Fatalf("%q: %d %s (%v)", query, status, body, err)
		}
		if r.Data.LeaseCount != want.count || len(r.Data.Leases) != want.count || string(r.Warnings) != want.warnings {
			t.Errorf("%q: %d leases (lease_count %d), warnings %s; want %d, %s", query, len(r.Data.Leases), r.Data.LeaseCount, r.Warnings, want.count, want.warnings)
		}
	}
	for _, path := range []string{"/v1/sys/leases?type=irrevocable&include_child_namespaces=maybe", "/v1/sys/leases/count?type=irrevocable&include_child_namespaces=maybe"} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		req.Header.Set("X-Vault-Token", rootToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Errors []string }
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || !slices.Equal(r.Errors, []string{"include_child_namespaces: must be a boolean"}) {
			t.Errorf("%s: %d %q (%v); want 400 include_child_namespaces", path, resp.StatusCode, r.Errors, err)
		}
	}
	// The count takes the boolean too, and counts the same.
	for _, b := range []string{"true", "false"} {
		c, err := e.client(t, rootToken).Logical().ReadWithData("sys/leases/count", map[string][]string{"type": {"irrevocable"}, "include_child_namespaces": {b}})
		if err != nil || !strings.Contains(string(mustJSON(t, c.Data)), `"lease_count":3`) {
			t.Errorf("count with include_child_namespaces=%s: %v, %v", b, c, err)
		}
	}
}

// TestLeaseListAnswersEveryKey: LIST sys/leases/lookup/… answers every
// key at once, in order, as Vault does, though lease.Manager.List gives
// them a page of 1,000 at a time; and sys/leases with the
// limit "none" lists every irrevocable lease, more than a page of
// 10,000 (lease.Manager.ListIrrevocable's default), where no limit cuts the list at Vault's
// 10,000 with its warning.
func TestLeaseListAnswersEveryKey(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	iss, err := e.leases.Register(lease.Mount{Path: "test/", Revoker: failingEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10_000 + 3 // more than a page of either list
	var want []string
	for range n {
		l, err := iss.Issue(ctx, lease.IssueRequest{Path: "test/creds/app", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, strings.TrimPrefix(l.ID, "test/creds/app/"))
	}
	slices.Sort(want)
	c := e.client(t, rootToken)
	list, err := c.Logical().List("sys/leases/lookup/test/creds/app/")
	if err != nil || list == nil {
		t.Fatalf("LIST: %v, %v", list, err)
	}
	keys, _ := list.Data["keys"].([]any)
	got := make([]string, len(keys))
	for i, k := range keys {
		got[i], _ = k.(string)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("LIST answered %d keys, want all %d in order", len(got), len(want))
	}

	// Every lease irrevocable: the engine refuses for good.
	e.clock.Advance(time.Hour)
	if _, err := e.leases.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for limit, want := range map[string]struct {
		count  int
		warned bool
	}{
		"":     {10000, true},
		"none": {n, false},
	} {
		query := map[string][]string{"type": {"irrevocable"}}
		if limit != "" {
			query["limit"] = []string{limit}
		}
		resp, err := c.Logical().ReadWithData("sys/leases", query)
		if err != nil || resp == nil {
			t.Fatalf("limit %q: %v, %v", limit, resp, err)
		}
		leases, _ := resp.Data["leases"].([]any)
		count, _ := resp.Data["lease_count"].(json.Number)
		if len(leases) != want.count || count.String() != strconv.Itoa(want.count) || (len(resp.Warnings) != 0) != want.warned {
			t.Errorf("limit %q: %d leases, lease_count %s, warnings %q; want %d, warned %v", limit, len(leases), count, resp.Warnings, want.count, want.warned)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLookupShowsRevocationFailures: a lease whose revocation failed shows
// the attempts, the error and the next attempt in its lookup; a lease that
// never failed shows Vault's fields only.
func TestLookupShowsRevocationFailures(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	iss, err := e.leases.Register(lease.Mount{Path: "test/", Revoker: failingEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := iss.Issue(ctx, lease.IssueRequest{Path: "test/creds/app", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.leases.Revoke(ctx, failed.ID, true); err == nil {
		t.Fatal("revocation did not fail")
	}
	fine, err := iss.Issue(ctx, lease.IssueRequest{Path: "test/creds/app", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(id string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(http.MethodPut, e.srv.URL+"/v1/sys/leases/lookup", strings.NewReader(`{"lease_id":"`+id+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Vault-Token", rootToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Data map[string]any }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("lookup %s: %d, %v", id, resp.StatusCode, err)
		}
		return body.Data
	}
	d := lookup(failed.ID)
	if d["revoke_attempts"] != float64(1) || !strings.Contains(fmt.Sprint(d["revoke_error"]), "directory says no") || d["next_revoke_attempt"] == nil {
		t.Fatalf("lookup of a lease whose revocation failed: %v", d)
	}
	for _, k := range []string{"revoke_attempts", "revoke_error", "next_revoke_attempt"} {
		if v, ok := lookup(fine.ID)[k]; ok {
			t.Fatalf("lookup of a lease that never failed has %s = %v", k, v)
		}
	}
}

// TestLeaseHoldRoutes: PUT sys/leases/hold holds the expiry revocations (a
// lease past its time stays, and GET says held); DELETE releases them, and
// the next Step revokes it. Without sudo, holding is refused.
func TestLeaseHoldRoutes(t *testing.T) {
	e := newEnv(t, memstore.New(nil))
	ctx := keel.WithPrincipal(context.Background(), principals[rootToken])
	var revoked []string
	iss, err := e.leases.Register(lease.Mount{Path: "held/", Revoker: lease.RevokerFunc(func(_ context.Context, l lease.Lease) error {
		revoked = append(revoked, l.ID)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	l, err := iss.Issue(ctx, lease.IssueRequest{Path: "held/creds/app", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client(t, readerToken).Logical().Write("sys/leases/hold", nil); statusOf(err) != http.StatusForbidden {
		t.Fatalf("hold without sudo = %v, want 403", err)
	}
	c := e.client(t, rootToken)
	if _, err := c.Logical().Write("sys/leases/hold", nil); err != nil {
		t.Fatal(err)
	}
	s, err := c.Logical().Read("sys/leases/hold")
	if err != nil || s == nil || s.Data["held"] != true {
		t.Fatalf("GET sys/leases/hold = %+v, %v; want held", s, err)
	}
	e.clock.Advance(time.Hour)
	if _, err := e.leases.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if len(revoked) != 0 {
		t.Fatalf("held, the worker revoked %v", revoked)
	}
	if _, err := c.Logical().Delete("sys/leases/hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Step(ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if len(revoked) != 1 || revoked[0] != l.ID {
		t.Errorf("released, the worker revoked %v, want %s", revoked, l.ID)
	}
	if s, err := c.Logical().Read("sys/leases/hold"); err != nil || s.Data["held"] != false {
		t.Errorf("GET sys/leases/hold after DELETE = %+v, %v; want not held", s, err)
	}
}

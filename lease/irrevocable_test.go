package lease

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// makeIrrevocable issues n leases under path and makes them irrevocable;
// it returns their ids in order.
func makeIrrevocable(t *testing.T, e *env, path string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		l := e.issue(t, IssueRequest{Path: path, TTL: time.Hour})
		ids = append(ids, l.ID)
	}
	e.rev.setFail(func(Lease) error { return Permanent(errors.New("directory says no")) })
	defer e.rev.setFail(nil)
	for _, id := range ids {
		if err := e.m.Revoke(context.Background(), id, true); err == nil {
			t.Fatal("revocation did not fail")
		}
	}
	slices.Sort(ids)
	return ids
}

func TestCountIrrevocable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if err := e.m.register("db/", e.rev, nil); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c, err := e.m.CountIrrevocable(ctx)
		if err != nil || c.Total != 0 || c.ByMount == nil || len(c.ByMount) != 0 {
			t.Fatalf("empty: %+v, %v", c, err)
		}
		makeIrrevocable(t, e, "ldap/creds/app", 3)
		makeIrrevocable(t, e, "db/creds/x", 2)
		e.issue(t, IssueRequest{TTL: time.Hour}) // live: not counted
		c, err = e.m.CountIrrevocable(ctx)
		if err != nil || c.Total != 5 || c.ByMount["ldap/"] != 3 || c.ByMount["db/"] != 2 || len(c.ByMount) != 2 {
			t.Fatalf("%+v, %v", c, err)
		}
	})
}

func TestCountIrrevocableReadsTheIndexOnly(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, func(s storage.Store) storage.Store { return &scanRecorder{Store: s} })
		makeIrrevocable(t, e, "ldap/creds/app", 2)
		for range 5 {
			e.issue(t, IssueRequest{TTL: time.Hour})
		}
		rec := e.store.(*scanRecorder)
		rec.prefixes = nil
		if _, err := e.m.CountIrrevocable(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !equalStrings(rec.prefixes, []string{"lease/irrevocable/"}) {
			t.Fatalf("count scanned %q", rec.prefixes)
		}
	})
}

// scanRecorder records the prefixes of scans (not safe for concurrent use).
type scanRecorder struct {
	storage.Store
	prefixes []string
}

func (s *scanRecorder) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.Store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, &recordingTx{Tx: tx, s: s})
	})
}

type recordingTx struct {
	storage.Tx
	s *scanRecorder
}

func (t *recordingTx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	t.s.prefixes = append(t.s.prefixes, prefix)
	return t.Tx.Scan(prefix, opts, fn)
}

func TestListIrrevocable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		ids := makeIrrevocable(t, e, "ldap/creds/app", 5)
		e.issue(t, IssueRequest{TTL: time.Hour})
		for name, tc := range map[string]struct {
			limit     int
			want      int
			truncated bool
		}{
			"default":       {0, 5, false},
			"limit above":   {6, 5, false},
			"limit equal":   {5, 5, false},
			"limit below":   {3, 3, true},
			"limit one":     {1, 1, true},
			"none (all)":    {-1, 5, false},
			"very negative": {-100, 5, false},
		} {
			t.Run(name, func(t *testing.T) {
				var leases []IrrevocableLease
				truncated := false
				if tc.limit >= 0 {
					got, err := e.m.ListIrrevocable(ctx, keel.ListRequest{Limit: tc.limit})
					if err != nil {
						t.Fatal(err)
					}
					leases, truncated = got.Items, got.Next != ""
					if truncated && got.Next != leases[len(leases)-1].LeaseID {
						t.Fatalf("Next %q, want the last lease id of the page", got.Next)
					}
				} else {
					// Vault's limit "none": every page.
					var err error
					if leases, err = listIrrevocable(ctx, e.m, 0); err != nil {
						t.Fatal(err)
					}
				}
				if len(leases) != tc.want {
					t.Fatalf("%d leases; want %d", len(leases), tc.want)
				}
				for i, l := range leases {
					if l.LeaseID != ids[i] || l.Mount != "ldap/" || l.Error != "directory says no" {
						t.Fatalf("lease %d: %+v, want %s", i, l, ids[i])
					}
				}
				if truncated != tc.truncated {
					t.Fatalf("truncated (Next set) %v, want %v", truncated, tc.truncated)
				}
			})
		}
	})
}

func TestListIrrevocableDefaultLimit(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		// Write the index directly: 10,001 revocations would be slow.
		kv := map[string][]byte{}
		for i := range defaultIrrevocableLimit + 1 {
			kv[keyPrefix+irrKey(idOfIndex(i))] = encodeIrr("ldap/", "x")
		}
		raw(t, e.raw, kv)
		got, err := e.m.ListIrrevocable(context.Background(), keel.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Items) != 10000 || got.Next == "" {
			t.Fatalf("%d leases, Next %q; want 10,000, truncated", len(got.Items), got.Next)
		}
		all, err := listIrrevocable(context.Background(), e.m, 0)
		if err != nil || len(all) != 10001 {
			t.Fatalf("all: %d, %v", len(all), err)
		}
	})
}

func idOfIndex(i int) string {
	const digits = "0123456789"
	b := []byte("ldap/creds/app/00000")
	for j := len(b) - 1; i > 0; j-- {
		b[j] = digits[i%10]
		i /= 10
	}
	return string(b)
}

func TestListIrrevocableEmpty(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		got, err := e.m.ListIrrevocable(context.Background(), keel.ListRequest{})
		if err != nil || got.Items == nil || len(got.Items) != 0 || got.Next != "" {
			t.Fatalf("%+v, %v", got, err)
		}
	})
}

func TestIrrevocableStaysListedAfterExpiry(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ids := makeIrrevocable(t, e, "ldap/creds/app", 1)
		e.clock.Advance(1000 * time.Hour)
		// Its revocation failed: it stays visible until revoked, as in Vault.
		if l, err := e.m.Get(context.Background(), ids[0]); err != nil || !l.Irrevocable || l.Attempts == 0 || l.LastError == "" {
			t.Fatalf("Get of an expired irrevocable lease: %+v, %v", l, err)
		}
		got, err := e.m.ListIrrevocable(context.Background(), keel.ListRequest{})
		if err != nil || len(got.Items) != 1 {
			t.Fatalf("%+v, %v", got, err)
		}
	})
}

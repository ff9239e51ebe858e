package lease

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

// putQuota sets a quota or fails t.
func (e *env) putQuota(t testing.TB, name, path string, maxLeases int) Quota {
	t.Helper()
	q, err := e.m.PutQuota(context.Background(), QuotaRequest{Name: name, Path: path, MaxLeases: maxLeases})
	if err != nil {
		t.Fatalf("PutQuota(%q, %q, %d): %v", name, path, maxLeases, err)
	}
	return q
}

// quotaLeases returns the Leases of the quota name, or fails t.
func (e *env) quotaLeases(t testing.TB, name string) int {
	t.Helper()
	q, err := e.m.GetQuota(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return q.Leases
}

// wantQuotaError fails t unless err is a *QuotaError of the quota name,
// of kind keel.KindTooLarge.
func wantQuotaError(t testing.TB, err error, name string, maxLeases int) {
	t.Helper()
	var qe *QuotaError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v: not a *QuotaError", err)
	}
	if qe.Name != name || qe.Max != maxLeases || qe.LeasePath == "" {
		t.Fatalf("QuotaError %+v: want the quota %q of %d", qe, name, maxLeases)
	}
	wantKind(t, err, keel.KindTooLarge)
	if msg := err.Error(); !strings.HasPrefix(msg, "lease: ") || strings.Count(msg, "lease: ") != 1 || !strings.Contains(msg, name) {
		t.Fatalf("error %q: want one \"lease: \" prefix and the quota's name", msg)
	}
}

// The 11th lease under a quota of 10 is refused, naming the quota, and
// nothing is stored; after one revocation the next issue succeeds.
func TestQuotaRefusesBeyondMax(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		e.putQuota(t, "app", "ldap/creds/app", 10)
		var ids []string
		for range 10 {
			ids = append(ids, e.issue(t, IssueRequest{Path: "ldap/creds/app"}).ID)
		}
		before := storagetest.Dump(t, e.raw)
		_, err := e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
		wantQuotaError(t, err, "app", 10)
		if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
			t.Fatalf("a refused issue changed the store:\nbefore %v\nafter  %v", before, after)
		}
		// A path under the quota's path is covered; a sibling is not.
		_, err = e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app/x"})
		wantQuotaError(t, err, "app", 10)
		e.issue(t, IssueRequest{Path: "ldap/creds/app2"})
		if n := e.quotaLeases(t, "app"); n != 10 {
			t.Fatalf("quota counts %d leases, want 10", n)
		}

		if err := e.m.Revoke(ctx, ids[0], true); err != nil {
			t.Fatal(err)
		}
		e.issue(t, IssueRequest{Path: "ldap/creds/app"})
		_, err = e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
		wantQuotaError(t, err, "app", 10)
	})
}

// An engine's own transaction (Tx.Issue) is refused by a quota as
// Issuer.Issue is, with the engine's writes; CheckQuota says so before.
func TestQuotaRefusesInEngineTx(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	iss := engineIssuer(t, e)
	ctx := context.Background()
	e.putQuota(t, "db", "db/", 1)
	if err := iss.CheckQuota(ctx, "db/creds/app"); err != nil {
		t.Fatalf("CheckQuota under a quota not full: %v", err)
	}
	if _, err := iss.Issue(ctx, IssueRequest{Path: "db/creds/app"}); err != nil {
		t.Fatal(err)
	}
	wantQuotaError(t, iss.CheckQuota(ctx, "db/creds/app"), "db", 1)
	before := storagetest.Dump(t, e.raw)
	err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
		if err := tx.Put("accounts/app", []byte("dn")); err != nil {
			return err
		}
		_, err := leases.Issue(IssueRequest{Path: "db/creds/app"})
		return err
	})
	wantQuotaError(t, err, "db", 1)
	if after := storagetest.Dump(t, e.raw); len(after) != len(before) {
		t.Fatalf("a refused engine transaction changed the store: %d keys, then %d", len(before), len(after))
	}
}

// Every way a lease leaves the store uncounts it from its quota, exactly
// once.
func TestQuotaCountsEveryRemoval(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, e *env, ids []string) // removes ids[0] and ids[1]
		all    bool                                     // removes the two others too
	}{
		{name: "revoke", remove: func(t *testing.T, e *env, ids []string) {
			for _, id := range ids[:2] {
				if err := e.m.Revoke(ctx, id, true); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "queued revoke and Step", remove: func(t *testing.T, e *env, ids []string) {
			for _, id := range ids[:2] {
				if err := e.m.Revoke(ctx, id, false); err != nil {
					t.Fatal(err)
				}
			}
			e.step(t, e.clock.Now())
		}},
		{name: "revoke-prefix", remove: func(t *testing.T, e *env, ids []string) {
			if err := e.m.RevokePrefix(ctx, "ldap/creds/gone", true); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "revoke-prefix queued and Step", remove: func(t *testing.T, e *env, ids []string) {
			if err := e.m.RevokePrefix(ctx, "ldap/creds/gone/", false); err != nil {
				t.Fatal(err)
			}
			e.step(t, e.clock.Now())
		}},
		{name: "revoke-force of irrevocable leases", remove: func(t *testing.T, e *env, ids []string) {
			e.rev.setFail(func(Lease) error { return Permanent(errors.New("gone")) })
			if err := e.m.Revoke(ctx, ids[0], true); err == nil {
				t.Fatal("a failing revoker: Revoke succeeded")
			}
			if err := e.m.RevokeForce(ctx, "ldap/creds/gone/"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "revoke-force of one id", remove: func(t *testing.T, e *env, ids []string) {
			for _, id := range ids[:2] {
				if err := e.m.RevokeForce(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "expiry", remove: func(t *testing.T, e *env, ids []string) {
			e.clock.Set(t0.Add(time.Hour))
			e.step(t, e.clock.Now())
		}},
		{name: "tidy of orphans", remove: func(t *testing.T, e *env, ids []string) {
			e.m.Unregister("ldap/")
			res, err := e.m.Tidy(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Orphaned != 4 {
				t.Fatalf("Tidy: %+v, want 4 orphans", res)
			}
			if err := e.m.register("ldap/", e.rev, nil); err != nil {
				t.Fatal(err)
			}
			e.step(t, e.clock.Now()) // revokes the four
		}, all: true},
		{name: "undecodable records removed by force", remove: func(t *testing.T, e *env, ids []string) {
			raw(t, e.raw, map[string][]byte{keyPrefix + idKey(ids[0]): []byte("junk"), keyPrefix + idKey(ids[1]): []byte("junk")})
			if err := e.m.RevokeForce(ctx, "ldap/creds/gone/"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onEveryStore(t, func(t *testing.T, open everystore.Open) {
				e := newEnv(t, open, nil, nil)
				e.putQuota(t, "mount", "ldap/", 100)
				e.putQuota(t, "gone", "ldap/creds/gone", 100)
				var ids []string
				for range 2 {
					ids = append(ids, e.issue(t, IssueRequest{Path: "ldap/creds/gone", TTL: time.Minute}).ID)
				}
				e.issue(t, IssueRequest{Path: "ldap/creds/kept", TTL: 2 * time.Hour})
				e.issue(t, IssueRequest{Path: "ldap/creds/kept", TTL: 2 * time.Hour})
				tc.remove(t, e, ids)
				if n := len(keysUnder(t, e.raw, keyPrefix+idKey("ldap/creds/gone/"))); n != 0 {
					t.Fatalf("%d leases left under ldap/creds/gone", n)
				}
				if n := e.quotaLeases(t, "gone"); n != 0 {
					t.Fatalf("quota gone counts %d leases, want 0", n)
				}
				want := 2
				if tc.all {
					want = 0
				}
				if n := e.quotaLeases(t, "mount"); n != want {
					t.Fatalf("quota mount counts %d leases, want %d", n, want)
				}
			})
		})
	}
}

// An engine that ends its lease in its own transaction (Tx.End) uncounts it.
func TestQuotaCountsEnd(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	iss := engineIssuer(t, e)
	ctx := context.Background()
	e.putQuota(t, "db", "db/", 1)
	l, err := iss.Issue(ctx, IssueRequest{Path: "db/creds/app"})
	if err != nil {
		t.Fatal(err)
	}
	err = iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error { return leases.End(l.ID) })
	if err != nil {
		t.Fatal(err)
	}
	if n := e.quotaLeases(t, "db"); n != 0 {
		t.Fatalf("quota counts %d leases after End, want 0", n)
	}
	if _, err := iss.Issue(ctx, IssueRequest{Path: "db/creds/app"}); err != nil {
		t.Fatal(err)
	}
}

// Concurrent issuers on one store never get more leases than the quota,
// while revocations run too; the count stays exact.
func TestQuotaConcurrentIssuers(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		e.putQuota(t, "app", "ldap/creds/app", 10)
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 4 {
					_, err := e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
					switch {
					case err == nil:
						ok.Add(1)
					case keel.KindOf(err) != keel.KindTooLarge:
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		stored := len(keysUnder(t, e.raw, keyPrefix+idKey("ldap/creds/app/")))
		if ok.Load() != 10 || stored != 10 {
			t.Fatalf("%d issues succeeded, %d leases stored: want 10", ok.Load(), stored)
		}
		// Revocations and issues at once: the count follows the store.
		ids, err := listAll(ctx, e.m, "ldap/creds/app")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range ids[:5] {
			wg.Go(func() {
				if err := e.m.Revoke(ctx, "ldap/creds/app/"+name, true); err != nil {
					t.Error(err)
				}
			})
			wg.Go(func() {
				if _, err := e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"}); err != nil && keel.KindOf(err) != keel.KindTooLarge {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		stored = len(keysUnder(t, e.raw, keyPrefix+idKey("ldap/creds/app/")))
		if n := e.quotaLeases(t, "app"); n != stored || stored > 10 {
			t.Fatalf("quota counts %d leases, %d stored (at most 10)", n, stored)
		}
	})
}

// Two Managers on one etcd (two processes) issuing at once never exceed
// the quota.
func TestQuotaTwoManagersOnEtcd(t *testing.T) {
	store := everystore.Etcd(t)
	other := everystore.Another(t, store)
	ctx := context.Background()
	var ms []*Manager
	for _, s := range []storage.Store{store, other} {
		m := mustNew(t, s, &Options{Clock: keel.NewFakeClock(t0)})
		if err := m.register("ldap/", &fakeRevoker{}, nil); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if _, err := ms[0].PutQuota(ctx, QuotaRequest{Name: "app", Path: "ldap/", MaxLeases: 7}); err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range 6 {
		m := ms[i%2]
		wg.Go(func() {
			for range 3 {
				_, err := m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
				switch {
				case err == nil:
					ok.Add(1)
				case keel.KindOf(err) != keel.KindTooLarge:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	stored := len(keysUnder(t, store, keyPrefix+idKey("ldap/")))
	q, err := ms[1].GetQuota(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if ok.Load() != 7 || stored != 7 || q.Leases != 7 {
		t.Fatalf("%d issues succeeded, %d leases stored, quota counts %d: want 7", ok.Load(), stored, q.Leases)
	}
}

// A quota set over existing leases counts them (in batches: more leases
// than a batch of etcd's), and applies once set.
func TestQuotaCountsExistingLeases(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		n := e.m.Limits().Batch + 3
		if n > 300 {
			n = 30 // an unbounded store: one batch, and more
		}
		for range n {
			e.issue(t, IssueRequest{Path: "ldap/creds/app"})
		}
		e.issue(t, IssueRequest{Path: "ldap/creds/other"})
		q := e.putQuota(t, "app", "ldap/creds/app/", n+1)
		if q.Leases != n || q.Counting {
			t.Fatalf("PutQuota over %d leases: %+v", n, q)
		}
		e.issue(t, IssueRequest{Path: "ldap/creds/app"})
		_, err := e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
		wantQuotaError(t, err, "app", n+1)
		// Lowering the max keeps the count; raising it lets leases in.
		if q := e.putQuota(t, "app", "ldap/creds/app", n+2); q.Leases != n+1 {
			t.Fatalf("PutQuota of a new max: %+v", q)
		}
		e.issue(t, IssueRequest{Path: "ldap/creds/app"})
		// A new path counts again.
		if q := e.putQuota(t, "app", "ldap/creds/other", 1); q.Leases != 1 {
			t.Fatalf("PutQuota of a new path: %+v", q)
		}
	})
}

// A lease counts only for the most specific quota whose path covers it, as
// Vault applies the most specific quota: the mount's quota does not count
// the leases of a role that has its own.
func TestQuotaMostSpecificApplies(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	ctx := context.Background()
	e.putQuota(t, "all", "", 100)
	e.putQuota(t, "mount", "ldap/", 2)
	e.putQuota(t, "app", "ldap/creds/app", 5)
	for range 5 {
		e.issue(t, IssueRequest{Path: "ldap/creds/app"})
	}
	_, err := e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
	wantQuotaError(t, err, "app", 5)
	e.issue(t, IssueRequest{Path: "ldap/creds/other"})
	e.issue(t, IssueRequest{Path: "ldap/creds/other"})
	_, err = e.m.issue(ctx, IssueRequest{Path: "ldap/creds/other"})
	wantQuotaError(t, err, "mount", 2)
	for name, want := range map[string]int{"all": 0, "mount": 2, "app": 5} {
		if n := e.quotaLeases(t, name); n != want {
			t.Errorf("quota %s counts %d leases, want %d", name, n, want)
		}
	}
	// Without the role's quota, its leases are the mount's.
	if err := e.m.DeleteQuota(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if n := e.quotaLeases(t, "mount"); n != 7 {
		t.Fatalf("quota mount counts %d leases, want 7", n)
	}
	qs, err := e.m.ListQuotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Name != "all" || qs[1].Name != "mount" {
		t.Fatalf("ListQuotas: %+v", qs)
	}
}

// Malformed requests are refused with field errors; a missing quota is
// not found; the rights asked are Vault's.
func TestQuotaRequests(t *testing.T) {
	auth := &recordingAuthorizer{}
	e := newEnv(t, everystore.Mem, &Options{Authorizer: auth}, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		req   QuotaRequest
		field string
	}{
		{QuotaRequest{Path: "ldap/", MaxLeases: 1}, "Name"},
		{QuotaRequest{Name: "a/b", MaxLeases: 1}, "Name"},
		{QuotaRequest{Name: strings.Repeat("n", 129), MaxLeases: 1}, "Name"},
		{QuotaRequest{Name: "q", Path: "/ldap", MaxLeases: 1}, "Path"},
		{QuotaRequest{Name: "q", Path: "ldap//x", MaxLeases: 1}, "Path"},
		{QuotaRequest{Name: "q", Path: "ldap/creds/app*", MaxLeases: 1}, "Path"},
		{QuotaRequest{Name: "q", Path: "ldap/*/app", MaxLeases: 1}, "Path"},
		{QuotaRequest{Name: "q", Path: "ldap/"}, "MaxLeases"},
		{QuotaRequest{Name: "q", Path: "ldap/", MaxLeases: -1}, "MaxLeases"},
	} {
		_, err := e.m.PutQuota(ctx, tc.req)
		wantKind(t, err, keel.KindInvalid)
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != tc.field {
			t.Errorf("PutQuota(%+v): %v, want a field error on %s", tc.req, err, tc.field)
		}
	}
	e.putQuota(t, "q", "ldap/", 1)
	for _, same := range []string{"ldap", "ldap/*"} {
		_, err := e.m.PutQuota(ctx, QuotaRequest{Name: "r", Path: same, MaxLeases: 1})
		wantKind(t, err, keel.KindInvalid)
	}
	_, err := e.m.PutQuota(ctx, QuotaRequest{Name: "r", Path: "ldap/creds/*", MaxLeases: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.issue(t, IssueRequest{Path: "ldap/creds/app"})
	_, err = e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
	wantQuotaError(t, err, "r", 1)
	wantKind(t, e.m.DeleteQuota(ctx, "r"), keel.KindNone)
	_, err = e.m.GetQuota(ctx, "r")
	wantKind(t, err, keel.KindNotFound)
	wantKind(t, e.m.DeleteQuota(ctx, "r"), keel.KindNotFound)
	auth.Take()
	e.m.GetQuota(ctx, "q")
	e.m.ListQuotas(ctx)
	e.m.DeleteQuota(ctx, "q")
	want := []ask{
		{Cap: keel.CapRead, Resource: "sys/quotas/lease-count/q"},
		{Cap: keel.CapList, Resource: "sys/quotas/lease-count"},
		{Cap: keel.CapDelete, Resource: "sys/quotas/lease-count/q"},
	}
	if got := auth.Take(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("rights asked: %+v, want %+v", got, want)
	}
}

// A count that was interrupted (a quota left counting, its scan past some
// leases) stays exact while leases come and go on both sides of its
// cursor, and PutQuota finishes it: an issue or a removal counts in the
// quota only the leases its scan has passed.
func TestQuotaCountResumesExactly(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		var ids []string
		for range 10 {
			ids = append(ids, e.issue(t, IssueRequest{Path: "ldap/creds/app"}).ID)
		}
		slices.Sort(ids)
		// Stored as a count stopped after the first five leases.
		rec, err := json.Marshal([]quotaRec{{Name: "app", Path: "ldap/", Max: 100, Raw: 5, Counting: true, Cursor: idKey(ids[4])}})
		if err != nil {
			t.Fatal(err)
		}
		raw(t, e.raw, map[string][]byte{keyPrefix + quotaKey: rec})
		if q := e.quotaLeases(t, "app"); q != 5 {
			t.Fatalf("a quota counting: %d leases so far, want 5", q)
		}
		// A counting quota does not apply yet: it refuses nothing.
		for range 10 {
			e.issue(t, IssueRequest{Path: "ldap/creds/app"})
		}
		for _, id := range []string{ids[0], ids[4], ids[5], ids[9]} {
			if err := e.m.Revoke(ctx, id, true); err != nil {
				t.Fatal(err)
			}
		}
		q := e.putQuota(t, "app", "ldap/", 100)
		stored := len(keysUnder(t, e.raw, keyPrefix+idKey("ldap/")))
		if q.Counting || q.Leases != stored || stored != 16 {
			t.Fatalf("quota after the count: %+v, %d leases stored (want 16)", q, stored)
		}
	})
}

package lease

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

var errInjected = errors.New("injected fault")

// faultEnv returns an env over a faultstore over a store from open.
func faultEnv(t *testing.T, open everystore.Open) (*env, *faultstore.Store) {
	t.Helper()
	var fs *faultstore.Store
	e := newEnv(t, open, nil, func(s storage.Store) storage.Store {
		fs = faultstore.New(s)
		return fs
	})
	return e, fs
}

// TestFailedOperationsLeaveStoreUnchanged makes a write or the commit of
// each operation fail, and checks that the store is as before.
func TestFailedOperationsLeaveStoreUnchanged(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		type fault struct {
			op     faultstore.Op
			prefix string
		}
		faults := map[string]fault{
			"commit":           {faultstore.OpCommit, ""},
			"put of the lease": {faultstore.OpPut, "lease/id/"},
			"put of the index": {faultstore.OpPut, "lease/due/"},
			"delete of index":  {faultstore.OpDelete, "lease/due/"},
		}
		ops := map[string]struct {
			run     func(ctx context.Context, e *env, l Lease) error
			skipped map[string]bool // faults the operation cannot meet
		}{
			"issue": {run: func(ctx context.Context, e *env, _ Lease) error {
				_, err := e.m.issue(ctx, IssueRequest{Path: "ldap/creds/app"})
				return err
			}, skipped: map[string]bool{"delete of index": true}},
			"renew": {run: func(ctx context.Context, e *env, l Lease) error {
				_, err := e.m.Renew(ctx, l.ID, 2*time.Hour)
				return err
			}},
			"revoke queued": {run: func(ctx context.Context, e *env, l Lease) error {
				return e.m.Revoke(ctx, l.ID, false)
			}},
			"revoke sync": {run: func(ctx context.Context, e *env, l Lease) error {
				return e.m.Revoke(ctx, l.ID, true)
			}, skipped: map[string]bool{"put of the lease": true, "put of the index": true}},
			"step": {run: func(ctx context.Context, e *env, l Lease) error {
				_, err := e.m.Step(ctx, l.ExpireTime)
				return err
			}, skipped: map[string]bool{"put of the lease": true, "put of the index": true}},
			"step failing revoker": {run: func(ctx context.Context, e *env, l Lease) error {
				e.rev.setFail(func(Lease) error { return errors.New("down") })
				_, err := e.m.Step(ctx, l.ExpireTime)
				return err
			}},
		}
		for opName, op := range ops {
			for faultName, f := range faults {
				if op.skipped[faultName] {
					continue
				}
				t.Run(opName+"/"+faultName, func(t *testing.T) {
					e, fs := faultEnv(t, open)
					l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
					before := storagetest.Dump(t, e.raw)
					fs.Fail(f.op, f.prefix, 0, errInjected)
					err := op.run(context.Background(), e, l)
					if !errors.Is(err, errInjected) {
						t.Fatalf("error %v, want the injected fault", err)
					}
					if after := storagetest.Dump(t, e.raw); !mapsEqual(before, after) {
						t.Fatalf("store changed by a failed operation:\nbefore %q\nafter  %q", before, after)
					}
				})
			}
		}
	})
}

// TestClosuresAreRetrySafe runs every operation with closures run twice,
// the first run rolled back: the outcome must be that of one run.
func TestClosuresAreRetrySafe(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e, fs := faultEnv(t, open)
		fs.Rerun(true)
		ctx := context.Background()

		l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
		if keys := keysUnder(t, e.raw, ""); len(keys) != 2 {
			t.Fatalf("Issue stored %q", keys)
		}
		iss, err := e.m.Register(Mount{Path: "db/", Revoker: e.rev, Store: storage.Sub(e.store, "engine/")})
		if err != nil {
			t.Fatal(err)
		}
		var inTx Lease
		err = iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
			var err error
			inTx, err = leases.Issue(IssueRequest{Path: "db/creds/app", TTL: 2 * time.Hour})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if keys := keysUnder(t, e.raw, ""); len(keys) != 4 {
			t.Fatalf("Issuer.Update under rerun stored %d keys: %q", len(keys), keys)
		}
		if _, ok := e.get(t, inTx.ID); !ok {
			t.Fatal("the Lease returned by the committed run of Issuer.Update is not the one stored")
		}
		r, err := e.m.Renew(ctx, l.ID, 3*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if got := keysUnder(t, e.raw, "lease/due/"); len(got) != 2 || got[1] != keyPrefix+dueKey(r.Lease.ExpireTime, l.ID) {
			t.Fatalf("index after Renew: %q", got)
		}

		e.rev.setFail(func(Lease) error { return errors.New("down") })
		next := e.step(t, t0.Add(3*time.Hour))
		a, _ := e.get(t, l.ID)
		b, _ := e.get(t, inTx.ID)
		if a.Attempts != 1 || b.Attempts != 1 || !next.Equal(minTime(a.NextAttempt, b.NextAttempt)) {
			t.Fatalf("failures recorded under rerun: %+v, %+v, next %s", a, b, next)
		}
		wantDue := []string{keyPrefix + dueKey(a.NextAttempt, a.ID), keyPrefix + dueKey(b.NextAttempt, b.ID)}
		slices.Sort(wantDue)
		if got := keysUnder(t, e.raw, "lease/due/"); !equalStrings(got, wantDue) {
			t.Fatalf("index after failures: %q, want %q", got, wantDue)
		}
		e.rev.setFail(nil)
		if err := e.m.Revoke(ctx, l.ID, false); err != nil {
			t.Fatal(err)
		}
		if err := e.m.Revoke(ctx, inTx.ID, true); err != nil {
			t.Fatal(err)
		}
		// The queued revocation waits for its mount's lane, which backs
		// off after the failure (at most RetryMax).
		e.step(t, t0.Add(3*time.Hour+defaultRetryMax))

		raw(t, e.raw, map[string][]byte{keyPrefix + dueKey(t0.Add(5*time.Hour), "ldap/creds/app/x"): {}})
		res, err := e.m.Tidy(ctx)
		if err != nil || res.DanglingDue != 1 || res.Scanned != 0 {
			t.Fatalf("Tidy under rerun: %+v, %v", res, err)
		}
		if keys := keysUnder(t, e.raw, ""); len(keys) != 0 {
			t.Fatalf("left %q", keys)
		}
	})
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

package lease

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestRevokeQueued(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		l := e.issue(t, IssueRequest{TTL: time.Hour})
		<-e.m.wake
		e.clock.Advance(time.Minute)
		if err := e.m.Revoke(ctx, l.ID, false); err != nil {
			t.Fatal(err)
		}
		if ids := e.rev.ids(); len(ids) != 0 {
			t.Fatalf("queued revocation called the engine: %q", ids)
		}
		select {
		case <-e.m.wake:
		default:
			t.Fatal("queued revocation did not wake the worker")
		}
		now := t0.Add(time.Minute)
		got, ok := e.get(t, l.ID)
		if !ok || !got.ExpireTime.Equal(now) || !got.NextAttempt.Equal(now) {
			t.Fatalf("queued lease %+v, want expired and due at %s", got, now)
		}
		if keys := keysUnder(t, e.raw, "lease/due/"); !equalStrings(keys, []string{keyPrefix + dueKey(now, l.ID)}) {
			t.Fatalf("expiry index %q, want the lease due now only", keys)
		}
		if _, err := e.m.Get(ctx, l.ID); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("Get of a queued revocation: %v", err)
		}
		if next := e.step(t, now); !next.IsZero() {
			t.Fatalf("next %s after revoking everything", next)
		}
		if ids := e.rev.ids(); !equalStrings(ids, []string{l.ID}) {
			t.Fatalf("revoked %q", ids)
		}
		if keys := keysUnder(t, e.raw, ""); len(keys) != 0 {
			t.Fatalf("left %q", keys)
		}
	})
}

func TestRevokeQueuedKeepsEarlierTimes(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{TTL: time.Minute})
		e.clock.Set(t0.Add(time.Hour))
		before := storagetest.Dump(t, e.raw)
		if err := e.m.Revoke(context.Background(), l.ID, false); err != nil {
			t.Fatal(err)
		}
		if !mapsEqual(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("queuing a lease already due changed it")
		}
	})
}

func TestRevokeUnknownSucceeds(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		for _, sync := range []bool{false, true} {
			if err := e.m.Revoke(context.Background(), "ldap/creds/app/nope", sync); err != nil {
				t.Fatalf("sync=%v: %v (Vault revokes unknown ids silently)", sync, err)
			}
		}
		if err := e.m.Revoke(context.Background(), "", false); keel.KindOf(err) != keel.KindInvalid {
			t.Fatalf("empty id: %v", err)
		}
	})
}

func TestRevokeSync(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		l := e.issue(t, IssueRequest{TTL: time.Hour, Data: []byte("cn=app")})
		var seen Lease
		e.rev.setFail(func(got Lease) error { seen = got; return nil })
		if err := e.m.Revoke(ctx, l.ID, true); err != nil {
			t.Fatal(err)
		}
		if seen.ID != l.ID || string(seen.Data) != "cn=app" {
			t.Fatalf("revoker got %+v", seen)
		}
		if keys := keysUnder(t, e.raw, ""); len(keys) != 0 {
			t.Fatalf("left %q", keys)
		}
	})
}

func TestRevokeSyncFailure(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			err         error
			kind        keel.Kind
			irrevocable bool
		}{
			"plain error":     {errors.New("ldap: connection refused"), keel.KindUnavailable, false},
			"classified kept": {keel.Invalid("DN", "malformed"), keel.KindInvalid, false},
			"permanent":       {Permanent(errors.New("no such user")), keel.KindUnavailable, true},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, nil, nil)
				l := e.issue(t, IssueRequest{TTL: time.Hour})
				e.rev.setFail(func(Lease) error { return tc.err })
				err := e.m.Revoke(context.Background(), l.ID, true)
				wantKind(t, err, tc.kind)
				if !errors.Is(err, tc.err) {
					t.Fatalf("%v does not wrap the revoker's error", err)
				}
				got, ok := e.get(t, l.ID)
				if !ok {
					t.Fatal("lease removed although its revocation failed")
				}
				if got.Attempts != 1 || got.Irrevocable != tc.irrevocable || !got.ExpireTime.Equal(t0) ||
					!got.NextAttempt.After(t0) || got.LastError == "" {
					t.Fatalf("after a failed sync revocation: %+v", got)
				}
				// Still visible to its owner until a revocation succeeds.
				if seen, err := e.m.Get(context.Background(), l.ID); err != nil || seen.Attempts != 1 || seen.LastError == "" || seen.TTL(t0) != 0 {
					t.Fatalf("get after a failed revocation: %+v, %v", seen, err)
				}
				e.rev.setFail(nil)
				if err := e.m.Revoke(context.Background(), l.ID, true); err != nil {
					t.Fatal(err)
				}
				if _, err := e.m.Get(context.Background(), l.ID); !errors.Is(err, keel.KindNotFound) {
					t.Fatalf("get after the revocation: %v", err)
				}
			})
		}
	})
}

func TestRevokeSyncUnregisteredMount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{})
		e.m.Unregister("ldap/")
		err := e.m.Revoke(context.Background(), l.ID, true)
		wantKind(t, err, keel.KindUnavailable)
		if got, _ := e.get(t, l.ID); got.Attempts != 0 || !got.NextAttempt.Equal(l.NextAttempt) {
			t.Fatalf("no engine failed, yet the lease changed: %+v", got)
		}
	})
}

// prefixLeases issues the leases of TestRevokePrefix and returns them by
// name.
func prefixLeases(t *testing.T, e *env) map[string]Lease {
	t.Helper()
	out := map[string]Lease{}
	for _, n := range []struct{ name, path string }{
		{"app1", "ldap/creds/app"}, {"app2", "ldap/creds/app"},
		{"app2x", "ldap/creds/app2"}, {"other", "ldap/static-cred/x"},
	} {
		out[n.name] = e.issue(t, IssueRequest{Path: n.path, TTL: time.Hour})
	}
	return out
}

func TestRevokePrefix(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			prefix func(ls map[string]Lease) string
			want   []string // names of the leases revoked
		}{
			"folder":                {func(map[string]Lease) string { return "ldap/creds/app/" }, []string{"app1", "app2"}},
			"no slash: folder only": {func(map[string]Lease) string { return "ldap/creds/app" }, []string{"app1", "app2"}},
			"mount":                 {func(map[string]Lease) string { return "ldap/" }, []string{"app1", "app2", "app2x", "other"}},
			"exact id":              {func(ls map[string]Lease) string { return ls["app1"].ID }, []string{"app1"}},
			"nothing":               {func(map[string]Lease) string { return "db/" }, nil},
		} {
			for _, sync := range []bool{false, true} {
				t.Run(name+map[bool]string{false: "/queued", true: "/sync"}[sync], func(t *testing.T) {
					e := newEnv(t, open, nil, nil)
					ls := prefixLeases(t, e)
					if err := e.m.RevokePrefix(context.Background(), tc.prefix(ls), sync); err != nil {
						t.Fatal(err)
					}
					if !sync {
						if got := e.rev.ids(); len(got) != 0 {
							t.Fatalf("queued prefix revocation called the engine for %q", got)
						}
						e.step(t, t0)
					}
					var want []string
					for _, n := range tc.want {
						want = append(want, ls[n].ID)
					}
					got := e.rev.ids()
					slices.Sort(got)
					slices.Sort(want)
					if !equalStrings(got, want) {
						t.Fatalf("revoked %q, want %q", got, want)
					}
					for n, l := range ls {
						_, stored := e.get(t, l.ID)
						if stored == slices.Contains(tc.want, n) {
							t.Fatalf("lease %s stored: %v", n, stored)
						}
					}
				})
			}
		}
	})
}

func TestRevokePrefixEmpty(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		e.issue(t, IssueRequest{})
		for _, err := range []error{
			e.m.RevokePrefix(context.Background(), "", false),
			e.m.RevokePrefix(context.Background(), "", true),
			e.m.RevokeForce(context.Background(), ""),
		} {
			wantKind(t, err, keel.KindInvalid)
		}
		if got := e.rev.ids(); len(got) != 0 {
			t.Fatalf("revoked %q", got)
		}
	})
}

func TestRevokePrefixBatches(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		n := 2*e.m.batch + 3 // maxBatch, or fewer on etcd
		for range n {
			e.issue(t, IssueRequest{TTL: time.Hour})
		}
		for _, sync := range []bool{false, true} {
			if err := e.m.RevokePrefix(context.Background(), "ldap/", sync); err != nil {
				t.Fatal(err)
			}
		}
		if got := len(e.rev.ids()); got != n {
			t.Fatalf("revoked %d of %d", got, n)
		}
		if keys := keysUnder(t, e.raw, ""); len(keys) != 0 {
			t.Fatalf("left %d keys", len(keys))
		}
	})
}

func TestRevokePrefixSyncStopsAtFirstFailure(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		var ids []string
		for range 5 {
			ids = append(ids, e.issue(t, IssueRequest{TTL: time.Hour}).ID)
		}
		slices.Sort(ids)
		boom := errors.New("boom")
		e.rev.setFail(func(l Lease) error {
			if l.ID == ids[2] {
				return boom
			}
			return nil
		})
		err := e.m.RevokePrefix(context.Background(), "ldap/creds/", true)
		if !errors.Is(err, boom) || keel.KindOf(err) != keel.KindUnavailable || !strings.Contains(err.Error(), ids[2]) {
			t.Fatalf("error %v", err)
		}
		for i, id := range ids {
			got, stored := e.get(t, id)
			switch {
			case i < 2 && stored:
				t.Fatalf("lease %d, revoked before the failure, still stored", i)
			case i == 2 && got.Attempts != 1:
				t.Fatalf("failed lease not scheduled for retry: %+v", got)
			case i > 2 && (!stored || got.Attempts != 0 || !got.ExpireTime.Equal(t0.Add(time.Hour))):
				t.Fatalf("lease %d after the failure touched: %+v", i, got)
			}
		}
	})
}

func TestRevokeForce(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if err := e.m.register("db/", e.rev, nil); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		failing := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: time.Hour})
		irrevocable := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: time.Hour})
		orphan := e.issue(t, IssueRequest{Path: "db/creds/x", TTL: time.Hour})
		kept := e.issue(t, IssueRequest{Path: "ldap/static-cred/x", TTL: time.Hour})
		e.rev.setFail(func(Lease) error { return Permanent(errors.New("gone wrong")) })
		if err := e.m.Revoke(ctx, irrevocable.ID, true); err == nil {
			t.Fatal("revocation did not fail")
		}
		if got, _ := e.get(t, irrevocable.ID); !got.Irrevocable {
			t.Fatalf("not irrevocable: %+v", got)
		}
		raw(t, e.raw, map[string][]byte{keyPrefix + idKey("ldap/creds/app/corrupt"): []byte("junk")})
		e.m.Unregister("db/")

		if err := e.m.RevokeForce(ctx, "ldap/creds/"); err != nil {
			t.Fatal(err)
		}
		if err := e.m.RevokeForce(ctx, orphan.ID); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{failing.ID, irrevocable.ID, orphan.ID, "ldap/creds/app/corrupt"} {
			if _, ok := e.get(t, id); ok {
				t.Fatalf("%s survived RevokeForce", id)
			}
		}
		if _, ok := e.get(t, kept.ID); !ok {
			t.Fatal("RevokeForce removed a lease outside its prefix")
		}
		want := []string{keyPrefix + dueKey(kept.ExpireTime, kept.ID), keyPrefix + idKey(kept.ID)}
		if keys := keysUnder(t, e.raw, ""); !equalStrings(keys, want) {
			t.Fatalf("keys %q, want %q (indexes of forced leases removed)", keys, want)
		}
		if c, err := e.m.CountIrrevocable(ctx); err != nil || c.Total != 0 {
			t.Fatalf("irrevocable count %+v, %v", c, err)
		}
		if got := e.rev.ids(); !slices.Contains(got, failing.ID) {
			t.Fatalf("RevokeForce did not call the revoker: %q", got)
		}
	})
}

package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestTidy(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			corrupt func(t *testing.T, e *env, l, irr Lease) map[string][]byte
			want    TidyResult // Scanned is checked apart
			check   func(t *testing.T, e *env, l, irr Lease)
		}{
			"healthy store": {
				corrupt: func(*testing.T, *env, Lease, Lease) map[string][]byte { return nil },
			},
			"missing expiry entry": {
				corrupt: func(t *testing.T, e *env, l, _ Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + dueKey(l.NextAttempt, l.ID): nil}
				},
				want: TidyResult{Reindexed: 1},
				check: func(t *testing.T, e *env, l, _ Lease) {
					e.step(t, l.ExpireTime)
					if _, ok := e.get(t, l.ID); ok {
						t.Fatal("re-indexed lease not revoked at its expiry")
					}
				},
			},
			"expiry entry of no lease": {
				corrupt: func(*testing.T, *env, Lease, Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + dueKey(t0.Add(time.Hour), "ldap/creds/app/gone"): {}}
				},
				want: TidyResult{DanglingDue: 1},
			},
			"stale expiry entry": {
				corrupt: func(t *testing.T, e *env, l, _ Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + dueKey(l.NextAttempt.Add(time.Minute), l.ID): {}}
				},
				want: TidyResult{DanglingDue: 1},
			},
			"malformed expiry entries": {
				corrupt: func(*testing.T, *env, Lease, Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + "due/zz": {}, keyPrefix + "due/0/x": {}}
				},
				want: TidyResult{DanglingDue: 2},
			},
			"irrevocable entry of no lease": {
				corrupt: func(*testing.T, *env, Lease, Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + irrKey("ldap/creds/app/gone"): encodeIrr("ldap/", "x")}
				},
				want: TidyResult{DanglingIrrevocable: 1},
			},
			"irrevocable entry of a live lease": {
				corrupt: func(t *testing.T, e *env, l, _ Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + irrKey(l.ID): encodeIrr("ldap/", "x")}
				},
				want: TidyResult{DanglingIrrevocable: 1},
			},
			"missing irrevocable entry": {
				corrupt: func(t *testing.T, e *env, _, irr Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + irrKey(irr.ID): nil}
				},
				want: TidyResult{IrrevocableReindexed: 1},
				check: func(t *testing.T, e *env, _, irr Lease) {
					c, err := e.m.CountIrrevocable(context.Background())
					if err != nil || c.Total != 1 {
						t.Fatalf("count %+v, %v", c, err)
					}
				},
			},
			"wrong irrevocable entry": {
				corrupt: func(t *testing.T, e *env, _, irr Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + irrKey(irr.ID): []byte("junk")}
				},
				want: TidyResult{IrrevocableReindexed: 1},
			},
			"undecodable record": {
				corrupt: func(*testing.T, *env, Lease, Lease) map[string][]byte {
					return map[string][]byte{keyPrefix + idKey("ldap/creds/app/junk"): []byte("junk")}
				},
				want: TidyResult{Corrupt: 1},
				check: func(t *testing.T, e *env, _, _ Lease) {
					if _, ok := storagetest.Dump(t, e.raw)[keyPrefix+idKey("ldap/creds/app/junk")]; !ok {
						t.Fatal("Tidy removed an undecodable record")
					}
				},
			},
			"lease of an unregistered mount": {
				corrupt: func(t *testing.T, e *env, _, _ Lease) map[string][]byte {
					if err := e.m.register("db/", e.rev, nil); err != nil {
						t.Fatal(err)
					}
					l, err := e.m.issue(context.Background(), IssueRequest{Path: "db/creds/x", TTL: time.Hour})
					if err != nil {
						t.Fatal(err)
					}
					e.m.Unregister("db/")
					return map[string][]byte{"test/orphan": []byte(l.ID)}
				},
				want: TidyResult{Orphaned: 1},
				check: func(t *testing.T, e *env, _, _ Lease) {
					id := storagetest.Dump(t, e.raw)["test/orphan"]
					got, _ := e.get(t, id)
					if !got.NextAttempt.Equal(t0) || !got.ExpireTime.Equal(t0) {
						t.Fatalf("orphan not queued for revocation: %+v", got)
					}
				},
			},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, nil, nil)
				l := e.issue(t, IssueRequest{TTL: time.Hour})
				irr := e.issue(t, IssueRequest{TTL: time.Hour})
				e.rev.setFail(func(Lease) error { return Permanent(errors.New("nope")) })
				if err := e.m.Revoke(context.Background(), irr.ID, true); err == nil {
					t.Fatal("revocation did not fail")
				}
				e.rev.setFail(nil)
				stored, _ := e.get(t, irr.ID)
				irr = stored.Lease
				raw(t, e.raw, tc.corrupt(t, e, l, irr))
				res, err := e.m.Tidy(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				want := tc.want
				want.Scanned = res.Scanned
				if res != want {
					t.Fatalf("Tidy = %+v, want %+v", res, want)
				}
				if n := len(keysUnder(t, e.raw, keyPrefix+idPrefix)); res.Scanned != n {
					t.Fatalf("scanned %d of %d records", res.Scanned, n)
				}
				if tc.check != nil {
					tc.check(t, e, l, irr)
				}
				again, err := e.m.Tidy(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if again != (TidyResult{Scanned: again.Scanned, Corrupt: want.Corrupt}) {
					t.Fatalf("second Tidy found more to do: %+v", again)
				}
			})
		}
	})
}

func TestTidyBatches(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		n := e.m.batch + 10 // maxBatch, or fewer on etcd
		var corrupt = map[string][]byte{}
		for range n {
			l := e.issue(t, IssueRequest{TTL: time.Hour})
			corrupt[keyPrefix+dueKey(l.NextAttempt, l.ID)] = nil
			corrupt[keyPrefix+dueKey(t0, l.ID)] = []byte{}
		}
		raw(t, e.raw, corrupt)
		res, err := e.m.Tidy(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Scanned != n || res.Reindexed != n || res.DanglingDue != n {
			t.Fatalf("Tidy = %+v", res)
		}
	})
}

func TestTidyOneAtATime(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		e.m.tidying.Store(true)
		res, err := e.m.Tidy(context.Background())
		if err != nil || !res.Skipped {
			t.Fatalf("concurrent Tidy: %+v, %v", res, err)
		}
		e.m.tidying.Store(false)
		if res, _ := e.m.Tidy(context.Background()); res.Skipped {
			t.Fatal("Tidy skipped with none running")
		}
	})
}

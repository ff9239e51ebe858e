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

func TestRenewRefused(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			req       IssueRequest
			prepare   func(t *testing.T, e *env, l Lease)
			at        time.Duration // after t0
			increment time.Duration
			kind      keel.Kind
			message   string
		}{
			"token": {
				req:  IssueRequest{Path: "ldap/creds/app", Renewable: true, Token: true, TTL: time.Hour},
				kind: keel.KindInvalid, message: "use the token renew endpoint",
			},
			"not renewable": {
				req:  IssueRequest{Path: "ldap/creds/app", TTL: time.Hour},
				kind: keel.KindInvalid, message: "not renewable",
			},
			"expired": {
				req: IssueRequest{Path: "ldap/creds/app", Renewable: true, TTL: time.Hour},
				at:  time.Hour, kind: keel.KindInvalid, message: "expired",
			},
			"queued for revocation": {
				req: IssueRequest{Path: "ldap/creds/app", Renewable: true, TTL: time.Hour},
				prepare: func(t *testing.T, e *env, l Lease) {
					if err := e.m.Revoke(context.Background(), l.ID, false); err != nil {
						t.Fatal(err)
					}
				},
				kind: keel.KindInvalid, message: "expired",
			},
			"irrevocable": {
				req: IssueRequest{Path: "ldap/creds/app", Renewable: true, TTL: time.Hour},
				prepare: func(t *testing.T, e *env, l Lease) {
					raw(t, e.raw, map[string][]byte{
						keyPrefix + idKey(l.ID): encodeEntry(&entry{Lease: Lease{Mount: "ldap/", IssueTime: t0,
							ExpireTime: t0.Add(time.Hour), MaxTTL: time.Hour, Renewable: true, Irrevocable: true,
							LastError: "ldap down", NextAttempt: t0.Add(time.Hour)}, IssuedTTL: time.Hour}),
					})
				},
				kind: keel.KindInvalid, message: "irrevocable",
			},
			"past max ttl": {
				req: IssueRequest{Path: "ldap/creds/app", Renewable: true, TTL: time.Hour, MaxTTL: time.Hour},
				prepare: func(t *testing.T, e *env, l Lease) {
					// A lease stored with an expiry beyond its max TTL
					// (written by an older or a broken writer).
					ent, _ := e.get(t, l.ID)
					ent.ExpireTime = t0.Add(3 * time.Hour)
					ent.NextAttempt = ent.ExpireTime
					raw(t, e.raw, map[string][]byte{keyPrefix + idKey(l.ID): encodeEntry(&ent)})
				},
				at: 2 * time.Hour, kind: keel.KindInvalid, message: "past the max TTL",
			},
			"negative increment": {
				req:       IssueRequest{Path: "ldap/creds/app", Renewable: true, TTL: time.Hour},
				increment: -time.Second, kind: keel.KindInvalid, message: "Increment",
			},
			"unregistered mount": {
				req:     IssueRequest{Path: "ldap/creds/app", Renewable: true, TTL: time.Hour},
				prepare: func(t *testing.T, e *env, l Lease) { e.m.Unregister("ldap/") },
				kind:    keel.KindUnavailable, message: "no engine",
			},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, nil, nil)
				l := e.issue(t, tc.req)
				if tc.prepare != nil {
					tc.prepare(t, e, l)
				}
				e.clock.Set(t0.Add(tc.at))
				before := storagetest.Dump(t, e.raw)
				_, err := e.m.Renew(context.Background(), l.ID, tc.increment)
				wantKind(t, err, tc.kind)
				if !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("error %q does not say %q", err, tc.message)
				}
				if !mapsEqual(before, storagetest.Dump(t, e.raw)) {
					t.Fatal("a refused renewal changed the store")
				}
			})
		}
	})
}

func TestRenewUnknownAndEmpty(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		_, err := e.m.Renew(context.Background(), "ldap/creds/app/nope", 0)
		wantKind(t, err, keel.KindNotFound)
		_, err = e.m.Renew(context.Background(), "", 0)
		wantKind(t, err, keel.KindInvalid)
	})
}

// TestInvalidFields checks that refusals name the Go path of the input:
// the argument leaseID as "LeaseID", and so on (see keel.FieldError).
func TestInvalidFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := context.Background()
		l := e.issue(t, IssueRequest{Path: "ldap/creds/app", TTL: time.Hour})
		_, renewEmpty := e.m.Renew(ctx, "", -time.Second)
		_, renewRefused := e.m.Renew(ctx, l.ID, 0) // not renewable
		_, get := e.m.Get(ctx, "")
		_, newNil := New(nil, nil)
		for name, tc := range map[string]struct {
			err  error
			want []string
		}{
			"renew empty":        {renewEmpty, []string{"LeaseID", "Increment"}},
			"renew refused":      {renewRefused, []string{"LeaseID"}},
			"get empty":          {get, []string{"LeaseID"}},
			"revoke empty":       {e.m.Revoke(ctx, "", true), []string{"LeaseID"}},
			"revoke-prefix none": {e.m.RevokePrefix(ctx, "", false), []string{"Prefix"}},
			"revoke-force none":  {e.m.RevokeForce(ctx, ""), []string{"Prefix"}},
			"new without store":  {newNil, []string{"Store"}},
		} {
			var got []string
			for _, fe := range keel.FieldErrors(tc.err) {
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: fields %q (%v), want %q", name, got, tc.err, tc.want)
			}
		}
	})
}

func TestRenew(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		const h = time.Hour
		for name, tc := range map[string]struct {
			ttl, maxTTL time.Duration
			at          time.Duration // after t0
			increment   time.Duration
			wantTTL     time.Duration
			requested   time.Duration // 0: wantTTL
			capped      bool
		}{
			"increment":               {ttl: h, maxTTL: 10 * h, at: 30 * time.Minute, increment: 2 * h, wantTTL: 2 * h},
			"zero: the issued ttl":    {ttl: h, maxTTL: 10 * h, at: 30 * time.Minute, wantTTL: h},
			"shorter than left":       {ttl: 5 * h, maxTTL: 10 * h, at: h, increment: time.Minute, wantTTL: time.Minute},
			"capped at max ttl":       {ttl: h, maxTTL: 2 * h, at: 30 * time.Minute, increment: 4 * h, wantTTL: 90 * time.Minute, requested: 4 * h, capped: true},
			"zero capped at max ttl":  {ttl: 2 * h, maxTTL: 2 * h, at: h, wantTTL: h, requested: 2 * h, capped: true},
			"exactly what is left":    {ttl: 90 * time.Minute, maxTTL: 2 * h, at: h, increment: h, wantTTL: h},
			"one nanosecond too long": {ttl: 90 * time.Minute, maxTTL: 2 * h, at: h, increment: h + 1, wantTTL: h, requested: h + 1, capped: true},
			"capped below a second":   {ttl: h, maxTTL: 2 * h, at: 1500 * time.Millisecond, increment: 3 * h, wantTTL: 2*h - 1500*time.Millisecond, requested: 3 * h, capped: true},
		} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, open, nil, nil)
				l := e.issue(t, IssueRequest{TTL: tc.ttl, MaxTTL: tc.maxTTL, Renewable: true})
				now := t0.Add(tc.at)
				e.clock.Set(now)
				r, err := e.m.Renew(context.Background(), l.ID, tc.increment)
				if err != nil {
					t.Fatal(err)
				}
				if r.TTL != tc.wantTTL || !r.Lease.ExpireTime.Equal(now.Add(tc.wantTTL)) {
					t.Fatalf("TTL %s expiry %s, want %s", r.TTL, r.Lease.ExpireTime, tc.wantTTL)
				}
				if !r.Lease.LastRenewalTime.Equal(now) || !r.Lease.IssueTime.Equal(t0) || !r.Lease.NextAttempt.Equal(r.Lease.ExpireTime) {
					t.Fatalf("renewed lease %+v", r.Lease)
				}
				requested := tc.requested
				if requested == 0 {
					requested = tc.wantTTL
				}
				if r.Capped != tc.capped || r.Requested != requested {
					t.Fatalf("Capped %v, Requested %s; want %v, %s", r.Capped, r.Requested, tc.capped, requested)
				}
				// Stored, and the index moved in the same transaction.
				got, err := e.m.Get(context.Background(), l.ID)
				if err != nil || !leaseEqual(got, r.Lease) {
					t.Fatalf("Get = %+v, %v; want %+v", got, err, r.Lease)
				}
				wantKeys := []string{keyPrefix + dueKey(r.Lease.ExpireTime, l.ID), keyPrefix + idKey(l.ID)}
				if got := keysUnder(t, e.raw, ""); !equalStrings(got, wantKeys) {
					t.Fatalf("keys %q, want %q", got, wantKeys)
				}
			})
		}
	})
}

func TestRenewMovesRevocation(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
		if _, err := e.m.Renew(context.Background(), l.ID, 3*time.Hour); err != nil {
			t.Fatal(err)
		}
		if next := e.step(t, t0.Add(2*time.Hour)); !next.Equal(t0.Add(3 * time.Hour)) {
			t.Fatalf("next %s, want the renewed expiry", next)
		}
		if ids := e.rev.ids(); len(ids) != 0 {
			t.Fatalf("renewed lease revoked at its old expiry: %q", ids)
		}
		e.step(t, t0.Add(3*time.Hour))
		if ids := e.rev.ids(); len(ids) != 1 {
			t.Fatalf("revoked %q at the renewed expiry", ids)
		}
	})
}

// refreshingRevoker is a fakeRevoker that is a Refresher too.
type refreshingRevoker struct {
	fakeRevoker
	data any
	err  error
}

func (r *refreshingRevoker) Refresh(ctx context.Context, l Lease) (any, error) {
	return r.data, r.err
}

// TestRenewAnswersTheRefresherData: a renewal returns the data of the
// mount's Refresher (a kv secret read anew); its error refuses the
// renewal and leaves the store as it was.
func TestRenewAnswersTheRefresherData(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		rr := &refreshingRevoker{data: map[string]any{"password": "p"}}
		if err := e.m.register("ldap/", rr, nil); err != nil {
			t.Fatal(err)
		}
		l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
		r, err := e.m.Renew(context.Background(), l.ID, 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := r.Data.(map[string]any); !ok || m["password"] != "p" || r.TTL != 2*time.Hour {
			t.Fatalf("renewal %+v, want the refresher's data", r)
		}
		rr.err = keel.KindNotFound
		before := storagetest.Dump(t, e.raw)
		_, err = e.m.Renew(context.Background(), l.ID, time.Hour)
		wantKind(t, err, keel.KindNotFound)
		if !mapsEqual(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("refused renewal changed the store")
		}
	})
}

func TestRenewCallsRenewer(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		rr := &renewingRevoker{}
		if err := e.m.register("ldap/", rr, nil); err != nil {
			t.Fatal(err)
		}
		l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
		if _, err := e.m.Renew(context.Background(), l.ID, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		if len(rr.renewals) != 1 || rr.renewals[0] != 2*time.Hour {
			t.Fatalf("renewer calls %v", rr.renewals)
		}

		t.Run("its error refuses the renewal", func(t *testing.T) {
			for name, tc := range map[string]struct {
				err  error
				kind keel.Kind
			}{
				"plain error":     {errors.New("db down"), keel.KindUnavailable},
				"classified kept": {keel.Invalid("Role", "is gone"), keel.KindInvalid},
			} {
				t.Run(name, func(t *testing.T) {
					rr.renewErr = tc.err
					defer func() { rr.renewErr = nil }()
					before := storagetest.Dump(t, e.raw)
					_, err := e.m.Renew(context.Background(), l.ID, time.Hour)
					wantKind(t, err, tc.kind)
					if !errors.Is(err, tc.err) {
						t.Fatalf("%v does not wrap the renewer's error", err)
					}
					if !mapsEqual(before, storagetest.Dump(t, e.raw)) {
						t.Fatal("refused renewal changed the store")
					}
				})
			}
		})

		t.Run("lease changed meanwhile", func(t *testing.T) {
			rr.onRenew = func() {
				if err := e.m.Revoke(context.Background(), l.ID, false); err != nil {
					t.Error(err)
				}
			}
			defer func() { rr.onRenew = nil }()
			_, err := e.m.Renew(context.Background(), l.ID, time.Hour)
			wantKind(t, err, keel.KindConflict)
			got, _ := e.get(t, l.ID)
			if got.ExpireTime.After(t0) {
				t.Fatalf("renewal stored over a concurrent revocation: %+v", got)
			}
		})

		t.Run("lease removed meanwhile", func(t *testing.T) {
			l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
			rr.onRenew = func() {
				if err := e.m.Revoke(context.Background(), l.ID, true); err != nil {
					t.Error(err)
				}
			}
			defer func() { rr.onRenew = nil }()
			_, err := e.m.Renew(context.Background(), l.ID, time.Hour)
			wantKind(t, err, keel.KindNotFound)
			if _, ok := e.get(t, l.ID); ok {
				t.Fatal("renewal resurrected a revoked lease")
			}
		})
	})
}

func TestRenewWakesWorker(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
	<-e.m.wake
	if _, err := e.m.Renew(context.Background(), l.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.m.wake:
	default:
		t.Fatal("Renew did not wake the worker (the lease may now expire before the worker's timer)")
	}
}

package lease

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestHoldKeepsDueLeases: while revocations are held, a Step revokes
// nothing past due, in this Manager and in another over the same store;
// Get reports the due leases Held; Release lets the next Step revoke them
// all. A lease's own revocation by a caller still runs.
func TestHoldKeepsDueLeases(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		other := newEnvOn(t, e, nil)
		ctx := context.Background()
		var ids []string
		for range 5 {
			ids = append(ids, e.issue(t, IssueRequest{TTL: time.Minute}).ID)
		}
		explicit := e.issue(t, IssueRequest{TTL: time.Minute})
		if err := e.m.Hold(ctx); err != nil {
			t.Fatal(err)
		}
		due := t0.Add(time.Hour)
		for _, m := range []*Manager{e.m, other.m} {
			next, err := m.Step(ctx, due)
			if err != nil || !next.After(due) {
				t.Fatalf("held Step: next %s, %v", next, err)
			}
		}
		if got := e.rev.ids(); len(got) != 0 {
			t.Fatalf("held Steps revoked %q", got)
		}
		e.clock.Set(due)
		l, err := e.m.Get(ctx, ids[0])
		if err != nil || !l.Held {
			t.Fatalf("Get of a held due lease: %+v, %v", l, err)
		}
		if held, err := other.m.Held(ctx); err != nil || !held {
			t.Fatalf("the other Manager: Held = %v, %v", held, err)
		}
		if err := e.m.Revoke(ctx, explicit.ID, true); err != nil {
			t.Fatalf("a caller's revocation while held: %v", err)
		}

		if err := other.m.Release(ctx); err != nil {
			t.Fatal(err)
		}
		e.step(t, due)
		for _, id := range ids {
			if _, ok := e.get(t, id); ok {
				t.Fatalf("lease %s not revoked after Release", id)
			}
		}
		if _, err := e.m.Get(ctx, ids[0]); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("Get after the revocation: %v", err)
		}
	})
}

// TestOptionsHeld: a Manager opened held revokes nothing until Release.
func TestOptionsHeld(t *testing.T) {
	e := newEnv(t, everystore.Mem, &Options{Held: true}, nil)
	l := e.issue(t, IssueRequest{TTL: time.Minute})
	e.step(t, l.ExpireTime)
	if _, ok := e.get(t, l.ID); !ok {
		t.Fatal("a Manager opened held revoked a due lease")
	}
	if err := e.m.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.step(t, l.ExpireTime)
	if _, ok := e.get(t, l.ID); ok {
		t.Fatal("not revoked after Release")
	}
}

// TestHoldNeedsSudo: Hold and Release need sudo on sys/leases/hold.
func TestHoldNeedsSudo(t *testing.T) {
	auth := &recordingAuthorizer{}
	e := newEnv(t, everystore.Mem, &Options{Authorizer: auth}, nil)
	auth.SetDeny(true)
	ctx := context.Background()
	if err := e.m.Hold(ctx); keel.KindOf(err) != keel.KindForbidden {
		t.Fatalf("Hold refused: %v", err)
	}
	if err := e.m.Release(ctx); keel.KindOf(err) != keel.KindForbidden {
		t.Fatalf("Release refused: %v", err)
	}
	auth.SetDeny(false)
	auth.Take()
	if err := e.m.Hold(ctx); err != nil {
		t.Fatal(err)
	}
	if got := auth.Take(); len(got) != 1 || got[0] != (ask{Cap: keel.CapSudo, Resource: "sys/leases/hold"}) {
		t.Fatalf("Hold asked %v", got)
	}
}

// newEnvOn returns an env of a second Manager over e's store, with e's
// clock and revoker (a second process's, as far as the store goes).
func newEnvOn(t testing.TB, e *env, opts *Options) *env {
	t.Helper()
	o := Options{Clock: e.clock}
	if opts != nil {
		o = *opts
		o.Clock = e.clock
	}
	m := mustNew(t, e.store, &o)
	t.Cleanup(m.Stop)
	if err := m.register("ldap/", e.rev, nil); err != nil {
		t.Fatal(err)
	}
	return &env{m: m, store: e.store, raw: e.raw, clock: e.clock, rev: e.rev}
}

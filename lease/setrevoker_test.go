package lease

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// A mount registered without a Revoker waits for its engine: its due
// leases are put off, not revoked and not counted as failed, and its
// renewals refused, until the engine built with its Issuer names its
// Revoker; an Issuer of an older registration of the path cannot.
func TestMountWaitsForItsRevoker(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		e := newEnv(t, open, nil, nil)
		old, err := e.m.Register(Mount{Path: "db/", Revoker: e.rev})
		if err != nil {
			t.Fatal(err)
		}
		l, err := old.Issue(ctx, IssueRequest{Path: "db/creds/app", TTL: time.Minute, Renewable: true})
		if err != nil {
			t.Fatal(err)
		}
		e.m.Unregister("db/")
		iss, err := e.m.Register(Mount{Path: "db/"})
		if err != nil {
			t.Fatal(err)
		}
		old.SetRevoker(e.rev) // the old registration's: ignored
		_, err = e.m.Renew(ctx, l.ID, time.Minute)
		wantKind(t, err, keel.KindUnavailable)
		e.step(t, l.ExpireTime)
		if got, ok := e.get(t, l.ID); !ok || got.Attempts != 0 || len(e.rev.ids()) != 0 {
			t.Fatalf("before the engine names its Revoker: %+v (stored %v), revoker calls %q", got, ok, e.rev.ids())
		}
		iss.SetRevoker(e.rev)
		e.step(t, l.ExpireTime.Add(time.Second))
		if _, ok := e.get(t, l.ID); ok || len(e.rev.ids()) != 1 {
			t.Fatalf("after SetRevoker: stored %v, revoker calls %q", ok, e.rev.ids())
		}
	})
}

// CheckStore accepts the view the mount was registered with, and no
// other.
func TestIssuerCheckStore(t *testing.T) {
	e := newEnv(t, everystore.Mem, nil, nil)
	view := storage.Sub(e.store, "engine/")
	iss, err := e.m.Register(Mount{Path: "db/", Revoker: e.rev, Store: view})
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.CheckStore("Store", storage.Sub(e.store, "engine/")); err != nil {
		t.Fatalf("the same view: %v", err)
	}
	for _, s := range []storage.Store{storage.Sub(e.store, "other/"), e.store} {
		err := iss.CheckStore("Store", s)
		wantKind(t, err, keel.KindInvalid)
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Store" {
			t.Fatalf("field errors %v, want one for Store", fe)
		}
	}
	plain, err := e.m.Register(Mount{Path: "kv/", Revoker: Advisory})
	if err != nil {
		t.Fatal(err)
	}
	wantKind(t, plain.CheckStore("Store", view), keel.KindInvalid)
}

// A synchronous revoke-prefix meets a lease no engine serves here: it
// fails Unavailable and leaves it as it was, never counting a failed
// attempt; an Issuer kept past its mount's removal or re-registration
// issues nothing.
func TestNoRevokerIsNoFailure(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		e := newEnv(t, open, nil, nil)
		old, err := e.m.Register(Mount{Path: "db/", Revoker: e.rev})
		if err != nil {
			t.Fatal(err)
		}
		l, err := old.Issue(ctx, IssueRequest{Path: "db/creds/app", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		e.m.Unregister("db/")
		for range 3 {
			err := e.m.RevokePrefix(ctx, "db/", true)
			wantKind(t, err, keel.KindUnavailable)
		}
		if got, ok := e.get(t, l.ID); !ok || got.Attempts != 0 || !got.ExpireTime.Equal(l.ExpireTime) {
			t.Fatalf("after revoke-prefix with no revoker: %+v (stored %v)", got, ok)
		}
		_, err = old.Issue(ctx, IssueRequest{Path: "db/creds/app", TTL: time.Hour})
		wantKind(t, err, keel.KindUnavailable)
		if _, err := e.m.Register(Mount{Path: "db/", Revoker: e.rev}); err != nil {
			t.Fatal(err)
		}
		_, err = old.Issue(ctx, IssueRequest{Path: "db/creds/app", TTL: time.Hour})
		wantKind(t, err, keel.KindUnavailable)
		if ids, err := listAll(ctx, e.m, "db/creds/app/"); err != nil || len(ids) != 1 {
			t.Fatalf("leases %q, %v; want only the first", ids, err)
		}
	})
}

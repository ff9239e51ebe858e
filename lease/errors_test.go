package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
)

// TestErrorsStartWithLease: the error of every failing operation of the
// package starts with "lease: ", exactly once, and has the kind its doc
// names: invalid requests, unknown and expired leases, missing rights,
// engines and stores that are unavailable, requests too large for the
// store, conflicts, corrupt records and a cancelled step.
func TestErrorsStartWithLease(t *testing.T) {
	ctx := context.Background()
	fresh := func(t *testing.T) *env { return newEnv(t, everystore.Mem, nil, nil) }
	// mount registers "db/" on e, with a Store when withStore, and
	// returns its Issuer.
	mount := func(t *testing.T, e *env, withStore bool, r Revoker) *Issuer {
		t.Helper()
		mt := Mount{Path: "db/", Revoker: r}
		if withStore {
			mt.Store = storage.Sub(e.store, "engine/")
		}
		iss, err := e.m.Register(mt)
		if err != nil {
			t.Fatal(err)
		}
		return iss
	}
	// storeDown returns an env whose store fails op with an error of kind
	// keel.KindUnavailable, once armed.
	storeDown := func(t *testing.T) (*env, func(op faultstore.Op, prefix string)) {
		e, fs := faultEnv(t, everystore.Mem)
		return e, func(op faultstore.Op, prefix string) {
			fs.Fail(op, prefix, 0, fmt.Errorf("etcd: no leader: %w", keel.KindUnavailable))
		}
	}
	corrupt := func(t *testing.T, e *env, key string) {
		t.Helper()
		raw(t, e.raw, map[string][]byte{keyPrefix + key: []byte("junk")})
	}
	long := "db/" + strings.Repeat("x", 5000) // past memstore's 4 KiB keys

	cases := map[string]struct {
		kind keel.Kind
		run  func(t *testing.T) error
	}{
		// Invalid requests.
		"new without store": {keel.KindInvalid, func(t *testing.T) error {
			_, err := New(nil, nil)
			return err
		}},
		"register without slash": {keel.KindInvalid, func(t *testing.T) error {
			_, err := fresh(t).m.Register(Mount{Path: "db", Revoker: Advisory})
			return err
		}},
		"register twice": {keel.KindInvalid, func(t *testing.T) error {
			_, err := fresh(t).m.Register(Mount{Path: "ldap/", Revoker: Advisory})
			return err
		}},
		"register overlapping": {keel.KindInvalid, func(t *testing.T) error {
			_, err := fresh(t).m.Register(Mount{Path: "ldap/creds/", Revoker: Advisory})
			return err
		}},
		"register another store": {keel.KindInvalid, func(t *testing.T) error {
			_, err := fresh(t).m.Register(Mount{Path: "db/", Store: storage.Sub(everystore.Mem(t), "engine/")})
			return err
		}},
		"check mount TTLs": {keel.KindInvalid, func(t *testing.T) error {
			return fresh(t).m.CheckMount(Mount{Path: "db/", DefaultTTL: -time.Second, MaxTTL: 10000 * time.Hour})
		}},
		"check store": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			return mount(t, e, true, Advisory).CheckStore("Store", storage.Sub(e.store, "other/"))
		}},
		"issue outside the mount": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			_, err := mount(t, e, false, Advisory).Issue(ctx, IssueRequest{Path: "ldap/creds/app"})
			return err
		}},
		"issue a malformed path": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			_, err := mount(t, e, false, Advisory).Issue(ctx, IssueRequest{Path: "db/a/../b", TTL: -time.Second})
			return err
		}},
		"issue a malformed path in a transaction": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			_, err := mount(t, e, true, Advisory).Issue(ctx, IssueRequest{Path: "db//b"})
			return err
		}},
		"end without id": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			return mount(t, e, true, Advisory).Update(ctx, func(_ context.Context, _ storage.Tx, leases *Tx) error {
				return leases.End("")
			})
		}},
		"end outside the mount": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			l := e.issue(t, IssueRequest{TTL: time.Hour})
			return mount(t, e, true, Advisory).Update(ctx, func(_ context.Context, _ storage.Tx, leases *Tx) error {
				return leases.End(l.ID)
			})
		}},
		"get without id": {keel.KindInvalid, func(t *testing.T) error {
			_, err := fresh(t).m.Get(ctx, "")
			return err
		}},
		"renew without id": {keel.KindInvalid, func(t *testing.T) error {
			_, err := fresh(t).m.Renew(ctx, "", -time.Second)
			return err
		}},
		"renew not renewable": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			_, err := e.m.Renew(ctx, e.issue(t, IssueRequest{TTL: time.Hour}).ID, 0)
			return err
		}},
		"renew a token": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			_, err := e.m.Renew(ctx, e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true, Token: true}).ID, 0)
			return err
		}},
		"renew irrevocable": {keel.KindInvalid, func(t *testing.T) error {
			e := fresh(t)
			_, err := e.m.Renew(ctx, makeIrrevocable(t, e, "ldap/creds/app", 1)[0], 0)
			return err
		}},
		"revoke without id": {keel.KindInvalid, func(t *testing.T) error {
			return fresh(t).m.Revoke(ctx, "", true)
		}},
		"revoke-prefix without prefix": {keel.KindInvalid, func(t *testing.T) error {
			return fresh(t).m.RevokePrefix(ctx, "", false)
		}},
		"revoke-force without prefix": {keel.KindInvalid, func(t *testing.T) error {
			return fresh(t).m.RevokeForce(ctx, "")
		}},

		// Unknown and expired leases.
		"get unknown": {keel.KindNotFound, func(t *testing.T) error {
			_, err := fresh(t).m.Get(ctx, "ldap/creds/app/nope")
			return err
		}},
		"get expired": {keel.KindNotFound, func(t *testing.T) error {
			e := fresh(t)
			l := e.issue(t, IssueRequest{TTL: time.Minute})
			e.clock.Advance(time.Hour)
			_, err := e.m.Get(ctx, l.ID)
			return err
		}},
		"renew unknown": {keel.KindNotFound, func(t *testing.T) error {
			_, err := fresh(t).m.Renew(ctx, "ldap/creds/app/nope", time.Minute)
			return err
		}},
		"renew revoked meanwhile": {keel.KindNotFound, func(t *testing.T) error {
			e := fresh(t)
			rr := &renewingRevoker{}
			mount(t, e, false, rr)
			l := e.issue(t, IssueRequest{Path: "db/creds/x", TTL: time.Hour, Renewable: true})
			rr.onRenew = func() { _ = e.m.Revoke(ctx, l.ID, true) }
			_, err := e.m.Renew(ctx, l.ID, time.Hour)
			return err
		}},

		// Conflicts.
		"renew of a lease that changed": {keel.KindConflict, func(t *testing.T) error {
			e := fresh(t)
			rr := &renewingRevoker{}
			mount(t, e, false, rr)
			l := e.issue(t, IssueRequest{Path: "db/creds/x", TTL: time.Hour, Renewable: true})
			rr.onRenew = func() { _ = e.m.Revoke(ctx, l.ID, false) }
			_, err := e.m.Renew(ctx, l.ID, time.Hour)
			return err
		}},

		// Engines unavailable.
		"revoke, engine down": {keel.KindUnavailable, func(t *testing.T) error {
			e := fresh(t)
			l := e.issue(t, IssueRequest{TTL: time.Hour})
			e.rev.setFail(func(Lease) error { return errors.New("directory down") })
			return e.m.Revoke(ctx, l.ID, true)
		}},
		"revoke-prefix, engine down": {keel.KindUnavailable, func(t *testing.T) error {
			e := fresh(t)
			e.issue(t, IssueRequest{TTL: time.Hour})
			e.rev.setFail(func(Lease) error { return errors.New("directory down") })
			return e.m.RevokePrefix(ctx, "ldap/", true)
		}},
		"revoke without revoker": {keel.KindUnavailable, func(t *testing.T) error {
			e := fresh(t)
			mount(t, e, false, nil)
			return e.m.Revoke(ctx, e.issue(t, IssueRequest{Path: "db/creds/x", TTL: time.Hour}).ID, true)
		}},
		"renew without revoker": {keel.KindUnavailable, func(t *testing.T) error {
			e := fresh(t)
			mount(t, e, false, nil)
			_, err := e.m.Renew(ctx, e.issue(t, IssueRequest{Path: "db/creds/x", TTL: time.Hour, Renewable: true}).ID, 0)
			return err
		}},
		"renew refused by the engine": {keel.KindUnavailable, func(t *testing.T) error {
			e := fresh(t)
			mount(t, e, false, &renewingRevoker{renewErr: errors.New("database down")})
			_, err := e.m.Renew(ctx, e.issue(t, IssueRequest{Path: "db/creds/x", TTL: time.Hour, Renewable: true}).ID, 0)
			return err
		}},
		"issue after unregister": {keel.KindUnavailable, func(t *testing.T) error {
			e := fresh(t)
			iss := mount(t, e, false, Advisory)
			iss.Unregister()
			_, err := iss.Issue(ctx, IssueRequest{Path: "db/creds/x"})
			return err
		}},

		// Stores unavailable.
		"issue, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			iss := mount(t, e, false, Advisory)
			down(faultstore.OpCommit, "")
			_, err := iss.Issue(ctx, IssueRequest{Path: "db/creds/x"})
			return err
		}},
		"issue in a transaction, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			iss := mount(t, e, true, Advisory)
			down(faultstore.OpCommit, "")
			_, err := iss.Issue(ctx, IssueRequest{Path: "db/creds/x"})
			return err
		}},
		"update, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			iss := mount(t, e, true, Advisory)
			down(faultstore.OpCommit, "")
			return iss.Update(ctx, func(context.Context, storage.Tx, *Tx) error { return nil })
		}},
		"get, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			l := e.issue(t, IssueRequest{TTL: time.Hour})
			down(faultstore.OpGet, "")
			_, err := e.m.Get(ctx, l.ID)
			return err
		}},
		"list, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			down(faultstore.OpScan, "")
			_, err := e.m.List(ctx, "ldap/", keel.ListRequest{})
			return err
		}},
		"renew, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			l := e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true})
			down(faultstore.OpCommit, "")
			_, err := e.m.Renew(ctx, l.ID, 0)
			return err
		}},
		"revoke queued, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			l := e.issue(t, IssueRequest{TTL: time.Hour})
			down(faultstore.OpCommit, "")
			return e.m.Revoke(ctx, l.ID, false)
		}},
		"revoke-force, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			e.issue(t, IssueRequest{TTL: time.Hour})
			down(faultstore.OpCommit, "")
			return e.m.RevokeForce(ctx, "ldap/creds/")
		}},
		"step, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			l := e.issue(t, IssueRequest{TTL: time.Hour})
			down(faultstore.OpCommit, "")
			_, err := e.m.Step(ctx, l.ExpireTime)
			return err
		}},
		"tidy, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			e.issue(t, IssueRequest{TTL: time.Hour})
			down(faultstore.OpScan, "")
			_, err := e.m.Tidy(ctx)
			return err
		}},
		"count irrevocable, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			down(faultstore.OpScan, "")
			_, err := e.m.CountIrrevocable(ctx)
			return err
		}},
		"list irrevocable, store down": {keel.KindUnavailable, func(t *testing.T) error {
			e, down := storeDown(t)
			down(faultstore.OpScan, "")
			_, err := e.m.ListIrrevocable(ctx, keel.ListRequest{})
			return err
		}},

		// Too large for the store.
		"issue a path too long": {keel.KindTooLarge, func(t *testing.T) error {
			e := fresh(t)
			_, err := mount(t, e, false, Advisory).Issue(ctx, IssueRequest{Path: long})
			return err
		}},
		"issue a path too long in a transaction": {keel.KindTooLarge, func(t *testing.T) error {
			e := fresh(t)
			_, err := mount(t, e, true, Advisory).Issue(ctx, IssueRequest{Path: long})
			return err
		}},

		// Corrupt records and misuse.
		"get a corrupt record": {keel.KindInternal, func(t *testing.T) error {
			e := fresh(t)
			corrupt(t, e, idKey("ldap/creds/app/bad"))
			_, err := e.m.Get(ctx, "ldap/creds/app/bad")
			return err
		}},
		"count a corrupt index": {keel.KindInternal, func(t *testing.T) error {
			e := fresh(t)
			corrupt(t, e, irrKey("ldap/creds/app/bad"))
			_, err := e.m.CountIrrevocable(ctx)
			return err
		}},
		"list a corrupt index": {keel.KindInternal, func(t *testing.T) error {
			e := fresh(t)
			corrupt(t, e, irrKey("ldap/creds/app/bad"))
			_, err := e.m.ListIrrevocable(ctx, keel.ListRequest{})
			return err
		}},
		"update without a store": {keel.KindInternal, func(t *testing.T) error {
			e := fresh(t)
			return mount(t, e, false, Advisory).Update(ctx, func(context.Context, storage.Tx, *Tx) error { return nil })
		}},
		"a Tx after its closure": {keel.KindInternal, func(t *testing.T) error {
			e := fresh(t)
			var kept *Tx
			if err := mount(t, e, true, Advisory).Update(ctx, func(_ context.Context, _ storage.Tx, leases *Tx) error {
				kept = leases
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			_, err := kept.Issue(IssueRequest{Path: "db/creds/x"})
			return err
		}},

		// Cancellation.
		"step cancelled": {keel.KindCanceled, func(t *testing.T) error {
			e := fresh(t)
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := e.m.Step(cctx, t0)
			return err
		}},
	}

	// Missing rights, on every operation that asks for one.
	denied := map[string]func(m *Manager, id string) error{
		"get":           func(m *Manager, id string) error { _, err := m.Get(ctx, id); return err },
		"list":          func(m *Manager, _ string) error { _, err := m.List(ctx, "ldap/", keel.ListRequest{}); return err },
		"renew":         func(m *Manager, id string) error { _, err := m.Renew(ctx, id, 0); return err },
		"revoke":        func(m *Manager, id string) error { return m.Revoke(ctx, id, true) },
		"revoke-prefix": func(m *Manager, _ string) error { return m.RevokePrefix(ctx, "ldap/", true) },
		"revoke-force":  func(m *Manager, _ string) error { return m.RevokeForce(ctx, "ldap/") },
		"tidy":          func(m *Manager, _ string) error { _, err := m.Tidy(ctx); return err },
		"count":         func(m *Manager, _ string) error { _, err := m.CountIrrevocable(ctx); return err },
		"list irrevocable": func(m *Manager, _ string) error {
			_, err := m.ListIrrevocable(ctx, keel.ListRequest{})
			return err
		},
	}
	for name, op := range denied {
		cases[name+" forbidden"] = struct {
			kind keel.Kind
			run  func(t *testing.T) error
		}{keel.KindForbidden, func(t *testing.T) error {
			auth := &recordingAuthorizer{}
			auth.SetDeny(true)
			e := newEnv(t, everystore.Mem, &Options{Authorizer: auth}, nil)
			return op(e.m, e.issue(t, IssueRequest{TTL: time.Hour, Renewable: true}).ID)
		}}
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.run(t)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, "lease: ") || strings.Count(msg, "lease: ") != 1 {
				t.Errorf("message %q: want it to start with \"lease: \", once", msg)
			}
			if got := keel.KindOf(err); got != tc.kind {
				t.Errorf("error %q: kind %v, want %v", msg, got, tc.kind)
			}
		})
	}
}

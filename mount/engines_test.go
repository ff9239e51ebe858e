package mount_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage"
)

// tokens is a program's own engine: it hands out tokens under leases of
// its mount, records their revocations, and counts its Start and Stop.
type tokens struct {
	store   storage.Store
	leases  *lease.Issuer
	started atomic.Int32
	stopped atomic.Int32
	mu      sync.Mutex
	revoked []string
}

func (e *tokens) Start() { e.started.Add(1) }
func (e *tokens) Stop()  { e.stopped.Add(1) }

func (e *tokens) Revoke(_ context.Context, l lease.Lease) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.revoked = append(e.revoked, l.ID)
	return nil
}

// issue stores a token and its lease in one transaction.
func (e *tokens) issue(ctx context.Context, name string, ttl time.Duration) (lease.Lease, error) {
	var l lease.Lease
	err := e.leases.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *lease.Tx) error {
		var err error
		if l, err = leases.Issue(lease.IssueRequest{Path: e.leases.Mount() + "creds/" + name, TTL: ttl}); err != nil {
			return err
		}
		return tx.Put("token/"+name, []byte(l.ID))
	})
	return l, err
}

// TestProgramEngineType: the set of engine types is open. A program's type
// checks its options, gets its guarded part of the store and its mount's
// lease handle, names its Revoker with it, and is started, stopped and
// removed by the table like the built-in ones.
func TestProgramEngineType(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		clock := keel.NewFakeClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		var built []*tokens
		typ := mount.EngineType{
			Options: func(in map[string]string) (map[string]string, error) {
				var v keel.Validation
				for k := range in {
					if k != "prefix" {
						v.Add(mount.OptionField(k), "unknown option")
					}
				}
				return in, v.Err()
			},
			Build: func(env mount.Env) (mount.Engine, error) {
				e := &tokens{store: env.Store, leases: env.Leases}
				env.Leases.SetRevoker(e)
				built = append(built, e)
				return e, nil
			},
		}
		table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Clock: clock,
			Types: map[string]mount.EngineType{"tokens": typ}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { table.Close() })

		_, err = table.Enable(ctx, mount.EnableRequest{Path: "tok/", Type: "tokens", Options: map[string]string{"colour": "red"}})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != `Options["colour"]` {
			t.Fatalf("an option the type refuses: %v", err)
		}
		_, err = table.Enable(ctx, mount.EnableRequest{Path: "x/", Type: "pki"})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Type" {
			t.Fatalf("a type the table does not know: %v", err)
		}
		if _, err := table.Enable(ctx, mount.EnableRequest{Path: "tok/", Type: "tokens", Options: map[string]string{"prefix": "t-"}}); err != nil {
			t.Fatal(err)
		}
		m, _, ok := table.Route("tok/creds/a")
		e, _ := m.Engine.(*tokens)
		if !ok || e == nil || len(built) != 1 || e.started.Load() != 1 || m.Options["prefix"] != "t-" {
			t.Fatalf("served %v, engine %T, built %d, started %d, options %v", ok, m.Engine, len(built), e.started.Load(), m.Options)
		}
		l, err := e.issue(ctx, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := table.Leases().Step(ctx, l.ExpireTime); err != nil {
			t.Fatal(err)
		}
		if e.revoked == nil || e.revoked[0] != l.ID {
			t.Fatalf("revoked %q, want the lease %s through the engine's Revoker", e.revoked, l.ID)
		}
		l, err = e.issue(ctx, "b", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := table.Disable(ctx, "tok/"); err != nil {
			t.Fatal(err)
		}
		if e.stopped.Load() == 0 || len(e.revoked) != 2 || e.revoked[1] != l.ID {
			t.Fatalf("after Disable: stopped %d, revoked %q", e.stopped.Load(), e.revoked)
		}
		// The engine kept by the program writes nothing after Disable.
		_, err = e.issue(ctx, "c", time.Minute)
		wantKind(t, err, keel.KindNotFound)
	})
}

// TestSecondEngineAtAMountIsRefused: a program cannot register a second
// engine at a path the table serves, and so take over its leases.
func TestSecondEngineAtAMountIsRefused(t *testing.T) {
	table := open(t, everystore.Mem(t))
	for _, p := range []string{"ldap/", "secret/", "secret/x/"} {
		_, err := table.Leases().Register(lease.Mount{Path: p, Revoker: lease.Advisory})
		wantKind(t, err, keel.KindInvalid)
	}
}

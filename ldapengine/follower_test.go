package ldapengine

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// TestRoleWrittenOnAFollowerIsRotatedWhenDue: on every store, a static
// role written through an engine that runs no worker (a follower; on etcd,
// a Store of another client, as another process) is rotated when due by
// the leader's worker, which slept until a later rotation: the store's
// watch of the due index wakes it, not its own timer.
func TestRoleWrittenOnAFollowerIsRotatedWhenDue(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		dir := newFakeDirectory()
		dir.Add(bindDN, "bind-pw", "cn", "keel")
		dir.Add(aliceDN, "alice-pw", "cn", "alice", "uid", "alice")
		dir.Add(bobDN, "bob-pw", "cn", "bob", "uid", "bob")
		clock := keel.NewFakeClock(t0)
		engine := func(s storage.Store) *Engine {
			pol, err := passwordpolicy.New(storage.Sub(s, policiesPrefix), nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorOpenLDAP, "ldap", &Options{Directory: dir, Clock: clock, Policies: pol})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Stop)
			return e
		}
		lead, follower := engine(store), engine(everystore.Another(t, store))
		if err := lead.WriteConfig(ctx, Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if err := lead.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		lead.Start()
		waitFor(t, "the leader plans alice's rotation", func() bool { return lead.worker.Planned().Equal(t0.Add(time.Hour)) })

		if err := follower.PutStaticRole(ctx, "bob", StaticRoleRequest{Username: "bob", DN: bobDN, RotationPeriod: 10 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		before, err := lead.StaticCred(ctx, "bob")
		if err != nil {
			t.Fatal(err)
		}
		// The leader plans bob's rotation, or earlier work (it may have
		// seen the follower's import rotation in flight, and retries it).
		waitFor(t, "the leader plans bob's rotation", func() bool {
			p := lead.worker.Planned()
			return !p.IsZero() && !p.After(t0.Add(10*time.Minute))
		})
		clock.Advance(10 * time.Minute)
		waitFor(t, "bob rotated by the leader", func() bool {
			c, err := lead.StaticCred(ctx, "bob")
			return err == nil && c.Password != before.Password && dir.Bind(ctx, Conn{}, bobDN, c.Password) == nil
		})
	})
}

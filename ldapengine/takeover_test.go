package ldapengine

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestLeaderLostMidRotationIsSettledByTheNext: two engines on one etcd,
// each with a client of its own and etcd's election (as two processes).
// The leading one writes a rotation's write-ahead record and changes the
// password, but the reply is lost, and then it dies (its client closed:
// its session lapses). The other engine leads after the session TTL and
// settles the rotation: it adopts the password the directory holds,
// without changing it again, and nothing is left pending.
func TestLeaderLostMidRotationIsSettledByTheNext(t *testing.T) {
	ctx := context.Background()
	prefix := etcdtest.Prefix()
	dir := newFakeDirectory()
	dir.Add(bindDN, "bind-pw", "cn", "keel")
	dir.Add(aliceDN, "alice-pw", "cn", "alice", "uid", "alice")
	clock := keel.NewFakeClock(t0)
	engine := func() (*Engine, *clientv3.Client) {
		cli, err := etcdtest.NewClient(etcdtest.Endpoints(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		s := etcdstore.New(cli, &etcdstore.Options{Prefix: prefix})
		pol, err := passwordpolicy.New(storage.Sub(s, policiesPrefix), nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorOpenLDAP, "ldap", &Options{
			Directory: dir, Clock: clock, Policies: pol,
			Leader: s.Leader("ldapengine/ldap", &etcdstore.LeaderOptions{TTL: time.Second}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Stop)
		return e, cli
	}
	a, aClient := engine()
	b, _ := engine()
	if err := a.PutConfig(ctx, Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	a.Start()
	keeltest.Until(t, "a leads and plans alice's rotation", func() bool { return a.worker.Planned().Equal(t0.Add(time.Hour)) })
	b.Start() // waits for a's term

	dir.LoseReplies(aliceDN, true)
	wantKind(t, a.RotateRole(ctx, "alice"), keel.KindUnavailable)
	dir.LoseReplies(aliceDN, false)
	changes := dir.Changes()
	aClient.Close() // a dies: its session is no longer kept alive

	r, err := b.GetStaticRole(ctx, "alice")
	if err != nil || !r.Pending {
		t.Fatalf("role before the takeover: %+v, %v; want a pending rotation", r, err)
	}
	keeltest.Until(t, "b leads and plans the settling", func() bool {
		p := b.worker.Planned()
		return !p.IsZero() && !p.After(r.NextRotation)
	})
	clock.Set(r.NextRotation)
	keeltest.Until(t, "b settles the rotation", func() bool {
		r, err := b.GetStaticRole(ctx, "alice")
		return err == nil && !r.Pending
	})
	if dir.Changes() != changes {
		t.Fatal("the new leader changed the password again instead of adopting the one the directory holds")
	}
	c, err := b.GetStaticCred(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Bind(ctx, Conn{}, aliceDN, c.Password); err != nil {
		t.Fatalf("the settled password does not bind: %v", err)
	}
}

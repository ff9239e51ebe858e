package lease

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
)

// TestLeaseIssuedOnAFollowerIsRevokedWhenDue: on every store, a lease
// issued through a manager that runs no worker (a follower; on etcd, a
// Store of another client, as another process) is revoked when due by the
// leader's worker, which was asleep until a later time: the store's watch
// of the expiry index wakes it, not its own timer.
func TestLeaseIssuedOnAFollowerIsRevokedWhenDue(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		clock := keel.NewFakeClock(t0)
		lead := mustNew(t, store, &Options{Clock: clock})
		follower := mustNew(t, everystore.Another(t, store), &Options{Clock: clock})
		rev := &fakeRevoker{}
		leadIss, err := lead.Register(Mount{Path: "ldap/", Revoker: rev})
		if err != nil {
			t.Fatal(err)
		}
		iss, err := follower.Register(Mount{Path: "ldap/", Revoker: &fakeRevoker{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leadIss.Issue(ctx, IssueRequest{Path: "ldap/creds/late", TTL: 10 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		lead.Start()
		t.Cleanup(lead.Stop)
		waitPlanned(t, lead, t0.Add(10*time.Hour))

		l, err := iss.Issue(ctx, IssueRequest{Path: "ldap/creds/app", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		waitPlanned(t, lead, t0.Add(time.Minute))
		clock.Advance(time.Minute)
		keeltest.Eventually(t, "the leader revokes the lease issued on the follower", func() error {
			if ids := rev.ids(); !slices.Contains(ids, l.ID) {
				return fmt.Errorf("%q not revoked (revoked: %q)", l.ID, ids)
			}
			return nil
		})
	})
}

// waitPlanned waits until m's worker sleeps until at.
func waitPlanned(t *testing.T, m *Manager, at time.Time) {
	t.Helper()
	keeltest.Eventually(t, "the worker's plan", func() error {
		if p := m.worker.Planned(); !p.Equal(at) {
			return fmt.Errorf("the worker plans %v, want %v", p, at)
		}
		return nil
	})
}

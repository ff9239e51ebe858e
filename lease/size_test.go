package lease

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestMain(m *testing.M) { everystore.Main(m) }

// TestRevokePrefixTenThousandOnEveryStore: revoke-prefix of 10,000 leases
// works on every store, etcd's limits included: each lease's revoker is
// called once, and no record or index entry of them is left.
func TestRevokePrefixTenThousandOnEveryStore(t *testing.T) {
	const n = 10000
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		m := mustNew(t, store, &Options{Clock: keel.NewFakeClock(t0)})
		t.Cleanup(m.Stop)
		rev := &fakeRevoker{}
		iss, err := m.Register(Mount{Path: "ldap/", Revoker: rev, Store: storage.Sub(store, "ldap/")})
		if err != nil {
			t.Fatal(err)
		}
		// Issued 25 to a transaction: a lease writes its record and its
		// index entry.
		for done := 0; done < n; done += 25 {
			err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				for range min(25, n-done) {
					if _, err := leases.Issue(IssueRequest{Path: "ldap/creds/app", TTL: time.Hour}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("issue after %d: %v", done, err)
			}
		}
		if err := m.RevokePrefix(ctx, "ldap/creds/", true); err != nil {
			t.Fatalf("RevokePrefix of %d leases: %v", n, err)
		}
		ids := rev.ids()
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%s revoked twice", id)
			}
			seen[id] = true
		}
		if len(seen) != n {
			t.Fatalf("%d leases revoked, want %d", len(seen), n)
		}
		for k := range storagetest.Dump(t, store) {
			if strings.Contains(k, "creds") {
				t.Fatalf("%s left after RevokePrefix", k)
			}
		}
	})
}

// TestQueuedRevokePrefixOnEveryStore: a queued revoke-prefix of more
// leases than one transaction holds on etcd is queued in batches, and the
// worker's steps revoke each lease once and leave no record or index entry
// of them, on every store.
func TestQueuedRevokePrefixOnEveryStore(t *testing.T) {
	const n = 600
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		clock := keel.NewFakeClock(t0)
		m := mustNew(t, store, &Options{Clock: clock})
		rev := &fakeRevoker{}
		iss, err := m.Register(Mount{Path: "ldap/", Revoker: rev, Store: storage.Sub(store, "ldap/")})
		if err != nil {
			t.Fatal(err)
		}
		for done := 0; done < n; done += 25 {
			err := iss.Update(ctx, func(ctx context.Context, tx storage.Tx, leases *Tx) error {
				for range min(25, n-done) {
					if _, err := leases.Issue(IssueRequest{Path: "ldap/creds/app", TTL: time.Hour}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("issue after %d: %v", done, err)
			}
		}
		if err := m.RevokePrefix(ctx, "ldap/creds/", false); err != nil {
			t.Fatalf("queued RevokePrefix of %d leases: %v", n, err)
		}
		if len(rev.ids()) != 0 {
			t.Fatal("a queued revoke-prefix revoked at once")
		}
		for steps := 0; len(rev.ids()) < n; steps++ {
			if steps > n {
				t.Fatalf("%d leases revoked after %d steps, want %d", len(rev.ids()), steps, n)
			}
			if _, err := m.Step(ctx, clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		for _, id := range rev.ids() {
			if seen[id] {
				t.Fatalf("%s revoked twice", id)
			}
			seen[id] = true
		}
		for k := range storagetest.Dump(t, store) {
			if strings.Contains(k, "creds") {
				t.Fatalf("%s left after the queued revocations", k)
			}
		}
	})
}

package ldapengine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
)

// TestLibrarySetShrinksAndSwapsOnEveryStore: on every store, etcd's limits
// included, a set of Limits().MaxLibraryAccounts accounts (120 on etcd;
// 120 on a store without a bound) shrinks to one account, and a set of 50
// swaps them all for 50 others; the accounts that left are free for
// another set (the final transaction writes only the set; they are freed
// after it, in batches).
func TestLibrarySetShrinksAndSwapsOnEveryStore(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		n := maxLibraryAccounts(store.Limits())
		if n == 0 {
			n = 120
		}
		v := newLibEnv(t, open, n, libOptions{store: store})
		names := libSvcNames(n)
		if err := v.e.PutLibrarySet(ctx, "big", LibrarySetRequest{ServiceAccountNames: names}); err != nil {
			t.Fatalf("PutLibrarySet of %d accounts: %v", n, err)
		}
		if err := v.e.PutLibrarySet(ctx, "big", LibrarySetRequest{ServiceAccountNames: names[:1]}); err != nil {
			t.Fatalf("shrinking a set of %d accounts to one: %v", n, err)
		}
		if err := v.e.PutLibrarySet(ctx, "other", LibrarySetRequest{ServiceAccountNames: names[1:51]}); err != nil {
			t.Fatalf("the accounts that left: %v", err)
		}
		if err := v.e.PutLibrarySet(ctx, "other", LibrarySetRequest{ServiceAccountNames: names[51:101]}); err != nil {
			t.Fatalf("swapping 50 accounts for 50 others: %v", err)
		}
		if err := v.e.PutLibrarySet(ctx, "third", LibrarySetRequest{ServiceAccountNames: names[1:51]}); err != nil {
			t.Fatalf("the accounts swapped out: %v", err)
		}
		status, err := v.e.GetLibraryStatus(ctx, "other")
		if err != nil || len(status) != 50 {
			t.Fatalf("status of the swapped set: %d accounts, %v", len(status), err)
		}
		for _, set := range []string{"big", "other", "third"} {
			if _, err := v.e.CheckOut(libCaller("tok", "ent"), set, CheckOutRequest{}); err != nil {
				t.Errorf("check-out from %s: %v", set, err)
			}
		}
	})
}

// TestShrinkSparesTheClaimsOfAConcurrentPut: the accounts that leave a set
// are freed after the set is stored, and only they: an account another
// PutLibrarySet of the same set has claimed meanwhile (claimed, not yet
// listed by the set) keeps its claim, so that that call's set lists an
// account with its record and its entry's owner.
func TestShrinkSparesTheClaimsOfAConcurrentPut(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 4, libOptions{})
		names := libSvcNames(4)
		if err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: names[:3]}); err != nil {
			t.Fatal(err)
		}
		// A concurrent put of s that adds svc3 has claimed it.
		if _, err := v.e.claimAccounts(ctx, "s", names[3:], map[string]string{names[3]: libSvcDN(3)}); err != nil {
			t.Fatal(err)
		}
		if err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: names[:1]}); err != nil {
			t.Fatal(err)
		}
		err := v.e.store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			a, ok, err := loadAccount(tx, "s", names[3])
			if err != nil || !ok || a.DN != libSvcDN(3) {
				t.Errorf("the concurrent put's claim of %s: %+v, %v, %v", names[3], a, ok, err)
			}
			for _, n := range names[1:3] {
				if _, ok, err := loadAccount(tx, "s", n); err != nil || ok {
					t.Errorf("%s left the set but keeps its record (%v)", n, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The concurrent put ends: svc3 joins with its record; the accounts
		// that left are free for another set.
		if err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: []string{names[0], names[3]}}); err != nil {
			t.Fatal(err)
		}
		if err := v.e.PutLibrarySet(ctx, "t", LibrarySetRequest{ServiceAccountNames: names[1:3]}); err != nil {
			t.Fatalf("the accounts that left: %v", err)
		}
		status, err := v.e.GetLibraryStatus(ctx, "s")
		if err != nil || len(status) != 2 || !status[names[3]].Available {
			t.Errorf("status of s: %+v, %v; want svc0 and svc3, svc3 available", status, err)
		}
	})
}

// failingSets is a Directory whose SetPassword fails, certainly not
// applied, while fail is set, counting the calls.
type failingSets struct {
	Directory
	fail  atomic.Bool
	calls atomic.Int32
}

func (d *failingSets) SetPassword(ctx context.Context, c Conn, dn, pw string) error {
	d.calls.Add(1)
	if d.fail.Load() {
		return fmt.Errorf("directory refuses: %w", ErrNotApplied)
	}
	return d.Directory.SetPassword(ctx, c, dn, pw)
}

// TestWorkerDoesNotSpinOnAJoinedAccount: an account that joined its set
// but whose first password change the directory refuses is tried by the
// worker once per retry, not over and over: the worker's attempt writes
// nothing that its own watch of the pending index sees.
func TestWorkerDoesNotSpinOnAJoinedAccount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		var dir *failingSets
		v := newLibEnv(t, open, 1, libOptions{dir: func(d Directory) Directory { dir = &failingSets{Directory: d}; return dir }})
		dir.fail.Store(true)
		if err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: libSvcNames(1)}); err == nil {
			t.Fatal("PutLibrarySet succeeded with the directory refusing the password change")
		}
		before := dir.calls.Load()
		v.e.Start()
		// The barrier, in place of a sleep: the worker has tried and sleeps
		// with a plan on its clock, which stands still. A worker woken by
		// its own attempt would step again at once instead (its plan is
		// cleared for each step).
		keeltest.Until(t, "the worker tries the password change and sleeps", func() bool {
			return dir.calls.Load() > before && !v.e.worker.Planned().IsZero()
		})
		if n := dir.calls.Load() - before; n > 2 {
			t.Errorf("the worker tried the password change %d times without its clock moving, want at most 2", n)
		}
	})
}

package policy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// TestConcurrentPoliciesAndSets: workers create policies at once, add each
// to one set, delete every other one (which takes it out of the set), and
// race for one policy name and one set name (in different spellings):
// each name is taken once, the organization's count, the set's members,
// its stored count and the policies' sets all agree.
func TestConcurrentPoliciesAndSets(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		set, err := e.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("all")})
		if err != nil {
			t.Fatal(err)
		}
		const workers, each = 8, 4
		var wg sync.WaitGroup
		errs := make(chan error, workers*3)
		kept := make(chan string, workers*each)
		var polWon, setWon atomic.Int32
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					p, err := e.s.Create(root(), "acme", CreateRequest{Name: ptr(fmt.Sprintf("w%d-p%d", w, i)), EnforcementLevel: ptr(Advisory)})
					if err != nil {
						errs <- err
						return
					}
					if err := e.s.AddSetMembers(root(), set.ID, SetPolicies, []string{p.ID}); err != nil {
						errs <- err
						return
					}
					if i%2 == 1 {
						if err := e.s.Delete(root(), p.ID); err != nil {
							errs <- err
							return
						}
						continue
					}
					kept <- p.ID
				}
				spelling := []string{"shared", "Shared", "SHARED", "sHaReD"}[w%4]
				switch _, err := e.s.Create(root(), "acme", CreateRequest{Name: &spelling, EnforcementLevel: ptr(Advisory)}); {
				case err == nil:
					polWon.Add(1)
				case keel.KindOf(err) != keel.KindAlreadyExists:
					errs <- fmt.Errorf("policy %q: %w", spelling, err)
				}
				switch _, err := e.s.CreateSet(root(), "acme", CreateSetRequest{Name: &spelling}); {
				case err == nil:
					setWon.Add(1)
				case keel.KindOf(err) != keel.KindAlreadyExists:
					errs <- fmt.Errorf("set %q: %w", spelling, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		close(kept)
		for err := range errs {
			t.Fatal(err)
		}
		if polWon.Load() != 1 || setWon.Load() != 1 {
			t.Fatalf("%d policies and %d sets took the one name", polWon.Load(), setWon.Load())
		}
		var want []string
		for id := range kept {
			want = append(want, id)
		}
		slices.Sort(want)
		page, err := e.s.List(root(), "acme", ListRequest{ListRequest: keel.ListRequest{Limit: MaxPageSize}})
		if err != nil || page.Matching != len(want)+1 || len(page.Items) != len(want)+1 {
			t.Fatalf("list: %d of %d policies, %v; want %d", len(page.Items), page.Matching, err, len(want)+1)
		}
		got, err := e.s.GetSet(root(), set.ID)
		if err != nil || !slices.Equal(got.PolicyIDs, want) {
			t.Fatalf("the set lists %q, %v; want %q", got.PolicyIDs, err, want)
		}
		err = e.s.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			rec, err := getSet(tx, set.ID)
			if err != nil {
				return err
			}
			if rec.Counts == nil || rec.Counts.Policies != len(want) {
				return fmt.Errorf("the set's stored counts %+v, want %d policies", rec.Counts, len(want))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range want {
			if p, err := e.s.Get(root(), id); err != nil || !slices.Equal(p.PolicySetIDs, []string{set.ID}) {
				t.Fatalf("policy %s is in sets %q, %v", id, p.PolicySetIDs, err)
			}
		}
	})
}

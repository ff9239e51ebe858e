package identity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestConcurrentMembership has many goroutines add and remove member
// groups among a few groups at once, cycles included: at the end the graph
// has no cycle and every parent link matches a member link.
func TestConcurrentMembership(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		g, err := New(store, &Options{Clock: keel.NewFakeClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		const groups, workers, writes = 8, 8, 40
		ids := make([]string, groups)
		for i := range ids {
			res, err := g.CreateOrUpdateByName(ctx, fmt.Sprint("g", i), GroupRequest{})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = res.ID
		}
		var wg sync.WaitGroup
		errs := make(chan error, workers*writes)
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for range writes {
					target := ids[rng.IntN(groups)]
					var members []string
					for _, id := range ids {
						if id != target && rng.IntN(3) == 0 {
							members = append(members, id)
						}
					}
					var err error
					switch rng.IntN(4) {
					case 0:
						_, err = g.Update(ctx, target, GroupRequest{MemberGroupIDs: &[]string{}})
					default:
						_, err = g.Update(ctx, target, GroupRequest{MemberGroupIDs: &members})
					}
					// Cycles are refused; anything else is a failure.
					if err != nil && keel.KindOf(err) != keel.KindInvalid {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		checkGraph(t, store)
		// Parents read back match members read back.
		parents := map[string]map[string]bool{}
		for _, id := range ids {
			gr, err := g.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range gr.MemberGroupIDs {
				if parents[m] == nil {
					parents[m] = map[string]bool{}
				}
				parents[m][id] = true
			}
		}
		for _, id := range ids {
			gr, _ := g.Get(ctx, id)
			if len(gr.ParentGroupIDs) != len(parents[id]) {
				t.Fatalf("%s: parents %q, members say %v", id, gr.ParentGroupIDs, parents[id])
			}
			for _, p := range gr.ParentGroupIDs {
				if !parents[id][p] {
					t.Fatalf("%s: parent %s does not list it", id, p)
				}
			}
		}
	})
}

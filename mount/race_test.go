package mount_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/mount"
)

// TestConcurrentEnable: two tables over one store, as two processes, enable
// overlapping paths at once (p<i>/ in one, p<i>/inner/ in the other, and
// same/ in both): the check in the transaction lets exactly one of each
// pair in, and a table opened after holds the winners and no overlap.
func TestConcurrentEnable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		tables := []*mount.Table{open(t, store), open(t, store)}
		const pairs = 8
		paths := func(i int) [2]string {
			if i == pairs {
				return [2]string{"same/", "same/"}
			}
			return [2]string{fmt.Sprintf("p%d/", i), fmt.Sprintf("p%d/inner/", i)}
		}
		var errs [pairs + 1][2]error
		var wg sync.WaitGroup
		for i := range pairs + 1 {
			for side := range 2 {
				wg.Go(func() {
					_, errs[i][side] = tables[side].Enable(ctx, mount.EnableRequest{Path: paths(i)[side], Type: "kv"})
				})
			}
		}
		wg.Wait()
		want := map[string]bool{"secret/": true, "ldap/": true, "openldap/": true}
		for i := range pairs + 1 {
			won := 0
			for side, err := range errs[i] {
				switch {
				case err == nil:
					won++
					want[paths(i)[side]] = true
				case keel.KindOf(err) != keel.KindInvalid:
					t.Fatalf("enable %s: %v", paths(i)[side], err)
				}
			}
			if won != 1 {
				t.Fatalf("%d of %q enabled, want one", won, paths(i))
			}
		}
		var got []string
		for _, p := range served(t, open(t, store)) {
			if !want[p] {
				t.Fatalf("the table serves %s, which lost its race", p)
			}
			got = append(got, p)
		}
		if len(got) != len(want) {
			t.Fatalf("the table serves %q, want %d mounts", got, len(want))
		}
		for _, a := range got {
			for _, b := range got {
				if a != b && strings.HasPrefix(b, a) {
					t.Fatalf("the table serves %s and %s", a, b)
				}
			}
		}
	})
}

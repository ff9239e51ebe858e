package identity

import (
	"context"
	"fmt"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// The benchmarks of identity groups, on memstore; see BENCHMARKS.md.
//
//   - Read: Get of a group with 10 member groups and one parent.
//   - AddMember/members=N: Update sending the member list of a group
//     of N member groups plus one new group, in place of the one the
//     previous op added (the API replaces the list): one edge added, one
//     removed, N compared.
//     The yardstick raw-put is one Update putting one key.
//   - CycleCheck/depth=1000: on a chain g0 > g1 > … > g999, add a new
//     group to g999 (accepted: the check walks 1,000 ancestors), or add
//     g0 to g999 (refused as a cycle after the same walk).
//
// All run with -benchtime 1x too, as in CI.

func benchGroups(b *testing.B) (*Groups, storage.Store) {
	b.Helper()
	s := memstore.New(nil)
	b.Cleanup(func() { s.Close() })
	g, err := New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	return g, s
}

func mustCreate(b *testing.B, g *Groups, name string, members []string) string {
	b.Helper()
	in := GroupRequest{Name: &name}
	if members != nil {
		in.MemberGroupIDs = &members
	}
	res, err := g.CreateOrUpdate(context.Background(), "", in)
	if err != nil {
		b.Fatal(err)
	}
	return res.ID
}

func BenchmarkRead(b *testing.B) {
	g, _ := benchGroups(b)
	var members []string
	for i := range 10 {
		members = append(members, mustCreate(b, g, fmt.Sprint("m", i), nil))
	}
	id := mustCreate(b, g, "g", members)
	mustCreate(b, g, "parent", []string{id})
	ctx := context.Background()
	for b.Loop() {
		if _, err := g.Get(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAddMember(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			g, _ := benchGroups(b)
			members := make([]string, 0, n+1)
			for i := range n {
				members = append(members, mustCreate(b, g, fmt.Sprint("m", i), nil))
			}
			id := mustCreate(b, g, "big", members)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The group keeps n+1 members: each op adds a new
				// group and drops the one the previous op added.
				b.StopTimer()
				list := append(members[:n:n], mustCreate(b, g, fmt.Sprint("new", i), nil))
				b.StartTimer()
				if _, err := g.Update(ctx, id, GroupRequest{MemberGroupIDs: &list}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("raw-put", func(b *testing.B) {
		_, s := benchGroups(b)
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
				return tx.Put(fmt.Sprint("k", i), []byte{})
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCycleCheck(b *testing.B) {
	const depth = 1000
	setup := func(b *testing.B) (*Groups, []string) {
		g, _ := benchGroups(b)
		chain := make([]string, depth)
		chain[0] = mustCreate(b, g, "g0", nil)
		for i := 1; i < depth; i++ {
			chain[i] = mustCreate(b, g, fmt.Sprint("g", i), nil)
			ctx := context.Background()
			if _, err := g.Update(ctx, chain[i-1], GroupRequest{MemberGroupIDs: &[]string{chain[i]}}); err != nil {
				b.Fatal(err)
			}
		}
		return g, chain
	}
	b.Run("depth=1000/accepted", func(b *testing.B) {
		g, chain := setup(b)
		last := chain[depth-1]
		ctx := context.Background()
		var members []string
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			members = append(members, mustCreate(b, g, fmt.Sprint("leaf", i), nil))
			list := members
			b.StartTimer()
			if _, err := g.Update(ctx, last, GroupRequest{MemberGroupIDs: &list}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("depth=1000/cycle-refused", func(b *testing.B) {
		g, chain := setup(b)
		ctx := context.Background()
		for b.Loop() {
			if _, err := g.Update(ctx, chain[depth-1], GroupRequest{MemberGroupIDs: &[]string{chain[0]}}); err == nil {
				b.Fatal("cycle accepted")
			}
		}
	})
}

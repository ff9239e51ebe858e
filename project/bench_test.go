package project

import (
	"context"
	"fmt"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// fill adds n projects to acme directly through the store, as Create
// would, in a few transactions.
func fill(b *testing.B, e *env, n int) {
	b.Helper()
	const batch = 5000
	for start := 0; start < n; start += batch {
		err := e.c.store.Update(context.Background(), func(_ context.Context, tx storage.Tx) error {
			o, err := getOrg(tx, "acme")
			if err != nil {
				return err
			}
			for i := start; i < min(start+batch, n); i++ {
				rec := prjRecord{ID: newID("prj"), Org: "acme", Name: fmt.Sprintf("project-%06d", i), CreatedAt: t0}
				if err := putJSON(tx, prjKey(rec.ID), rec); err != nil {
					return err
				}
				if err := tx.Put(prjNames("acme")+fold(rec.Name), []byte(rec.ID)); err != nil {
					return err
				}
				o.ProjectCount++
			}
			return putJSON(tx, orgKey("acme"), o)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListFirstPage lists page 1 (20 projects, sorted by name) of
// organizations of growing size: the cost must not grow with them.
func BenchmarkListFirstPage(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("projects=%d", n), func(b *testing.B) {
			e := newEnv(b, everystore.Mem, nil, nil)
			fill(b, e, n)
			ctx := root()
			for b.Loop() {
				page, err := e.c.List(ctx, "acme", ListRequest{Sort: "name"})
				if err != nil || len(page.Items) != DefaultPageSize {
					b.Fatal(len(page.Items), err)
				}
			}
		})
	}
}

// BenchmarkListQuery lists page 1 with q, which reads every index key.
func BenchmarkListQuery(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("projects=%d", n), func(b *testing.B) {
			e := newEnv(b, everystore.Mem, nil, nil)
			fill(b, e, n)
			ctx := root()
			for b.Loop() {
				if _, err := e.c.List(ctx, "acme", ListRequest{Query: "project-0000"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMoveWorkspaces moves 100 workspaces in one call, back and forth.
func BenchmarkMoveWorkspaces(b *testing.B) {
	e := newEnv(b, everystore.Mem, nil, nil)
	p1, p2 := e.mkProject(b, "one"), e.mkProject(b, "two")
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = e.mkWorkspace(b, fmt.Sprintf("ws-%03d", i), p1.ID).ID
	}
	ctx := root()
	dest := []string{p2.ID, p1.ID}
	i := 0
	for b.Loop() {
		if err := e.c.MoveWorkspaces(ctx, dest[i%2], ids); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

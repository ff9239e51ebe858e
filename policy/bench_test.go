package policy

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// fill adds n policies to acme directly through the store.
func fill(b *testing.B, e *env, n int) {
	b.Helper()
	const batch = 10_000
	for start := 0; start < n; start += batch {
		err := e.s.store.Update(context.Background(), func(_ context.Context, tx storage.Tx) error {
			for i := start; i < min(start+batch, n); i++ {
				name := fmt.Sprintf("policy-%06d", i)
				rec := record{ID: newID("pol"), Org: "acme", Name: name, Kind: Sentinel, Enforce: []Enforce{{Path: name + ".policy", Mode: HardMandatory}}}
				if err := putRecord(tx, &rec); err != nil {
					return err
				}
				if err := tx.Put(nameIx("acme")+fold(name), []byte(rec.ID)); err != nil {
					return err
				}
			}
			return addCount(tx, "acme", min(batch, n-start))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList lists pages of 20 out of 100,000 policies, with and
// without search[name].
func BenchmarkList(b *testing.B) {
	e := newEnv(b, everystore.Mem, nil, nil)
	fill(b, e, 100_000)
	ctx := root()
	tests := []struct {
		name string
		opts ListRequest
	}{
		{"page=1", ListRequest{}},
		{"page=500", ListRequest{Offset: 9980}},
		{"page=1/search", ListRequest{Search: "policy-09"}},
		{"page=500/search", ListRequest{Offset: 9980, Search: "policy-0"}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				page, err := e.s.List(ctx, "acme", tt.opts)
				if err != nil || len(page.Items) != defaultPageSize {
					b.Fatal(len(page.Items), err)
				}
			}
		})
	}
}

// BenchmarkCreate creates policies with distinct names.
func BenchmarkCreate(b *testing.B) {
	e := newEnv(b, everystore.Mem, nil, nil)
	ctx := root()
	level := Advisory
	i := 0
	for b.Loop() {
		name := fmt.Sprintf("p%d", i)
		if _, err := e.s.Create(ctx, "acme", CreateRequest{Name: &name, EnforcementLevel: &level}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkUpload uploads 10 MiB of code.
func BenchmarkUpload(b *testing.B) {
	e := newEnv(b, everystore.Mem, nil, nil)
	p := e.mk(b, "big")
	code := bytes.Repeat([]byte("x"), MaxCodeSize)
	ctx := root()
	b.SetBytes(MaxCodeSize)
	for b.Loop() {
		if err := e.s.Upload(ctx, p.ID, code); err != nil {
			b.Fatal(err)
		}
	}
}

package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// A guarded view, and every view made from it, runs its transactions only
// while the guard key exists; deleting the key ends them all, and a view
// of the same store without the guard is not affected.
func TestGuardEndsTheViewWithItsKey(t *testing.T) {
	ctx := context.Background()
	root := memstore.New(nil)
	put(t, root, "sys/guard/1", "x")
	// The guard key given in a view's own keys, and a view made under it.
	guarded := storage.Guard(storage.Sub(root, "sys/"), "guard/1", `mount "a/" was disabled`)
	data := storage.Sub(storage.Guard(root, "sys/guard/1", `mount "a/" was disabled`), "data/a/")
	leases := storage.Sub(root, "lease/")
	j, err := storage.Join(data, leases)
	if err != nil {
		t.Fatal(err)
	}
	write := map[string]func() error{
		"Update": func() error {
			return data.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put("k", []byte("v")) })
		},
		"View": func() error {
			return data.View(ctx, func(ctx context.Context, tx storage.Tx) error { return nil })
		},
		"Sub's View": func() error {
			return guarded.View(ctx, func(ctx context.Context, tx storage.Tx) error { return nil })
		},
		"Joint": func() error {
			return j.Update(ctx, func(ctx context.Context, ta, tb storage.Tx) error { return tb.Put("l", []byte("v")) })
		},
	}
	for name, fn := range write {
		if err := fn(); err != nil {
			t.Fatalf("%s with the guard: %v", name, err)
		}
	}
	if err := root.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Delete("sys/guard/1") }); err != nil {
		t.Fatal(err)
	}
	for name, fn := range write {
		err := fn()
		if keel.KindOf(err) != keel.KindNotFound || !strings.HasPrefix(err.Error(), `mount "a/" was disabled`) {
			t.Errorf("%s without the guard: %v, want kind NotFound with the guard's text", name, err)
		}
		if errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: %v is storage.ErrNotFound, which callers read as a missing key", name, err)
		}
	}
	if err := leases.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.Put("m", []byte("v")) }); err != nil {
		t.Fatalf("an unguarded view of the same store: %v", err)
	}
}

// A guard costs one read per transaction: the view's limits say so.
func TestGuardLimits(t *testing.T) {
	root := memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxReads: 10, MaxKeySize: 100}})
	v := storage.Sub(storage.Guard(root, "g", "gone"), "p/")
	if l := v.Limits(); l.MaxTxReads != 9 || l.MaxKeySize != 98 {
		t.Errorf("limits %+v, want MaxTxReads 9, MaxKeySize 98", l)
	}
}

func put(t *testing.T, s storage.Store, k, v string) {
	t.Helper()
	if err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.Put(k, []byte(v)) }); err != nil {
		t.Fatal(err)
	}
}

// A Joint holds the view it was made of, and no other: another prefix,
// another store, or the same view without its guard.
func TestJointHolds(t *testing.T) {
	root := memstore.New(nil)
	guarded := storage.Sub(storage.Guard(root, "g", "gone"), "a/")
	j, err := storage.Join(guarded, storage.Sub(root, "lease/"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		s    storage.Store
		want bool
	}{
		"the same view":     {guarded, true},
		"an equal view":     {storage.Sub(storage.Guard(root, "g", "other text"), "a/"), true},
		"without the guard": {storage.Sub(root, "a/"), false},
		"another guard":     {storage.Sub(storage.Guard(root, "h", "gone"), "a/"), false},
		"another prefix":    {storage.Sub(storage.Guard(root, "g", "gone"), "b/"), false},
		"another store":     {storage.Sub(storage.Guard(memstore.New(nil), "g", "gone"), "a/"), false},
	} {
		if got := j.Holds(tc.s); got != tc.want {
			t.Errorf("%s: Holds = %v, want %v", name, got, tc.want)
		}
	}
}

// A guard's read does not load the guard key's value when the store can
// tell sizes: a guarded transaction allocates no more than an unguarded one.
func TestGuardReadsNoValue(t *testing.T) {
	ctx := context.Background()
	root := memstore.New(nil)
	put(t, root, "sys/guard/1", strings.Repeat("x", 4096))
	plain := storage.Sub(root, "data/a/")
	guarded := storage.Sub(storage.Guard(root, "sys/guard/1", "gone"), "data/a/")
	view := func(s storage.Store) func() {
		return func() {
			if err := s.View(ctx, func(context.Context, storage.Tx) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := testing.AllocsPerRun(100, view(plain))
	if got := testing.AllocsPerRun(100, view(guarded)); got > want {
		t.Errorf("a guarded View allocates %v times, an unguarded one %v", got, want)
	}
}

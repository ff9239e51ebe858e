package etcdstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	"github.com/keelhq/keel/storage/sealstore"
)

// sealed returns a sealstore over s with active and previous keys.
func sealed(t *testing.T, s storage.Store, active []byte, previous ...[]byte) *sealstore.Store {
	t.Helper()
	ss, err := sealstore.New(s, active, &sealstore.Options{Previous: previous})
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// Reseal of 1,000 values fits etcd's limits (128 operations and 128
// comparisons per commit): every value then opens with the new key alone,
// and a second Reseal rewrites nothing.
func TestResealOverEtcd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: etcdtest.Prefix()})
	t.Cleanup(func() { store.Close() })
	old, next := sealstore.GenerateKey(), sealstore.GenerateKey()
	const n = 1000
	value := func(i int) string { return fmt.Sprintf("secret %d %s", i, strings.Repeat("x", 80)) }
	before := sealed(t, store, old)
	for start := 0; start < n; start += 100 {
		err := before.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			for i := start; i < start+100; i++ {
				if err := tx.Put(fmt.Sprintf("k/%04d", i), []byte(value(i))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	rotated := sealed(t, store, next, old)
	got, err := rotated.Reseal(ctx, "k/", 0)
	if err != nil || got != n {
		t.Fatalf("Reseal = %d, %v; want %d, nil", got, err, n)
	}
	after := sealed(t, store, next)
	err = after.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		for i := range n {
			k := fmt.Sprintf("k/%04d", i)
			v, err := tx.Get(k)
			if err != nil {
				return err
			}
			if string(v) != value(i) {
				return fmt.Errorf("%s = %q after Reseal, want %q", k, v, value(i))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a value does not open with the new key alone: %v", err)
	}
	if got, err := rotated.Reseal(ctx, "k/", 0); err != nil || got != 0 {
		t.Fatalf("second Reseal = %d, %v; want 0, nil", got, err)
	}
}
